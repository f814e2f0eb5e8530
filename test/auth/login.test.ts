import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { manualClock } from '../../src/lib/clock.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { dialectName, freshDatabase, onPostgres, sqliteFileUrl } from '../helpers/store.js';
import { account, bearer, call, expectError, expectTokens, login } from './helpers.js';

describe(`credentials login and the brute-force guard (${dialectName})`, () => {
  const apps: TestApp[] = [];
  const start = async (...args: Parameters<typeof startTestApp>) => {
    const t = await startTestApp(...args);
    apps.push(t);
    return t;
  };
  afterEach(async () => {
    while (apps.length) await apps.pop()!.close();
  });

  it('answers the CONTRACTS §3 token response; the access token works and says auth_path password', async () => {
    const t = await start();
    const a = await account(t);
    const tokens = expectTokens(await login(t, a));
    expect(tokens.expires_in).toBe(900);
    expect(tokens.refresh_expires_in).toBe(2_592_000);
    const me = await call(t, 'GET', '/current_user', undefined, bearer(tokens.access_token));
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ id: a.id, email: a.email, auth_path: 'password' });
    // The email is matched case-insensitively.
    expectTokens(await login(t, { email: a.email.toUpperCase(), password: a.password }));
  });

  it('a wrong password and an unknown email get the same 401 body', async () => {
    const t = await start();
    const a = await account(t);
    const wrong = await login(t, { email: a.email, password: 'not-the-password' });
    const unknown = await login(t, { email: 'nobody@example.test', password: 'whatever-password' });
    expectError(wrong, 401, 'AUTH.INVALID_CREDENTIALS');
    expect(unknown.raw).toBe(wrong.raw);
  });

  it('rejects bad bodies with 400: missing fields, unknown fields, wrong types', async () => {
    const t = await start();
    for (const body of [
      {},
      { email: 'a@b.c' },
      { email: 'a@b.c', password: 'x', extra: 1 },
      { email: 1, password: 'x' },
    ]) {
      expectError(await call(t, 'POST', '/auth/login/credentials', body), 400, 'VALIDATION_ERROR');
    }
  });

  it('locks an account after 5 failures (429 + Retry-After), even for the right password, then lets it in', async () => {
    const clock = manualClock();
    const t = await start({ clock });
    const a = await account(t);
    for (let i = 0; i < 5; i++) {
      expectError(
        await login(t, { email: a.email, password: `wrong-${i}` }),
        401,
        'AUTH.INVALID_CREDENTIALS',
      );
    }
    const locked = await login(t, a);
    expectError(locked, 429, 'AUTH.TOO_MANY_ATTEMPTS');
    expect(locked.headers['retry-after']).toBe('60');
    expect(locked.body.details).toEqual({ retry_after_seconds: 60 });
    clock.advance(30_000);
    expect((await login(t, a)).headers['retry-after']).toBe('30');
    clock.advance(30_000);
    expectTokens(await login(t, a));
    // Success cleared the account's count: 4 more failures do not lock.
    for (let i = 0; i < 4; i++)
      expectError(await login(t, { ...a, password: 'wrong' }), 401, 'AUTH.INVALID_CREDENTIALS');
    expectTokens(await login(t, a));
  });

  it('a burst of parallel guesses is admitted only up to the limit: the rest are 429, the right password among them too', async () => {
    const t = await start({ env: { SVC_LOGIN_IP_MAX_ATTEMPTS: '10' } });
    const a = await account(t);
    const guesses = Array.from({ length: 39 }, (_, i) => ({ email: a.email, password: `wrong-${i}` }));
    const answers = await Promise.all([...guesses, a].map((creds) => login(t, creds)));
    const statuses = answers.map((r) => r.status);
    // Exactly SVC_LOGIN_MAX_ATTEMPTS (5) password checks ran; every other request was refused first.
    expect(statuses.filter((s) => s === 401 || s === 200)).toHaveLength(5);
    expect(statuses.filter((s) => s === 429)).toHaveLength(35);
    // The address limit holds the same way across many accounts.
    const spray = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        login(t, { email: `spray-${i}@example.test`, password: 'guess-1234' }, '203.0.113.9'),
      ),
    );
    expect(spray.filter((r) => r.status === 401)).toHaveLength(10);
    expect(spray.filter((r) => r.status === 429)).toHaveLength(20);
  });

  it('a right password that does not complete a sign-in gives its reserved attempt back', async () => {
    const t = await start();
    const a = await account(t);
    for (let i = 0; i < 4; i++) {
      expectError(await login(t, { ...a, password: 'wrong' }), 401, 'AUTH.INVALID_CREDENTIALS');
    }
    // The 5th attempt is right: admitted (it would have locked the account had it failed).
    expectTokens(await login(t, a));
    expectTokens(await login(t, a));
  });

  it('each further lock lasts twice as long (60, 120, 240 s) until the account is quiet for the window', async () => {
    const clock = manualClock();
    const t = await start({ clock });
    const a = await account(t);
    const failFive = async () => {
      for (let i = 0; i < 5; i++) await login(t, { ...a, password: 'wrong' });
    };
    for (const seconds of [60, 120, 240]) {
      await failFive();
      expect((await login(t, a)).headers['retry-after']).toBe(String(seconds));
      clock.advance(seconds * 1000);
    }
    clock.advance(901_000); // quiet for longer than SVC_LOGIN_ATTEMPT_WINDOW_SECONDS (900)
    await failFive();
    expect((await login(t, a)).headers['retry-after']).toBe('60');
  });

  it('an unknown email locks the same way, so a lock tells nothing about existence', async () => {
    const t = await start();
    const ghost = { email: 'ghost@example.test', password: 'wrong-password' };
    for (let i = 0; i < 5; i++) expectError(await login(t, ghost), 401, 'AUTH.INVALID_CREDENTIALS');
    const a = await account(t);
    for (let i = 0; i < 5; i++) await login(t, { ...a, password: 'wrong' });
    const ghostLocked = await login(t, ghost);
    const realLocked = await login(t, a);
    expectError(ghostLocked, 429, 'AUTH.TOO_MANY_ATTEMPTS');
    expect(ghostLocked.raw).toBe(realLocked.raw);
  });

  it('locks a client address after SVC_LOGIN_IP_MAX_ATTEMPTS failures across accounts; other addresses pass', async () => {
    const t = await start({ env: { SVC_LOGIN_IP_MAX_ATTEMPTS: '3' } });
    const a = await account(t);
    for (let i = 0; i < 3; i++) {
      expectError(
        await login(t, { email: `spray-${i}@example.test`, password: 'guess-1234' }, '203.0.113.7'),
        401,
        'AUTH.INVALID_CREDENTIALS',
      );
    }
    expectError(await login(t, a, '203.0.113.7'), 429, 'AUTH.TOO_MANY_ATTEMPTS');
    expectTokens(await login(t, a, '198.51.100.1'));
  });

  it('the guard state lives in the store: a lock made through one process holds in another', async () => {
    let url: string;
    let cleanup: () => Promise<void>;
    if (onPostgres) {
      const db = await freshDatabase();
      url = db.url;
      cleanup = db.drop;
    } else {
      const dir = mkdtempSync(join(tmpdir(), 'svc-auth-'));
      url = sqliteFileUrl(dir);
      cleanup = async () => rmSync(dir, { recursive: true, force: true });
    }
    try {
      const one = await startTestApp({ databaseUrl: url });
      const a = await account(one);
      for (let i = 0; i < 5; i++) await login(one, { ...a, password: 'wrong' });
      const two = await startTestApp({ databaseUrl: url });
      expectError(await login(two, a), 429, 'AUTH.TOO_MANY_ATTEMPTS');
      await one.close();
      await two.close();
    } finally {
      await cleanup();
    }
  });

  it('a deleted user cannot sign in', async () => {
    const t = await start();
    const a = await account(t);
    await t.ctx.services.identity.deleteUser({ userId: 'test' }, a.id);
    expectError(await login(t, a), 401, 'AUTH.INVALID_CREDENTIALS');
  });
});
