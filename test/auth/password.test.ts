import { afterEach, describe, expect, it } from 'vitest';
import { RESET_REQUEST_MESSAGE } from '../../src/areas/auth/service.js';
import { manualClock } from '../../src/lib/clock.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { apiKey } from '../helpers/auth.js';
import { dialectName } from '../helpers/store.js';
import { account, bearer, call, expectError, expectTokens, login } from './helpers.js';
import { startSmtp, tokenIn } from './smtp.js';

describe(`password reset and change (${dialectName})`, () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    while (cleanups.length) await cleanups.pop()!();
  });
  async function start(options: Parameters<typeof startTestApp>[0] = {}) {
    const t = await startTestApp(options);
    cleanups.push(() => t.close());
    return t;
  }
  async function withSmtp(options: Parameters<typeof startTestApp>[0] = {}) {
    const smtp = await startSmtp();
    cleanups.push(smtp.close);
    const t = await start({
      ...options,
      env: { SVC_SMTP_URL: smtp.url, SVC_MAIL_FROM: 'svc <no-reply@svc.test>', ...options.env },
    });
    return { t, smtp };
  }
  /** Asks for a reset, then waits for the token and mail issued after the answer. */
  const request = async (t: TestApp, email: string) => {
    const res = await call(t, 'POST', '/auth/password_reset/request', { email });
    await t.ctx.services.auth.flushMail();
    return res;
  };
  const confirm = (t: TestApp, token: string, new_password: string) =>
    call(t, 'POST', '/auth/password_reset/confirm', { token, new_password });

  it('answers the same whether or not the email exists, and mails a token over real SMTP', async () => {
    const { t, smtp } = await withSmtp();
    const a = await account(t);
    const unknown = await request(t, 'nobody@example.test');
    const known = await request(t, a.email.toUpperCase());
    expect(unknown.status).toBe(200);
    expect(known.raw).toBe(unknown.raw);
    expect(known.body).toEqual({ message: RESET_REQUEST_MESSAGE });
    const [mail] = await smtp.waitFor(1);
    expect(smtp.mails).toHaveLength(1);
    expect(mail.to).toEqual([a.email]);
    expect(mail.from).toBe('no-reply@svc.test');
    expect(mail.raw).toMatch(/Subject: Reset your password/);
    expect(tokenIn(mail.raw)).toMatch(/^svc_reset_/);
    expect(t.logText()).not.toContain(tokenIn(mail.raw)!);
  });

  it('confirm: sets the password, ends every session, emits svc.user.password.changed; the token works once', async () => {
    const { t, smtp } = await withSmtp();
    const a = await account(t);
    const before = expectTokens(await login(t, a));
    await request(t, a.email);
    const token = tokenIn((await smtp.waitFor(1))[0].raw)!;
    const done = await confirm(t, token, 'a-brand-new-password');
    expect(done.status, done.raw).toBe(200);
    expectError(await login(t, a), 401, 'AUTH.INVALID_CREDENTIALS');
    expectTokens(await login(t, { email: a.email, password: 'a-brand-new-password' }));
    expectError(
      await call(t, 'GET', '/current_user', undefined, bearer(before.access_token)),
      401,
      'AUTH.UNAUTHENTICATED',
    );
    expectError(
      await call(t, 'POST', '/auth/refresh', { refresh_token: before.refresh_token }),
      401,
      'AUTH.REFRESH_TOKEN_INVALID',
    );
    expectError(await confirm(t, token, 'yet-another-password'), 401, 'AUTH.RESET_TOKEN_INVALID');
    const events = await t.ctx.store.db
      .selectFrom('event_delivery_task')
      .select('cloudevent')
      .where('event_type', '=', 'svc.user.password.changed')
      .execute();
    expect(events.map((e) => JSON.parse(e.cloudevent).data)).toEqual([
      { user_id: a.id, email: a.email, changed_by: a.id },
    ]);
  });

  it('tokens expire (SVC_PASSWORD_RESET_TTL_SECONDS); using one spends every other of the user', async () => {
    const clock = manualClock();
    const { t, smtp } = await withSmtp({ clock, env: { SVC_PASSWORD_RESET_TTL_SECONDS: '600' } });
    const a = await account(t);
    await request(t, a.email);
    const old = tokenIn((await smtp.waitFor(1))[0].raw)!;
    clock.advance(601_000);
    expectError(await confirm(t, old, 'new-password-1'), 401, 'AUTH.RESET_TOKEN_INVALID');
    await request(t, a.email);
    await request(t, a.email);
    const mails = await smtp.waitFor(3);
    expect(mails[1].raw).toMatch(/expires in 10 minutes/);
    const [second, third] = [tokenIn(mails[1].raw)!, tokenIn(mails[2].raw)!];
    expect((await confirm(t, third, 'new-password-2')).status).toBe(200);
    expectError(await confirm(t, second, 'new-password-3'), 401, 'AUTH.RESET_TOKEN_INVALID');
    expectError(
      await confirm(t, `svc_reset_${'0'.repeat(43)}`, 'new-password-4'),
      401,
      'AUTH.RESET_TOKEN_INVALID',
    );
    expectError(await confirm(t, 'nonsense', 'new-password-4'), 401, 'AUTH.RESET_TOKEN_INVALID');
    expectError(await confirm(t, third, 'short'), 400, 'VALIDATION_ERROR');
    expectError(
      await call(t, 'POST', '/auth/password_reset/confirm', { token: third }),
      400,
      'VALIDATION_ERROR',
    );
    expectError(
      await call(t, 'POST', '/auth/password_reset/request', { email: 'x@y.z', more: 1 }),
      400,
      'VALIDATION_ERROR',
    );
  });

  it('guessing reset tokens locks the address (malformed or unknown ones count); a spent known one does not', async () => {
    const { t, smtp } = await withSmtp({ env: { SVC_LOGIN_IP_MAX_ATTEMPTS: '3' } });
    const a = await account(t);
    await request(t, a.email);
    const spent = tokenIn((await smtp.waitFor(1))[0].raw)!;
    expect((await confirm(t, spent, 'a-brand-new-password')).status).toBe(200);
    const from = (ip: string, token: string) =>
      call(t, 'POST', '/auth/password_reset/confirm', { token, new_password: 'another-password' }, {}, ip);
    // A known token used up is a client's mistake: it never locks the address.
    for (let i = 0; i < 5; i++)
      expectError(await from('198.51.100.4', spent), 401, 'AUTH.RESET_TOKEN_INVALID');
    // Unknown and malformed tokens are guesses: the third locks the address.
    expectError(await from('203.0.113.4', 'nonsense'), 401, 'AUTH.RESET_TOKEN_INVALID');
    expectError(await from('203.0.113.4', `svc_reset_${'1'.repeat(43)}`), 401, 'AUTH.RESET_TOKEN_INVALID');
    expectError(await from('203.0.113.4', `svc_reset_${'2'.repeat(43)}`), 401, 'AUTH.RESET_TOKEN_INVALID');
    expectError(await from('203.0.113.4', spent), 429, 'AUTH.TOO_MANY_ATTEMPTS');
    expectError(await from('198.51.100.4', spent), 401, 'AUTH.RESET_TOKEN_INVALID');
  });

  it('with SVC_PASSWORD_RESET_URL the mail carries a link; a reset also lifts an account lock', async () => {
    const { t, smtp } = await withSmtp({ env: { SVC_PASSWORD_RESET_URL: 'https://app.example.test/reset' } });
    const a = await account(t);
    for (let i = 0; i < 5; i++) await login(t, { ...a, password: 'wrong' });
    expectError(await login(t, a), 429, 'AUTH.TOO_MANY_ATTEMPTS');
    await request(t, a.email);
    const raw = (await smtp.waitFor(1))[0].raw;
    const token = tokenIn(raw)!;
    expect(raw).toContain(`https://app.example.test/reset?token=${token}`);
    expect((await confirm(t, token, 'after-the-lock-pw')).status).toBe(200);
    expectTokens(await login(t, { email: a.email, password: 'after-the-lock-pw' }));
  });

  it('throttles mails per address (5 per window) without changing the answer', async () => {
    const { t, smtp } = await withSmtp();
    const a = await account(t);
    const answers = new Set<string>();
    for (let i = 0; i < 7; i++) answers.add((await request(t, a.email)).raw);
    expect(answers.size).toBe(1);
    await smtp.waitFor(5);
    expect(t.logs.filter((l) => l.msg === 'password reset requested')).toHaveLength(5);
  });

  it('without SMTP, production logs that a mail was sent, never its token; development logs the body', async () => {
    const prod = await start({ env: { NODE_ENV: 'production' } });
    const a = await account(prod);
    expect((await request(prod, a.email)).status).toBe(200);
    const line = prod.logs.find((l) => String(l.msg).startsWith('mail sent'));
    expect(line).toMatchObject({
      mail: { to: `${a.email[0]}***@example.test`, subject: 'Reset your password', kind: 'password_reset' },
    });
    expect(line!.mail_body).toBeUndefined();
    expect(prod.logText()).not.toMatch(/svc_reset_/);

    const dev = await start({ env: { NODE_ENV: 'development' } });
    const b = await account(dev);
    await request(dev, b.email);
    const devLine = dev.logs.find((l) => String(l.msg).startsWith('mail sent'));
    const token = tokenIn(String(devLine!.mail_body))!;
    expect((await confirm(dev, token, 'developer-chosen-pw')).status).toBe(200);
  });

  it('an unreachable SMTP server does not change the answer; the failure is logged without the token', async () => {
    const smtp = await startSmtp();
    const url = smtp.url;
    await smtp.close();
    const t = await start({ env: { SVC_SMTP_URL: url } });
    const a = await account(t);
    const res = await request(t, a.email);
    expect(res.body).toEqual({ message: RESET_REQUEST_MESSAGE });
    await t.ctx.services.auth.flushMail();
    expect(t.logs.some((l) => l.msg === 'password reset token could not be issued or mailed')).toBe(true);
    expect(t.logText()).not.toMatch(/svc_reset_/);
  });

  it('POST /user/change_password: checks the current password, ends the other sessions, keeps this one', async () => {
    const t = await start();
    const a = await account(t);
    const here = expectTokens(await login(t, a));
    const elsewhere = expectTokens(await login(t, a));
    const h = bearer(here.access_token);
    expectError(
      await call(
        t,
        'POST',
        '/user/change_password',
        { current_password: 'wrong-one', new_password: 'new-password-x' },
        h,
      ),
      401,
      'AUTH.PASSWORD_INCORRECT',
    );
    expectError(
      await call(
        t,
        'POST',
        '/user/change_password',
        { current_password: a.password, new_password: 'short' },
        h,
      ),
      400,
      'VALIDATION_ERROR',
    );
    expectError(
      await call(t, 'POST', '/user/change_password', {
        current_password: a.password,
        new_password: 'x'.repeat(9),
      }),
      401,
      'AUTH.UNAUTHENTICATED',
    );
    const ok = await call(
      t,
      'POST',
      '/user/change_password',
      { current_password: a.password, new_password: 'new-password-x' },
      h,
    );
    expect(ok.status, ok.raw).toBe(200);
    expect((await call(t, 'GET', '/current_user', undefined, h)).status).toBe(200);
    expectTokens(await call(t, 'POST', '/auth/refresh', { refresh_token: here.refresh_token }));
    expectError(
      await call(t, 'GET', '/current_user', undefined, bearer(elsewhere.access_token)),
      401,
      'AUTH.UNAUTHENTICATED',
    );
    expectError(
      await call(t, 'POST', '/auth/refresh', { refresh_token: elsewhere.refresh_token }),
      401,
      'AUTH.REFRESH_TOKEN_INVALID',
    );
    expectTokens(await login(t, { email: a.email, password: 'new-password-x' }));
  });

  it('password-reset enforcement: password sign-ins refused and ended; API keys and devices bypass it', async () => {
    const { t, smtp } = await withSmtp();
    const boss = await apiKey(t, ['auth:manage']);
    const a = await account(t);
    const session = expectTokens(await login(t, a));
    const identity = t.ctx.services.identity;
    const key = await identity.createApiKey(
      { userId: a.id, scopes: await identity.scopesOfUser(a.id), authPath: 'password' },
      { name: 'k', scope_keys: [], expires_in: 86_400 },
    );
    const reg = await call(
      t,
      'POST',
      '/auth/device/register',
      { user_id: a.id, name: 'tablet' },
      boss.headers,
    );
    const device = expectTokens(
      await call(t, 'POST', '/auth/device/login', { registration_token: reg.body.registration_token }),
    );

    const set = await call(
      t,
      'PATCH',
      `/auth/user/${a.id}/settings`,
      { password_reset_required: true },
      boss.headers,
    );
    expect(set.body.password_reset_required).toBe(true);
    expectError(await login(t, a), 403, 'AUTH.PASSWORD_RESET_REQUIRED');
    expectError(
      await call(t, 'GET', '/current_user', undefined, bearer(session.access_token)),
      401,
      'AUTH.UNAUTHENTICATED',
    );
    expect((await call(t, 'GET', '/current_user', undefined, bearer(key.token))).status).toBe(200);
    expect((await call(t, 'GET', '/current_user', undefined, bearer(device.access_token))).status).toBe(200);
    expectTokens(await call(t, 'POST', '/auth/refresh', { refresh_token: device.refresh_token }));

    await request(t, a.email);
    const token = tokenIn((await smtp.waitFor(1))[0].raw)!;
    expect((await confirm(t, token, 'the-reset-password')).status).toBe(200);
    expectTokens(await login(t, { email: a.email, password: 'the-reset-password' }));
    expect(
      (await call(t, 'GET', `/auth/user/${a.id}/settings`, undefined, boss.headers)).body
        .password_reset_required,
    ).toBe(false);
  });
});
