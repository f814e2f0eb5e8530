import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { SvcProcess } from '../helpers/process.js';
import { sqliteFileUrl } from '../helpers/store.js';
import { allTasks, eventually, publishMany } from './helpers.js';

/**
 * `svc worker` beside an API process on one SQLite file: the worker learns of the API's commits by
 * watching the write-ahead log, not by polling. With a 10-minute drain interval only the watch can
 * explain prompt progress. SQLite-only by nature, so it runs on its own file in both passes.
 */
describe('svc worker on a SQLite file shared with the API process', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-sqlite-worker-'));
  const url = sqliteFileUrl(dir);
  let t: TestApp;
  let worker: SvcProcess;
  beforeAll(async () => {
    // The publishing side: runs migrations, never drains (SVC_WORKER=off in test apps).
    t = await startTestApp({ databaseUrl: url });
    worker = new SvcProcess('worker', url, { SVC_OUTBOX_DRAIN_INTERVAL_MS: '600000' });
    await worker.ready();
  }, 60_000);
  afterAll(async () => {
    await worker?.stop();
    await t?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('drains events committed by another process at once, with no polling', async () => {
    // Let the worker's start-up drain pass, so only a wake-up can explain what follows.
    await new Promise((r) => setTimeout(r, 500));
    const started = Date.now();
    const events = await publishMany(t, 200, 10);
    const ids = new Set(events.map((e) => e.id));
    const rows = await eventually(
      async () => {
        const mine = (await allTasks(t)).filter((r) => ids.has(r.event_id));
        return mine.length === 200 && mine.every((r) => r.status === 'DONE') && mine;
      },
      20_000,
      'all 200 tasks DONE',
    );
    expect(rows.every((r) => r.locked_by?.startsWith(worker.lockPrefix))).toBe(true);
    // Far inside the 10-minute interval: the watch woke the drain.
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(worker.alive).toBe(true);
  });
});
