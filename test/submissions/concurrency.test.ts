import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../../src/lib/clock.js';
import { beforeNextWrite, call, enrolled, eventsOf, questionnaire } from '../enrollments/fixtures.js';
import type { TestApp } from '../helpers/app.js';
import { startTestApp } from '../helpers/app.js';
import { admin, apiKey, responder, type TestPrincipal } from '../helpers/auth.js';
import { dialectName } from '../helpers/store.js';

/**
 * A change committed after a submission request started but before its write (an archive, a delete, an
 * enrollment ending) refuses the submission: its preconditions are checked inside the write
 * transaction, on rows the owning areas hold until it commits. The hook makes the race deterministic.
 */
describe(`submission preconditions hold at commit (${dialectName})`, () => {
  let t: TestApp;
  let boss: TestPrincipal;
  const clock = manualClock(new Date());

  beforeAll(async () => {
    t = await startTestApp({ clock });
    boss = await admin(t);
  });
  afterAll(() => t.close());

  const submissionsOf = async (questionnaireId: string) =>
    t.ctx.store.db
      .selectFrom('questionnaire_submission')
      .select('id')
      .where('questionnaire_id', '=', questionnaireId)
      .execute();
  const createdEventsOf = async (questionnaireId: string) =>
    [
      ...(await eventsOf(t, 'svc.submission.created')),
      ...(await eventsOf(t, 'svc.submission.anonymous_created')),
    ].filter((e) => e.data.questionnaire_id === questionnaireId);

  it('a questionnaire archived before the write: 409 QUESTIONNAIRE.INVALID_STATE, nothing stored', async () => {
    const q = await questionnaire(t, boss);
    const r = await responder(t);
    const fired = beforeNextWrite(t, async () => {
      expect((await call(t, boss, 'POST', `/questionnaire/${q.id}/archive`)).status).toBe(200);
    });
    const res = await call(t, r, 'POST', '/questionnaire_submission', {
      questionnaire_id: q.id,
      answers: {},
    });
    expect(fired()).toBe(true);
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ code: 'QUESTIONNAIRE.INVALID_STATE', details: { status: 'ARCHIVED' } });
    expect(await submissionsOf(q.id)).toEqual([]);
    expect(await createdEventsOf(q.id)).toEqual([]);
  });

  it('a questionnaire deleted before the write: 404 QUESTIONNAIRE.NOT_FOUND', async () => {
    const q = await questionnaire(t, boss);
    const r = await responder(t);
    beforeNextWrite(t, async () => {
      expect((await call(t, boss, 'DELETE', `/questionnaire/${q.id}`)).status).toBe(200);
    });
    const res = await call(t, r, 'POST', '/questionnaire_submission', {
      questionnaire_id: q.id,
      answers: {},
    });
    expect(res.status).toBe(404);
    expect(res.body.code).toBe('QUESTIONNAIRE.NOT_FOUND');
    expect(await submissionsOf(q.id)).toEqual([]);
  });

  it('an anonymous submission to a questionnaire archived before the write: 409', async () => {
    const q = await questionnaire(t, boss);
    const key = await apiKey(t, []);
    beforeNextWrite(t, async () => {
      expect((await call(t, boss, 'POST', `/questionnaire/${q.id}/archive`)).status).toBe(200);
    });
    const res = await call(t, key, 'POST', '/questionnaire_submission/anonymous', {
      questionnaire_id: q.id,
      answers: {},
    });
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('QUESTIONNAIRE.INVALID_STATE');
    expect(await submissionsOf(q.id)).toEqual([]);
    expect(await createdEventsOf(q.id)).toEqual([]);
  });

  it('an enrollment terminated before the write: 409 ENROLLMENT.NOT_ACTIVE', async () => {
    const q = await questionnaire(t, boss);
    const r = await responder(t);
    const e = await enrolled(t, boss, r.userId, [q.id]);
    beforeNextWrite(t, async () => {
      const ended = await call(t, boss, 'PATCH', `/enrollment/${e.id}`, {
        status: 'TERMINATED_BY_PROVIDER',
      });
      expect(ended.status).toBe(200);
    });
    const res = await call(t, r, 'POST', '/questionnaire_submission', {
      questionnaire_id: q.id,
      answers: {},
      enrollment_id: e.id,
    });
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('ENROLLMENT.NOT_ACTIVE');
    expect(res.body.message).toMatch(/TERMINATED_BY_PROVIDER/);
    expect(await submissionsOf(q.id)).toEqual([]);
  });

  it('without a concurrent change the same submissions go through', async () => {
    const q = await questionnaire(t, boss);
    const r = await responder(t);
    const res = await call(t, r, 'POST', '/questionnaire_submission', {
      questionnaire_id: q.id,
      answers: {},
    });
    expect(res.status).toBe(200);
    expect(await createdEventsOf(q.id)).toHaveLength(1);
  });
});
