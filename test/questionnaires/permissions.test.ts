import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { admin, principal, userWithRoles } from '../helpers/auth.js';
import { dialectName } from '../helpers/store.js';
import { type Api, api, type Json, ok, tickingClock } from './helpers.js';

/**
 * docs/platform.md "Permissions": admins and integrations see everything; anyone else (providers,
 * custom roles) sees and changes only what is granted to them or their roles, directly or through a
 * folder above, at VIEW < EDIT < MANAGE.
 */
describe(`folder and questionnaire permissions (${dialectName})`, () => {
  let t: TestApp;
  let a: Api;
  // Tree: A > B > C; qA in A, qB in B, qC in C, qRoot at the root.
  let A: Json, B: Json, C: Json, qA: Json, qB: Json, qC: Json, qRoot: Json;
  beforeAll(async () => {
    t = await startTestApp({ clock: tickingClock() });
    a = api(t, (await admin(t)).headers);
    A = ok(await a.post('/folder', { name: 'A' }));
    B = ok(await a.post('/folder', { name: 'B', parent_id: A.id }));
    C = ok(await a.post('/folder', { name: 'C', parent_id: B.id }));
    qA = ok(await a.post('/questionnaire', { name: 'qA', folder_id: A.id }));
    qB = ok(await a.post('/questionnaire', { name: 'qB', folder_id: B.id }));
    qC = ok(await a.post('/questionnaire', { name: 'qC', folder_id: C.id }));
    qRoot = ok(await a.post('/questionnaire', { name: 'qRoot' }));
  });
  afterAll(() => t.close());

  const ids = (rows: Array<{ id: string }>) => rows.map((r) => r.id).sort();
  const provider = async () => {
    const p = await userWithRoles(t, ['provider']);
    return { ...p, api: api(t, p.headers) };
  };
  const grantFolder = async (folder_id: string, who: { user_id?: string; role_id?: string }, level: string) =>
    ok(await a.post('/folder_permission', { folder_id, ...who, level }));

  it('a provider without grants sees nothing and gets 404s', async () => {
    const p = await provider();
    expect(ok(await p.api.get('/questionnaire')).total).toBe(0);
    expect(ok(await p.api.get('/folder')).total).toBe(0);
    expect(ok(await p.api.get('/folder/tree?include_questionnaires=true'))).toEqual({
      folders: [],
      questionnaires: [],
    });
    for (const url of [
      `/questionnaire/${qA.id}`,
      `/questionnaire/${qA.id}/revision`,
      `/folder/${A.id}`,
      `/config/folder/${A.id}`,
    ]) {
      expect((await p.api.get(url)).status, url).toBe(404);
    }
    expect((await p.api.patch(`/questionnaire/${qA.id}`, { name: 'x' })).status).toBe(404);
    expect((await p.api.post('/questionnaire', { name: 'x', folder_id: A.id })).body.code).toBe(
      'FOLDER.NOT_FOUND',
    );
  });

  it('admins and integrations are not narrowed', async () => {
    for (const role of ['admin', 'integration']) {
      const u = api(t, (await userWithRoles(t, [role])).headers);
      const all = ok(await u.get('/questionnaire?limit=250'));
      expect(ids(all.questionnaires)).toEqual(expect.arrayContaining(ids([qA, qB, qC, qRoot])));
      ok(await u.get(`/folder/${C.id}`));
    }
  });

  it('a VIEW grant on a folder shows it, everything below it, and nothing above', async () => {
    const p = await provider();
    const grant = await grantFolder(B.id, { user_id: p.userId }, 'VIEW');
    expect(grant).toMatchObject({ folder_id: B.id, user_id: p.userId, role_id: null, level: 'VIEW' });
    expect(ids(ok(await p.api.get('/questionnaire')).questionnaires)).toEqual(ids([qB, qC]));
    expect(ids(ok(await p.api.get('/folder')).folders)).toEqual(ids([B, C]));
    ok(await p.api.get(`/questionnaire/${qC.id}`));
    ok(await p.api.get(`/questionnaire/${qC.id}/revision`));
    expect((await p.api.get(`/questionnaire/${qA.id}`)).status).toBe(404);
    expect((await p.api.get(`/folder/${A.id}`)).status).toBe(404);

    // The tree starts at the highest visible folder; its parent stays named but is not shown.
    const tree = ok(await p.api.get('/folder/tree?include_questionnaires=true'));
    expect(tree.folders.map((f: Json) => f.id)).toEqual([B.id]);
    expect(tree.folders[0].parent_id).toBe(A.id);
    expect(tree.folders[0].questionnaires.map((q: Json) => q.id)).toEqual([qB.id]);
    expect(tree.folders[0].children[0].questionnaires.map((q: Json) => q.id)).toEqual([qC.id]);
    expect(tree.questionnaires).toEqual([]);

    // VIEW is not EDIT: visible but refused with 403 PERMISSION.DENIED.
    expect(await p.api.patch(`/questionnaire/${qB.id}`, { name: 'renamed' })).toMatchObject({
      status: 403,
      body: { code: 'PERMISSION.DENIED', details: { required_level: 'EDIT', level: 'VIEW' } },
    });
    expect((await p.api.post('/questionnaire', { name: 'x', folder_id: C.id })).status).toBe(403);
    expect((await p.api.post(`/questionnaire/${qB.id}/publish`)).status).toBe(403);
    expect((await p.api.patch(`/folder/${B.id}`, { name: 'B2' })).status).toBe(403);
    // Forking needs only VIEW on the source, and EDIT where the fork goes.
    expect((await p.api.post(`/questionnaire/${qB.id}/fork`)).status).toBe(403);
    const fork = ok(await p.api.post(`/questionnaire/${qB.id}/fork`, { folder_id: null, name: 'my fork' }));
    expect(fork).toMatchObject({ folder_id: null, lineage_root_id: qB.id });
    ok(await p.api.get(`/questionnaire/${fork.id}`));
  });

  it('EDIT allows changes and creation inside; MANAGE allows publish, archive, delete, restore and moves', async () => {
    const p = await provider();
    const grant = await grantFolder(C.id, { user_id: p.userId }, 'EDIT');
    const edited = ok(await p.api.patch(`/questionnaire/${qC.id}`, { payload: { edited: true } }));
    expect(edited.payload).toEqual({ edited: true });
    const made = ok(await p.api.post('/questionnaire', { name: 'made in C', folder_id: C.id }));
    const sub = ok(await p.api.post('/folder', { name: 'sub of C', parent_id: C.id }));
    expect((await p.api.post(`/questionnaire/${made.id}/publish`)).status).toBe(200); // creator holds MANAGE
    expect(await p.api.post(`/questionnaire/${qC.id}/publish`)).toMatchObject({
      status: 403,
      body: { details: { required_level: 'MANAGE', level: 'EDIT' } },
    });
    expect((await p.api.delete(`/questionnaire/${qC.id}`)).status).toBe(403);
    expect((await p.api.patch(`/questionnaire/${qC.id}`, { folder_id: sub.id })).status).toBe(403);
    expect((await p.api.delete(`/folder/${C.id}`)).status).toBe(403);

    // Raising one's own grant needs MANAGE already: refused, so the admin does it.
    expect((await p.api.patch(`/folder_permission/${grant.id}`, { level: 'MANAGE' })).status).toBe(403);
    ok(await a.patch(`/folder_permission/${grant.id}`, { level: 'MANAGE' }));
    ok(await p.api.post(`/questionnaire/${qC.id}/publish`));
    ok(await p.api.post(`/questionnaire/${qC.id}/archive`));
    const tmp = ok(await p.api.post('/questionnaire', { name: 'temp', folder_id: C.id }));
    ok(await p.api.delete(`/questionnaire/${tmp.id}`));
    expect(ids(ok(await p.api.get('/questionnaire/deleted')).questionnaires)).toEqual([tmp.id]);
    ok(await p.api.post(`/questionnaire/${tmp.id}/restore`));
    ok(await p.api.patch(`/questionnaire/${tmp.id}`, { folder_id: sub.id }));
    // Moving out to a folder without EDIT there is refused (A is not visible: 404).
    expect((await p.api.patch(`/questionnaire/${tmp.id}`, { folder_id: A.id })).status).toBe(404);
    expect((await p.api.patch(`/folder/${sub.id}`, { parent_id: A.id })).status).toBe(404);
  });

  it('role grants apply to every holder of the role', async () => {
    const role = await t.ctx.services.identity.createRole('test', {
      key: 'study_nurse',
      name: 'Study nurse',
    });
    const p = await provider();
    await t.ctx.services.identity.assignRole('test', { user_id: p.userId, role_id: role.id });
    const grant = await grantFolder(A.id, { role_id: role.id }, 'EDIT');
    expect(grant).toMatchObject({ role_id: role.id, user_id: null, level: 'EDIT' });
    expect(ids(ok(await p.api.get('/questionnaire?limit=250')).questionnaires)).toEqual(
      expect.arrayContaining(ids([qA, qB, qC])),
    );
    ok(await p.api.patch(`/questionnaire/${qA.id}`, { description: 'by role' }));
    const other = await provider();
    expect((await other.api.get(`/questionnaire/${qA.id}`)).status).toBe(404);
    ok(await a.delete(`/folder_permission/${grant.id}`));
    expect((await p.api.get(`/questionnaire/${qA.id}`)).status).toBe(404);
  });

  it('a questionnaire grant covers that questionnaire only', async () => {
    const p = await provider();
    const grant = ok(
      await a.post('/questionnaire_permission', {
        questionnaire_id: qRoot.id,
        user_id: p.userId,
        level: 'MANAGE',
      }),
    );
    expect(grant).toMatchObject({ questionnaire_id: qRoot.id, user_id: p.userId, level: 'MANAGE' });
    expect(ids(ok(await p.api.get('/questionnaire')).questionnaires)).toEqual([qRoot.id]);
    expect(
      ok(await p.api.get('/folder/tree?include_questionnaires=true')).questionnaires.map((q: Json) => q.id),
    ).toEqual([qRoot.id]);
    const snap = ok(await p.api.get(`/questionnaire/${qRoot.id}/revision`)).revisions[0];
    ok(await p.api.get(`/questionnaire/${qRoot.id}/revision/${snap.id}/snapshot`));
    // It can manage this questionnaire's grants, and only see grants of what it can see.
    const listed = ok(await p.api.get('/questionnaire_permission'));
    expect(listed.questionnaire_permissions.every((g: Json) => g.questionnaire_id === qRoot.id)).toBe(true);
    expect(ok(await p.api.get('/folder_permission')).total).toBe(0);
  });

  it('custom-role principals are restricted too; creators hold MANAGE on what they create', async () => {
    const p = await principal(t, [
      'questionnaire:read',
      'questionnaire:write',
      'questionnaire:manage',
      'folder:read',
      'folder:write',
      'permission:read',
    ]);
    const pa = api(t, p.headers);
    expect(ok(await pa.get('/questionnaire')).total).toBe(0);
    const f = ok(await pa.post('/folder', { name: 'Mine' }));
    const q = ok(await pa.post('/questionnaire', { name: 'Mine', folder_id: f.id }));
    const own = ok(await pa.post('/questionnaire', { name: 'Mine at root' }));
    expect(ids(ok(await pa.get('/questionnaire')).questionnaires)).toEqual(ids([q, own]));
    ok(await pa.post(`/questionnaire/${own.id}/publish`));
    const grants = ok(await pa.get(`/folder_permission?folder_id=${f.id}`)).folder_permissions;
    expect(grants).toEqual([
      expect.objectContaining({ user_id: p.userId, level: 'MANAGE', created_by: p.userId }),
    ]);
    const qGrants = ok(
      await pa.get(`/questionnaire_permission?questionnaire_id=${own.id}`),
    ).questionnaire_permissions;
    expect(qGrants).toEqual([expect.objectContaining({ user_id: p.userId, level: 'MANAGE' })]);
    // The admin created without a grant row.
    expect(ok(await a.get(`/questionnaire_permission?questionnaire_id=${qA.id}`)).total).toBe(0);
  });

  it('validates grants: exactly one grantee, a real one, once', async () => {
    const p = await provider();
    for (const body of [
      { folder_id: B.id, level: 'VIEW' },
      { folder_id: B.id, user_id: p.userId, role_id: 'r', level: 'VIEW' },
    ]) {
      const res = await a.post('/folder_permission', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.code).toBe('VALIDATION_ERROR');
    }
    expect(
      (await a.post('/folder_permission', { folder_id: B.id, user_id: p.userId, level: 'OWNER' })).status,
    ).toBe(400);
    expect(
      (await a.post('/folder_permission', { folder_id: B.id, user_id: 'nobody', level: 'VIEW' })).body.code,
    ).toBe('USER.NOT_FOUND');
    expect(
      (await a.post('/folder_permission', { folder_id: B.id, role_id: 'norole', level: 'VIEW' })).body.code,
    ).toBe('ROLE.NOT_FOUND');
    expect(
      (await a.post('/folder_permission', { folder_id: 'nofolder', user_id: p.userId, level: 'VIEW' })).body
        .code,
    ).toBe('FOLDER.NOT_FOUND');
    expect(
      (
        await a.post('/questionnaire_permission', {
          questionnaire_id: 'noq',
          user_id: p.userId,
          level: 'VIEW',
        })
      ).body.code,
    ).toBe('QUESTIONNAIRE.NOT_FOUND');
    const first = await grantFolder(B.id, { user_id: p.userId }, 'VIEW');
    expect(
      await a.post('/folder_permission', { folder_id: B.id, user_id: p.userId, level: 'EDIT' }),
    ).toMatchObject({
      status: 409,
      body: { code: 'PERMISSION.EXISTS' },
    });
    const deleted = ok(await a.delete(`/folder_permission/${first.id}`));
    expect(deleted.deleted_at).toMatch(/Z$/);
    expect((await a.get(`/folder_permission/${first.id}`)).body.code).toBe('PERMISSION.NOT_FOUND');
    expect((await a.patch(`/folder_permission/${first.id}`, { level: 'EDIT' })).status).toBe(404);
    // Once revoked, a new grant for the same grantee is allowed.
    const again = await grantFolder(B.id, { user_id: p.userId }, 'EDIT');
    expect(ok(await a.get(`/folder_permission/${again.id}`)).level).toBe('EDIT');
    const filtered = ok(await a.get(`/folder_permission?user_id=${p.userId}&level=EDIT`));
    expect(filtered.folder_permissions.map((g: Json) => g.id)).toEqual([again.id]);
    expect((await a.patch(`/folder_permission/${again.id}`, { level: 'EDIT', extra: 1 })).status).toBe(400);
  });

  it('grants on another object are not visible to a restricted caller', async () => {
    const p = await provider();
    const secret = await grantFolder(A.id, { user_id: (await provider()).userId }, 'VIEW');
    expect((await p.api.get(`/folder_permission/${secret.id}`)).status).toBe(404);
    expect((await p.api.delete(`/folder_permission/${secret.id}`)).status).toBe(404);
    expect(
      (await p.api.post('/folder_permission', { folder_id: A.id, user_id: p.userId, level: 'MANAGE' }))
        .status,
    ).toBe(404);
  });
});
