import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../../src/lib/clock.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { apiKey, principal, type TestApiKey } from '../helpers/auth.js';
import { dialectName } from '../helpers/store.js';
import { outboxJob, publishMany } from './helpers.js';

const HOUR = 3_600_000;
const T0 = new Date('2026-03-01T00:00:00.000Z');
const at = (ms: number) => new Date(T0.getTime() + ms).toISOString();

describe(`GET /event_delivery_task (${dialectName})`, () => {
  let t: TestApp;
  // An API key: it outlives the hours this test moves the clock by (access tokens would expire).
  let reader: TestApiKey;
  /** Event ids by name: R (the reader's own user.created), A, B, C. */
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    const clock = manualClock(T0);
    // The drain's extra handler fails B only (ids.B is set below, before B is drained).
    t = await startTestApp({
      clock,
      eventHandlers: [
        {
          name: 'picky',
          handle: async (events) =>
            new Map(events.filter((e) => e.id === ids.B).map((e) => [e.id, new Error('B is not welcome')])),
        },
      ],
    });
    // T0: making the reader's creator publishes svc.user.created (R); drained at once: DONE at T0.
    reader = await apiKey(t, ['event_subscription:read']);
    await outboxJob(t).run();
    // T0+1h: A, drained: DONE at T0+1h.
    clock.advance(HOUR);
    [{ id: ids.A }] = await publishMany(t, 1);
    await outboxJob(t).run();
    // T0+2h: B, whose handler fails: PENDING again, next attempt at T0+2h+5s.
    clock.advance(HOUR);
    [{ id: ids.B }] = await publishMany(t, 1);
    await outboxJob(t).run();
    // T0+3h: C, not drained: PENDING, due at T0+3h.
    clock.advance(HOUR);
    [{ id: ids.C }] = await publishMany(t, 1);
    const all = await list('?sort_by=created_at&sort_dir=asc');
    ids.R = all.tasks[0].event_id;
  });
  afterAll(() => t.close());

  async function list(query: string, headers: Record<string, string> = reader.headers) {
    const res = await t.app.inject({ method: 'GET', url: `/api/v1/event_delivery_task${query}`, headers });
    expect(res.statusCode, res.body).toBe(200);
    return res.json();
  }
  const names = (body: { tasks: Array<{ event_id: string }> }) =>
    body.tasks.map((task) => Object.keys(ids).find((k) => ids[k] === task.event_id));

  it('lists tasks under `tasks`, newest first, with the envelope and the full CloudEvent', async () => {
    const body = await list('');
    expect(body).toMatchObject({ total: 4, limit: 25, offset: 0, has_next: false, has_previous: false });
    expect(names(body)).toEqual(['C', 'B', 'A', 'R']);
    const b = body.tasks[1];
    expect(b).toEqual({
      id: expect.any(String),
      event_id: ids.B,
      event_type: 'svc.user.created',
      cloudevent: expect.objectContaining({ id: ids.B, type: 'svc.user.created', time: at(2 * HOUR) }),
      target: 'local-handlers',
      status: 'PENDING',
      error: 'picky: B is not welcome',
      attempts: 1,
      max_attempts: 3,
      interruptions: 0,
      next_attempt_at: at(2 * HOUR + 5_000),
      locked_until: null,
      locked_by: null,
      done_at: null,
      created_at: at(2 * HOUR),
      updated_at: at(2 * HOUR),
    });
  });

  it.each([
    ['?status=DONE', ['A', 'R']],
    ['?status=PENDING', ['C', 'B']],
    ['?status=FAILED', []],
    ['?status=IN_PROGRESS', []],
    ['?target=local-handlers', ['C', 'B', 'A', 'R']],
    ['?target=webhooks', []],
    [`?created_at_gte=${at(HOUR)}`, ['C', 'B', 'A']],
    [`?created_at_lte=${at(HOUR)}`, ['A', 'R']],
    [`?created_at_gte=${at(HOUR)}&created_at_lte=${at(2 * HOUR)}`, ['B', 'A']],
    // Any RFC 3339 offset is accepted and compared as the instant it names.
    [`?created_at_gte=${encodeURIComponent('2026-03-01T02:00:00+01:00')}`, ['C', 'B', 'A']],
    [`?next_attempt_at_gte=${at(2 * HOUR)}`, ['C', 'B']],
    [`?next_attempt_at_lte=${at(2 * HOUR + 5_000)}`, ['B', 'A', 'R']],
    [`?next_attempt_at_gte=${at(2 * HOUR + 5_001)}&next_attempt_at_lte=${at(3 * HOUR)}`, ['C']],
    [`?done_at_gte=${at(HOUR)}`, ['A']],
    [`?done_at_lte=${at(0)}`, ['R']],
    [`?status=PENDING&created_at_lte=${at(2 * HOUR)}`, ['B']],
  ])('filters %s', async (query, expected) => {
    const body = await list(query);
    expect(names(body)).toEqual(expected);
    expect(body.total).toBe(expected.length);
  });

  it('sorts by any allowed column, both ways, and pages', async () => {
    expect(names(await list('?sort_by=created_at&sort_dir=asc'))).toEqual(['R', 'A', 'B', 'C']);
    expect(names(await list('?sort_by=next_attempt_at&sort_dir=desc'))).toEqual(['C', 'B', 'A', 'R']);
    expect(names(await list('?sort_by=attempts&sort_dir=asc')).at(0)).toBe('C');
    expect(names(await list('?sort_by=done_at&sort_dir=desc&status=DONE'))).toEqual(['A', 'R']);
    const first = await list('?sort_by=created_at&sort_dir=asc&limit=3');
    expect(first).toMatchObject({ total: 4, has_next: true, has_previous: false });
    const second = await list('?sort_by=created_at&sort_dir=asc&limit=3&offset=3');
    expect(second).toMatchObject({ total: 4, has_next: false, has_previous: true });
    expect([...names(first), ...names(second)]).toEqual(['R', 'A', 'B', 'C']);
  });

  it.each([
    ['?status=done', 'status'],
    ['?created_at_gte=yesterday', 'created_at_gte'],
    ['?done_at_lte=2026-13-01T00:00:00Z', 'done_at_lte'],
    ['?sort_by=cloudevent', 'sort_by'],
    ['?sort_dir=up', 'sort_dir'],
    ['?limit=251', 'limit'],
    ['?offset=-1', 'offset'],
    ['?event=1', 'event'],
  ])('rejects %s with 400 naming %s', async (query, field) => {
    const res = await t.app.inject({
      method: 'GET',
      url: `/api/v1/event_delivery_task${query}`,
      headers: reader.headers,
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: 'VALIDATION_ERROR', details: { field } });
  });

  it('names the allowed values of an unsupported sort_by', async () => {
    const res = await t.app.inject({
      method: 'GET',
      url: '/api/v1/event_delivery_task?sort_by=id',
      headers: reader.headers,
    });
    expect(res.json().details.allowed_values).toEqual([
      'created_at',
      'updated_at',
      'next_attempt_at',
      'done_at',
      'status',
      'attempts',
      'event_type',
    ]);
  });

  it('needs authentication and event_subscription:read', async () => {
    const anonymous = await t.app.inject({ method: 'GET', url: '/api/v1/event_delivery_task' });
    expect(anonymous.statusCode).toBe(401);
    expect(anonymous.json().code).toBe('AUTH.UNAUTHENTICATED');
    const writer = await principal(t, ['event_subscription:write', 'workflow:read']);
    const res = await t.app.inject({
      method: 'GET',
      url: '/api/v1/event_delivery_task',
      headers: writer.headers,
    });
    expect(res.statusCode).toBe(403);
    expect(res.json()).toMatchObject({
      code: 'AUTH.FORBIDDEN',
      details: { required_scopes: ['event_subscription:read'], mode: 'any' },
    });
  });
});
