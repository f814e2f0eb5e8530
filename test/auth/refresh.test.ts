import { afterEach, describe, expect, it } from 'vitest';
import { manualClock } from '../../src/lib/clock.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { admin, apiKey, principal } from '../helpers/auth.js';
import { dialectName } from '../helpers/store.js';
import { account, bearer, call, expectError, expectTokens, login } from './helpers.js';

describe(`refresh tokens (${dialectName})`, () => {
  const apps: TestApp[] = [];
  const start = async (...args: Parameters<typeof startTestApp>) => {
    const t = await startTestApp(...args);
    apps.push(t);
    return t;
  };
  afterEach(async () => {
    while (apps.length) await apps.pop()!.close();
  });
  const refresh = (t: TestApp, token: string, ua?: string) =>
    call(t, 'POST', '/auth/refresh', { refresh_token: token }, ua ? { 'user-agent': ua } : {});

  it('rotates: a new pair each time, the used token is dead, new access tokens work', async () => {
    const t = await start();
    const a = await account(t);
    const first = expectTokens(await login(t, a));
    const second = expectTokens(await refresh(t, first.refresh_token));
    expect(second.refresh_token).not.toBe(first.refresh_token);
    const me = await call(t, 'GET', '/current_user', undefined, bearer(second.access_token));
    expect(me.body).toMatchObject({ id: a.id, auth_path: 'password' });
    const third = expectTokens(await refresh(t, second.refresh_token));
    expect((await call(t, 'GET', '/current_user', undefined, bearer(third.access_token))).status).toBe(200);
  });

  it('a reused token revokes its whole family: every token of the session, and its access tokens', async () => {
    const t = await start();
    const a = await account(t);
    const first = expectTokens(await login(t, a));
    const other = expectTokens(await login(t, a)); // a second sign-in: a separate family
    const second = expectTokens(await refresh(t, first.refresh_token));
    // The thief (or the victim) presents the already-rotated token.
    expectError(await refresh(t, first.refresh_token), 401, 'AUTH.REFRESH_TOKEN_REUSED');
    expectError(await refresh(t, second.refresh_token), 401, 'AUTH.REFRESH_TOKEN_INVALID');
    for (const token of [first.access_token, second.access_token]) {
      expectError(
        await call(t, 'GET', '/current_user', undefined, bearer(token)),
        401,
        'AUTH.UNAUTHENTICATED',
      );
    }
    // The other sign-in is untouched.
    expect((await call(t, 'GET', '/current_user', undefined, bearer(other.access_token))).status).toBe(200);
    expectTokens(await refresh(t, other.refresh_token));
    const boss = await admin(t);
    const list = await call(t, 'GET', `/refresh_token?user_id=${a.id}&sort_dir=asc`, undefined, boss.headers);
    const rows = list.body.refresh_tokens as Array<Record<string, unknown>>;
    const family = rows.filter((r) => r.revoked_reason === 'refresh_token_reused');
    expect(family.map((r) => r.session_id)).toEqual([rows[0].session_id, rows[0].session_id]);
    expect(rows.filter((r) => r.used_at !== null)).toHaveLength(2);
  });

  it('two concurrent refreshes with one token: exactly one wins, the other is reuse and ends the family', async () => {
    const t = await start();
    const a = await account(t);
    const tokens = expectTokens(await login(t, a));
    const results = await Promise.all([refresh(t, tokens.refresh_token), refresh(t, tokens.refresh_token)]);
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).toEqual([200, 401]);
    const winner = results.find((r) => r.status === 200)!;
    expectError(results.find((r) => r.status === 401)!, 401, 'AUTH.REFRESH_TOKEN_REUSED');
    expectError(await refresh(t, winner.body.refresh_token as string), 401, 'AUTH.REFRESH_TOKEN_INVALID');
  });

  it('rejects unknown, malformed and expired tokens with AUTH.REFRESH_TOKEN_INVALID', async () => {
    const clock = manualClock();
    const t = await start({ clock });
    const a = await account(t);
    const tokens = expectTokens(await login(t, a));
    expectError(await refresh(t, `svc_rt_${'A'.repeat(43)}`), 401, 'AUTH.REFRESH_TOKEN_INVALID');
    expectError(await refresh(t, 'garbage'), 401, 'AUTH.REFRESH_TOKEN_INVALID');
    expectError(await refresh(t, `svc_key_${'A'.repeat(43)}`), 401, 'AUTH.REFRESH_TOKEN_INVALID');
    expectError(await refresh(t, tokens.access_token), 400, 'VALIDATION_ERROR'); // longer than any refresh token
    expectError(await call(t, 'POST', '/auth/refresh', {}), 400, 'VALIDATION_ERROR');
    expectError(await call(t, 'POST', '/auth/refresh', { refresh_token: 1 }), 400, 'VALIDATION_ERROR');
    clock.advance(2_592_000_000);
    const expired = await refresh(t, tokens.refresh_token);
    expectError(expired, 401, 'AUTH.REFRESH_TOKEN_INVALID');
    expect(expired.body.message).toMatch(/expired/);
  });

  it('guessing (unknown tokens) locks the address; known but expired tokens do not count', async () => {
    const clock = manualClock();
    const t = await start({
      clock,
      env: { SVC_LOGIN_IP_MAX_ATTEMPTS: '3', SVC_REFRESH_TOKEN_TTL_SECONDS: '600' },
    });
    const a = await account(t);
    const tokens = expectTokens(await login(t, a));
    clock.advance(601_000);
    const from = (ip: string, token: string) =>
      call(t, 'POST', '/auth/refresh', { refresh_token: token }, {}, ip);
    for (let i = 0; i < 5; i++)
      expectError(await from('198.51.100.2', tokens.refresh_token), 401, 'AUTH.REFRESH_TOKEN_INVALID');
    for (let i = 0; i < 3; i++) {
      expectError(
        await from('203.0.113.9', `svc_rt_${String(i).repeat(43)}`),
        401,
        'AUTH.REFRESH_TOKEN_INVALID',
      );
    }
    const locked = await from('203.0.113.9', tokens.refresh_token);
    expectError(locked, 429, 'AUTH.TOO_MANY_ATTEMPTS');
    expect(Number(locked.headers['retry-after'])).toBe(60);
  });

  it('lifetimes: global env, then per user (PATCH /auth/user/{id}/settings), then per device', async () => {
    const clock = manualClock();
    const t = await start({
      clock,
      env: { SVC_REFRESH_TOKEN_TTL_SECONDS: '7200', SVC_ACCESS_TOKEN_TTL_SECONDS: '120' },
    });
    // An API key: it outlives the clock moves below, where a signed-in admin's access token would not.
    const boss = await apiKey(t, ['auth:manage']);
    const a = await account(t);
    let tokens = expectTokens(await login(t, a));
    expect(tokens.expires_in).toBe(120);
    expect(tokens.refresh_expires_in).toBe(7200);
    expect(tokens.refresh_expires_at).toBe(new Date(clock.now().getTime() + 7_200_000).toISOString());

    const set = await call(
      t,
      'PATCH',
      `/auth/user/${a.id}/settings`,
      { access_token_ttl_seconds: 300, refresh_token_ttl_seconds: 600 },
      boss.headers,
    );
    expect(set.status, set.raw).toBe(200);
    expect(set.body).toEqual({
      user_id: a.id,
      mfa_enabled: false,
      password_reset_required: false,
      access_token_ttl_seconds: 300,
      refresh_token_ttl_seconds: 600,
    });
    // Applies to the next rotation of an existing session too.
    tokens = expectTokens(await refresh(t, tokens.refresh_token));
    expect([tokens.expires_in, tokens.refresh_expires_in]).toEqual([300, 600]);
    // The access token really expires after its lifetime (plus the 30 s clock-skew allowance).
    clock.advance(331_000);
    expectError(
      await call(t, 'GET', '/current_user', undefined, bearer(tokens.access_token)),
      401,
      'AUTH.UNAUTHENTICATED',
    );
    tokens = expectTokens(await refresh(t, tokens.refresh_token));
    clock.advance(601_000);
    expectError(await refresh(t, tokens.refresh_token), 401, 'AUTH.REFRESH_TOKEN_INVALID');

    const reg = await call(
      t,
      'POST',
      '/auth/device/register',
      { user_id: a.id, name: 'kiosk', access_token_ttl_seconds: 60, refresh_token_ttl_seconds: 86_400 },
      boss.headers,
    );
    const dev = expectTokens(
      await call(t, 'POST', '/auth/device/login', { registration_token: reg.body.registration_token }),
    );
    expect([dev.expires_in, dev.refresh_expires_in]).toEqual([60, 86_400]);
    // Back to the global values when the user's overrides are cleared.
    await call(
      t,
      'PATCH',
      `/auth/user/${a.id}/settings`,
      { access_token_ttl_seconds: null, refresh_token_ttl_seconds: null },
      boss.headers,
    );
    const again = expectTokens(await login(t, a));
    expect([again.expires_in, again.refresh_expires_in]).toEqual([120, 7200]);
    // Settings validation: below 60 s, unknown fields, empty patch, unknown user.
    for (const body of [{ access_token_ttl_seconds: 10 }, { nope: 1 }, {}]) {
      expectError(
        await call(t, 'PATCH', `/auth/user/${a.id}/settings`, body, boss.headers),
        400,
        'VALIDATION_ERROR',
      );
    }
    expectError(
      await call(
        t,
        'GET',
        '/auth/user/00000000-0000-4000-8000-000000000000/settings',
        undefined,
        boss.headers,
      ),
      404,
      'USER.NOT_FOUND',
    );
  });

  it('records device_id, auth_path, expires_at, ip_address, user_agent; never the token or its hash', async () => {
    const t = await start();
    const boss = await admin(t);
    const a = await account(t);
    const tokens = expectTokens(
      await call(
        t,
        'POST',
        '/auth/login/credentials',
        { email: a.email, password: a.password },
        { 'user-agent': 'ua-test/1' },
      ),
    );
    const rotated = expectTokens(await refresh(t, tokens.refresh_token, 'ua-test/2'));
    const list = await call(
      t,
      'GET',
      `/refresh_token?user_id=${a.id}&sort_by=created_at&sort_dir=asc`,
      undefined,
      boss.headers,
    );
    expect(list.status, list.raw).toBe(200);
    expect(list.body).toMatchObject({ total: 2, limit: 25, offset: 0, has_next: false, has_previous: false });
    const [r1, r2] = list.body.refresh_tokens as Array<Record<string, unknown>>;
    expect(r1).toMatchObject({
      user_id: a.id,
      auth_path: 'password',
      device_id: null,
      ip_address: '127.0.0.1',
      user_agent: 'ua-test/1',
      parent_id: null,
      revoked_at: null,
      deleted_at: null,
    });
    expect(r1.used_at).not.toBeNull();
    expect(r2).toMatchObject({
      parent_id: r1.id,
      session_id: r1.session_id,
      user_agent: 'ua-test/2',
      used_at: null,
    });
    expect(r2.expires_at).toBe(rotated.refresh_expires_at);
    expect(list.raw).not.toContain(tokens.refresh_token);
    expect(list.raw).not.toContain('token_hash');
    const active = await call(
      t,
      'GET',
      `/refresh_token?user_id=${a.id}&active=true`,
      undefined,
      boss.headers,
    );
    expect((active.body.refresh_tokens as unknown[]).length).toBe(1);
    const inactive = await call(
      t,
      'GET',
      `/refresh_token?user_id=${a.id}&active=false`,
      undefined,
      boss.headers,
    );
    expect((inactive.body.refresh_tokens as Array<{ id: string }>).map((r) => r.id)).toEqual([r1.id]);
    const one = await call(t, 'GET', `/refresh_token/${r2.id}`, undefined, boss.headers);
    expect(one.body).toEqual(r2);
    expectError(
      await call(t, 'GET', '/refresh_token?sort_by=token_hash', undefined, boss.headers),
      400,
      'VALIDATION_ERROR',
    );
    expectError(
      await call(t, 'GET', '/refresh_token?limit=251', undefined, boss.headers),
      400,
      'VALIDATION_ERROR',
    );
  });

  it('GET/DELETE /refresh_token need auth:manage; DELETE ends the sign-in and soft-deletes the record', async () => {
    const t = await start();
    const manager = await principal(t, ['auth:manage']);
    const noScope = await principal(t, ['device:read']);
    const a = await account(t);
    const tokens = expectTokens(await login(t, a));
    const forbidden = await call(t, 'GET', '/refresh_token', undefined, noScope.headers);
    expectError(forbidden, 403, 'AUTH.FORBIDDEN');
    expect(forbidden.body.details).toEqual({ required_scopes: ['auth:manage'], mode: 'any' });
    expectError(await call(t, 'GET', '/refresh_token'), 401, 'AUTH.UNAUTHENTICATED');
    const list = await call(t, 'GET', `/refresh_token?user_id=${a.id}`, undefined, manager.headers);
    const id = (list.body.refresh_tokens as Array<{ id: string }>)[0].id;
    expectError(
      await call(t, 'DELETE', `/refresh_token/${id}`, undefined, noScope.headers),
      403,
      'AUTH.FORBIDDEN',
    );
    const del = await call(t, 'DELETE', `/refresh_token/${id}`, undefined, manager.headers);
    expect(del.status, del.raw).toBe(200);
    expect(del.body).toMatchObject({ id, revoked_reason: 'refresh_token_deleted' });
    expect(del.body.deleted_at).not.toBeNull();
    expectError(await refresh(t, tokens.refresh_token), 401, 'AUTH.REFRESH_TOKEN_INVALID');
    expectError(
      await call(t, 'GET', '/current_user', undefined, bearer(tokens.access_token)),
      401,
      'AUTH.UNAUTHENTICATED',
    );
    expectError(
      await call(t, 'GET', `/refresh_token/${id}`, undefined, manager.headers),
      404,
      'AUTH.REFRESH_TOKEN_NOT_FOUND',
    );
    expectError(
      await call(t, 'DELETE', `/refresh_token/${id}`, undefined, manager.headers),
      404,
      'AUTH.REFRESH_TOKEN_NOT_FOUND',
    );
  });

  it('the 24-hour job soft-deletes expired tokens (and only those)', async () => {
    const clock = manualClock();
    const t = await start({ clock, env: { SVC_REFRESH_TOKEN_TTL_SECONDS: '3600' } });
    const boss = await apiKey(t, ['auth:manage']);
    const a = await account(t);
    await login(t, a);
    clock.advance(3_000_000);
    await login(t, a);
    clock.advance(700_000); // the first token is now expired, the second is not
    const job = t.ctx.services.jobs.find((j) => j.name === 'refresh-token-cleanup')!;
    expect(job.intervalMs).toBe(86_400_000);
    expect(await job.run()).toBe(false);
    const list = await call(t, 'GET', `/refresh_token?user_id=${a.id}`, undefined, boss.headers);
    expect(list.body.total).toBe(1);
    expect(
      new Date((list.body.refresh_tokens as Array<{ expires_at: string }>)[0].expires_at).getTime(),
    ).toBeGreaterThan(clock.now().getTime());
    // Two expired: the first login above and the sign-in of the API key's creator (apiKey helper).
    expect(t.logs.filter((l) => l.msg === 'expired refresh tokens soft-deleted')).toMatchObject([
      { deleted: 2 },
    ]);
    expect(await job.run()).toBe(false);
    expect(t.logs.filter((l) => l.msg === 'expired refresh tokens soft-deleted')).toHaveLength(1);
  });

  it('POST /auth/logout ends the current session only', async () => {
    const t = await start();
    const a = await account(t);
    const one = expectTokens(await login(t, a));
    const two = expectTokens(await login(t, a));
    const out = await call(t, 'POST', '/auth/logout', undefined, bearer(one.access_token));
    expect(out.status, out.raw).toBe(200);
    expectError(
      await call(t, 'GET', '/current_user', undefined, bearer(one.access_token)),
      401,
      'AUTH.UNAUTHENTICATED',
    );
    expectError(await refresh(t, one.refresh_token), 401, 'AUTH.REFRESH_TOKEN_INVALID');
    expect((await call(t, 'GET', '/current_user', undefined, bearer(two.access_token))).status).toBe(200);
  });

  it('deleting the user ends refresh too', async () => {
    const t = await start();
    const a = await account(t);
    const tokens = expectTokens(await login(t, a));
    await t.ctx.services.identity.deleteUser({ userId: 'test' }, a.id);
    expectError(await refresh(t, tokens.refresh_token), 401, 'AUTH.REFRESH_TOKEN_INVALID');
  });
});
