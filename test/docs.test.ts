import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { TRANSITIONS } from '../src/areas/enrollments/transitions.js';
import { ERROR_STATUS } from '../src/http/errors.js';

const read = (path: string) => readFileSync(new URL(`../${path}`, import.meta.url), 'utf8');

describe('documentation stays true to the code', () => {
  it('docs/errors.md lists every error code with its status', () => {
    const doc = read('docs/errors.md');
    for (const [code, status] of Object.entries(ERROR_STATUS)) {
      expect(doc, code).toContain(`| \`${code}\` | ${status} |`);
    }
  });

  it('the README documents every environment variable the configuration reads', () => {
    const readme = read('README.md');
    const config = read('src/config/config.ts');
    const names = new Set([...config.matchAll(/'((?:SVC|NODE|PORT|HOST)[A-Z0-9_]*)'/g)].map((m) => m[1]));
    expect(names.size).toBeGreaterThan(20);
    for (const name of names) expect(readme, name).toContain(`\`${name}\``);
  });

  it('the enrollment transition table in docs/platform.md is TRANSITIONS of enrollments/transitions.ts', () => {
    const doc = read('docs/platform.md');
    const section = doc.slice(doc.indexOf('### Status transitions'));
    const table = section.slice(0, section.indexOf('\n\n', section.indexOf('| from |')));
    // Rows `| \`FROM\` | \`TO\` | who | how |`; creation rows ("(new)") are not transitions.
    const documented: Record<string, Record<string, string[]>> = {};
    let rows = 0;
    for (const line of table.split('\n')) {
      const m = /^\| `([A-Z_]+)` \| `([A-Z_]+)` \| ([a-z ]+) \|/.exec(line);
      if (!m) continue;
      rows++;
      documented[m[1]] ??= {};
      documented[m[1]][m[2]] = m[3].split(' or ').sort();
    }
    const code: Record<string, Record<string, string[]>> = {};
    for (const [from, targets] of Object.entries(TRANSITIONS)) {
      for (const [to, actors] of Object.entries(targets)) {
        code[from] ??= {};
        code[from][to] = [...(actors ?? [])].sort();
      }
    }
    expect(rows).toBeGreaterThan(0);
    expect(documented).toEqual(code);
  });
});
