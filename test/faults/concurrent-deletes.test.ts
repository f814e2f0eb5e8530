import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { admin, type TestPrincipal } from '../helpers/auth.js';
import { dialectName } from '../helpers/store.js';

/**
 * A soft delete is a conditional update whose row count decides 200 or 404: of 20 parallel DELETEs of
 * one record, exactly one succeeds (and publishes its one event); the other 19 are 404. On PostgreSQL
 * the losers wait on the row and then match nothing; on SQLite writes are serialised.
 */
describe(`concurrent deletes of one record (${dialectName})`, () => {
  let t: TestApp;
  let boss: TestPrincipal;
  beforeAll(async () => {
    t = await startTestApp({ env: { SVC_ALLOW_PRIVATE_NETWORKS: 'true' } });
    boss = await admin(t);
  });
  afterAll(() => t.close());

  const call = async (method: 'POST' | 'DELETE', url: string, payload?: object) => {
    const res = await t.app.inject({ method, url: `/api/v1${url}`, headers: boss.headers, payload });
    return { status: res.statusCode, body: res.body ? res.json() : undefined };
  };
  const create = async (url: string, payload: object): Promise<string> => {
    const res = await call('POST', url, payload);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.id;
  };
  const deleteTwenty = async (url: string) => {
    const results = await Promise.all(Array.from({ length: 20 }, () => call('DELETE', url)));
    // Success is 200 with the record, or 204 where the specification says so (plugin instances).
    return results.map((r) => (r.status === 204 ? 200 : r.status)).sort();
  };
  const eventsOf = async (type: string, subject: string) =>
    (
      await t.ctx.store.db
        .selectFrom('event_delivery_task')
        .select('id')
        .where('event_type', '=', type)
        .where('cloudevent', 'like', `%"subject":"${subject}"%`)
        .execute()
    ).length;
  const once = [200, ...Array(19).fill(404)];

  it('users: one 200, nineteen 404, one svc.user.deleted', async () => {
    const id = await create('/user', { email: 'doomed@example.test', password: 'a long password' });
    expect(await deleteTwenty(`/user/${id}`)).toEqual(once);
    expect(await eventsOf('svc.user.deleted', id)).toBe(1);
  });

  it('roles, role-scope grants and user roles', async () => {
    const role = await create('/role', { key: 'doomed', name: 'Doomed' });
    const grant = await create('/role_scope_entry', { role_id: role, scope_key: 'user:read' });
    expect(await deleteTwenty(`/role_scope_entry/${grant}`)).toEqual(once);
    const user = await create('/user', { email: 'holder@example.test', password: 'a long password' });
    const assignment = await create('/user_role', { user_id: user, role_id: role });
    expect(await deleteTwenty(`/user_role/${assignment}`)).toEqual(once);
    expect(await deleteTwenty(`/role/${role}`)).toEqual(once);
  });

  it('vault entries, plugin instances, webhooks and subscriptions', async () => {
    const entry = await create('/vault_entry', { key: 'DOOMED', kind: 'SECRET', value: 'x' });
    expect(await deleteTwenty(`/vault_entry/${entry}`)).toEqual(once);
    const defs = await t.app.inject({
      method: 'GET',
      url: '/api/v1/plugin_definition?name=core',
      headers: boss.headers,
    });
    const instance = await create('/plugin_instance', {
      plugin_definition_id: defs.json().plugin_definitions[0].id,
      display_name: 'doomed',
      enabled: true,
    });
    expect(await deleteTwenty(`/plugin_instance/${instance}`)).toEqual(once);
    const hook = await create('/webhook', {
      name: 'doomed',
      url: 'http://127.0.0.1:9/h',
      event_types: ['*'],
    });
    expect(await deleteTwenty(`/webhook/${hook}`)).toEqual(once);
    const sub = await create('/event_subscription', { name: 'doomed', event_type: 'svc.user.created' });
    expect(await deleteTwenty(`/event_subscription/${sub}`)).toEqual(once);
  });

  it('folders (one svc.folder.deleted) and folder permissions', async () => {
    const folder = await create('/folder', { name: 'doomed' });
    const grantee = await create('/user', { email: 'viewer@example.test', password: 'a long password' });
    const permission = await create('/folder_permission', {
      folder_id: folder,
      user_id: grantee,
      level: 'VIEW',
    });
    expect(await deleteTwenty(`/folder_permission/${permission}`)).toEqual(once);
    expect(await deleteTwenty(`/folder/${folder}`)).toEqual(once);
    expect(await eventsOf('svc.folder.deleted', folder)).toBe(1);
  });
});
