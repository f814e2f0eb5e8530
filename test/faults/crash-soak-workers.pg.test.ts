import { expect, it } from 'vitest';
import { describePg, freshDatabase } from '../helpers/store.js';
import { describeReport, runSoak, soakHeld } from '../soak/harness.js';

/**
 * The crash soak's short version with the work spread over processes: `svc serve` with SVC_WORKER=off
 * and three `svc worker`s on one PostgreSQL database, any of the four killed with SIGKILL (four times).
 */
describePg('crash soak, short: svc serve and three svc workers', () => {
  it('four SIGKILLs among four processes: nothing lost, nothing twice, nothing left unfinished', async () => {
    const db = await freshDatabase();
    try {
      const report = await runSoak({
        databaseUrl: db.url,
        topology: { kind: 'workers', workers: 3 },
        kills: 4,
        gapMs: [300, 1_200],
      });
      console.log(describeReport(report));
      expect(report.kills).toBe(4);
      expect(report.writes.acknowledged).toBeGreaterThan(50);
      expect(soakHeld(report), describeReport(report)).toEqual([]);
    } finally {
      await db.drop();
    }
  }, 240_000);
});
