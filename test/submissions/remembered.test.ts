import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, eventsOf, questionnaire } from '../enrollments/fixtures.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { admin, responder, type TestPrincipal } from '../helpers/auth.js';
import { dialectName, sharedDatabase, type TestDatabase } from '../helpers/store.js';

/**
 * A submission's questionnaire from memory (src/areas/questionnaires/held.ts): once a process has
 * read a questionnaire, its submissions hold the row with a check sent with their commit instead of
 * reading it first. Two apps on one store, as two processes: `one` remembers, `two` changes the
 * questionnaire behind its back, and `one` must still answer as if it had read the row.
 */
describe(`a submission's questionnaire from memory (${dialectName})`, () => {
  let db: TestDatabase;
  let one: TestApp;
  let two: TestApp;
  let boss: TestPrincipal;
  let r: TestPrincipal;

  beforeAll(async () => {
    db = await sharedDatabase('svc-remembered-');
    one = await startTestApp({ databaseUrl: db.url });
    two = await startTestApp({ databaseUrl: db.url });
    boss = await admin(one);
    r = await responder(one);
  });
  afterAll(async () => {
    await two.close();
    await one.close();
    await db.drop();
  });

  /** One respondent submits several times here. */
  const MANY = { allow_multiple_submissions: true };
  const submit = (questionnaireId: string, answers: Record<string, unknown> = {}) =>
    call(one, r, 'POST', '/questionnaire_submission', { questionnaire_id: questionnaireId, answers });
  const stored = async (questionnaireId: string) => ({
    submissions: (
      await one.ctx.store.db
        .selectFrom('questionnaire_submission')
        .select('id')
        .where('questionnaire_id', '=', questionnaireId)
        .execute()
    ).length,
    events: (await eventsOf(one, 'svc.submission.created')).filter(
      (e) => e.data.questionnaire_id === questionnaireId,
    ).length,
  });
  /** The statements `one` runs for `fn` (its store's counter, as on /metrics). */
  const statementsOf = async (fn: () => Promise<unknown>) => {
    const before = one.ctx.store.activity.statements;
    await fn();
    return one.ctx.store.activity.statements - before;
  };

  it('archived by another process after this one remembered it: 409, and nothing of the refused submission is stored', async () => {
    const q = await questionnaire(one, boss);
    expect((await submit(q.id)).status).toBe(200); // `one` reads and remembers it
    expect((await call(two, boss, 'POST', `/questionnaire/${q.id}/archive`)).status).toBe(200);
    const res = await submit(q.id);
    expect(res.status, JSON.stringify(res.body)).toBe(409);
    expect(res.body).toMatchObject({ code: 'QUESTIONNAIRE.INVALID_STATE', details: { status: 'ARCHIVED' } });
    expect(await stored(q.id)).toEqual({ submissions: 1, events: 1 });
  });

  it('deleted by another process after this one remembered it: 404', async () => {
    const q = await questionnaire(one, boss);
    expect((await submit(q.id)).status).toBe(200);
    expect((await call(two, boss, 'DELETE', `/questionnaire/${q.id}`)).status).toBe(200);
    const res = await submit(q.id);
    expect(res.status).toBe(404);
    expect(res.body.code).toBe('QUESTIONNAIRE.NOT_FOUND');
    expect(await stored(q.id)).toEqual({ submissions: 1, events: 1 });
  });

  it('a refusal made on what memory held is made again on the row: a DRAFT published since takes the submission', async () => {
    const q = await questionnaire(one, boss, { status: 'DRAFT', config: MANY });
    expect((await submit(q.id)).status).toBe(409); // `one` remembers the DRAFT
    expect((await call(two, boss, 'POST', `/questionnaire/${q.id}/publish`)).status).toBe(200);
    let res: Awaited<ReturnType<typeof submit>> | undefined;
    // From memory (the DRAFT: refused, so the hold's statement) and again read: one statement more
    // than a submission whose remembered questionnaire is unchanged.
    const retried = await statementsOf(async () => {
      res = await submit(q.id);
    });
    expect(res?.status, JSON.stringify(res?.body)).toBe(200);
    const unchanged = await statementsOf(async () => expect((await submit(q.id)).status).toBe(200));
    expect(retried - unchanged).toBe(1);
    expect(await stored(q.id)).toEqual({ submissions: 2, events: 2 });
  });

  it('answers are checked against the questionnaire, remembered or read: invalid ones are refused with 400', async () => {
    const q = await questionnaire(one, boss, {
      config: MANY,
      payload: {
        answers_schema: {
          type: 'object',
          properties: { score: { type: 'integer' } },
          required: ['score'],
        },
      },
    });
    expect((await submit(q.id, { score: 3 })).status).toBe(200);
    const refused = await submit(q.id, { score: 'three' });
    expect(refused.status).toBe(400);
    expect(refused.body.code).toBe('SUBMISSION.INVALID_ANSWERS');
    expect((await submit(q.id, { score: 4 })).status).toBe(200);
    expect(await stored(q.id)).toEqual({ submissions: 2, events: 2 });
  });
});
