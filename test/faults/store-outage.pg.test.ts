import { afterEach, expect, it } from 'vitest';
import { eventually, publishMany } from '../events/helpers.js';
import { startTestApp } from '../helpers/app.js';
import { apiKey } from '../helpers/auth.js';
import { SvcProcess } from '../helpers/process.js';
import { describePg, freshDatabase } from '../helpers/store.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';

/**
 * PostgreSQL going away and coming back, as `svc serve` sees it (#21 item 3): its connections go
 * through a proxy the test cuts and refuses for a few seconds, while the server itself (shared by
 * the suite) stays up. The test's own app writes to the database directly all the while.
 */
describePg('a PostgreSQL outage (the store gone for seconds, then back)', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  it('answers 503 while the store is gone or hangs, recovers by itself, loses nothing, and LISTEN comes back', async () => {
    const db = await freshDatabase();
    cleanups.push(() => db.drop());
    const t = await startTestApp({ databaseUrl: db.url });
    cleanups.push(() => t.close());
    const pgUrl = new URL(db.url);
    const proxy = await new TcpProxy({ host: pgUrl.hostname, port: Number(pgUrl.port || 5432) }).up();
    cleanups.push(() => proxy.down());
    // Progress must come from NOTIFY (and the catch-up after LISTEN returns), not from polling.
    const serve = new SvcProcess('serve', proxy.route(db.url), {
      SVC_WORKER: 'main',
      SVC_OUTBOX_DRAIN_INTERVAL_MS: '600000',
    });
    cleanups.push(() => serve.stop());
    await serve.ready();
    await serve.said('outbox: listening for notifications');
    const key = await apiKey(t, ['folder:write']);
    const write = async (name: string) => {
      const res = await fetch(`${serve.address}/api/v1/folder`, {
        method: 'POST',
        headers: { ...key.headers, 'content-type': 'application/json' },
        body: JSON.stringify({ name }),
        signal: AbortSignal.timeout(15_000),
      });
      return { status: res.status, retryAfter: res.headers.get('retry-after'), body: await res.json() };
    };
    const ready = async () =>
      (await fetch(`${serve.address}/readyz`, { signal: AbortSignal.timeout(15_000) })).status;

    expect((await write('before')).status).toBe(200);
    const before = await publishMany(t, 20);

    await proxy.down();
    // The store is gone: /readyz says so, writes answer 503 STORE.UNAVAILABLE with Retry-After, at once.
    expect(await ready()).toBe(503);
    const during = await Promise.all(Array.from({ length: 10 }, (_, i) => write(`during ${i}`)));
    for (const answer of during) {
      expect(answer.status).toBe(503);
      expect(answer.body).toMatchObject({ code: 'STORE.UNAVAILABLE' });
      expect(Number(answer.retryAfter)).toBeGreaterThan(0);
    }
    // Events committed while svc cannot see the store (the test app writes directly).
    const whileDown = await publishMany(t, 20);
    await new Promise((r) => setTimeout(r, 2_000));
    expect(serve.alive, serve.output.slice(-4000)).toBe(true);

    await proxy.up();
    await eventually(async () => (await ready()) === 200, 30_000, '/readyz 200 again');
    expect((await write('after')).status).toBe(200);
    // Nothing committed is lost: every event, before and during the outage, is drained with polling
    // off, so the listener came back and caught up.
    const ids = [...before, ...whileDown].map((e) => e.id);
    const done = async (eventIds: string[]) => {
      const rows = await t.ctx.store.db
        .selectFrom('event_delivery_task')
        .select('status')
        .where('event_id', 'in', eventIds)
        .execute();
      return rows.length === eventIds.length && rows.every((r) => r.status === 'DONE');
    };
    await eventually(() => done(ids), 30_000, 'every event DONE after the outage');
    // Wake-ups arrive again: one more event is drained through a NOTIFY alone.
    const [late] = await publishMany(t, 1);
    await eventually(() => done([late.id]), 15_000, 'a late event DONE through NOTIFY');
    expect(serve.output.match(/listening for notifications/g)?.length).toBeGreaterThanOrEqual(2);

    // A store that accepts connections and never answers: a clean 503 once the connect timeout
    // (5 s) passes, not a request held forever; then back again.
    await proxy.stall();
    const started = Date.now();
    const hung = await write('hung');
    expect(hung.status).toBe(503);
    expect(hung.body).toMatchObject({ code: 'STORE.UNAVAILABLE' });
    expect(Date.now() - started).toBeLessThan(12_000);
    expect(await ready()).toBe(503);
    await proxy.up();
    await eventually(async () => (await ready()) === 200, 30_000, '/readyz 200 after the stall');
    expect((await write('last')).status).toBe(200);

    // The acknowledged folders are there; none of the refused ones.
    const folders = await t.ctx.store.db.selectFrom('folder').select('name').execute();
    expect(folders.map((f) => f.name).sort()).toEqual(['after', 'before', 'last']);
    expect(serve.alive).toBe(true);
  }, 120_000);
});
