import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../../src/lib/clock.js';
import { call, eventsOf, grant, questionnaire } from '../enrollments/fixtures.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { admin, apiKey, principal, responder, type TestPrincipal } from '../helpers/auth.js';
import { dialectName } from '../helpers/store.js';

const PHQ2_SCHEMA = {
  type: 'object',
  required: ['q1', 'q2'],
  properties: {
    q1: { type: 'integer', minimum: 0, maximum: 3 },
    q2: { type: 'integer', minimum: 0, maximum: 3 },
    note: { type: 'string', maxLength: 200 },
    scoring: { type: 'object' },
  },
  additionalProperties: false,
};

describe(`questionnaire submissions (${dialectName})`, () => {
  let t: TestApp;
  let boss: TestPrincipal;
  let reader: TestPrincipal;
  let open: { id: string };
  let phq2: { id: string };
  const clock = manualClock(new Date());

  beforeAll(async () => {
    t = await startTestApp({ clock });
    boss = await admin(t);
    reader = await principal(t, ['questionnaire_submission:read']);
    // The reader is a restricted custom role: it sees submissions of the questionnaires it is granted.
    open = await questionnaire(t, boss, { viewers: [reader.userId] });
    phq2 = await questionnaire(t, boss, {
      payload: { answers_schema: PHQ2_SCHEMA },
      viewers: [reader.userId],
    });
  });
  afterAll(() => t.close());

  const submit = async (who: { headers: Record<string, string> }, body: Record<string, unknown>) => {
    clock.advance(10);
    return call(t, who, 'POST', '/questionnaire_submission', body);
  };

  describe('POST /questionnaire_submission', () => {
    it('needs a user identity: 401 without credentials', async () => {
      const res = await call(t, null, 'POST', '/questionnaire_submission', {
        questionnaire_id: open.id,
        answers: {},
      });
      expect(res.status).toBe(401);
      expect(res.body.code).toBe('AUTH.UNAUTHENTICATED');
      const bad = await t.app.inject({
        method: 'POST',
        url: '/api/v1/questionnaire_submission',
        headers: { authorization: 'Bearer not-a-jwt' },
        payload: { questionnaire_id: open.id, answers: {} },
      });
      expect(bad.statusCode).toBe(401);
    });

    it('a responder (no scopes) submits; the answer is the stored submission', async () => {
      const r = await responder(t);
      const res = await submit(r, {
        questionnaire_id: phq2.id,
        answers: { q1: 2, q2: 1 },
        metadata: { app: 'ios' },
      });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        questionnaire_id: phq2.id,
        user_id: r.userId,
        enrollment_id: null,
        is_anonymous: false,
        answers: { q1: 2, q2: 1 },
        metadata: { app: 'ios' },
        api_key_id: null,
        created_by: r.userId,
        updated_by: r.userId,
        deleted_at: null,
      });
      expect(res.body.id).toMatch(/^[0-9a-f-]{36}$/);
      expect(res.body.created_at).toBe(clock.now().toISOString());
      expect(Number.isInteger(res.body.questionnaire_revision)).toBe(true);
      const got = await call(t, reader, 'GET', `/questionnaire_submission/${res.body.id}`);
      expect(got.body).toEqual(res.body);
    });

    it('publishes svc.submission.created in the same transaction, with the scoring enrichment', async () => {
      const r = await responder(t);
      const scoring = {
        variables: [{ name: 'total', value: 3 }],
        functions: [{ name: 'sum', expression: { '+': [{ var: 'q1' }, { var: 'q2' }] } }],
      };
      const res = await submit(r, { questionnaire_id: phq2.id, answers: { q1: 2, q2: 1, scoring } });
      expect(res.status).toBe(200);
      const event = (await eventsOf(t, 'svc.submission.created')).find((e) => e.subject === res.body.id);
      expect(event).toMatchObject({
        specversion: '1.0',
        type: 'svc.submission.created',
        source: '/api/v1/questionnaire_submission',
        subject: res.body.id,
        data: {
          submission_id: res.body.id,
          questionnaire_id: phq2.id,
          user_id: r.userId,
          answers: {
            q1: 2,
            q2: 1,
            scoring: {
              ...scoring,
              variables_by_name: { total: { name: 'total', value: 3 } },
              functions_by_name: { sum: scoring.functions[0] },
            },
          },
        },
      });
      // The stored answers are the raw answers: the enrichment is for the event only.
      expect(res.body.answers).toEqual({ q1: 2, q2: 1, scoring });
    });

    it('an event without a scoring block carries the answers unchanged', async () => {
      const r = await responder(t);
      const res = await submit(r, {
        questionnaire_id: open.id,
        answers: { free: 'text', nested: { a: [1, 2] } },
      });
      const event = (await eventsOf(t, 'svc.submission.created')).find((e) => e.subject === res.body.id);
      expect(event?.data.answers).toEqual({ free: 'text', nested: { a: [1, 2] } });
    });

    it('validates answers against payload.answers_schema: 400 with every problem, and no event', async () => {
      const r = await responder(t);
      const before = (await eventsOf(t, 'svc.submission.created')).length;
      const res = await submit(r, { questionnaire_id: phq2.id, answers: { q1: 7, extra: true } });
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('SUBMISSION.INVALID_ANSWERS');
      expect(res.body.details.questionnaire_id).toBe(phq2.id);
      const errors = res.body.details.errors as Array<{ path: string; keyword: string; message: string }>;
      expect(errors).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ path: '', keyword: 'required', params: { missingProperty: 'q2' } }),
          expect.objectContaining({ path: '', keyword: 'additionalProperties' }),
          expect.objectContaining({ path: '/q1', keyword: 'maximum' }),
        ]),
      );
      expect((await eventsOf(t, 'svc.submission.created')).length).toBe(before);
      const list = await call(t, reader, 'GET', `/questionnaire_submission?user_id=${r.userId}`);
      expect(list.body.total).toBe(0);
    });

    it('without a schema any answers object is accepted; answers must be an object', async () => {
      const r = await responder(t);
      expect((await submit(r, { questionnaire_id: open.id, answers: {} })).status).toBe(200);
      for (const answers of [[1, 2], 'yes', null, 3]) {
        const res = await submit(r, { questionnaire_id: open.id, answers });
        expect(res.status).toBe(400);
        expect(res.body.code).toBe('VALIDATION_ERROR');
      }
      for (const body of [
        { answers: {} },
        { questionnaire_id: open.id },
        { questionnaire_id: open.id, answers: {}, user_id: 'x' },
      ]) {
        expect((await submit(r, body)).status).toBe(400);
      }
    });

    it('only a PUBLISHED questionnaire takes submissions', async () => {
      const r = await responder(t);
      const draft = await questionnaire(t, boss, { status: 'DRAFT' });
      const archived = await questionnaire(t, boss, { status: 'ARCHIVED' });
      for (const [q, status] of [
        [draft, 'DRAFT'],
        [archived, 'ARCHIVED'],
      ] as const) {
        const res = await submit(r, { questionnaire_id: q.id, answers: {} });
        expect(res.status).toBe(409);
        expect(res.body).toMatchObject({ code: 'QUESTIONNAIRE.INVALID_STATE', details: { status } });
      }
      const missing = await submit(r, { questionnaire_id: 'no-such', answers: {} });
      expect(missing.status).toBe(404);
      expect(missing.body.code).toBe('QUESTIONNAIRE.NOT_FOUND');
      const deleted = await questionnaire(t, boss);
      await call(t, boss, 'DELETE', `/questionnaire/${deleted.id}`);
      expect((await submit(r, { questionnaire_id: deleted.id, answers: {} })).status).toBe(404);
    });

    it('a broken answers_schema cannot be published; one stored before that rule is a clear 422, never a 500', async () => {
      const r = await responder(t);
      for (const answers_schema of [
        { type: 'no-such-type' },
        { $ref: 'https://example.com/s.json' },
        'yes',
      ]) {
        const draft = await questionnaire(t, boss, { payload: { answers_schema }, status: 'DRAFT' });
        const publish = await call(t, boss, 'POST', `/questionnaire/${draft.id}/publish`);
        expect(publish.status, JSON.stringify(answers_schema)).toBe(422);
        expect(publish.body.code).toBe('QUESTIONNAIRE.ANSWERS_SCHEMA_INVALID');
      }
      // Published before publishing checked schemas (written to the store directly, as old data is).
      const old = await questionnaire(t, boss);
      await t.ctx.store.db
        .updateTable('questionnaire')
        .set({ payload: JSON.stringify({ answers_schema: { type: 'no-such-type' } }) })
        .where('id', '=', old.id)
        .execute();
      const res = await submit(r, { questionnaire_id: old.id, answers: {} });
      expect(res.status).toBe(422);
      expect(res.body).toMatchObject({
        code: 'SUBMISSION.ANSWERS_SCHEMA_INVALID',
        details: { questionnaire_id: old.id, reason: expect.stringMatching(/^schema is invalid: /) },
      });
    });

    it('understands JSON Schema 2020-12 when the schema says so', async () => {
      const r = await responder(t);
      const q = await questionnaire(t, boss, {
        payload: {
          answers_schema: {
            $schema: 'https://json-schema.org/draft/2020-12/schema',
            type: 'object',
            properties: { meds: { type: 'array', prefixItems: [{ type: 'string' }], items: false } },
          },
        },
      });
      expect((await submit(r, { questionnaire_id: q.id, answers: { meds: ['aspirin'] } })).status).toBe(200);
      const res = await submit(r, { questionnaire_id: q.id, answers: { meds: ['aspirin', 'extra'] } });
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('SUBMISSION.INVALID_ANSWERS');
    });

    it('an API key submits as its creator, and the key is recorded', async () => {
      const key = await apiKey(t, ['questionnaire_submission:read']);
      const res = await submit(key, { questionnaire_id: open.id, answers: { a: 1 } });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ user_id: key.userId, created_by: key.userId, is_anonymous: false });
      expect(typeof res.body.api_key_id).toBe('string');
    });
  });

  describe('POST /questionnaire_submission/anonymous', () => {
    it('takes API keys only', async () => {
      const body = { questionnaire_id: open.id, answers: {} };
      expect((await call(t, null, 'POST', '/questionnaire_submission/anonymous', body)).status).toBe(401);
      const r = await responder(t);
      const jwt = await call(t, r, 'POST', '/questionnaire_submission/anonymous', body);
      expect(jwt.status).toBe(403);
      expect(jwt.body).toMatchObject({ code: 'AUTH.FORBIDDEN', details: { required_auth: 'api_key' } });
    });

    it('stores no respondent, records the key, and emits svc.submission.anonymous_created', async () => {
      const key = await apiKey(t, []);
      const res = await call(t, key, 'POST', '/questionnaire_submission/anonymous', {
        questionnaire_id: phq2.id,
        answers: { q1: 0, q2: 0, scoring: { variables: { a: { name: 'total', value: 0 } }, functions: [] } },
      });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        user_id: null,
        is_anonymous: true,
        enrollment_id: null,
        created_by: key.userId,
      });
      expect(typeof res.body.api_key_id).toBe('string');
      const event = (await eventsOf(t, 'svc.submission.anonymous_created')).find(
        (e) => e.subject === res.body.id,
      );
      expect(event).toMatchObject({
        source: '/api/v1/questionnaire_submission',
        data: {
          submission_id: res.body.id,
          questionnaire_id: phq2.id,
          api_key_id: res.body.api_key_id,
          answers: {
            scoring: { variables_by_name: { total: { name: 'total', value: 0 } }, functions_by_name: {} },
          },
        },
      });
      expect(event?.data).not.toHaveProperty('user_id');
      expect((await eventsOf(t, 'svc.submission.created')).some((e) => e.subject === res.body.id)).toBe(
        false,
      );
    });

    it('validates like the signed-in path and refuses enrollment_id', async () => {
      const key = await apiKey(t, []);
      const bad = await call(t, key, 'POST', '/questionnaire_submission/anonymous', {
        questionnaire_id: phq2.id,
        answers: { q1: 9 },
      });
      expect(bad.status).toBe(400);
      expect(bad.body.code).toBe('SUBMISSION.INVALID_ANSWERS');
      const withEnrollment = await call(t, key, 'POST', '/questionnaire_submission/anonymous', {
        questionnaire_id: open.id,
        answers: {},
        enrollment_id: 'x',
      });
      expect(withEnrollment.status).toBe(400);
      expect(withEnrollment.body.details.field).toBe('enrollment_id');
    });
  });

  describe('GET /questionnaire_submission', () => {
    it('needs questionnaire_submission:read', async () => {
      expect((await call(t, null, 'GET', '/questionnaire_submission')).status).toBe(401);
      const r = await responder(t);
      const res = await call(t, r, 'GET', '/questionnaire_submission');
      expect(res.status).toBe(403);
      expect(res.body.details.required_scopes).toEqual(['questionnaire_submission:read']);
      expect((await call(t, r, 'GET', '/questionnaire_submission/x')).status).toBe(403);
    });

    it('filters by questionnaire, user, anonymity and date range; sorts and pages', async () => {
      const q = await questionnaire(t, boss, { viewers: [reader.userId] });
      const [a, b] = [await responder(t), await responder(t)];
      const key = await apiKey(t, []);
      const s1 = (await submit(a, { questionnaire_id: q.id, answers: { n: 1 } })).body;
      const s2 = (await submit(b, { questionnaire_id: q.id, answers: { n: 2 } })).body;
      clock.advance(10);
      const s3 = (
        await call(t, key, 'POST', '/questionnaire_submission/anonymous', {
          questionnaire_id: q.id,
          answers: { n: 3 },
        })
      ).body;
      const s4 = (await submit(a, { questionnaire_id: open.id, answers: { n: 4 } })).body;

      const ids = (res: { body: { submissions: Array<{ id: string }> } }) =>
        res.body.submissions.map((s) => s.id);
      const byQ = await call(t, reader, 'GET', `/questionnaire_submission?questionnaire_id=${q.id}`);
      expect(byQ.body).toMatchObject({
        total: 3,
        limit: 25,
        offset: 0,
        has_next: false,
        has_previous: false,
      });
      expect(ids(byQ)).toEqual([s3.id, s2.id, s1.id]);
      const asc = await call(
        t,
        reader,
        'GET',
        `/questionnaire_submission?questionnaire_id=${q.id}&sort_by=created_at&sort_dir=asc`,
      );
      expect(ids(asc)).toEqual([s1.id, s2.id, s3.id]);
      const byUser = await call(t, reader, 'GET', `/questionnaire_submission?user_id=${a.userId}`);
      expect(ids(byUser)).toEqual([s4.id, s1.id]);
      const anon = await call(
        t,
        reader,
        'GET',
        `/questionnaire_submission?questionnaire_id=${q.id}&is_anonymous=true`,
      );
      expect(ids(anon)).toEqual([s3.id]);
      const named = await call(
        t,
        reader,
        'GET',
        `/questionnaire_submission?questionnaire_id=${q.id}&is_anonymous=false`,
      );
      expect(ids(named)).toEqual([s2.id, s1.id]);
      const range = await call(
        t,
        reader,
        'GET',
        `/questionnaire_submission?questionnaire_id=${q.id}&created_at_gte=${encodeURIComponent(s2.created_at)}&created_at_lte=${encodeURIComponent(s2.created_at)}`,
      );
      expect(ids(range)).toEqual([s2.id]);
      const page = await call(
        t,
        reader,
        'GET',
        `/questionnaire_submission?questionnaire_id=${q.id}&limit=2&offset=1`,
      );
      expect(page.body).toMatchObject({ total: 3, limit: 2, offset: 1, has_next: false, has_previous: true });
      expect(ids(page)).toEqual([s2.id, s1.id]);
    });

    it('rejects bad queries with 400', async () => {
      const sort = await call(t, reader, 'GET', '/questionnaire_submission?sort_by=answers');
      expect(sort.status).toBe(400);
      expect(sort.body.details).toMatchObject({ field: 'sort_by' });
      expect(sort.body.details.allowed_values).toEqual([
        'created_at',
        'updated_at',
        'questionnaire_id',
        'user_id',
      ]);
      expect(
        (await call(t, reader, 'GET', '/questionnaire_submission?created_at_gte=last-week')).status,
      ).toBe(400);
      expect((await call(t, reader, 'GET', '/questionnaire_submission?is_anonymous=maybe')).status).toBe(400);
      expect((await call(t, reader, 'GET', '/questionnaire_submission?limit=0')).status).toBe(400);
      expect((await call(t, reader, 'GET', '/questionnaire_submission/nope')).body.code).toBe(
        'SUBMISSION.NOT_FOUND',
      );
    });
  });

  describe('PATCH and DELETE /questionnaire_submission/{id}', () => {
    it('need questionnaire:write and :delete (the submission scopes are reserved); the respondent cannot change their submission', async () => {
      const r = await responder(t);
      const s = (await submit(r, { questionnaire_id: open.id, answers: { a: 1 } })).body;
      expect((await call(t, r, 'PATCH', `/questionnaire_submission/${s.id}`, { answers: {} })).status).toBe(
        403,
      );
      expect((await call(t, r, 'DELETE', `/questionnaire_submission/${s.id}`)).status).toBe(403);
      const writer = await principal(t, ['questionnaire:write']);
      const res = await call(t, writer, 'DELETE', `/questionnaire_submission/${s.id}`);
      expect(res.status).toBe(403);
      expect(res.body.details.required_scopes).toEqual(['questionnaire:delete']);
      const deleter = await principal(t, ['questionnaire:delete']);
      const patch = await call(t, deleter, 'PATCH', `/questionnaire_submission/${s.id}`, { answers: {} });
      expect(patch.status).toBe(403);
      expect(patch.body.details.required_scopes).toEqual(['questionnaire:write']);
    });

    it('a correction re-validates, keeps the respondent, and emits svc.submission.updated', async () => {
      const r = await responder(t);
      const staff = await principal(t, ['questionnaire:write']);
      await grant(t, boss, { questionnaire_id: phq2.id, user_id: staff.userId, level: 'EDIT' });
      const s = (await submit(r, { questionnaire_id: phq2.id, answers: { q1: 1, q2: 1 } })).body;
      const bad = await call(t, staff, 'PATCH', `/questionnaire_submission/${s.id}`, { answers: { q1: 1 } });
      expect(bad.status).toBe(400);
      expect(bad.body.code).toBe('SUBMISSION.INVALID_ANSWERS');
      clock.advance(1000);
      const res = await call(t, staff, 'PATCH', `/questionnaire_submission/${s.id}`, {
        answers: { q1: 3, q2: 1, scoring: { variables: [{ name: 'total', value: 4 }] } },
      });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        id: s.id,
        user_id: r.userId,
        created_by: r.userId,
        created_at: s.created_at,
        updated_by: staff.userId,
        updated_at: clock.now().toISOString(),
        answers: { q1: 3, q2: 1 },
      });
      const events = (await eventsOf(t, 'svc.submission.updated')).filter((e) => e.subject === s.id);
      expect(events).toHaveLength(1);
      expect(events[0].data).toMatchObject({
        submission_id: s.id,
        questionnaire_id: phq2.id,
        user_id: r.userId,
        changed_fields: ['answers'],
        answers: { q1: 3, scoring: { variables_by_name: { total: { name: 'total', value: 4 } } } },
      });
      const meta = await call(t, staff, 'PATCH', `/questionnaire_submission/${s.id}`, {
        metadata: { reviewed: true },
      });
      expect(meta.body).toMatchObject({ metadata: { reviewed: true }, answers: { q1: 3, q2: 1 } });
      expect((await call(t, staff, 'PATCH', `/questionnaire_submission/${s.id}`, {})).status).toBe(400);
      expect(
        (await call(t, staff, 'PATCH', `/questionnaire_submission/${s.id}`, { user_id: 'x' })).status,
      ).toBe(400);
      expect(
        (await call(t, staff, 'PATCH', '/questionnaire_submission/nope', { metadata: null })).status,
      ).toBe(404);
    });

    it('delete is soft, emits svc.submission.deleted, and hides the submission', async () => {
      const r = await responder(t);
      const staff = await principal(t, ['questionnaire:delete', 'questionnaire_submission:read']);
      await grant(t, boss, { questionnaire_id: open.id, user_id: staff.userId, level: 'EDIT' });
      const s = (await submit(r, { questionnaire_id: open.id, answers: { a: 1 } })).body;
      const res = await call(t, staff, 'DELETE', `/questionnaire_submission/${s.id}`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ message: 'Submission deleted' });
      expect((await call(t, staff, 'GET', `/questionnaire_submission/${s.id}`)).status).toBe(404);
      expect((await call(t, staff, 'GET', `/questionnaire_submission?user_id=${r.userId}`)).body.total).toBe(
        0,
      );
      expect((await call(t, staff, 'DELETE', `/questionnaire_submission/${s.id}`)).status).toBe(404);
      const events = (await eventsOf(t, 'svc.submission.deleted')).filter((e) => e.subject === s.id);
      expect(events).toHaveLength(1);
      expect(events[0].data).toMatchObject({
        submission_id: s.id,
        questionnaire_id: open.id,
        user_id: r.userId,
      });
      expect(events[0].data.deleted_at).toMatch(/Z$/);
      const row = await t.ctx.store.db
        .selectFrom('questionnaire_submission')
        .select(['deleted_at', 'updated_by'])
        .where('id', '=', s.id)
        .executeTakeFirst();
      expect(row).toEqual({ deleted_at: events[0].data.deleted_at, updated_by: staff.userId });
    });
  });
});
