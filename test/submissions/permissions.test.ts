import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../../src/lib/clock.js';
import { call, eventsOf, grant, questionnaire } from '../enrollments/fixtures.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { admin, apiKey, responder, type TestPrincipal, userWithRoles } from '../helpers/auth.js';
import { dialectName } from '../helpers/store.js';

/**
 * docs/platform.md "Permissions" applied to submissions: a restricted provider sees the submissions of
 * the questionnaires it can see, and corrects or deletes them with EDIT on the questionnaire. Hidden
 * submissions answer exactly like missing ones; admins and integrations are not narrowed.
 */
describe(`submissions narrowed by folder and questionnaire permissions (${dialectName})`, () => {
  let t: TestApp;
  let boss: TestPrincipal;
  let p: TestPrincipal;
  let folderGrant: { id: string };
  const q: Record<'direct' | 'folder' | 'role' | 'view' | 'hidden', { id: string }> = {} as never;
  const s: Record<string, Array<{ id: string }>> = {};
  const clock = manualClock(new Date());

  const submit = async (questionnaireId: string) => {
    clock.advance(10);
    const res = await call(t, await responder(t), 'POST', '/questionnaire_submission', {
      questionnaire_id: questionnaireId,
      answers: { n: 1 },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body as { id: string };
  };
  const ids = (rows: Array<{ id: string }>) => rows.map((r) => r.id).sort();
  const visible = () => [...s.direct, ...s.folder, ...s.role, ...s.view];

  beforeAll(async () => {
    t = await startTestApp({ clock });
    boss = await admin(t);
    p = await userWithRoles(t, ['provider']);
    const identity = t.ctx.services.identity;
    const role = await identity.createRole('test', { key: 'data_managers', name: 'Data managers' });
    await identity.assignRole('test', { user_id: p.userId, role_id: role.id });

    const F = (await call(t, boss, 'POST', '/folder', { name: 'Study F' })).body;
    const G = (await call(t, boss, 'POST', '/folder', { name: 'Visit G', parent_id: F.id })).body;
    folderGrant = await grant(t, boss, { folder_id: F.id, user_id: p.userId, level: 'EDIT' });
    q.direct = await questionnaire(t, boss, { editors: [p.userId] });
    q.folder = await questionnaire(t, boss, { folder_id: G.id });
    q.role = await questionnaire(t, boss);
    await grant(t, boss, { questionnaire_id: q.role.id, role_id: role.id, level: 'EDIT' });
    q.view = await questionnaire(t, boss, { viewers: [p.userId] });
    q.hidden = await questionnaire(t, boss);

    for (const [name, { id }] of Object.entries(q)) s[name] = [await submit(id), await submit(id)];
    // An anonymous submission (API key) of the hidden questionnaire is hidden too.
    const key = await apiKey(t, []);
    const anon = await call(t, key, 'POST', '/questionnaire_submission/anonymous', {
      questionnaire_id: q.hidden.id,
      answers: { n: 2 },
    });
    expect(anon.status).toBe(200);
    s.hidden.push(anon.body);
  });
  afterAll(() => t.close());

  it('GET /questionnaire_submission: only submissions of visible questionnaires, totals to match', async () => {
    const res = await call(t, p, 'GET', '/questionnaire_submission?limit=250');
    expect(res.status).toBe(200);
    expect(res.body.total).toBe(8);
    expect(ids(res.body.submissions)).toEqual(ids(visible()));
    const seen: string[] = [];
    for (const offset of [0, 3, 6]) {
      const page = await call(t, p, 'GET', `/questionnaire_submission?limit=3&offset=${offset}`);
      expect(page.body).toMatchObject({ total: 8, offset, has_next: offset < 6 });
      seen.push(...page.body.submissions.map((x: { id: string }) => x.id));
    }
    expect(seen.sort()).toEqual(ids(visible()));
    const hidden = await call(t, p, 'GET', `/questionnaire_submission?questionnaire_id=${q.hidden.id}`);
    expect(hidden.body).toMatchObject({ total: 0, submissions: [] });
    const anonymous = await call(t, p, 'GET', '/questionnaire_submission?is_anonymous=true');
    expect(anonymous.body.total).toBe(0);

    const all = await call(t, boss, 'GET', '/questionnaire_submission?limit=250');
    expect(all.body.total).toBe(11);
    expect(ids(all.body.submissions)).toEqual(ids(Object.values(s).flat()));
    const integration = await userWithRoles(t, ['integration']);
    const theirs = await call(
      t,
      integration,
      'GET',
      `/questionnaire_submission?questionnaire_id=${q.hidden.id}`,
    );
    expect(theirs.body.total).toBe(3);
  });

  it('GET /questionnaire_submission/{id}: hidden is 404, exactly like a missing one', async () => {
    for (const x of visible())
      expect((await call(t, p, 'GET', `/questionnaire_submission/${x.id}`)).status).toBe(200);
    const hidden = await call(t, p, 'GET', `/questionnaire_submission/${s.hidden[0].id}`);
    const missing = await call(t, p, 'GET', '/questionnaire_submission/00000000-0000-4000-8000-000000000000');
    expect(hidden.status).toBe(404);
    expect(hidden.body).toEqual(missing.body);
    expect(hidden.body.code).toBe('SUBMISSION.NOT_FOUND');
    expect((await call(t, boss, 'GET', `/questionnaire_submission/${s.hidden[0].id}`)).status).toBe(200);
  });

  it('PATCH and DELETE: hidden is 404, VIEW only is 403, and nothing changes or is emitted', async () => {
    const before = (await eventsOf(t, 'svc.submission.updated')).length;
    for (const [method, body] of [
      ['PATCH', { metadata: { reviewed: true } }],
      ['DELETE', undefined],
    ] as const) {
      const hidden = await call(t, p, method, `/questionnaire_submission/${s.hidden[0].id}`, body);
      expect(hidden.status, method).toBe(404);
      expect(hidden.body.code).toBe('SUBMISSION.NOT_FOUND');
      expect(await call(t, p, method, `/questionnaire_submission/${s.view[0].id}`, body)).toMatchObject({
        status: 403,
        body: {
          code: 'PERMISSION.DENIED',
          details: {
            submission_id: s.view[0].id,
            required_level: 'EDIT',
            level: 'VIEW',
            questionnaire_ids: [q.view.id],
          },
        },
      });
    }
    expect((await eventsOf(t, 'svc.submission.updated')).length).toBe(before);
    expect((await eventsOf(t, 'svc.submission.deleted')).length).toBe(0);
    const untouched = await call(t, boss, 'GET', `/questionnaire_submission/${s.view[0].id}`);
    expect(untouched.body).toMatchObject({ metadata: null, deleted_at: null });
  });

  it('EDIT through a user, folder or role grant allows correcting and deleting', async () => {
    for (const name of ['direct', 'folder', 'role'] as const) {
      const target = s[name][1];
      const fixed = await call(t, p, 'PATCH', `/questionnaire_submission/${target.id}`, {
        answers: { n: 9 },
      });
      expect(fixed.status, JSON.stringify(fixed.body)).toBe(200);
      expect(fixed.body).toMatchObject({ answers: { n: 9 }, updated_by: p.userId });
    }
    expect((await call(t, p, 'DELETE', `/questionnaire_submission/${s.role[1].id}`)).status).toBe(200);
    expect((await call(t, boss, 'GET', `/questionnaire_submission/${s.role[1].id}`)).status).toBe(404);
    s.role.pop();
    expect((await call(t, p, 'GET', '/questionnaire_submission')).body.total).toBe(7);
  });

  it("a deleted questionnaire's submissions stay with those granted it; revoking a grant hides them", async () => {
    expect((await call(t, boss, 'DELETE', `/questionnaire/${q.direct.id}`)).status).toBe(200);
    const kept = await call(t, p, 'GET', `/questionnaire_submission?questionnaire_id=${q.direct.id}`);
    expect(ids(kept.body.submissions)).toEqual(ids(s.direct));

    expect((await call(t, boss, 'DELETE', `/folder_permission/${folderGrant.id}`)).status).toBe(200);
    expect((await call(t, p, 'GET', `/questionnaire_submission/${s.folder[0].id}`)).status).toBe(404);
    const list = await call(t, p, 'GET', '/questionnaire_submission?limit=250');
    expect(ids(list.body.submissions)).toEqual(ids([...s.direct, ...s.role, ...s.view]));
    expect(list.body.total).toBe(5);
  });
});
