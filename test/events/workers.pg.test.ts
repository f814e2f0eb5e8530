import pg from 'pg';
import { afterEach, expect, it } from 'vitest';
import { createWorker } from '../../src/app/runtime.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { SvcProcess } from '../helpers/process.js';
import { describePg, freshDatabase, type TestDatabase } from '../helpers/store.js';
import { allTasks, anotherDrain, eventually, publishMany, recorder } from './helpers.js';

const QUIET = '600000'; // a 10-minute drain interval: only NOTIFY, timers and claims can explain progress

describePg('outbox scale-out on PostgreSQL', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function database(env: Record<string, string> = {}): Promise<{ db: TestDatabase; t: TestApp }> {
    const db = await freshDatabase();
    cleanups.push(() => db.drop());
    // The publishing side: runs migrations, never drains (SVC_WORKER=off in test apps).
    const t = await startTestApp({ databaseUrl: db.url, env });
    cleanups.push(() => t.close());
    return { db, t };
  }

  /** A real `svc worker` process; `ready` resolves once its drain listens for NOTIFY. */
  function worker(url: string, env: Record<string, string> = {}) {
    const w = new SvcProcess('worker', url, { SVC_OUTBOX_DRAIN_INTERVAL_MS: QUIET, ...env });
    cleanups.push(() => w.stop());
    return Object.assign(w, { ready: () => w.said('outbox: listening for notifications') });
  }

  async function statusCounts(t: TestApp, ids: Set<string>) {
    const rows = await allTasks(t);
    const mine = rows.filter((r) => ids.has(r.event_id));
    const counts: Record<string, number> = {};
    for (const r of mine) counts[r.status] = (counts[r.status] ?? 0) + 1;
    return { rows: mine, counts };
  }

  it('two `svc worker` processes drain 1,000 events: every task DONE once, none lost, none left IN_PROGRESS', async () => {
    const { db, t } = await database();
    const a = worker(db.url);
    const b = worker(db.url);
    await Promise.all([a.ready(), b.ready()]);

    const events = await publishMany(t, 1_000, 10);
    const ids = new Set(events.map((e) => e.id));
    expect(ids.size).toBe(1_000);
    const { rows, counts } = await eventually(
      async () => {
        const s = await statusCounts(t, ids);
        return s.counts.DONE === 1_000 && s;
      },
      60_000,
      'all 1,000 tasks DONE',
    );
    expect(counts).toEqual({ DONE: 1_000 });
    expect(rows).toHaveLength(1_000);
    expect(new Set(rows.map((r) => r.event_id)).size).toBe(1_000);
    // Each task was attempted exactly once, by one of the two processes.
    expect(rows.every((r) => r.attempts === 1 && r.error === null && r.locked_until === null)).toBe(true);
    const byA = rows.filter((r) => r.locked_by?.startsWith(a.lockPrefix)).length;
    const byB = rows.filter((r) => r.locked_by?.startsWith(b.lockPrefix)).length;
    expect(byA + byB).toBe(1_000);
    // Both processes took part: NOTIFY woke each of them and SKIP LOCKED split the work.
    expect(byA).toBeGreaterThan(0);
    expect(byB).toBeGreaterThan(0);
  }, 180_000);

  it('kill -9 of a worker in the middle of a batch, then a restart: every task ends DONE', async () => {
    const { db, t } = await database({ SVC_ALLOW_PRIVATE_NETWORKS: 'true' });
    const lease = { SVC_OUTBOX_LEASE_MS: '1000' };
    const first = worker(db.url, lease);
    await first.ready();

    // Hold the first worker in the middle of a batch through the product's own path: a webhook takes
    // these events, and the test holds a lock that blocks the dispatcher's write, so the handler
    // waits with its batch claimed (IN_PROGRESS) until the worker is killed.
    await t.ctx.services.webhooks.create('test', {
      name: 'hold',
      url: 'http://127.0.0.1:9/hook',
      event_types: ['svc.user.created'],
    });
    const locker = new pg.Client({ connectionString: db.url });
    await locker.connect();
    cleanups.push(() => locker.end());
    await locker.query('begin');
    // Blocks inserts (the dispatcher's), not reads (the worker's other queries).
    await locker.query('lock table webhook_event in share row exclusive mode');

    const ids = new Set((await publishMany(t, 50)).map((e) => e.id));
    // The drain's loop waits on that batch, so the rest stay PENDING: the picture is stable.
    const { rows } = await eventually(
      async () => {
        const s = await statusCounts(t, ids);
        return (s.counts.IN_PROGRESS ?? 0) > 0 && s;
      },
      30_000,
      'the worker to hold a batch IN_PROGRESS',
    );
    const held = rows.filter((r) => r.status === 'IN_PROGRESS');
    expect(held.every((r) => r.locked_by?.startsWith(first.lockPrefix))).toBe(true);
    const stuck = held.map((r) => r.id);
    const exited = new Promise((resolve) => first.child.once('exit', resolve));
    first.child.kill('SIGKILL');
    await exited;
    // The killed worker's blocked statement gets its lock, finds its client gone and rolls back.
    await locker.query('rollback');
    const before = await statusCounts(t, ids);
    expect(before.counts.DONE ?? 0).toBeLessThan(ids.size);
    expect(
      before.rows
        .filter((r) => r.status === 'IN_PROGRESS')
        .map((r) => r.id)
        .sort(),
    ).toEqual(stuck.sort());

    // The restart: a new process reaps the expired leases (interruptions, due again at once) and
    // drains the rest.
    const second = worker(db.url, lease);
    await second.ready();
    const after = await eventually(
      async () => {
        const s = await statusCounts(t, ids);
        return s.counts.DONE === ids.size && s;
      },
      60_000,
      'every task DONE after the restart',
    );
    expect(after.counts).toEqual({ DONE: ids.size });
    const stuckSet = new Set(stuck);
    for (const row of after.rows) {
      if (stuckSet.has(row.id)) {
        // The killed attempt was an interruption, not counted; the new process's attempt succeeded.
        expect(row).toMatchObject({ attempts: 1, interruptions: 1, error: null });
        expect(row.locked_by?.startsWith(second.lockPrefix)).toBe(true);
      } else {
        expect(row.attempts).toBe(1);
      }
    }
    // At-least-once upstream, exactly once downstream: the killed worker's blocked write rolled back,
    // and the retry made each event's one delivery.
    const deliveries = await t.ctx.store.db
      .selectFrom('webhook_delivery')
      .select(['event_id'])
      .where('event_id', 'in', [...ids])
      .execute();
    expect(deliveries).toHaveLength(ids.size);
    expect(new Set(deliveries.map((d) => d.event_id)).size).toBe(ids.size);
  }, 240_000);
});

