import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../../src/lib/clock.js';
import { call, eventsOf, questionnaire } from '../enrollments/fixtures.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { admin, principal, responder, type TestPrincipal } from '../helpers/auth.js';
import { dialectName } from '../helpers/store.js';

describe(`submissions under an enrollment (${dialectName})`, () => {
  let t: TestApp;
  let boss: TestPrincipal;
  let staff: TestPrincipal;
  let q1: { id: string };
  let q2: { id: string };
  const clock = manualClock(new Date());

  beforeAll(async () => {
    t = await startTestApp({ clock });
    boss = await admin(t);
    staff = await principal(t, ['questionnaire_submission:read']);
    q1 = await questionnaire(t, boss, { viewers: [staff.userId] });
    q2 = await questionnaire(t, boss, { viewers: [staff.userId] });
  });
  afterAll(() => t.close());

  const enroll = async (userId: string, body: Record<string, unknown> = {}) => {
    clock.advance(10);
    const res = await call(t, boss, 'POST', '/enrollment', {
      user_id: userId,
      questionnaire_ids: [q1.id],
      consent_required: false,
      ...body,
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body;
  };

  it('files the submission under an ENROLLED enrollment of the caller', async () => {
    const r = await responder(t);
    const e = await enroll(r.userId);
    const res = await call(t, r, 'POST', '/questionnaire_submission', {
      questionnaire_id: q1.id,
      answers: { a: 1 },
      enrollment_id: e.id,
    });
    expect(res.status).toBe(200);
    expect(res.body.enrollment_id).toBe(e.id);
    const list = await call(t, staff, 'GET', `/questionnaire_submission?enrollment_id=${e.id}`);
    expect(list.body.submissions.map((s: { id: string }) => s.id)).toEqual([res.body.id]);
    const event = (await eventsOf(t, 'svc.submission.created')).find((x) => x.subject === res.body.id);
    expect(event?.data.enrollment_id).toBe(e.id);
  });

  it('refuses an enrollment that is not ENROLLED, not in its dates, or without the questionnaire', async () => {
    const r = await responder(t);
    const pending = await enroll(r.userId, { consent_required: true });
    const notYet = await enroll(r.userId, {
      questionnaire_ids: [q2.id],
      starts_at: new Date(clock.now().getTime() + 600_000).toISOString(),
    });
    const cases: Array<[string, string, RegExp]> = [
      [pending.id, q1.id, /PENDING_CONSENT/],
      [notYet.id, q2.id, /not started/],
      [notYet.id, q1.id, /not part of the enrollment/],
    ];
    for (const [enrollmentId, questionnaireId, why] of cases) {
      const res = await call(t, r, 'POST', '/questionnaire_submission', {
        questionnaire_id: questionnaireId,
        answers: {},
        enrollment_id: enrollmentId,
      });
      expect(res.status).toBe(409);
      expect(res.body.code).toBe('ENROLLMENT.NOT_ACTIVE');
      expect(res.body.message).toMatch(why);
    }
    clock.advance(600_000);
    const started = await call(t, r, 'POST', '/questionnaire_submission', {
      questionnaire_id: q2.id,
      answers: {},
      enrollment_id: notYet.id,
    });
    expect(started.status).toBe(200);
  });

  it('refuses an ended or closed enrollment', async () => {
    const r = await responder(t);
    const e = await enroll(r.userId, { ends_at: new Date(clock.now().getTime() + 1000).toISOString() });
    clock.advance(2000);
    const ended = await call(t, r, 'POST', '/questionnaire_submission', {
      questionnaire_id: q1.id,
      answers: {},
      enrollment_id: e.id,
    });
    expect(ended.status).toBe(409);
    expect(ended.body.message).toMatch(/ended/);
    const other = await enroll(r.userId, { questionnaire_ids: [q2.id] });
    await call(t, boss, 'PATCH', `/enrollment/${other.id}`, { status: 'COMPLETED' });
    const closed = await call(t, r, 'POST', '/questionnaire_submission', {
      questionnaire_id: q2.id,
      answers: {},
      enrollment_id: other.id,
    });
    expect(closed.status).toBe(409);
    expect(closed.body.details).toMatchObject({ enrollment_id: other.id, status: 'COMPLETED' });
  });

  it("another user's enrollment is a 404", async () => {
    const r = await responder(t);
    const other = await responder(t);
    const e = await enroll(other.userId);
    const res = await call(t, r, 'POST', '/questionnaire_submission', {
      questionnaire_id: q1.id,
      answers: {},
      enrollment_id: e.id,
    });
    expect(res.status).toBe(404);
    expect(res.body.code).toBe('ENROLLMENT.NOT_FOUND');
  });
});
