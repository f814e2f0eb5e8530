import pg from 'pg';
import { expect } from 'vitest';
import type { Tx } from '../../src/db/store.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { admin, type TestPrincipal } from '../helpers/auth.js';

/** Shared set-up of the enrollment and submission suites, all through HTTP. */

export const api = (path: string) => `/api/v1${path}`;

export async function call(
  t: TestApp,
  who: { headers: Record<string, string> } | null,
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
  path: string,
  payload?: unknown,
) {
  const res = await t.app.inject({
    method,
    url: api(path),
    headers: who?.headers ?? {},
    ...(payload === undefined ? {} : { payload: payload as object }),
  });
  return { status: res.statusCode, body: res.body ? res.json() : undefined };
}

/** A questionnaire created (and, unless `status` says otherwise, published) by an admin over HTTP. */
export async function questionnaire(
  t: TestApp,
  by: TestPrincipal,
  opts: {
    payload?: Record<string, unknown>;
    status?: 'DRAFT' | 'PUBLISHED' | 'ARCHIVED';
    name?: string;
    /** Users granted VIEW on it (restricted providers see only what they are granted). */
    viewers?: string[];
    /** Users granted EDIT on it (what a restricted provider needs to enroll into it or change records of it). */
    editors?: string[];
    /** The folder to create it in (default: the root). */
    folder_id?: string;
    /** Its own config layer (docs/platform.md "Config"). */
    config?: Record<string, unknown>;
  } = {},
): Promise<{ id: string; name: string }> {
  const name = opts.name ?? `Q ${Math.random().toString(36).slice(2, 8)}`;
  const created = await call(t, by, 'POST', '/questionnaire', {
    name,
    payload: opts.payload ?? {},
    ...(opts.folder_id ? { folder_id: opts.folder_id } : {}),
    ...(opts.config ? { config: opts.config } : {}),
  });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  const id = created.body.id as string;
  for (const [level, users] of [
    ['VIEW', opts.viewers],
    ['EDIT', opts.editors],
  ] as const) {
    for (const userId of users ?? []) await grant(t, by, { questionnaire_id: id, user_id: userId, level });
  }
  const status = opts.status ?? 'PUBLISHED';
  if (status !== 'DRAFT') {
    const pub = await call(t, by, 'POST', `/questionnaire/${id}/publish`);
    expect(pub.status, JSON.stringify(pub.body)).toBe(200);
  }
  if (status === 'ARCHIVED') {
    const arch = await call(t, by, 'POST', `/questionnaire/${id}/archive`);
    expect(arch.status, JSON.stringify(arch.body)).toBe(200);
  }
  return { id, name };
}

/** A folder or questionnaire grant made over HTTP (`folder_id` or `questionnaire_id`, `user_id` or `role_id`). */
/** An enrollment of `userId` into `questionnaireIds` by `by`, with no consent step (200 checked). */
export async function enrolled(
  t: TestApp,
  by: TestPrincipal,
  userId: string,
  questionnaireIds: string[],
): Promise<{ id: string }> {
  const e = await call(t, by, 'POST', '/enrollment', {
    user_id: userId,
    questionnaire_ids: questionnaireIds,
    consent_required: false,
  });
  expect(e.status, JSON.stringify(e.body)).toBe(200);
  return e.body as { id: string };
}

export async function grant(
  t: TestApp,
  by: TestPrincipal,
  body: {
    folder_id?: string;
    questionnaire_id?: string;
    user_id?: string;
    role_id?: string;
    level: 'VIEW' | 'EDIT' | 'MANAGE';
  },
): Promise<{ id: string }> {
  const path = body.folder_id ? '/folder_permission' : '/questionnaire_permission';
  const res = await call(t, by, 'POST', path, body);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

export async function adminOf(t: TestApp) {
  return admin(t);
}

/** A CloudEvent as stored, read loosely by tests. */
// biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary event data
export type CloudEventJson = Record<string, any>;

/** Every event the store's outbox holds of `type`, oldest first, as CloudEvents. */
export async function eventsOf(t: TestApp, type: string): Promise<CloudEventJson[]> {
  const rows = await t.ctx.store.db
    .selectFrom('event_delivery_task')
    .select(['cloudevent'])
    .where('event_type', '=', type)
    .orderBy('created_at')
    .execute();
  // One CloudEvent may back several delivery tasks: keep each event once.
  const seen = new Set<string>();
  const out: CloudEventJson[] = [];
  for (const r of rows) {
    const e = JSON.parse(r.cloudevent) as CloudEventJson;
    if (seen.has(e.id)) continue;
    seen.add(e.id);
    out.push(e);
  }
  return out;
}

/**
 * Runs `between` once, just before the app's next write transaction starts: a change that commits
 * after a request's checks made outside its transaction (if any) and before its write, which makes
 * such a race deterministic. Answers whether it has fired. Tests using it make one request at a time.
 */
export function beforeNextWrite(t: TestApp, between: () => Promise<void>): () => boolean {
  const store = t.ctx.store;
  const original = store.transaction;
  let fired = false;
  store.transaction = async <T>(fn: (tx: Tx) => Promise<T>): Promise<T> => {
    store.transaction = original;
    fired = true;
    await between();
    return (await original.call(store, fn)) as T;
  };
  return () => fired;
}

/**
 * PostgreSQL: resolves once at least `n` other sessions of this database wait for a lock (requests
 * blocked behind a test's open transaction, or behind each other). Polls pg_stat_activity.
 */
export async function lockWaiters(client: pg.Client, n: number, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { rows } = await client.query(
      `select count(*)::int as waiting from pg_stat_activity
        where datname = current_database() and pid <> pg_backend_pid() and wait_event_type = 'Lock'`,
    );
    if (rows[0].waiting >= n) return;
    if (Date.now() > deadline) throw new Error(`fewer than ${n} sessions waiting for a lock`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * The lock suites' start (PostgreSQL): an app, an admin, and a raw session of the test's own that holds
 * row locks from outside the app while it writes.
 */
export async function startWithRawSession(): Promise<{
  t: TestApp;
  boss: TestPrincipal;
  raw: pg.Client;
  close(): Promise<void>;
}> {
  const t = await startTestApp();
  const boss = await admin(t);
  const raw = new pg.Client({ connectionString: t.ctx.store.url });
  await raw.connect();
  return {
    t,
    boss,
    raw,
    async close() {
      await raw.end();
      await t.close();
    },
  };
}
