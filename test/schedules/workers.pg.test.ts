import { afterEach, expect, it } from 'vitest';
import { eventually } from '../events/helpers.js';
import { startTestApp } from '../helpers/app.js';
import { SvcProcess } from '../helpers/process.js';
import { describePg, freshDatabase } from '../helpers/store.js';
import { api } from '../workflows/helpers.js';

/**
 * Three real `svc worker` processes on one PostgreSQL database and a schedule firing every second:
 * each fire time publishes exactly one event, whichever process fires it (docs/schedules.md).
 */
describePg('schedules with three `svc worker` processes', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it('fires every second exactly once across the three processes', async () => {
    const db = await freshDatabase();
    cleanups.push(() => db.drop());
    const t = await startTestApp({ databaseUrl: db.url });
    cleanups.push(() => t.close());
    const workers = [0, 1, 2].map(() => {
      // Polling every 100 ms: each process looks often, so all three race for every fire.
      const w = new SvcProcess('worker', db.url, { SVC_SCHEDULE_POLL_INTERVAL_MS: '100' });
      cleanups.push(() => w.stop());
      return w;
    });
    await Promise.all(workers.map((w) => w.said('outbox: listening for notifications')));
    const a = await api(t);
    expect((await a.call('POST', '/event_definition', { event_type: 'com.example.second' })).status).toBe(
      200,
    );
    const created = await a.call('POST', '/schedule', {
      name: 'every second',
      cron: '* * * * * *',
      event_type: 'com.example.second',
    });
    expect(created.status).toBe(200);
    const fires = () =>
      t.ctx.store.db
        .selectFrom('schedule_fire')
        .select(['fire_time', 'event_id', 'fired_by'])
        .where('schedule_id', '=', created.body.id)
        .orderBy('fire_time')
        .execute();
    await eventually(async () => (await fires()).length >= 6, 30_000, '6 fires');
    expect((await a.call('PATCH', `/schedule/${created.body.id}`, { enabled: false })).status).toBe(200);
    // Let a fire in flight commit, then count.
    await new Promise((r) => setTimeout(r, 500));
    const rows = await fires();
    const events = await t.ctx.store.db
      .selectFrom('event_delivery_task')
      .select(['event_id', 'cloudevent'])
      .where('event_type', '=', 'com.example.second')
      .execute();
    // One event per fire time, each fire time once, consecutive seconds (none skipped, none twice).
    expect(events).toHaveLength(rows.length);
    expect(new Set(events.map((e) => JSON.parse(e.cloudevent).time)).size).toBe(rows.length);
    expect(new Set(rows.map((r) => r.event_id)).size).toBe(rows.length);
    const seconds = rows.map((r) => Date.parse(r.fire_time) / 1000);
    for (let i = 1; i < seconds.length; i++) expect(seconds[i] - seconds[i - 1]).toBe(1);
    // The fires came from the workers (the test app runs none), more than one of them taking part.
    const firers = new Set(rows.map((r) => r.fired_by.split('/')[1]));
    expect([...firers].every((pid) => workers.some((w) => String(w.pid) === pid))).toBe(true);
    expect(firers.size).toBeGreaterThan(1);
  }, 90_000);
});
