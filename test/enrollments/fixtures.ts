import { expect } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import { admin, type TestPrincipal } from '../helpers/auth.js';

/** Shared set-up of the enrollment and submission suites, all through HTTP. */

export const api = (path: string) => `/api/v1${path}`;

export async function call(
  t: TestApp,
  who: { headers: Record<string, string> } | null,
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
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
  } = {},
): Promise<{ id: string; name: string }> {
  const name = opts.name ?? `Q ${Math.random().toString(36).slice(2, 8)}`;
  const created = await call(t, by, 'POST', '/questionnaire', {
    name,
    payload: opts.payload ?? {},
    ...(opts.folder_id ? { folder_id: opts.folder_id } : {}),
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
