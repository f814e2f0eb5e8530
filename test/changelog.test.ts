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

const KINDS = ['Added', 'Changed', 'Deprecated', 'Removed', 'Fixed', 'Security'];

/** What is wrong with a changelog's structure (empty: nothing). */
function structureProblems(text: string): string[] {
  const problems: string[] = [];
  const all = releases(text);
  const released = all.filter((r) => r.version !== 'Unreleased');
  if (all[0]?.version !== 'Unreleased') problems.push('it does not open with Unreleased');
  if (released.length === 0) problems.push('it has no released version');
  for (const r of released) {
    if (!/^\d+\.\d+\.\d+$/.test(r.version)) problems.push(`${r.version} is no version`);
    if (r.date === undefined) problems.push(`${r.version} has no date`);
  }
  for (let i = 1; i < released.length; i++) {
    if (!newer(released[i - 1].version, released[i].version))
      problems.push(`${released[i].version} is out of order`);
    if ((released[i - 1].date ?? '') < (released[i].date ?? ''))
      problems.push(`${released[i].version}'s date is out of order`);
  }
  for (const r of all) {
    for (const k of new Set(r.kinds.filter((k, i) => r.kinds.indexOf(k) !== i)))
      problems.push(`${r.version} names ${k} twice`);
    for (const k of r.kinds) if (!KINDS.includes(k)) problems.push(`${r.version} has a kind ${k}`);
  }
  return problems;
}

/** CHANGELOG.md in Keep a Changelog form (its own opening says what is checked). */
describe('CHANGELOG.md', () => {
  it('opens with Unreleased, then released versions and dates newest first, each kind once per release', () => {
    expect(structureProblems(CHANGELOG)).toEqual([]);
  });

  it("has the newest release at package.json's version, which svc --version prints", async () => {
    const newest = releases(CHANGELOG).find((r) => r.version !== 'Unreleased');
    expect(newest?.version).toBe(VERSION);
    const { stdout, code } = await runCli(['--version']);
    expect(code).toBe(0);
    expect(stdout.trim()).toContain(VERSION);
  });

  it('the check fails on a kind named twice, a version out of order, or a kind Keep a Changelog lacks', () => {
    // The section the first `### Changed` belongs to (Unreleased, or the newest version).
    const before = CHANGELOG.slice(0, CHANGELOG.indexOf('### Changed\n'));
    const first = [...before.matchAll(/^## \[([^\]]+)\]/gm)].at(-1)?.[1];
    expect(structureProblems(CHANGELOG.replace('### Changed\n', '### Added\n'))).toContain(
      `${first} names Added twice`,
    );
    expect(
      structureProblems(CHANGELOG.replace('## [0.1.0] - 2026-11-29', '## [0.3.0] - 2026-11-29')),
    ).toContain('0.3.0 is out of order');
    expect(
      structureProblems(CHANGELOG.replace('### Fixed', '### Fixes').replace('### Changed\n', '### Notes\n')),
    ).toContain(`${first} has a kind Notes`);
  });
});
