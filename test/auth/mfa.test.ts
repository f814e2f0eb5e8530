import { afterEach, describe, expect, it } from 'vitest';
import { vaultKeyring } from '../../src/areas/vault/keyring.js';
import { manualClock } from '../../src/lib/clock.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { admin, apiKey } from '../helpers/auth.js';
import { TEST_SECRETS } from '../helpers/secrets.js';
import { dialectName } from '../helpers/store.js';
import { account, bearer, call, codeAt, expectError, expectTokens, login, readVector } from './helpers.js';

type Clock = ReturnType<typeof manualClock>;

describe(`MFA with TOTP (${dialectName})`, () => {
  const apps: TestApp[] = [];
  const start = async (clock: Clock) => {
    const t = await startTestApp({ clock });
    apps.push(t);
    return t;
  };
  afterEach(async () => {
    while (apps.length) await apps.pop()!.close();
  });

  /** A user with MFA set up, verified and enabled through HTTP; answers the secret and a session. */
  async function withMfa(t: TestApp, clock: Clock) {
    const a = await account(t);
    const session = expectTokens(await login(t, a));
    const h = bearer(session.access_token);
    const setup = await call(t, 'POST', '/auth/mfa/setup', undefined, h);
    expect(setup.status, setup.raw).toBe(200);
    const secret = setup.body.secret as string;
    const verify = await call(
      t,
      'POST',
      '/auth/mfa/verify',
      { code: codeAt(secret, clock.now().getTime()) },
      h,
    );
    expect(verify.status, verify.raw).toBe(200);
    const enable = await call(t, 'PATCH', '/auth/mfa/enable', { enabled: true }, h);
    expect(enable.body).toEqual({ mfa_enabled: true });
    clock.advance(30_000); // the verify code's step is spent
    return { a, secret, h };
  }

  it('set-up: secret + otpauth URI, verify a code, enable; the secret is stored encrypted with the vault key', async () => {
    const clock = manualClock();
    const t = await start(clock);
    const a = await account(t);
    const h = bearer(expectTokens(await login(t, a)).access_token);
    const setup = await call(t, 'POST', '/auth/mfa/setup', undefined, h);
    expect(setup.status, setup.raw).toBe(200);
    const secret = setup.body.secret as string;
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);
    expect(setup.body.otpauth_url).toBe(
      `otpauth://totp/svc:${encodeURIComponent(a.email)}?issuer=svc&secret=${secret}&algorithm=SHA1&digits=6&period=30`,
    );
    // Not enabled before verification.
    expectError(
      await call(t, 'PATCH', '/auth/mfa/enable', { enabled: true }, h),
      400,
      'AUTH.MFA_NOT_VERIFIED',
    );
    expectError(
      await call(t, 'POST', '/auth/mfa/verify', { code: '000000' }, h),
      401,
      'AUTH.MFA_INVALID_CODE',
    );
    const ok = await call(t, 'POST', '/auth/mfa/verify', { code: codeAt(secret, clock.now().getTime()) }, h);
    expect(ok.body).toEqual({ verified: true });
    // The stored value is a Fernet token under the vault key, never the base32 text.
    const row = await t.ctx.store.db
      .selectFrom('auth_user')
      .select('mfa_pending_secret')
      .where('user_id', '=', a.id)
      .executeTakeFirstOrThrow();
    const stored = row.mfa_pending_secret as string;
    expect(stored).not.toContain(secret);
    expect(vaultKeyring(TEST_SECRETS.SVC_VAULT_ENCRYPTION_KEY).decrypt(stored).toString()).toBe(secret);
    expect((await call(t, 'PATCH', '/auth/mfa/enable', { enabled: true }, h)).body).toEqual({
      mfa_enabled: true,
    });
    const me = await call(t, 'GET', '/current_user', undefined, h);
    expect(me.body.mfa_enabled).toBe(true);
    // A second set-up while enabled is refused: disable first.
    expectError(await call(t, 'POST', '/auth/mfa/setup', undefined, h), 409, 'AUTH.MFA_ALREADY_ENABLED');
  });

  it('verify and enable without a set-up are 400 AUTH.MFA_NOT_SET_UP; bad bodies are 400', async () => {
    const t = await start(manualClock());
    const a = await account(t);
    const h = bearer(expectTokens(await login(t, a)).access_token);
    expectError(await call(t, 'POST', '/auth/mfa/verify', { code: '123456' }, h), 400, 'AUTH.MFA_NOT_SET_UP');
    expectError(await call(t, 'PATCH', '/auth/mfa/enable', { enabled: true }, h), 400, 'AUTH.MFA_NOT_SET_UP');
    expectError(await call(t, 'PATCH', '/auth/mfa/enable', { enabled: 'yes' }, h), 400, 'VALIDATION_ERROR');
    expectError(await call(t, 'POST', '/auth/mfa/verify', {}, h), 400, 'VALIDATION_ERROR');
    expectError(await call(t, 'POST', '/auth/mfa/setup'), 401, 'AUTH.UNAUTHENTICATED');
    // Disabling when not enabled is a no-op.
    expect((await call(t, 'PATCH', '/auth/mfa/enable', { enabled: false }, h)).body).toEqual({
      mfa_enabled: false,
    });
  });

  it('login with MFA: mfa_required + mfa_token, then mfa_verify gives the tokens with auth_path mfa', async () => {
    const clock = manualClock();
    const t = await start(clock);
    const { a, secret } = await withMfa(t, clock);
    const first = await login(t, a);
    expect(first.status).toBe(200);
    expect(first.body).toEqual({
      mfa_required: true,
      mfa_token: expect.stringMatching(/^svc_mfa_/),
      expires_in: 300,
    });
    expect(first.body.access_token).toBeUndefined();
    const tokens = expectTokens(
      await call(t, 'POST', '/auth/login/mfa_verify', {
        mfa_token: first.body.mfa_token,
        code: codeAt(secret, clock.now().getTime()),
      }),
    );
    const me = await call(t, 'GET', '/current_user', undefined, bearer(tokens.access_token));
    expect(me.body).toMatchObject({ id: a.id, auth_path: 'mfa' });
    // The refresh token keeps the path.
    const rotated = expectTokens(
      await call(t, 'POST', '/auth/refresh', { refresh_token: tokens.refresh_token }),
    );
    expect(
      (await call(t, 'GET', '/current_user', undefined, bearer(rotated.access_token))).body.auth_path,
    ).toBe('mfa');
    // The mfa_token worked once.
    expectError(
      await call(t, 'POST', '/auth/login/mfa_verify', {
        mfa_token: first.body.mfa_token,
        code: codeAt(secret, clock.now().getTime(), 1),
      }),
      401,
      'AUTH.MFA_TOKEN_INVALID',
    );
  });

  it('an mfa_token won before a password change, or before a reset was required, no longer signs in', async () => {
    const clock = manualClock();
    const t = await start(clock);
    const { a, secret, h } = await withMfa(t, clock);
    const verify = (token: string) =>
      call(t, 'POST', '/auth/login/mfa_verify', {
        mfa_token: token,
        code: codeAt(secret, clock.now().getTime()),
      });

    // Changed password: the challenge won with the old one is spent.
    const before = (await login(t, a)).body.mfa_token as string;
    const changed = await call(
      t,
      'POST',
      '/user/change_password',
      { current_password: a.password, new_password: 'a-brand-new-password-9' },
      h,
    );
    expect(changed.status, changed.raw).toBe(200);
    expectError(await verify(before), 401, 'AUTH.MFA_TOKEN_INVALID');

    // Reset required by an administrator: open challenges end, and no new one gets through.
    const now = { ...a, password: 'a-brand-new-password-9' };
    const open = (await login(t, now)).body.mfa_token as string;
    const boss = await admin(t);
    const set = await call(
      t,
      'PATCH',
      `/auth/user/${a.id}/settings`,
      { password_reset_required: true },
      boss.headers,
    );
    expect(set.status, set.raw).toBe(200);
    clock.advance(30_000);
    expectError(await verify(open), 401, 'AUTH.MFA_TOKEN_INVALID');
    expectError(await login(t, now), 403, 'AUTH.PASSWORD_RESET_REQUIRED');
  });

  it('a code works once (replay refused, also through the alias path); ±1 step accepted, ±2 refused', async () => {
    const clock = manualClock();
    const t = await start(clock);
    const { a, secret } = await withMfa(t, clock);
    const challenge = async () => (await login(t, a)).body.mfa_token as string;
    const verify = (url: string, token: string, code: string) =>
      call(t, 'POST', url, { mfa_token: token, code });
    const now = () => clock.now().getTime();

    const code = codeAt(secret, now());
    expectTokens(await verify('/auth/login/mfa_verify', await challenge(), code));
    expectError(
      await verify('/auth/login/mfa/verify_login', await challenge(), code),
      401,
      'AUTH.MFA_INVALID_CODE',
    );

    clock.advance(120_000);
    // Two steps away: refused.
    expectError(
      await verify('/auth/login/mfa_verify', await challenge(), codeAt(secret, now(), -2)),
      401,
      'AUTH.MFA_INVALID_CODE',
    );
    expectError(
      await verify('/auth/login/mfa_verify', await challenge(), codeAt(secret, now(), 2)),
      401,
      'AUTH.MFA_INVALID_CODE',
    );
    // One step behind: accepted (clock drift), through the alias.
    expectTokens(await verify('/auth/login/mfa/verify_login', await challenge(), codeAt(secret, now(), -1)));
    // One step ahead: accepted; afterwards the current step (now behind the last used one) is refused.
    expectTokens(await verify('/auth/login/mfa_verify', await challenge(), codeAt(secret, now(), 1)));
    expectError(
      await verify('/auth/login/mfa_verify', await challenge(), codeAt(secret, now())),
      401,
      'AUTH.MFA_INVALID_CODE',
    );
  });

  it('one code sent on two challenges at once signs in only once', async () => {
    const clock = manualClock();
    const t = await start(clock);
    const { a, secret } = await withMfa(t, clock);
    const [c1, c2] = [(await login(t, a)).body.mfa_token, (await login(t, a)).body.mfa_token];
    const code = codeAt(secret, clock.now().getTime());
    const results = await Promise.all(
      [c1, c2].map((mfa_token) => call(t, 'POST', '/auth/login/mfa_verify', { mfa_token, code })),
    );
    expect(results.map((r) => r.status).sort()).toEqual([200, 401]);
    expectError(results.find((r) => r.status === 401)!, 401, 'AUTH.MFA_INVALID_CODE');
  });

  it('an mfa_token dies after 5 wrong codes, and after it expires; the account lock counts MFA failures', async () => {
    const clock = manualClock();
    const t = await start(clock);
    const { a, secret } = await withMfa(t, clock);
    const token = (await login(t, a)).body.mfa_token as string;
    for (let i = 0; i < 4; i++) {
      expectError(
        await call(t, 'POST', '/auth/login/mfa_verify', { mfa_token: token, code: '000000' }),
        401,
        'AUTH.MFA_INVALID_CODE',
      );
    }
    expectError(
      await call(t, 'POST', '/auth/login/mfa_verify', { mfa_token: token, code: 'abcdef' }),
      401,
      'AUTH.MFA_INVALID_CODE',
    );
    // 5 failures: the challenge is dead and the account is locked.
    const dead = await call(t, 'POST', '/auth/login/mfa_verify', {
      mfa_token: token,
      code: codeAt(secret, clock.now().getTime()),
    });
    expectError(dead, 401, 'AUTH.MFA_TOKEN_INVALID');
    expectError(await login(t, a), 429, 'AUTH.TOO_MANY_ATTEMPTS');
    clock.advance(61_000);
    const fresh = (await login(t, a)).body.mfa_token as string;
    clock.advance(301_000);
    expectError(
      await call(t, 'POST', '/auth/login/mfa_verify', {
        mfa_token: fresh,
        code: codeAt(secret, clock.now().getTime()),
      }),
      401,
      'AUTH.MFA_TOKEN_INVALID',
    );
    expectError(
      await call(t, 'POST', '/auth/login/mfa_verify', {
        mfa_token: `svc_mfa_${'x'.repeat(43)}`,
        code: '123456',
      }),
      401,
      'AUTH.MFA_TOKEN_INVALID',
    );
  });

  it('the right password does not reset the count of wrong codes: only a complete sign-in does', async () => {
    const clock = manualClock();
    const t = await start(clock);
    const { a, secret } = await withMfa(t, clock);
    const wrong = async (n: number) => {
      const token = (await login(t, a)).body.mfa_token;
      for (let i = 0; i < n; i++) {
        expectError(
          await call(t, 'POST', '/auth/login/mfa_verify', { mfa_token: token, code: '000000' }),
          401,
          'AUTH.MFA_INVALID_CODE',
        );
      }
    };
    await wrong(3);
    await wrong(2);
    expectError(await login(t, a), 429, 'AUTH.TOO_MANY_ATTEMPTS');
    clock.advance(60_000);
    await wrong(4);
    const token = (await login(t, a)).body.mfa_token;
    expectTokens(
      await call(t, 'POST', '/auth/login/mfa_verify', {
        mfa_token: token,
        code: codeAt(secret, clock.now().getTime()),
      }),
    );
    // The complete sign-in cleared it: 4 more wrong codes do not lock.
    await wrong(4);
    expect((await login(t, a)).body.mfa_required).toBe(true);
  });

  it('disable needs a valid, unused code; afterwards login gives tokens directly', async () => {
    const clock = manualClock();
    const t = await start(clock);
    const { a, secret, h } = await withMfa(t, clock);
    expectError(await call(t, 'PATCH', '/auth/mfa/enable', { enabled: false }, h), 400, 'VALIDATION_ERROR');
    expectError(
      await call(t, 'PATCH', '/auth/mfa/enable', { enabled: false, code: '000000' }, h),
      401,
      'AUTH.MFA_INVALID_CODE',
    );
    const off = await call(
      t,
      'PATCH',
      '/auth/mfa/enable',
      { enabled: false, code: codeAt(secret, clock.now().getTime()) },
      h,
    );
    expect(off.body).toEqual({ mfa_enabled: false });
    expectTokens(await login(t, a));
    expect((await call(t, 'GET', '/current_user', undefined, h)).body.mfa_enabled).toBe(false);
    // Enabling and disabling publish svc.user.updated with changed_fields mfa_enabled.
    const events = await t.ctx.store.db
      .selectFrom('event_delivery_task')
      .select('cloudevent')
      .where('event_type', '=', 'svc.user.updated')
      .execute();
    const mine = events.map((e) => JSON.parse(e.cloudevent)).filter((e) => e.subject === a.id);
    expect(mine.map((e) => e.data.changed_fields)).toEqual([['mfa_enabled'], ['mfa_enabled']]);
  });

  it('MFA is not managed with an API key, and API keys are never challenged (SPEC Authentication 9)', async () => {
    const clock = manualClock();
    const t = await start(clock);
    const { a } = await withMfa(t, clock);
    const identity = t.ctx.services.identity;
    const key = await identity.createApiKey(
      { userId: a.id, scopes: await identity.scopesOfUser(a.id), authPath: 'mfa' },
      { name: 'k', scope_keys: [], expires_in: 86_400 },
    );
    const kh = bearer(key.token);
    // The password path is challenged...
    expect((await login(t, a)).body.mfa_required).toBe(true);
    // ...the key of the same user is not, and cannot change the user's MFA.
    const me = await call(t, 'GET', '/current_user', undefined, kh);
    expect(me.body).toMatchObject({ id: a.id, auth_path: 'api_key', mfa_enabled: true });
    const setup = await call(t, 'POST', '/auth/mfa/setup', undefined, kh);
    expectError(setup, 403, 'AUTH.FORBIDDEN');
    // The AUTH.FORBIDDEN detail shape: no scope would help, only a signed-in user.
    expect(setup.body.details).toEqual({ required_scopes: [], mode: 'any', required_auth: 'user' });
    expectError(
      await call(t, 'PATCH', '/auth/mfa/enable', { enabled: false, code: '123456' }, kh),
      403,
      'AUTH.FORBIDDEN',
    );
    const other = await apiKey(t, ['device:read']);
    expectError(
      await call(t, 'POST', '/auth/mfa/verify', { code: '123456' }, other.headers),
      403,
      'AUTH.FORBIDDEN',
    );
  });

  it('RFC 6238 vector times: codes computed independently for the issued secret are accepted at each time', async () => {
    const vectors = readVector<{ vectors: Array<{ time: number; mode: string }> }>('rfc6238.json').vectors;
    const times = vectors.filter((v) => v.mode === 'SHA1').map((v) => v.time * 1000);
    const clock = manualClock(new Date(times[0]));
    const t = await start(clock);
    const { a, secret } = await withMfa(t, clock);
    for (const time of times.slice(1)) {
      clock.set(new Date(time));
      const token = (await login(t, a)).body.mfa_token as string;
      const res = await call(t, 'POST', '/auth/login/mfa_verify', {
        mfa_token: token,
        code: codeAt(secret, time),
      });
      expectTokens(res);
    }
  });
});
