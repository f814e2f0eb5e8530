import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScheduleJob } from '../../src/areas/schedules/job.js';
import { createScheduleMetrics } from '../../src/areas/schedules/metrics.js';
import { manualClock } from '../../src/lib/clock.js';
import { outboxEvents } from '../events/helpers.js';
import type { TestApp } from '../helpers/app.js';
import { apiKey } from '../helpers/auth.js';
import { dialectName } from '../helpers/store.js';
import {
  type Api,
  api,
  type Json,
  job,
  runsOf,
  settle,
  startWorkflowApp,
  workflow,
} from '../workflows/helpers.js';

/**
 * Schedules (docs/schedules.md) through HTTP and the real `schedules` job on a test clock: the next
 * fire times in every answer, validation, one event per fire time (also with two jobs racing),
 * catch-up after downtime, DST, and the event running a workflow.
 */
describe(`schedules (${dialectName})`, () => {
  let t: TestApp;
  let a: Api;
  const clock = manualClock(new Date('2026-03-27T10:00:30.000Z'));
  const TYPE = 'com.example.tick';

  beforeAll(async () => {
    ({ t, a } = await startWorkflowApp(clock));
    const created = await a.call('POST', '/event_definition', {
      event_type: TYPE,
      data_schema: { type: 'object', properties: { n: { type: 'integer' } }, additionalProperties: false },
    });
    expect(created.status).toBe(200);
  });
  afterAll(() => t.close());

  const schedule = async (body: Record<string, unknown>) => {
    const res = await a.call('POST', '/schedule', { name: 's', event_type: TYPE, ...body });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body;
  };
  /** The events a schedule published, by fire time. */
  const firedBy = async (id: string): Promise<string[]> => {
    return (await outboxEvents(t, { type: TYPE }))
      .filter((e) => e.subject === id)
      .map((e) => e.time)
      .sort();
  };
  const tick = () => job(t, 'schedules').run();

  it('answers the next 5 fire times, in its time zone', async () => {
    const s = await schedule({ cron: '0 9 * * 1-5', timezone: 'America/New_York', data: { n: 1 } });
    expect(s).toMatchObject({
      cron: '0 9 * * 1-5',
      timezone: 'America/New_York',
      enabled: true,
      catch_up: 'last',
      data: { n: 1 },
      last_fired_at: null,
      last_error: null,
    });
    // Friday 27 March 2026, then the weekdays after; New York is on EDT (UTC-4).
    expect(s.next_fire_times).toEqual([
      '2026-03-27T13:00:00.000Z',
      '2026-03-30T13:00:00.000Z',
      '2026-03-31T13:00:00.000Z',
      '2026-04-01T13:00:00.000Z',
      '2026-04-02T13:00:00.000Z',
    ]);
    expect((await a.call('GET', `/schedule/${s.id}`)).body).toEqual(s);
    const list = await a.call('GET', `/schedule?event_type=${TYPE}&search=s&enabled=true`);
    expect(list.body.schedules.map((x: Json) => x.id)).toContain(s.id);
    const off = await a.call('PATCH', `/schedule/${s.id}`, { enabled: false });
    expect(off.body).toMatchObject({ enabled: false, next_fire_times: [] });
    expect((await a.call('DELETE', `/schedule/${s.id}`)).body).toEqual({ status: 'deleted' });
    expect((await a.call('GET', `/schedule/${s.id}`)).status).toBe(404);
  });

  it('DST: a skipped local time fires after the gap, a repeated one fires once', async () => {
    const spring = await schedule({ cron: '30 2 * * *', timezone: 'Europe/Berlin', enabled: true });
    // 28 March 02:30 CET; 29 March has no 02:30 (02:00 -> 03:00): 03:00 CEST; then 02:30 CEST.
    expect(spring.next_fire_times.slice(0, 3)).toEqual([
      '2026-03-28T01:30:00.000Z',
      '2026-03-29T01:00:00.000Z',
      '2026-03-30T00:30:00.000Z',
    ]);
    const every = await schedule({ cron: '*/30 * * * *', timezone: 'Europe/Berlin' });
    await a.call('DELETE', `/schedule/${spring.id}`);
    await a.call('DELETE', `/schedule/${every.id}`);
    // Autumn: 25 October 2026, 02:30 happens twice (CEST, then CET); the daily schedule fires once.
    const autumnClock = manualClock(new Date('2026-10-24T12:00:00.000Z'));
    const row = {
      cron: '30 2 * * *',
      timezone: 'Europe/Berlin',
    };
    const { cronOf, nextFireTimes } = await import('../../src/areas/schedules/cron.js');
    const times = nextFireTimes(cronOf(row.cron, row.timezone), autumnClock.now(), 3).map((d) =>
      d.toISOString(),
    );
    expect(times).toEqual([
      '2026-10-25T00:30:00.000Z',
      '2026-10-26T01:30:00.000Z',
      '2026-10-27T01:30:00.000Z',
    ]);
  });

  it.each<[string, Record<string, unknown>, string, string]>([
    ['4 fields', { cron: '* * * *' }, 'VALIDATION_ERROR', 'cron'],
    ['a bad field', { cron: '61 * * * *' }, 'VALIDATION_ERROR', 'cron'],
    ['an expression that never fires', { cron: '0 0 31 2 *' }, 'VALIDATION_ERROR', 'cron'],
    ['an unknown time zone', { cron: '* * * * *', timezone: 'Mars/Base' }, 'VALIDATION_ERROR', 'timezone'],
    [
      'an unregistered type',
      { cron: '* * * * *', event_type: 'com.example.tik' },
      'EVENT.UNKNOWN_TYPE',
      'event_type',
    ],
    [
      'a type of svc',
      { cron: '* * * * *', event_type: 'svc.user.created' },
      'EVENT.RESERVED_TYPE',
      'event_type',
    ],
    ['data breaking the schema', { cron: '* * * * *', data: { n: 'x' } }, 'EVENT.INVALID', 'data'],
    ['a bad catch_up', { cron: '* * * * *', catch_up: 'some' }, 'VALIDATION_ERROR', 'catch_up'],
  ])('refuses %s with 400 naming the field', async (_what, body, code, field) => {
    const res = await a.call('POST', '/schedule', { name: 's', event_type: TYPE, ...body });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe(code);
    expect(JSON.stringify(res.body.details)).toContain(field);
  });

  it('writing needs event_subscription:write and workflow:execute together', async () => {
    const one = await apiKey(t, ['event_subscription:write']);
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/schedule',
      headers: one.headers,
      payload: { name: 's', cron: '* * * * *', event_type: TYPE },
    });
    expect(res.statusCode).toBe(403);
    expect(res.json().details).toMatchObject({ mode: 'all' });
  });

  it('fires once per fire time, the event runs a workflow, and a second job racing fires nothing twice', async () => {
    const wf = await workflow(
      a,
      { nodes: [{ key: 'n', type: 'COMPUTE', config: { logic: { var: 'event.data.n' } } }] },
      { event_type: TYPE },
    );
    const s = await schedule({ cron: '* * * * *', data: { n: 7 } });
    expect(s.next_fire_times[0]).toBe('2026-03-27T10:01:00.000Z');
    expect(await tick()).toBe(false);
    expect(await firedBy(s.id)).toEqual([]);
    clock.advance(30_000); // 10:01:00
    const other = createScheduleJob({
      store: t.ctx.store,
      clock,
      log: t.ctx.log,
      publisher: t.ctx.services.events,
      eventTypes: t.ctx.services.events.types,
      metrics: createScheduleMetrics(new Registry(), t.ctx.store, clock),
      pollIntervalMs: 1000,
      wake: () => {},
    });
    await Promise.all([tick(), other.run(), tick(), other.run()]);
    await other.stop?.();
    expect(await firedBy(s.id)).toEqual(['2026-03-27T10:01:00.000Z']);
    const after = (await a.call('GET', `/schedule/${s.id}`)).body;
    expect(after).toMatchObject({ last_fired_at: '2026-03-27T10:01:00.000Z', last_error: null });
    expect(after.next_fire_times[0]).toBe('2026-03-27T10:02:00.000Z');
    await settle(t);
    const runs = await runsOf(a, wf.id);
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ status: 'completed' });
    expect(runs[0].trigger_event).toMatchObject({
      source: '/api/v1/schedule',
      subject: s.id,
      type: TYPE,
      time: '2026-03-27T10:01:00.000Z',
      data: { n: 7 },
    });
    await a.call('DELETE', `/schedule/${s.id}`);
    await a.call('PATCH', `/event_subscription/${wf.id}`, { enabled: false });
  });

  it('after downtime: catch_up none skips what was missed, last fires the latest, all fires each', async () => {
    clock.set(new Date('2026-03-27T12:01:00.000Z'));
    const every5 = (catch_up: string) => schedule({ cron: '*/5 * * * *', catch_up });
    const made = { none: await every5('none'), last: await every5('last'), all: await every5('all') };
    const fired = async () => ({
      none: await firedBy(made.none.id),
      last: await firedBy(made.last.id),
      all: await firedBy(made.all.id),
    });
    // 51 minutes without a worker: 12:05 ... 12:50 were missed, none is less than 60 s late.
    clock.set(new Date('2026-03-27T12:52:10.000Z'));
    await tick();
    const missed = Array.from(
      { length: 10 },
      (_, i) => `2026-03-27T12:${String(5 + 5 * i).padStart(2, '0')}:00.000Z`,
    );
    expect(await fired()).toEqual({ none: [], last: ['2026-03-27T12:50:00.000Z'], all: missed });
    // Later, one step 20 s after 13:00: 12:55 missed, 13:00 on time (fired by every policy).
    clock.set(new Date('2026-03-27T13:00:20.000Z'));
    await tick();
    expect(await fired()).toEqual({
      none: ['2026-03-27T13:00:00.000Z'],
      last: ['2026-03-27T12:50:00.000Z', '2026-03-27T13:00:00.000Z'],
      all: [...missed, '2026-03-27T12:55:00.000Z', '2026-03-27T13:00:00.000Z'],
    });
    for (const s of Object.values(made)) await a.call('DELETE', `/schedule/${s.id}`);
  });

  it('a fire whose event is refused (the type was deleted) publishes nothing and says why', async () => {
    await a.call('POST', '/event_definition', { event_type: 'com.example.doomed' });
    const s = await schedule({ cron: '* * * * *', event_type: 'com.example.doomed' });
    await a.call('DELETE', '/event_definition/com.example.doomed?force=true');
    clock.advance(60_000);
    await tick();
    const after = (await a.call('GET', `/schedule/${s.id}`)).body;
    expect(after.last_error).toContain('com.example.doomed');
    expect(after.last_fired_at).not.toBeNull();
    await a.call('DELETE', `/schedule/${s.id}`);
  });

  it('DST: the job fires a skipped local time right after the gap', async () => {
    // 29 March 2026 in Berlin: 02:00 CET jumps to 03:00 CEST, so 02:30 never happens.
    clock.set(new Date('2026-03-29T00:50:00.000Z'));
    a = await api(t); // a new sign-in on the moved clock
    const s = await schedule({ cron: '30 2 * * *', timezone: 'Europe/Berlin', catch_up: 'none' });
    expect(s.next_fire_times[0]).toBe('2026-03-29T01:00:00.000Z');
    clock.set(new Date('2026-03-29T01:00:05.000Z')); // 03:00:05 CEST
    await tick();
    expect(await firedBy(s.id)).toEqual(['2026-03-29T01:00:00.000Z']);
    expect((await a.call('GET', `/schedule/${s.id}`)).body.next_fire_times[0]).toBe(
      '2026-03-30T00:30:00.000Z',
    );
    await a.call('DELETE', `/schedule/${s.id}`);
  });

  it('/metrics: fires by outcome, how late each was, and how overdue the earliest schedule is', async () => {
    type Family = {
      name: string;
      metrics: Array<{ labels?: Record<string, string>; value?: string; count?: string; sum?: string }>;
    };
    const scrape = async () => {
      const res = await t.app.inject({ method: 'GET', url: '/metrics' });
      const families = parsePrometheusTextFormat(res.body) as Family[];
      return new Map(families.map((f) => [f.name, f.metrics]));
    };
    const published = (m: Map<string, Family['metrics']>) =>
      Number(m.get('svc_schedule_fires_total')?.find((x) => x.labels?.outcome === 'published')?.value ?? 0);
    const before = await scrape();
    clock.set(new Date('2026-04-01T10:00:30.000Z'));
    a = await api(t);
    const s = await schedule({ cron: '* * * * *', catch_up: 'none' });
    clock.set(new Date('2026-04-01T10:01:02.500Z')); // due for 2.5 s, not yet fired
    const due = await scrape();
    expect(Number(due.get('svc_schedule_overdue_seconds')?.[0]?.value)).toBeCloseTo(2.5, 3);
    await tick();
    const after = await scrape();
    expect(published(after)).toBe(published(before) + 1);
    expect(Number(after.get('svc_schedule_overdue_seconds')?.[0]?.value)).toBe(0);
    const lag = (m: Map<string, Family['metrics']>) => m.get('svc_schedule_fire_lag_seconds')?.[0];
    expect(Number(lag(after)?.count) - Number(lag(before)?.count ?? 0)).toBe(1);
    expect(Number(lag(after)?.sum) - Number(lag(before)?.sum ?? 0)).toBeCloseTo(2.5, 3);
    await a.call('DELETE', `/schedule/${s.id}`);
  });
});
