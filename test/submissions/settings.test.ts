import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, questionnaire } from '../enrollments/fixtures.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { admin, apiKey, responder, type TestPrincipal } from '../helpers/auth.js';
import { dialectName } from '../helpers/store.js';

/**
 * The effective config does what it says (docs/platform.md "Config"): its one default,
 * `allow_multiple_submissions: false`, is enforced, per respondent and questionnaire, from any layer.
 */
describe(`questionnaire settings are enforced (${dialectName})`, () => {
  let t: TestApp;
  let boss: TestPrincipal;
  beforeAll(async () => {
    t = await startTestApp();
    boss = await admin(t);
  });
  afterAll(() => t.close());

  const submit = (who: TestPrincipal, questionnaireId: string) =>
    call(t, who, 'POST', '/questionnaire_submission', {
      questionnaire_id: questionnaireId,
      answers: { a: 1 },
    });

  it('the defaults are only what the server enforces', async () => {
    const app = await call(t, boss, 'GET', '/config');
    expect(app.body.questionnaire.config_defaults).toEqual({ allow_multiple_submissions: false });
    const q = await questionnaire(t, boss, { config: { theme: 'dark' } });
    const effective = await call(t, boss, 'GET', `/config/questionnaire/${q.id}`);
    // Keys the client apps own are merged and served unchanged.
    expect(effective.body.config).toEqual({ allow_multiple_submissions: false, theme: 'dark' });
  });

  it('allow_multiple_submissions false (default): a second submission is 409, another respondent is fine', async () => {
    const q = await questionnaire(t, boss);
    const r = await responder(t);
    expect((await submit(r, q.id)).status).toBe(200);
    const again = await submit(r, q.id);
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({
      code: 'SUBMISSION.ALREADY_SUBMITTED',
      details: { questionnaire_id: q.id, setting: 'allow_multiple_submissions' },
    });
    expect((await submit(await responder(t), q.id)).status).toBe(200);
    // Only one submission of r was stored.
    const list = await call(
      t,
      boss,
      'GET',
      `/questionnaire_submission?questionnaire_id=${q.id}&user_id=${r.userId}`,
    );
    expect(list.body.total).toBe(1);
  });

  it('a deleted submission does not count: the respondent may submit again', async () => {
    const q = await questionnaire(t, boss);
    const r = await responder(t);
    const first = await submit(r, q.id);
    expect((await call(t, boss, 'DELETE', `/questionnaire_submission/${first.body.id}`)).status).toBe(200);
    expect((await submit(r, q.id)).status).toBe(200);
  });

  it('allow_multiple_submissions true on the questionnaire, or inherited from a folder, allows more', async () => {
    const own = await questionnaire(t, boss, { config: { allow_multiple_submissions: true } });
    const r = await responder(t);
    for (let i = 0; i < 3; i++) expect((await submit(r, own.id)).status).toBe(200);

    const folder = await call(t, boss, 'POST', '/folder', {
      name: 'repeatable',
      config: { allow_multiple_submissions: true },
    });
    expect(folder.status).toBe(200);
    const inherited = await questionnaire(t, boss, { folder_id: folder.body.id });
    for (let i = 0; i < 2; i++) expect((await submit(r, inherited.id)).status).toBe(200);
    // The questionnaire's own layer wins over its folder's.
    const strict = await questionnaire(t, boss, {
      folder_id: folder.body.id,
      config: { allow_multiple_submissions: false },
    });
    expect((await submit(r, strict.id)).status).toBe(200);
    expect((await submit(r, strict.id)).status).toBe(409);
  });

  it('parallel submissions of one respondent: exactly one is stored', async () => {
    const q = await questionnaire(t, boss);
    const r = await responder(t);
    const results = await Promise.all(Array.from({ length: 10 }, () => submit(r, q.id)));
    expect(results.map((x) => x.status).sort()).toEqual([200, ...Array(9).fill(409)]);
  });

  it('anonymous submissions (API keys) have no respondent, so the setting does not limit them', async () => {
    const q = await questionnaire(t, boss);
    const key = await apiKey(t, ['questionnaire_submission:write']);
    for (let i = 0; i < 2; i++) {
      const res = await call(t, key, 'POST', '/questionnaire_submission/anonymous', {
        questionnaire_id: q.id,
        answers: { a: 1 },
      });
      expect(res.status).toBe(200);
    }
  });
});
