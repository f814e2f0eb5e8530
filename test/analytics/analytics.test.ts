import { jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/config.js';
import { manualClock } from '../../src/lib/clock.js';
import { call } from '../enrollments/fixtures.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { apiKey, principal, responder } from '../helpers/auth.js';
import { dialectName } from '../helpers/store.js';

const PATH = '/analytics/dashboard/bi/embedded_uuid/embed';
const SECRET = 'c0ffee'.repeat(10) + 'beef';
const ENV = {
  SVC_ANALYTICS_SITE_URL: 'https://bi.example.test/',
  SVC_ANALYTICS_EMBED_SECRET: SECRET,
  SVC_ANALYTICS_DASHBOARD_ID: '42',
};

describe(`analytics embed (${dialectName})`, () => {
  describe('not configured', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await startTestApp();
    });
    afterAll(() => t.close());

    it('answers 503 ANALYTICS.NOT_CONFIGURED to an allowed caller', async () => {
      const p = await principal(t, ['analytics:read']);
      const res = await call(t, p, 'GET', PATH);
      expect(res.status).toBe(503);
      expect(res.body.code).toBe('ANALYTICS.NOT_CONFIGURED');
      expect(res.body.message).toMatch(/SVC_ANALYTICS_SITE_URL/);
    });

    it('checks credentials and the scope first', async () => {
      expect((await call(t, null, 'GET', PATH)).status).toBe(401);
      const r = await responder(t);
      const res = await call(t, r, 'GET', PATH);
      expect(res.status).toBe(403);
      expect(res.body.details).toEqual({ required_scopes: ['analytics:read'], mode: 'any' });
    });
  });

  describe('configured', () => {
    let t: TestApp;
    const clock = manualClock(new Date('2026-03-01T10:00:00.000Z'));
    beforeAll(async () => {
      t = await startTestApp({ clock, env: { ...ENV, SVC_ANALYTICS_EMBED_TTL_SECONDS: '300' } });
    });
    afterAll(() => t.close());

    it('returns a signed, expiring Metabase embed URL', async () => {
      const p = await principal(t, ['analytics:read']);
      const res = await call(t, p, 'GET', PATH);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        dashboard_id: 42,
        expires_at: '2026-03-01T10:05:00.000Z',
        expires_in: 300,
      });
      const match = /^https:\/\/bi\.example\.test\/embed\/dashboard\/([^#]+)#bordered=true&titled=true$/.exec(
        res.body.url,
      );
      expect(match).not.toBeNull();
      const token = match![1];
      const { payload, protectedHeader } = await jwtVerify(token, new TextEncoder().encode(SECRET), {
        currentDate: clock.now(),
      });
      expect(protectedHeader.alg).toBe('HS256');
      expect(payload).toEqual({
        resource: { dashboard: 42 },
        params: {},
        exp: Date.parse('2026-03-01T10:05:00Z') / 1000,
      });
      // Expired once the lifetime has passed; a wrong key never verifies.
      await expect(
        jwtVerify(token, new TextEncoder().encode(SECRET), { currentDate: new Date('2026-03-01T10:05:01Z') }),
      ).rejects.toThrow(/exp/);
      await expect(
        jwtVerify(token, new TextEncoder().encode(`${SECRET}x`), { currentDate: clock.now() }),
      ).rejects.toThrow();
    });

    it('takes display options and rejects unknown ones', async () => {
      const key = await apiKey(t, ['analytics:read']);
      const res = await call(t, key, 'GET', `${PATH}?bordered=false&titled=false&theme=night`);
      expect(res.status).toBe(200);
      expect(res.body.url).toMatch(/#bordered=false&titled=false&theme=night$/);
      expect((await call(t, key, 'GET', `${PATH}?theme=pink`)).status).toBe(400);
      expect((await call(t, key, 'GET', `${PATH}?dashboard=7`)).status).toBe(400);
    });

    it('never shows the embedding secret in responses or logs', async () => {
      const p = await principal(t, ['analytics:read']);
      const res = await t.app.inject({ method: 'GET', url: `/api/v1${PATH}`, headers: p.headers });
      expect(res.body).not.toContain(SECRET);
      expect(t.logText()).not.toContain(SECRET);
      const doc = await t.app.inject({ method: 'GET', url: '/api/v1/openapi.json' });
      expect(doc.body).not.toContain(SECRET);
    });
  });

  describe('configuration', () => {
    it('the three variables go together; the secret must be long; the id must be an id', () => {
      const base = { NODE_ENV: 'test' };
      expect(loadConfig(base).analytics).toBeUndefined();
      expect(() => loadConfig({ ...base, SVC_ANALYTICS_SITE_URL: 'https://bi.example.test' })).toThrow(
        ConfigError,
      );
      expect(() => loadConfig({ ...base, ...ENV, SVC_ANALYTICS_EMBED_SECRET: 'short' })).toThrow(
        /at least 32/,
      );
      expect(() => loadConfig({ ...base, ...ENV, SVC_ANALYTICS_DASHBOARD_ID: '../x' })).toThrow(ConfigError);
      expect(() => loadConfig({ ...base, ...ENV, SVC_ANALYTICS_SITE_URL: 'ftp://bi' })).toThrow(ConfigError);
      const cfg = loadConfig({ ...base, ...ENV, SVC_ANALYTICS_DASHBOARD_ID: 'a1b2-c3' }).analytics;
      expect(cfg).toMatchObject({
        siteUrl: 'https://bi.example.test',
        dashboardId: 'a1b2-c3',
        embedTtlSeconds: 600,
      });
      let message = '';
      try {
        loadConfig({ ...base, SVC_ANALYTICS_EMBED_SECRET: SECRET });
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message).toMatch(/SVC_ANALYTICS_SITE_URL/);
      expect(message).not.toContain(SECRET);
    });
  });
});
