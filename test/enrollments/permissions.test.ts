import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../../src/lib/clock.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { admin, responder, type TestPrincipal, userWithRoles } from '../helpers/auth.js';
import { dialectName } from '../helpers/store.js';
import { call, grant, questionnaire } from './fixtures.js';

/**
 * docs/platform.md "Permissions" applied to enrollments: a restricted provider sees an enrollment when
 * it can see at least one of its questionnaires, and changes it only with EDIT on every one of them.
 * Hidden enrollments answer exactly like missing ones; admins and integrations are not narrowed.
 */
describe(`enrollments narrowed by folder and questionnaire permissions (${dialectName})`, () => {
  let t: TestApp;
  let boss: TestPrincipal;
  let p: TestPrincipal;
  let roleId: string;
  // qDirect: user grant EDIT; qFolder: in G, below F (user grant EDIT on F); qRole: EDIT granted to a
  // role p holds; qView: user grant VIEW; qHidden: nothing.
  const q: Record<'direct' | 'folder' | 'role' | 'view' | 'hidden', { id: string }> = {} as never;
  // One responder per enrollment, except `shared` who holds eRole and eHidden2.
  const e: Record<string, { id: string; user_id: string }> = {};
  let shared: TestPrincipal;
  const clock = manualClock(new Date());

  const enroll = async (by: TestPrincipal, userId: string, questionnaireIds: string[]) => {
    clock.advance(10);
    const res = await call(t, by, 'POST', '/enrollment', {
      user_id: userId,
      questionnaire_ids: questionnaireIds,
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body as { id: string; user_id: string };
  };
  const ids = (rows: Array<{ id: string }>) => rows.map((r) => r.id).sort();

  beforeAll(async () => {
    t = await startTestApp({ clock });
    boss = await admin(t);
    p = await userWithRoles(t, ['provider']);
    const identity = t.ctx.services.identity;
    const role = await identity.createRole('test', { key: 'study_team', name: 'Study team' });
    await identity.assignRole('test', { user_id: p.userId, role_id: role.id });
    roleId = role.id;

    const F = (await call(t, boss, 'POST', '/folder', { name: 'Study F' })).body;
    const G = (await call(t, boss, 'POST', '/folder', { name: 'Visit G', parent_id: F.id })).body;
    await grant(t, boss, { folder_id: F.id, user_id: p.userId, level: 'EDIT' });
    q.direct = await questionnaire(t, boss, { editors: [p.userId] });
    q.folder = await questionnaire(t, boss, { folder_id: G.id });
    q.role = await questionnaire(t, boss);
    await grant(t, boss, { questionnaire_id: q.role.id, role_id: roleId, level: 'EDIT' });
    q.view = await questionnaire(t, boss, { viewers: [p.userId] });
    q.hidden = await questionnaire(t, boss);

    shared = await responder(t);
    e.direct = await enroll(boss, (await responder(t)).userId, [q.direct.id]);
    e.folder = await enroll(boss, (await responder(t)).userId, [q.folder.id]);
    e.role = await enroll(boss, shared.userId, [q.role.id]);
    e.mixed = await enroll(boss, (await responder(t)).userId, [q.direct.id, q.hidden.id]);
    e.view = await enroll(boss, (await responder(t)).userId, [q.view.id]);
    e.hidden = await enroll(boss, (await responder(t)).userId, [q.hidden.id]);
    e.hidden2 = await enroll(boss, shared.userId, [q.hidden.id]);
  });
  afterAll(() => t.close());

  const visible = () => [e.direct, e.folder, e.role, e.mixed, e.view];

  it('GET /enrollment: only enrollments with a visible questionnaire (direct, folder, role grants)', async () => {
    const res = await call(t, p, 'GET', '/enrollment?limit=250');
    expect(res.status).toBe(200);
    expect(res.body.total).toBe(5);
    expect(ids(res.body.enrollments)).toEqual(ids(visible()));
    // The whole record is shown, including the id of a questionnaire the caller cannot see.
    const mixed = res.body.enrollments.find((x: { id: string }) => x.id === e.mixed.id);
    expect(mixed.questionnaire_ids).toEqual([q.direct.id, q.hidden.id]);

    const all = await call(t, boss, 'GET', '/enrollment?limit=250');
    expect(all.body.total).toBe(7);
    expect(ids(all.body.enrollments)).toEqual(ids(Object.values(e)));
  });

  it('pages and filters count only what the caller can see', async () => {
    const seen: string[] = [];
    for (const offset of [0, 2, 4]) {
      const page = await call(t, p, 'GET', `/enrollment?limit=2&offset=${offset}&sort_dir=asc`);
      expect(page.body).toMatchObject({ total: 5, limit: 2, offset, has_next: offset < 4 });
      seen.push(...page.body.enrollments.map((x: { id: string }) => x.id));
    }
    expect(seen.sort()).toEqual(ids(visible()));
    const byHidden = await call(t, p, 'GET', `/enrollment?questionnaire_id=${q.hidden.id}`);
    expect(byHidden.body.total).toBe(1);
    expect(byHidden.body.enrollments[0].id).toBe(e.mixed.id);
    const byHiddenAdmin = await call(t, boss, 'GET', `/enrollment?questionnaire_id=${q.hidden.id}`);
    expect(ids(byHiddenAdmin.body.enrollments)).toEqual(ids([e.mixed, e.hidden, e.hidden2]));
    const ofShared = await call(t, p, 'GET', `/enrollment?user_id=${shared.userId}`);
    expect(ofShared.body.enrollments.map((x: { id: string }) => x.id)).toEqual([e.role.id]);
  });

  it('GET /enrollment/{id}: a hidden enrollment is 404, exactly like a missing one', async () => {
    for (const x of visible()) expect((await call(t, p, 'GET', `/enrollment/${x.id}`)).status).toBe(200);
    const hidden = await call(t, p, 'GET', `/enrollment/${e.hidden.id}`);
    const missing = await call(t, p, 'GET', '/enrollment/00000000-0000-4000-8000-000000000000');
    expect(hidden.status).toBe(404);
    expect(hidden.body).toEqual(missing.body);
    expect(hidden.body.code).toBe('ENROLLMENT.NOT_FOUND');
    expect((await call(t, boss, 'GET', `/enrollment/${e.hidden.id}`)).status).toBe(200);
  });

  it('GET /enrollment_user: users and counts of visible enrollments only', async () => {
    const res = await call(t, p, 'GET', '/enrollment_user?limit=250');
    expect(res.body.total).toBe(5);
    expect(res.body.enrollment_users.map((u: { user_id: string }) => u.user_id).sort()).toEqual(
      visible()
        .map((x) => x.user_id)
        .sort(),
    );
    const mine = res.body.enrollment_users.find((u: { user_id: string }) => u.user_id === shared.userId);
    // eHidden2 is later than eRole but hidden: neither counted nor named as the latest.
    expect(mine).toMatchObject({ enrollment_count: 1, latest_enrollment_id: e.role.id });
    const page = await call(t, p, 'GET', '/enrollment_user?limit=2&offset=4');
    expect(page.body).toMatchObject({ total: 5, has_next: false, has_previous: true });
    expect(page.body.enrollment_users).toHaveLength(1);

    const all = await call(t, boss, 'GET', '/enrollment_user?limit=250');
    expect(all.body.total).toBe(6);
    const theirs = all.body.enrollment_users.find((u: { user_id: string }) => u.user_id === shared.userId);
    expect(theirs).toMatchObject({ enrollment_count: 2, latest_enrollment_id: e.hidden2.id });
  });

  it('PATCH and DELETE: hidden is 404; visible without EDIT on every questionnaire is 403', async () => {
    for (const [method, body] of [
      ['PATCH', { metadata: { x: 1 } }],
      ['DELETE', undefined],
    ] as const) {
      const hidden = await call(t, p, method, `/enrollment/${e.hidden.id}`, body);
      expect(hidden.status, method).toBe(404);
      expect(hidden.body.code).toBe('ENROLLMENT.NOT_FOUND');
      expect(await call(t, p, method, `/enrollment/${e.view.id}`, body)).toMatchObject({
        status: 403,
        body: {
          code: 'PERMISSION.DENIED',
          details: {
            enrollment_id: e.view.id,
            required_level: 'EDIT',
            level: 'VIEW',
            questionnaire_ids: [q.view.id],
          },
        },
      });
      // EDIT on qDirect is not enough for an enrollment that also holds a questionnaire it cannot see.
      expect(await call(t, p, method, `/enrollment/${e.mixed.id}`, body)).toMatchObject({
        status: 403,
        body: { details: { level: null, questionnaire_ids: [q.hidden.id] } },
      });
    }
    // Nothing changed.
    const after = await call(t, boss, 'GET', `/enrollment/${e.view.id}`);
    expect(after.body).toMatchObject({ metadata: null, deleted_at: null });
  });

  it('EDIT through a user, folder or role grant allows changing and deleting', async () => {
    const r = () => responder(t).then((x) => x.userId);
    const direct = await enroll(boss, await r(), [q.direct.id]);
    const folder = await enroll(boss, await r(), [q.folder.id, q.role.id]);
    const role = await enroll(boss, await r(), [q.role.id]);
    const patched = await call(t, p, 'PATCH', `/enrollment/${direct.id}`, { metadata: { site: 'A' } });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body.metadata).toEqual({ site: 'A' });
    const ended = await call(t, p, 'PATCH', `/enrollment/${folder.id}`, { status: 'TERMINATED_BY_PROVIDER' });
    expect(ended.body.status).toBe('TERMINATED_BY_PROVIDER');
    expect((await call(t, p, 'DELETE', `/enrollment/${role.id}`)).status).toBe(200);
    expect((await call(t, boss, 'GET', `/enrollment/${role.id}`)).status).toBe(404);
  });

  it('creating and re-targeting need EDIT on each named questionnaire', async () => {
    const userId = (await responder(t)).userId;
    expect(
      await call(t, p, 'POST', '/enrollment', { user_id: userId, questionnaire_ids: [q.role.id, q.view.id] }),
    ).toMatchObject({
      status: 403,
      body: {
        code: 'PERMISSION.DENIED',
        details: { required_level: 'EDIT', questionnaire_ids: [q.view.id] },
      },
    });
    expect(
      await call(t, p, 'POST', '/enrollment', {
        user_id: userId,
        questionnaire_ids: [q.role.id, q.hidden.id],
      }),
    ).toMatchObject({
      status: 404,
      body: { code: 'QUESTIONNAIRE.NOT_FOUND', details: { questionnaire_ids: [q.hidden.id] } },
    });
    const made = await enroll(p, userId, [q.folder.id, q.role.id]);
    expect(made.user_id).toBe(userId);
    expect(
      (await call(t, p, 'PATCH', `/enrollment/${made.id}`, { questionnaire_ids: [q.view.id] })).status,
    ).toBe(403);
    expect(
      (await call(t, p, 'PATCH', `/enrollment/${made.id}`, { questionnaire_ids: [q.hidden.id] })).status,
    ).toBe(404);
    const moved = await call(t, p, 'PATCH', `/enrollment/${made.id}`, { questionnaire_ids: [q.direct.id] });
    expect(moved.body.questionnaire_ids).toEqual([q.direct.id]);
  });

  it('integration holders are not narrowed; revoking a grant hides at once', async () => {
    const integration = await userWithRoles(t, ['integration']);
    const res = await call(t, integration, 'GET', `/enrollment?questionnaire_id=${q.hidden.id}`);
    expect(ids(res.body.enrollments)).toEqual(ids([e.mixed, e.hidden, e.hidden2]));

    const roleGrants = await call(t, boss, 'GET', `/questionnaire_permission?role_id=${roleId}`);
    expect(roleGrants.body.total).toBe(1);
    const revoke = await call(
      t,
      boss,
      'DELETE',
      `/questionnaire_permission/${roleGrants.body.questionnaire_permissions[0].id}`,
    );
    expect(revoke.status).toBe(200);
    expect((await call(t, p, 'GET', `/enrollment/${e.role.id}`)).status).toBe(404);
    const list = await call(t, p, 'GET', '/enrollment?limit=250');
    expect(list.body.enrollments.map((x: { id: string }) => x.id)).not.toContain(e.role.id);
    expect(list.body.total).toBe(list.body.enrollments.length);
  });
});
