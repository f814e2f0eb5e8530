import { decodeJwt } from 'jose';
import { afterEach, describe, expect, it } from 'vitest';
import { manualClock } from '../../src/lib/clock.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { principal } from '../helpers/auth.js';
import { dialectName } from '../helpers/store.js';
import { account, bearer, call, expectError, expectTokens, login } from './helpers.js';

describe(`devices (${dialectName})`, () => {
  const apps: TestApp[] = [];
  const start = async (...args: Parameters<typeof startTestApp>) => {
    const t = await startTestApp(...args);
    apps.push(t);
    return t;
  };
  afterEach(async () => {
    while (apps.length) await apps.pop()!.close();
  });
  const devLogin = (t: TestApp, registration_token: unknown) =>
    call(t, 'POST', '/auth/device/login', { registration_token });

  it('register (auth:manage) → one-time token → device login bound to the device, once', async () => {
    const t = await start();
    const manager = await principal(t, ['auth:manage']);
    const a = await account(t);
    const reg = await call(
      t,
      'POST',
      '/auth/device/register',
      { user_id: a.id, name: 'Ward tablet 3' },
      manager.headers,
    );
    expect(reg.status, reg.raw).toBe(200);
    expect(Object.keys(reg.body).sort()).toEqual(['device_id', 'expires_at', 'registration_token']);
    expect(reg.body.registration_token).toMatch(/^svc_dev_[0-9A-Za-z]{43}$/);
    const tokens = expectTokens(await devLogin(t, reg.body.registration_token));
    expect(tokens.device_id).toBe(reg.body.device_id);
    expect(decodeJwt(tokens.access_token)).toMatchObject({
      sub: a.id,
      ap: 'device',
      did: reg.body.device_id,
    });
    const me = await call(t, 'GET', '/current_user', undefined, bearer(tokens.access_token));
    expect(me.body).toMatchObject({ id: a.id, auth_path: 'device' });
    expectError(await devLogin(t, reg.body.registration_token), 401, 'AUTH.DEVICE_TOKEN_INVALID');
    // Refresh keeps the binding.
    const rotated = expectTokens(
      await call(t, 'POST', '/auth/refresh', { refresh_token: tokens.refresh_token }),
    );
    expect(decodeJwt(rotated.access_token)).toMatchObject({ ap: 'device', did: reg.body.device_id });
    const list = await call(
      t,
      'GET',
      `/refresh_token?device_id=${reg.body.device_id}&active=true`,
      undefined,
      manager.headers,
    );
    expect(list.body.refresh_tokens).toMatchObject([{ device_id: reg.body.device_id, auth_path: 'device' }]);
  });

  it('two concurrent device logins with one registration token: exactly one gets tokens', async () => {
    const t = await start();
    const a = await account(t);
    const reg = await t.ctx.services.auth.registerDevice('test', { user_id: a.id, name: 'race' });
    const results = await Promise.all([
      devLogin(t, reg.registration_token),
      devLogin(t, reg.registration_token),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual([200, 401]);
    expectError(results.find((r) => r.status === 401)!, 401, 'AUTH.DEVICE_TOKEN_INVALID');
  });

  it('register needs auth:manage and a real user; bad bodies are 400', async () => {
    const t = await start();
    const manager = await principal(t, ['auth:manage']);
    const reader = await principal(t, ['device:read']);
    const a = await account(t);
    expectError(
      await call(t, 'POST', '/auth/device/register', { user_id: a.id, name: 'x' }, reader.headers),
      403,
      'AUTH.FORBIDDEN',
    );
    expectError(
      await call(t, 'POST', '/auth/device/register', { user_id: a.id, name: 'x' }),
      401,
      'AUTH.UNAUTHENTICATED',
    );
    expectError(
      await call(
        t,
        'POST',
        '/auth/device/register',
        { user_id: '00000000-0000-4000-8000-000000000000', name: 'x' },
        manager.headers,
      ),
      404,
      'USER.NOT_FOUND',
    );
    for (const body of [
      { user_id: a.id },
      { user_id: a.id, name: '' },
      { user_id: a.id, name: 'x', extra: true },
    ]) {
      expectError(
        await call(t, 'POST', '/auth/device/register', body, manager.headers),
        400,
        'VALIDATION_ERROR',
      );
    }
    expectError(await devLogin(t, 'svc_dev_nope'), 401, 'AUTH.DEVICE_TOKEN_INVALID');
    expectError(await devLogin(t, 42), 400, 'VALIDATION_ERROR');
  });

  it('an expired registration token is refused (SVC_DEVICE_REGISTRATION_TTL_SECONDS)', async () => {
    const clock = manualClock();
    const t = await start({ clock, env: { SVC_DEVICE_REGISTRATION_TTL_SECONDS: '600' } });
    const a = await account(t);
    const reg = await t.ctx.services.auth.registerDevice('test', { user_id: a.id, name: 'late' });
    expect(reg.expires_at).toBe(new Date(clock.now().getTime() + 600_000).toISOString());
    clock.advance(600_000);
    expectError(await devLogin(t, reg.registration_token), 401, 'AUTH.DEVICE_TOKEN_INVALID');
  });

  it('consent: recorded for the caller’s own device (from the device session or by id)', async () => {
    const t = await start();
    const a = await account(t);
    const b = await account(t);
    const reg = await t.ctx.services.auth.registerDevice('test', { user_id: a.id, name: 'phone' });
    const dev = expectTokens(await devLogin(t, reg.registration_token));
    const given = await call(
      t,
      'POST',
      '/auth/device/consent',
      { consent_given: true },
      bearer(dev.access_token),
    );
    expect(given.status, given.raw).toBe(200);
    expect(given.body).toMatchObject({ id: reg.device_id, consent_given: true, status: 'REGISTERED' });
    expect(given.body.consent_at).not.toBeNull();
    const aSession = bearer(expectTokens(await login(t, a)).access_token);
    const withdrawn = await call(
      t,
      'POST',
      '/auth/device/consent',
      { device_id: reg.device_id, consent_given: false },
      aSession,
    );
    expect(withdrawn.body.consent_given).toBe(false);
    expectError(
      await call(t, 'POST', '/auth/device/consent', { consent_given: true }, aSession),
      400,
      'VALIDATION_ERROR',
    );
    const bSession = bearer(expectTokens(await login(t, b)).access_token);
    expectError(
      await call(
        t,
        'POST',
        '/auth/device/consent',
        { device_id: reg.device_id, consent_given: true },
        bSession,
      ),
      404,
      'AUTH.DEVICE_NOT_FOUND',
    );
    expectError(
      await call(t, 'POST', '/auth/device/consent', { device_id: reg.device_id }, aSession),
      400,
      'VALIDATION_ERROR',
    );
  });

  it('DELETE /auth/device/{id}: only the device’s own user; the device’s sessions end', async () => {
    const t = await start();
    const a = await account(t);
    const b = await account(t);
    const reg = await t.ctx.services.auth.registerDevice('test', { user_id: a.id, name: 'lost phone' });
    const dev = expectTokens(await devLogin(t, reg.registration_token));
    const aTokens = expectTokens(await login(t, a));
    const bSession = bearer(expectTokens(await login(t, b)).access_token);
    expectError(
      await call(t, 'DELETE', `/auth/device/${reg.device_id}`, undefined, bSession),
      404,
      'AUTH.DEVICE_NOT_FOUND',
    );
    const del = await call(
      t,
      'DELETE',
      `/auth/device/${reg.device_id}`,
      undefined,
      bearer(aTokens.access_token),
    );
    expect(del.status, del.raw).toBe(200);
    expect(del.body.deleted_at).not.toBeNull();
    expectError(
      await call(t, 'GET', '/current_user', undefined, bearer(dev.access_token)),
      401,
      'AUTH.UNAUTHENTICATED',
    );
    expectError(
      await call(t, 'POST', '/auth/refresh', { refresh_token: dev.refresh_token }),
      401,
      'AUTH.REFRESH_TOKEN_INVALID',
    );
    // The user's own password session is untouched.
    expect((await call(t, 'GET', '/current_user', undefined, bearer(aTokens.access_token))).status).toBe(200);
    expectError(
      await call(t, 'DELETE', `/auth/device/${reg.device_id}`, undefined, bearer(aTokens.access_token)),
      404,
      'AUTH.DEVICE_NOT_FOUND',
    );
  });

  it('GET /device, GET/PATCH/DELETE /device/{id} with device:read / device:write / device:delete', async () => {
    const t = await start();
    const reader = await principal(t, ['device:read']);
    const writer = await principal(t, ['device:write']);
    const deleter = await principal(t, ['device:delete']);
    const a = await account(t);
    const b = await account(t);
    const r1 = await t.ctx.services.auth.registerDevice('test', { user_id: a.id, name: 'Kiosk North' });
    const r2 = await t.ctx.services.auth.registerDevice('test', { user_id: b.id, name: 'Kiosk South' });
    await t.ctx.services.auth.registerDevice('test', { user_id: b.id, name: 'Tablet' });
    const all = await call(t, 'GET', '/device?sort_by=name&sort_dir=asc', undefined, reader.headers);
    expect(all.status, all.raw).toBe(200);
    expect(all.body).toMatchObject({ total: 3, has_next: false, has_previous: false });
    expect((all.body.devices as Array<{ name: string }>).map((d) => d.name)).toEqual([
      'Kiosk North',
      'Kiosk South',
      'Tablet',
    ]);
    expect(all.raw).not.toContain('registration_token');
    const search = await call(t, 'GET', '/device?search=KIOSK', undefined, reader.headers);
    expect(search.body.total).toBe(2);
    const mine = await call(t, 'GET', `/device?user_id=${b.id}&limit=1`, undefined, reader.headers);
    expect(mine.body).toMatchObject({ total: 2, limit: 1, has_next: true });
    const one = await call(t, 'GET', `/device/${r1.device_id}`, undefined, reader.headers);
    expect(one.body).toMatchObject({
      id: r1.device_id,
      user_id: a.id,
      status: 'PENDING',
      consent_given: false,
    });
    expectError(
      await call(t, 'GET', `/device/${r1.device_id}`, undefined, writer.headers),
      403,
      'AUTH.FORBIDDEN',
    );
    expectError(
      await call(t, 'GET', '/device?sort_by=registration_token_hash', undefined, reader.headers),
      400,
      'VALIDATION_ERROR',
    );

    const patched = await call(
      t,
      'PATCH',
      `/device/${r1.device_id}`,
      { name: 'Kiosk East', refresh_token_ttl_seconds: 3600 },
      writer.headers,
    );
    expect(patched.body).toMatchObject({ name: 'Kiosk East', refresh_token_ttl_seconds: 3600 });
    expectError(
      await call(t, 'PATCH', `/device/${r1.device_id}`, {}, writer.headers),
      400,
      'VALIDATION_ERROR',
    );
    const tokens = expectTokens(await devLogin(t, r1.registration_token));
    expect(tokens.refresh_expires_in).toBe(3600);

    expectError(
      await call(t, 'DELETE', `/device/${r2.device_id}`, undefined, reader.headers),
      403,
      'AUTH.FORBIDDEN',
    );
    const del = await call(t, 'DELETE', `/device/${r1.device_id}`, undefined, deleter.headers);
    expect(del.status, del.raw).toBe(200);
    expectError(
      await call(t, 'GET', '/current_user', undefined, bearer(tokens.access_token)),
      401,
      'AUTH.UNAUTHENTICATED',
    );
    expectError(
      await call(t, 'GET', `/device/${r1.device_id}`, undefined, reader.headers),
      404,
      'DEVICE.NOT_FOUND',
    );
    expectError(
      await call(t, 'DELETE', `/device/${r1.device_id}`, undefined, deleter.headers),
      404,
      'DEVICE.NOT_FOUND',
    );
    expect((await call(t, 'GET', '/device', undefined, reader.headers)).body.total).toBe(2);
    // A deleted device's pending registration token is dead too.
    await call(t, 'DELETE', `/device/${r2.device_id}`, undefined, deleter.headers);
    expectError(await devLogin(t, r2.registration_token), 401, 'AUTH.DEVICE_TOKEN_INVALID');
  });
});
