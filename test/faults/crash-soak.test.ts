import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { dialectName, freshDatabase, onPostgres } from '../helpers/store.js';
import { describeReport, runSoak, soakHeld } from '../soak/harness.js';

/**
 * The crash soak's short version (npm run soak is the long one): a real `svc serve` on a SQLite file
 * or a PostgreSQL database of its own, killed with SIGKILL three times under a stream of writes, then
 * every promise checked (test/soak/harness.ts). The seed is printed so a failure reproduces.
 */
describe(`crash soak, short (${dialectName})`, () => {
  it('three SIGKILLs of svc serve under load: nothing lost, nothing twice, nothing left unfinished', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-soak-'));
    const db = onPostgres ? await freshDatabase() : { url: `sqlite:${dir}/svc.db`, drop: async () => {} };
    try {
      const report = await runSoak({
        databaseUrl: db.url,
        topology: { kind: 'single' },
        kills: 3,
        gapMs: [300, 1_200],
      });
      console.log(describeReport(report));
      expect(report.kills).toBe(3);
      expect(report.writes.acknowledged).toBeGreaterThan(50);
      expect(report.runs.completed).toBeGreaterThan(0);
      expect(soakHeld(report), describeReport(report)).toEqual([]);
    } finally {
      await db.drop();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 240_000);
});
