import { execFileSync } from 'node:child_process';
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

  it('every heading that code and docs cite exists on its page', () => {
    const files = execFileSync(
      'git',
      ['ls-files', 'src', 'test', 'docs', 'README.md', 'scripts', 'bench', 'console/src'],
      {
        cwd: new URL('..', import.meta.url),
        encoding: 'utf8',
      },
    )
      .split('\n')
      .filter((f) => /\.(ts|tsx|md|mjs)$/.test(f));
    let cited = 0;
    for (const file of files) {
      // A citation may wrap across comment lines.
      for (const m of read(file).matchAll(/docs\/([a-z-]+)\.md,? "([^"]{1,120})"/g)) {
        const heading = m[2].replace(/\s*\n\s*(\*|\/\/)?\s*/g, ' ');
        const page = `docs/${m[1]}.md`;
        const headings = read(page)
          .split('\n')
          .filter((l) => l.startsWith('#'))
          .map((l) => l.replace(/^#+\s*/, ''));
        // A heading is cited by its text or the start of it (before a colon or a parenthesis).
        expect(
          headings.some((h) => h === heading || h.startsWith(`${heading} `) || h.startsWith(`${heading}:`)),
          `${file} cites ${page} "${heading}"`,
        ).toBe(true);
        cited++;
      }
    }
    expect(cited).toBeGreaterThan(30);
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