describePg('outbox wake-ups across processes (LISTEN/NOTIFY)', () => {
  let publisher: TestApp | undefined;
  let drainer: TestApp | undefined;
  afterEach(async () => {
    await drainer?.close();
    await publisher?.close();
    drainer = publisher = undefined;
  });

  it('a publish in one process wakes the idle drain of another at once, also after its LISTEN connection drops', async () => {
    publisher = await startTestApp();
    const app = publisher;
    // A second process's worth of services on the same database, running the worker.
    const seen = recorder('seen');
    drainer = await startTestApp({
      databaseUrl: app.ctx.store.url,
      env: { SVC_OUTBOX_DRAIN_INTERVAL_MS: QUIET },
      eventHandlers: [seen.handler],
    });
    const other = drainer;
    const worker = createWorker(other.ctx);
    worker.start();
    const listener = async () =>
      (
        await app.ctx.store.db
          .selectFrom('pg_stat_activity' as never)
          .select(['pid' as never])
          .where('application_name' as never, '=', 'svc-outbox-listener' as never)
          .where('datname' as never, '=', new URL(app.ctx.store.url).pathname.slice(1) as never)
          .execute()
      ).map((r) => (r as { pid: number }).pid);
    try {
      const [firstPid] = await eventually(
        async () => (await listener()).length === 1 && listener(),
        10_000,
        'LISTEN',
      );
      const [one] = await publishMany(app, 1);
      await eventually(async () => seen.calls.some((e) => e.id === one.id), 10_000, 'the first event');

      // Drop the LISTEN connection from the server side; the drain reconnects and hears the next publish.
      await app.ctx.store.db.executeQuery({
        sql: 'select pg_terminate_backend($1)',
        parameters: [firstPid],
      } as never);
      await eventually(
        async () => {
          const pids = await listener();
          return pids.length === 1 && pids[0] !== firstPid;
        },
        15_000,
        'a new LISTEN connection',
      );
      const [two] = await publishMany(app, 1);
      await eventually(async () => seen.calls.some((e) => e.id === two.id), 10_000, 'the second event');
      expect(other.logText()).toContain('outbox: LISTEN connection lost; reconnecting');
    } finally {
      await worker.stop();
    }
    // stop() closed the LISTEN connection.
    expect(await listener()).toEqual([]);
  }, 60_000);

  it('two drains claiming at the same moment get disjoint batches (FOR UPDATE SKIP LOCKED)', async () => {
    publisher = await startTestApp();
    const app = publisher;
    const events = await publishMany(app, 200, 100);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const a = recorder('a');
    const b = recorder('b');
    // Handlers wait at the gate, so both claims are held at once.
    const hold = (r: ReturnType<typeof recorder>) => ({
      name: r.handler.name,
      handle: async (e: Parameters<typeof r.handler.handle>[0]) => {
        await gate;
        await r.handler.handle(e);
      },
    });
    const drainA = anotherDrain(app, [hold(a)], { workerId: 'a' });
    const drainB = anotherDrain(app, [hold(b)], { workerId: 'b' });
    const steps = [drainA.run(), drainB.run()];
    await eventually(
      async () => (await allTasks(app)).filter((r) => r.status === 'IN_PROGRESS').length === 200,
      10_000,
      'both claims',
    );
    release();
    await Promise.all(steps);
    expect(a.calls).toHaveLength(100);
    expect(b.calls).toHaveLength(100);
    const handled = [...a.calls, ...b.calls].map((e) => e.id).sort();
    expect(handled).toEqual(events.map((e) => e.id).sort());
    const rows = (await allTasks(app)).filter((r) => events.some((e) => e.id === r.event_id));
    expect(rows.filter((r) => r.locked_by === 'a')).toHaveLength(100);
    expect(rows.filter((r) => r.locked_by === 'b')).toHaveLength(100);
    expect(rows.every((r) => r.status === 'DONE')).toBe(true);
    await Promise.all([drainA.stop(), drainB.stop()]);
  });
});
