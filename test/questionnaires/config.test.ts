import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QUESTIONNAIRE_CONFIG_DEFAULTS } from '../../src/areas/questionnaires/config-service.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { admin, principal, responder, userWithRoles } from '../helpers/auth.js';
import { dialectName } from '../helpers/store.js';
import { type Api, api, ok, tickingClock } from './helpers.js';

describe(`config (${dialectName})`, () => {
  let t: TestApp;
  let a: Api;
  beforeAll(async () => {
    t = await startTestApp({ clock: tickingClock() });
    a = api(t, (await admin(t)).headers);
  });
  afterAll(() => t.close());

  it('GET /config is open to any signed-in caller and holds no secrets', async () => {
    const r = api(t, (await responder(t)).headers);
    const body = ok(await r.get('/config'));
    expect(body).toMatchObject({
      api_version: 'v1',
      auth: { external_idp_enabled: false, mfa_methods: ['totp'] },
      questionnaire: {
        statuses: ['DRAFT', 'PUBLISHED', 'ARCHIVED'],
        transitions: { publish: { from: ['DRAFT', 'ARCHIVED'], to: 'PUBLISHED' } },
        config_defaults: QUESTIONNAIRE_CONFIG_DEFAULTS,
      },
      permission_levels: ['VIEW', 'EDIT', 'MANAGE'],
      pagination: { default_limit: 25, max_limit: 250 },
    });
    expect(typeof body.version).toBe('string');
    const text = JSON.stringify(body);
    for (const secret of [
      t.ctx.config.jwtSecret,
      t.ctx.config.vaultEncryptionKey,
      t.ctx.config.databaseUrl,
    ]) {
      expect(secret).toBeTruthy();
      expect(text).not.toContain(secret);
    }
    const anon = await t.app.inject({ method: 'GET', url: '/api/v1/config' });
    expect(anon.statusCode).toBe(401);
  });

  it('effective config merges defaults, the folder chain from the root down, then the questionnaire', async () => {
    const org = ok(
      await a.post('/folder', {
        name: 'Org',
        config: { locale: 'de', reminders: { enabled: true }, theme: 'blue' },
      }),
    );
    const study = ok(
      await a.post('/folder', {
        name: 'Study',
        parent_id: org.id,
        config: { reminders: { hours_before_due: 2 }, theme: null },
      }),
    );
    const q = ok(
      await a.post('/questionnaire', {
        name: 'Diary',
        folder_id: study.id,
        config: { allow_multiple_submissions: true, sections: ['a', 'b'] },
      }),
    );
    const effective = ok(await a.get(`/config/questionnaire/${q.id}`));
    expect(effective).toEqual({
      questionnaire_id: q.id,
      folder_id: study.id,
      config: {
        ...QUESTIONNAIRE_CONFIG_DEFAULTS,
        locale: 'de',
        reminders: { enabled: true, hours_before_due: 2 },
        allow_multiple_submissions: true,
        sections: ['a', 'b'],
      },
      sources: [
        { type: 'defaults' },
        { type: 'folder', id: org.id },
        { type: 'folder', id: study.id },
        { type: 'questionnaire', id: q.id },
      ],
    });
    const folderConfig = ok(await a.get(`/config/folder/${study.id}`));
    expect(folderConfig).toEqual({
      folder_id: study.id,
      config: {
        ...QUESTIONNAIRE_CONFIG_DEFAULTS,
        locale: 'de',
        reminders: { enabled: true, hours_before_due: 2 },
      },
      sources: [{ type: 'defaults' }, { type: 'folder', id: org.id }, { type: 'folder', id: study.id }],
    });
    // A change of a folder's config shows at once below it.
    ok(await a.patch(`/folder/${org.id}`, { config: { locale: 'it' } }));
    expect(ok(await a.get(`/config/questionnaire/${q.id}`)).config.locale).toBe('it');
    const loose = ok(await a.post('/questionnaire', { name: 'Loose', config: { locale: 'nl' } }));
    expect(ok(await a.get(`/config/questionnaire/${loose.id}`))).toMatchObject({
      folder_id: null,
      config: { ...QUESTIONNAIRE_CONFIG_DEFAULTS, locale: 'nl' },
      sources: [{ type: 'defaults' }, { type: 'questionnaire', id: loose.id }],
    });
    expect((await a.get('/config/questionnaire/missing')).body.code).toBe('QUESTIONNAIRE.NOT_FOUND');
    expect((await a.get('/config/folder/missing')).body.code).toBe('FOLDER.NOT_FOUND');
  });

  it('callers without questionnaire:read get the config of PUBLISHED questionnaires only', async () => {
    const q = ok(await a.post('/questionnaire', { name: 'For patients' }));
    const r = api(t, (await responder(t)).headers);
    expect((await r.get(`/config/questionnaire/${q.id}`)).status).toBe(404);
    ok(await a.post(`/questionnaire/${q.id}/publish`));
    expect(ok(await r.get(`/config/questionnaire/${q.id}`)).questionnaire_id).toBe(q.id);
    ok(await a.post(`/questionnaire/${q.id}/archive`));
    expect((await r.get(`/config/questionnaire/${q.id}`)).status).toBe(404);
  });

  it('a provider without a grant reads a PUBLISHED config like a responder; other statuses need a grant', async () => {
    const q = ok(await a.post('/questionnaire', { name: 'Provider view', config: { locale: 'fr' } }));
    const p = await userWithRoles(t, ['provider']);
    const pa = api(t, p.headers);
    // Not granted: a DRAFT stays hidden (the permission rules apply to what is not published).
    expect((await pa.get(`/config/questionnaire/${q.id}`)).status).toBe(404);
    ok(await a.post(`/questionnaire/${q.id}/publish`));
    // PUBLISHED: what a zero-scope responder may read, holding questionnaire:read takes nothing away.
    expect(ok(await pa.get(`/config/questionnaire/${q.id}`))).toMatchObject({
      questionnaire_id: q.id,
      config: { locale: 'fr' },
    });
    ok(await a.post(`/questionnaire/${q.id}/archive`));
    expect((await pa.get(`/config/questionnaire/${q.id}`)).status).toBe(404);
    // With a grant, the provider sees it whatever its status.
    ok(
      await a.post('/questionnaire_permission', { questionnaire_id: q.id, user_id: p.userId, level: 'VIEW' }),
    );
    expect(ok(await pa.get(`/config/questionnaire/${q.id}`)).questionnaire_id).toBe(q.id);
  });

  it('/config/folder/{id} needs config:read', async () => {
    const f = ok(await a.post('/folder', { name: 'Scoped' }));
    const noScope = api(t, (await principal(t, ['folder:read'])).headers);
    expect(await noScope.get(`/config/folder/${f.id}`)).toMatchObject({
      status: 403,
      body: { code: 'AUTH.FORBIDDEN', details: { required_scopes: ['config:read'] } },
    });
    const withScope = await principal(t, ['config:read']);
    // Restricted until granted.
    expect((await api(t, withScope.headers).get(`/config/folder/${f.id}`)).status).toBe(404);
    ok(await a.post('/folder_permission', { folder_id: f.id, user_id: withScope.userId, level: 'VIEW' }));
    expect(ok(await api(t, withScope.headers).get(`/config/folder/${f.id}`)).folder_id).toBe(f.id);
  });
});
