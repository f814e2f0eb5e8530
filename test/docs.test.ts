import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
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
});
