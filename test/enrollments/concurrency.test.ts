import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../../src/lib/clock.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { admin, responder, type TestPrincipal } from '../helpers/auth.js';
import { dialectName } from '../helpers/store.js';
import { beforeNextWrite, call, questionnaire } from './fixtures.js';

/**
 * A questionnaire archived or deleted after an enrollment request's checks but before its write is
 * refused by the check made again inside the write transaction (on rows held until it commits), not
 * enrolled into. The hook commits the change exactly between the two.
 */
describe(`enrollment questionnaire checks hold at commit (${dialectName})`, () => {
  let t: TestApp;
  let boss: TestPrincipal;
  const clock = manualClock(new Date());

  beforeAll(async () => {
    t = await startTestApp({ clock });
    boss = await admin(t);
  });
  afterAll(() => t.close());

  const enrollmentsOf = async (userId: string) =>
    (await call(t, boss, 'GET', `/enrollment?user_id=${userId}`)).body.enrollments as Array<{
      id: string;
      questionnaire_ids: string[];
    }>;

  it('POST /enrollment into a questionnaire archived before the write: 409, nothing created', async () => {
    const q = await questionnaire(t, boss);
    const r = await responder(t);
    const fired = beforeNextWrite(t, async () => {
      expect((await call(t, boss, 'POST', `/questionnaire/${q.id}/archive`)).status).toBe(200);
    });
    const res = await call(t, boss, 'POST', '/enrollment', { user_id: r.userId, questionnaire_ids: [q.id] });
    expect(fired()).toBe(true);
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({
      code: 'QUESTIONNAIRE.INVALID_STATE',
      details: { questionnaire_ids: [q.id] },
    });
    expect(await enrollmentsOf(r.userId)).toEqual([]);
  });

  it('POST /enrollment into a questionnaire deleted before the write: 404, nothing created', async () => {
    const keep = await questionnaire(t, boss);
    const q = await questionnaire(t, boss);
    const r = await responder(t);
    beforeNextWrite(t, async () => {
      expect((await call(t, boss, 'DELETE', `/questionnaire/${q.id}`)).status).toBe(200);
    });
    const res = await call(t, boss, 'POST', '/enrollment', {
      user_id: r.userId,
      questionnaire_ids: [keep.id, q.id],
    });
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({
      code: 'QUESTIONNAIRE.NOT_FOUND',
      details: { questionnaire_ids: [q.id] },
    });
    expect(await enrollmentsOf(r.userId)).toEqual([]);
  });

  it('PATCH questionnaire_ids adding one archived before the write: 409, the enrollment unchanged', async () => {
    const first = await questionnaire(t, boss);
    const added = await questionnaire(t, boss);
    const r = await responder(t);
    const e = await call(t, boss, 'POST', '/enrollment', {
      user_id: r.userId,
      questionnaire_ids: [first.id],
    });
    expect(e.status).toBe(200);
    beforeNextWrite(t, async () => {
      expect((await call(t, boss, 'POST', `/questionnaire/${added.id}/archive`)).status).toBe(200);
    });
    const res = await call(t, boss, 'PATCH', `/enrollment/${e.body.id}`, {
      questionnaire_ids: [first.id, added.id],
    });
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('QUESTIONNAIRE.INVALID_STATE');
    expect((await enrollmentsOf(r.userId)).map((x) => x.questionnaire_ids)).toEqual([[first.id]]);
  });
});
