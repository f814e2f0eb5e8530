import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { VERSION } from '../src/version.js';
import { runCli } from './helpers/cli.js';

const CHANGELOG = readFileSync(new URL('../CHANGELOG.md', import.meta.url), 'utf8');

/** A release of the changelog: `## [x.y.z] - date` (or Unreleased) and its `### Kind` headings. */
interface Release {
  version: string;
  date?: string;
  kinds: string[];
}

function releases(text: string): Release[] {
  const out: Release[] = [];
  for (const line of text.split('\n')) {
    const release = /^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?$/.exec(line);
    if (release) out.push({ version: release[1], date: release[2], kinds: [] });
    else if (line.startsWith('## '))
      throw new Error(`a release heading not in Keep a Changelog form: ${line}`);
    const kind = /^### (.+)$/.exec(line);
    if (kind) out.at(-1)?.kinds.push(kind[1]);
  }
  return out;
}

const semver = (v: string) => v.split('.').map(Number);
const newer = (a: string, b: string) => {
  const [x, y] = [semver(a), semver(b)];
  for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return x[i] > y[i];
  return false;
};

/** CHANGELOG.md in Keep a Changelog form (its own opening says what is checked). */
describe('CHANGELOG.md', () => {
  const all = releases(CHANGELOG);
  const released = all.filter((r) => r.version !== 'Unreleased');

  it('opens with Unreleased, then released versions, newest first, each with a date in order', () => {
    expect(all[0].version).toBe('Unreleased');
    expect(released.length).toBeGreaterThan(0);
    for (const r of released) {
      expect(r.version, r.version).toMatch(/^\d+\.\d+\.\d+$/);
      expect(r.date, r.version).toBeDefined();
    }
    for (let i = 1; i < released.length; i++) {
      expect(newer(released[i - 1].version, released[i].version), released[i].version).toBe(true);
      expect(released[i - 1].date! >= released[i].date!, released[i].version).toBe(true);
    }
  });

  it('names each kind of change at most once per release, from the kinds Keep a Changelog has', () => {
    const kinds = ['Added', 'Changed', 'Deprecated', 'Removed', 'Fixed', 'Security'];
    for (const r of all) {
      expect(new Set(r.kinds).size, `${r.version}: ${r.kinds.join(', ')}`).toBe(r.kinds.length);
      for (const k of r.kinds) expect(kinds, `${r.version}: ${k}`).toContain(k);
    }
  });

  it("has the newest release at package.json's version, which svc --version prints", async () => {
    expect(released[0].version).toBe(VERSION);
    const { stdout, code } = await runCli(['--version']);
    expect(code).toBe(0);
    expect(stdout.trim()).toContain(VERSION);
  });

  it('fails on a kind named twice, or a version out of order', () => {
    const twice = CHANGELOG.replace('### Changed\n', '### Added\n');
    expect(() => {
      const r = releases(twice).find((x) => x.kinds.filter((k) => k === 'Added').length > 1);
      if (r) throw new Error(`${r.version} names Added twice`);
    }).toThrow(/names Added twice/);
    expect(newer('0.1.0', '0.2.0')).toBe(false);
    expect(newer('0.10.0', '0.9.1')).toBe(true);
  });
});
