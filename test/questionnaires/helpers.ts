import type { Clock } from '../../src/lib/clock.js';
import type { TestApp } from '../helpers/app.js';

/** Helpers of the questionnaire catalogue tests: HTTP calls with a principal, and the events written. */

export type Headers = { authorization: string };

// biome-ignore lint/suspicious/noExplicitAny: response bodies in tests are untyped JSON, asserted field by field
export type Json = any;

export function api(t: TestApp, headers: Headers) {
  const call = async (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown) => {
    const res = await t.app.inject({
      method,
      url: `/api/v1${url}`,
      headers,
      ...(payload !== undefined ? { payload: payload as object } : {}),
    });
    let body: Json;
    try {
      body = res.json();
    } catch {
      body = res.body;
    }
    return { status: res.statusCode, body };
  };
  return {
    get: (url: string) => call('GET', url),
    post: (url: string, payload?: unknown) => call('POST', url, payload),
    patch: (url: string, payload: unknown) => call('PATCH', url, payload),
    delete: (url: string) => call('DELETE', url),
  };
}

export type Api = ReturnType<typeof api>;

/** Every event written to the outbox, oldest first, optionally of one type. */
export async function events(t: TestApp, type?: string): Promise<Array<Record<string, Json>>> {
  let q = t.ctx.store.db.selectFrom('event_delivery_task').select(['cloudevent', 'created_at']);
  if (type) q = q.where('event_type', '=', type);
  const rows = await q.orderBy('created_at').execute();
  return rows.map((r) => JSON.parse(r.cloudevent));
}

/** Asserts a 2xx and answers the body (a failing call shows its body in the message). */
export function ok<T = Json>(res: { status: number; body: Json }, status = 200): T {
  if (res.status !== status)
    throw new Error(`expected ${status}, got ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body as T;
}

/**
 * A clock that moves 1 ms forward on every reading (and jumps with `advance`): timestamps of
 * successive changes always differ, so ordering by time is the order things happened.
 */
export function tickingClock(start = Date.now()): Clock & { advance(ms: number): void } {
  let current = start;
  return {
    now: () => new Date(++current),
    advance(ms: number) {
      current += ms;
    },
  };
}
