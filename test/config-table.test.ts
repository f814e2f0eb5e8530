import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/config.js';
import { configVariables } from '../src/config/schema.js';
import { renderConfigTable, withConfigTable } from '../src/config/table.js';

const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

/** Configuration is declared once (src/config/schema.ts); the README's table is generated from it. */
describe('the configuration table', () => {
  it('in README.md is the one generated from the schema (run npm run docs:config)', () => {
    expect(withConfigTable(README)).toBe(README);
  });

  it('fails when the README drifts from the schema', () => {
    const drifted = README.replace('| `PORT` | `8080` |', '| `PORT` | `8081` |');
    expect(drifted).not.toBe(README);
    expect(withConfigTable(drifted)).not.toBe(drifted);
  });

  it('names every variable once, and each default decodes to what loadConfig uses', () => {
    const names = configVariables().map(([name]) => name);
    expect(new Set(names).size).toBe(names.length);
    for (const name of names) expect(renderConfigTable()).toContain(`| \`${name}\` |`);
    // Every literal default given back as the variable's text is accepted as it is.
    const defaults = Object.fromEntries(
      configVariables()
        .filter(([, s]) => s.default !== undefined)
        .map(([name, s]) => [name, String(s.default)]),
    );
    expect(loadConfig(defaults)).toEqual(loadConfig({}));
  });

  it('every SVC_ variable the source reads is declared', () => {
    const declared = new Set(configVariables().map(([name]) => name));
    const source = readFileSync(new URL('../src/config/config.ts', import.meta.url), 'utf8');
    for (const [name] of source.matchAll(/\bSVC_[A-Z_]+\b/g)) expect(declared, name).toContain(name);
  });
});
