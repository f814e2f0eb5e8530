import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { dialectName } from '../helpers/store.js';
import { type Account, account, bearer, type Call, call, expectError } from './helpers.js';

const COOKIE = { 'svc-refresh-cookie': 'true' };

/** The svc_refresh cookie a response set, with its attributes; undefined when it set none. */
function setCookie(res: Call): string | undefined {
  const header = res.headers['set-cookie'];
  return [header].flat().find((c): c is string => typeof c === 'string' && c.startsWith('svc_refresh='));
}
const cookieValue = (cookie: string) => cookie.slice('svc_refresh='.length).split(';')[0];

/**
 * Cookie delivery of refresh tokens (docs/console.md), for browser clients: opt-in per request with
 * `Svc-Refresh-Cookie: true`; everything else keeps the contract's body tokens.
 */
describe(`refresh tokens as an HttpOnly cookie (${dialectName})`, () => {
  let t: TestApp;
  let a: Account;
  beforeAll(async () => {
    t = await startTestApp();
    a = await account(t);
  });
  afterAll(() => t.close());
  const signIn = (headers: Record<string, string> = COOKIE) =>
    call(t, 'POST', '/auth/login/credentials', { email: a.email, password: a.password }, headers);

  it('sign-in with the header sets an HttpOnly, SameSite=Strict cookie on /api/v1/auth and keeps it out of the body', async () => {
    const res = await signIn();
    expect(res.status).toBe(200);
    expect(res.body.refresh_token).toBeUndefined();
    expect(res.body).toMatchObject({ token_type: 'bearer', refresh_expires_in: expect.any(Number) });
    const cookie = setCookie(res)!;
    expect(cookie).toMatch(/^svc_refresh=svc_rt_/);
    expect(cookie).toContain('HttpOnly');
    expect(cookie).toContain('SameSite=Strict');
    expect(cookie).toContain('Path=/api/v1/auth');
    expect(cookie).toContain(`Max-Age=${res.body.refresh_expires_in}`);
    expect(cookie).not.toContain('Secure'); // plain http here; behind TLS below
    expect(
      (await call(t, 'GET', '/current_user', undefined, bearer(String(res.body.access_token)))).status,
    ).toBe(200);
  });

  it('without the header nothing changes: the token is in the body and no cookie is set', async () => {
    const res = await signIn({});
    expect(res.status).toBe(200);
    expect(res.body.refresh_token).toMatch(/^svc_rt_/);
    expect(setCookie(res)).toBeUndefined();
  });

  it('refresh reads and rotates the cookie; the old one presented again ends the session', async () => {
    const first = cookieValue(setCookie(await signIn())!);
    const res = await call(t, 'POST', '/auth/refresh', {}, { ...COOKIE, cookie: `svc_refresh=${first}` });
    expect(res.status).toBe(200);
    expect(res.body.refresh_token).toBeUndefined();
    const second = cookieValue(setCookie(res)!);
    expect(second).not.toBe(first);
    const again = await call(t, 'POST', '/auth/refresh', {}, { ...COOKIE, cookie: `svc_refresh=${first}` });
    expectError(again, 401, 'AUTH.REFRESH_TOKEN_REUSED');
    const after = await call(t, 'POST', '/auth/refresh', {}, { ...COOKIE, cookie: `svc_refresh=${second}` });
    expectError(after, 401, 'AUTH.REFRESH_TOKEN_INVALID');
    // Neither cookie reached the logs.
    expect(t.logText()).not.toContain(first);
    expect(t.logText()).not.toContain(second);
  });

  it('the cookie alone is never enough (CSRF): without the header it is ignored', async () => {
    const token = cookieValue(setCookie(await signIn())!);
    const res = await call(t, 'POST', '/auth/refresh', {}, { cookie: `svc_refresh=${token}` });
    expectError(res, 400, 'VALIDATION_ERROR');
    expect(res.body.details).toMatchObject({ field: 'refresh_token' });
    // The token was not spent: the console can still use it.
    const ok = await call(t, 'POST', '/auth/refresh', {}, { ...COOKIE, cookie: `svc_refresh=${token}` });
    expect(ok.status).toBe(200);
  });

  it('a cookie client without the cookie is not signed in: 401', async () => {
    expectError(await call(t, 'POST', '/auth/refresh', {}, COOKIE), 401, 'AUTH.REFRESH_TOKEN_INVALID');
  });

  it('another origin is refused with 403, its own origin and TLS behind a proxy are accepted (Secure cookie)', async () => {
    const foreign = await signIn({ ...COOKIE, origin: 'https://evil.example' });
    expectError(foreign, 403, 'AUTH.FORBIDDEN');
    expect(setCookie(foreign)).toBeUndefined();
    const own = await signIn({
      ...COOKIE,
      origin: 'https://svc.example',
      host: 'svc.example',
      'x-forwarded-proto': 'https',
    });
    expect(own.status).toBe(200);
    expect(setCookie(own)).toContain('Secure');
  });

  it('sign-out with the header clears the cookie and ends the session', async () => {
    const signedIn = await signIn();
    const token = cookieValue(setCookie(signedIn)!);
    const out = await call(t, 'POST', '/auth/logout', undefined, {
      ...COOKIE,
      ...bearer(String(signedIn.body.access_token)),
      cookie: `svc_refresh=${token}`,
    });
    expect(out.status).toBe(200);
    expect(setCookie(out)).toMatch(/^svc_refresh=;.*Expires=Thu, 01 Jan 1970/);
    const res = await call(t, 'POST', '/auth/refresh', {}, { ...COOKIE, cookie: `svc_refresh=${token}` });
    expectError(res, 401, 'AUTH.REFRESH_TOKEN_INVALID');
  });
});
