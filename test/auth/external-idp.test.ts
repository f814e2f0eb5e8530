import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, type JWTPayload, SignJWT } from 'jose';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../../src/lib/clock.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { apiKey } from '../helpers/auth.js';
import { dialectName } from '../helpers/store.js';
import { account, bearer, call, codeAt, expectError, expectTokens, login } from './helpers.js';

const ISSUER = 'https://idp.example.test';
const AUDIENCE = 'svc-client';
const KID = 'idp-key-1';

type Key = Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];

describe(`external identity provider login (${dialectName})`, () => {
  let server: Server;
  let jwksUrl: string;
  let signingKey: Key;
  let otherKey: Key;
  const apps: TestApp[] = [];

  beforeAll(async () => {
    const pair = await generateKeyPair('RS256');
    signingKey = pair.privateKey;
    otherKey = (await generateKeyPair('RS256')).privateKey;
    const jwk = { ...(await exportJWK(pair.publicKey)), kid: KID, alg: 'RS256', use: 'sig' };
    // The provider's JWKS, served by the test itself on 127.0.0.1.
    server = createServer((req, res) => {
      if (req.url !== '/jwks') return res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    jwksUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  afterEach(async () => {
    while (apps.length) await apps.pop()!.close();
  });

  const clock = manualClock(new Date('2026-03-01T10:00:00.000Z'));
  async function start(env: Record<string, string> = {}) {
    const t = await startTestApp({
      clock,
      env: { SVC_OIDC_ISSUER: ISSUER, SVC_OIDC_AUDIENCE: AUDIENCE, SVC_OIDC_JWKS_URL: jwksUrl, ...env },
    });
    apps.push(t);
    return t;
  }

  async function idToken(
    claims: JWTPayload,
    opts: { key?: Key; kid?: string; iss?: string; aud?: string; expIn?: number } = {},
  ) {
    const now = Math.floor(clock.now().getTime() / 1000);
    return new SignJWT({ email_verified: true, ...claims })
      .setProtectedHeader({ alg: 'RS256', kid: opts.kid ?? KID })
      .setIssuer(opts.iss ?? ISSUER)
      .setAudience(opts.aud ?? AUDIENCE)
      .setSubject('idp-subject-1')
      .setIssuedAt(now)
      .setExpirationTime(now + (opts.expIn ?? 300))
      .sign(opts.key ?? signingKey);
  }
  const idpLogin = (t: TestApp, id_token: string) =>
    call(t, 'POST', '/auth/login/external_idp', { id_token });

  it('signs in the active user with the verified email: tokens, auth_path external_idp, refresh keeps it', async () => {
    const t = await start();
    const a = await account(t);
    const tokens = expectTokens(await idpLogin(t, await idToken({ email: a.email.toUpperCase() })));
    const me = await call(t, 'GET', '/current_user', undefined, bearer(tokens.access_token));
    expect(me.body).toMatchObject({ id: a.id, auth_path: 'external_idp' });
    const rotated = expectTokens(
      await call(t, 'POST', '/auth/refresh', { refresh_token: tokens.refresh_token }),
    );
    expect(
      (await call(t, 'GET', '/current_user', undefined, bearer(rotated.access_token))).body.auth_path,
    ).toBe('external_idp');
  });

  it('refuses bad tokens with 401 AUTH.EXTERNAL_IDP_TOKEN_INVALID and the reason', async () => {
    const t = await start();
    const a = await account(t);
    const cases: Array<[string, Promise<string> | string]> = [
      ['signature', idToken({ email: a.email }, { key: otherKey })],
      ['unknown_key', idToken({ email: a.email }, { key: otherKey, kid: 'someone-else' })],
      ['claim_aud', idToken({ email: a.email }, { aud: 'another-client' })],
      ['claim_iss', idToken({ email: a.email }, { iss: 'https://evil.example.test' })],
      ['expired', idToken({ email: a.email }, { expIn: -120 })],
      ['email_not_verified', idToken({ email: a.email, email_verified: false })],
      ['email_not_verified', idToken({ email: a.email, email_verified: undefined })],
      ['email_missing', idToken({})],
      ['malformed', 'not.a.jwt'],
      [
        'algorithm',
        new SignJWT({ email: a.email, email_verified: true })
          .setProtectedHeader({ alg: 'HS256', kid: KID })
          .setIssuer(ISSUER)
          .setAudience(AUDIENCE)
          .setExpirationTime('5m')
          .sign(new TextEncoder().encode('a-shared-secret-that-is-long-enough-000')),
      ],
    ];
    for (const [reason, token] of cases) {
      const res = await idpLogin(t, await token);
      expectError(res, 401, 'AUTH.EXTERNAL_IDP_TOKEN_INVALID');
      expect(res.body.details, reason).toEqual({ reason });
    }
    expectError(await call(t, 'POST', '/auth/login/external_idp', {}), 400, 'VALIDATION_ERROR');
  });

  it('an unknown user is 401 AUTH.EXTERNAL_IDP_UNKNOWN_USER unless automatic creation is configured', async () => {
    const t = await start();
    expectError(
      await idpLogin(t, await idToken({ email: 'new@example.test' })),
      401,
      'AUTH.EXTERNAL_IDP_UNKNOWN_USER',
    );
    expect(await t.ctx.services.identity.findUserByEmail('new@example.test')).toBeUndefined();
  });

  it('SVC_OIDC_AUTO_CREATE_ROLE creates the user with that role, once', async () => {
    const t = await start({ SVC_OIDC_AUTO_CREATE_ROLE: 'provider' });
    const token = await idToken({ email: 'Grace@Example.test', name: 'Grace Hopper' });
    const first = expectTokens(await idpLogin(t, token));
    const me = await call(t, 'GET', '/current_user', undefined, bearer(first.access_token));
    expect(me.body).toMatchObject({
      email: 'Grace@Example.test',
      name: 'Grace Hopper',
      auth_path: 'external_idp',
    });
    expect((me.body.roles as Array<{ key: string }>).map((r) => r.key)).toEqual(['provider']);
    expect(me.body.scopes).toHaveLength(72);
    const second = expectTokens(await idpLogin(t, await idToken({ email: 'grace@example.test' })));
    expect((await call(t, 'GET', '/current_user', undefined, bearer(second.access_token))).body.id).toBe(
      me.body.id,
    );
    // Nobody knows the generated password.
    expectError(
      await login(t, { email: 'grace@example.test', password: 'password' }),
      401,
      'AUTH.INVALID_CREDENTIALS',
    );
  });

  it('a misconfigured role, a missing provider, and an unreachable JWKS are clear errors, not 500s', async () => {
    const bad = await start({ SVC_OIDC_AUTO_CREATE_ROLE: 'no_such_role' });
    expectError(
      await idpLogin(bad, await idToken({ email: 'x@example.test' })),
      400,
      'AUTH.EXTERNAL_IDP_NOT_CONFIGURED',
    );
    const none = await startTestApp({ clock });
    apps.push(none);
    expectError(
      await idpLogin(none, await idToken({ email: 'x@example.test' })),
      400,
      'AUTH.EXTERNAL_IDP_NOT_CONFIGURED',
    );
    const down = await start({ SVC_OIDC_JWKS_URL: 'http://127.0.0.1:9/jwks' });
    expectError(
      await idpLogin(down, await idToken({ email: 'x@example.test' })),
      503,
      'AUTH.EXTERNAL_IDP_UNAVAILABLE',
    );
  });

  it('bypasses MFA and password-reset enforcement (SPEC Authentication 9)', async () => {
    const t = await start();
    const boss = await apiKey(t, ['auth:manage']);
    const a = await account(t);
    const h = bearer(expectTokens(await login(t, a)).access_token);
    const { secret } = (await call(t, 'POST', '/auth/mfa/setup', undefined, h)).body as { secret: string };
    await call(t, 'POST', '/auth/mfa/verify', { code: codeAt(secret, clock.now().getTime()) }, h);
    expect((await call(t, 'PATCH', '/auth/mfa/enable', { enabled: true }, h)).body.mfa_enabled).toBe(true);
    expect((await login(t, a)).body.mfa_required).toBe(true);
    expectTokens(await idpLogin(t, await idToken({ email: a.email })));

    await call(t, 'PATCH', `/auth/user/${a.id}/settings`, { password_reset_required: true }, boss.headers);
    expectError(await login(t, a), 403, 'AUTH.PASSWORD_RESET_REQUIRED');
    const viaIdp = expectTokens(await idpLogin(t, await idToken({ email: a.email })));
    expect((await call(t, 'GET', '/current_user', undefined, bearer(viaIdp.access_token))).status).toBe(200);
  });
});
