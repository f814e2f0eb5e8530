import pg from 'pg';
import { afterEach, expect, it } from 'vitest';
import { eventually, publishMany } from '../events/helpers.js';
import { startTestApp } from '../helpers/app.js';
import { SvcProcess } from '../helpers/process.js';
import { describePg, freshDatabase } from '../helpers/store.js';

/** Connection strings of the processes under test carry this name, so only their backends are cut. */
const TARGET = 'svc-under-test';
const QUIET = { SVC_OUTBOX_DRAIN_INTERVAL_MS: '600000' }; // progress comes from NOTIFY, not polling

describePg('a lost PostgreSQL connection (backends terminated under load)', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  it('svc serve and svc worker survive, recover without a restart, and LISTEN wake-ups still arrive', async () => {
    const db = await freshDatabase();
    cleanups.push(() => db.drop());
    const t = await startTestApp({ databaseUrl: db.url });
    cleanups.push(() => t.close());
    const url = `${db.url}${db.url.includes('?') ? '&' : '?'}application_name=${TARGET}`;
    // Failed sign-ins are the load on the API: each one writes its attempt count.
    const serve = new SvcProcess('serve', url, {
      ...QUIET,
      SVC_WORKER: 'main',
      SVC_LOGIN_MAX_ATTEMPTS: '1000000',
      SVC_LOGIN_IP_MAX_ATTEMPTS: '1000000',
    });
    const worker = new SvcProcess('worker', url, QUIET);
    cleanups.push(
      () => serve.stop(),
      () => worker.stop(),
    );
    await Promise.all([serve.ready(), worker.ready()]);
    await eventually(async () => worker.output.includes('outbox: listening for notifications'), 30_000);

    const admin = new pg.Client({ connectionString: db.url });
    await admin.connect();
    cleanups.push(() => admin.end());
    const dbName = new URL(db.url).pathname.slice(1);
    const terminate = async () => {
      const res = await admin.query(
        `select pg_terminate_backend(pid) from pg_stat_activity
          where datname = $1 and pid <> pg_backend_pid()
            and (application_name = $2 or application_name = 'svc-outbox-listener')`,
        [dbName, TARGET],
      );
      return res.rowCount ?? 0;
    };

    let published = 0;
    let cut = 0;
    const statuses = new Map<number, number>();
    for (let round = 0; round < 8; round++) {
      // Load on both: events for the drains, requests for the API.
      const events = publishMany(t, 40, 4);
      const requests = Array.from({ length: 10 }, () =>
        fetch(`${serve.address}/api/v1/auth/login/credentials`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ email: 'nobody@example.test', password: 'wrong password' }),
        }).then(
          async (r) => {
            statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
            if (r.status >= 500) expect(await r.json()).toMatchObject({ code: 'STORE.UNAVAILABLE' });
          },
          () => statuses.set(0, (statuses.get(0) ?? 0) + 1),
        ),
      );
      await new Promise((r) => setTimeout(r, 50 + round * 20));
      cut += await terminate();
      await Promise.all([events, ...requests]);
      published += 40;
      expect(serve.alive, serve.output.slice(-6000)).toBe(true);
      expect(worker.alive, worker.output.slice(-6000)).toBe(true);
    }
    expect(cut).toBeGreaterThan(8);
    // Nothing answered 500; a request caught by the cut is 503 STORE.UNAVAILABLE, the rest 401.
    expect([...statuses.keys()].filter((s) => s !== 401 && s !== 503)).toEqual([]);

    // Everything published is processed, with no restart and no polling (the drain interval is 10 min).
    await eventually(
      async () => {
        const row = await t.ctx.store.db
          .selectFrom('event_delivery_task')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('status', '=', 'DONE')
          .executeTakeFirstOrThrow();
        return Number(row.n) >= published;
      },
      60_000,
      'every published event DONE',
    );
    // The LISTEN connections came back: a fresh event after the last cut is drained by NOTIFY alone.
    await eventually(
      async () => (worker.output.match(/listening for notifications/g) ?? []).length >= 2,
      30_000,
    );
    const [late] = await publishMany(t, 1);
    await eventually(
      async () => {
        const row = await t.ctx.store.db
          .selectFrom('event_delivery_task')
          .select('status')
          .where('event_id', '=', late.id)
          .executeTakeFirst();
        return row?.status === 'DONE';
      },
      15_000,
      'the late event DONE through a NOTIFY',
    );
    expect((await fetch(`${serve.address}/readyz`)).status).toBe(200);
    expect(serve.alive && worker.alive).toBe(true);
  }, 180_000);
});
