import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { manualClock } from '../../src/lib/clock.js';
import { startTestApp } from '../helpers/app.js';
import { apiKey } from '../helpers/auth.js';
import { dialectName } from '../helpers/store.js';
import { account, bearer, type Call, call, codeAt, expectTokens, login } from './helpers.js';
import { startSmtp, tokenIn } from './smtp.js';

/**
 * Runs every sign-in flow, failures included, with logging at trace level in production mode, then
 * proves that no log line holds a password, a token or a TOTP secret, and that no response holds one
 * except the response that hands it out.
 */
describe(`no password, token or TOTP secret in logs or responses (${dialectName})`, () => {
  it('scans the captured logs and every response', async () => {
    const smtp = await startSmtp();
    const pair = await generateKeyPair('ES256');
    const jwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256' };
    const jwks = createServer((_req, res) => res.end(JSON.stringify({ keys: [jwk] })));
    await new Promise<void>((r) => jwks.listen(0, '127.0.0.1', r));
    const clock = manualClock();
    const t = await startTestApp({
      clock,
      env: {
        NODE_ENV: 'production',
        SVC_LOG_LEVEL: 'trace',
        SVC_SMTP_URL: smtp.url,
        SVC_OIDC_ISSUER: 'https://idp.test',
        SVC_OIDC_AUDIENCE: 'svc',
        SVC_OIDC_JWKS_URL: `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/jwks`,
      },
    });
    /** [secret, the responses allowed to show it] */
    const secrets: Array<[string, Call[]]> = [];
    const responses: Call[] = [];
    const track = async (p: Promise<Call>) => {
      const res = await p;
      // Access tokens carry no jti: the same claims in the same second give the same JWT. A second
      // between calls keeps every issued token distinct, so "allowed in its issuing response only" holds.
      clock.advance(1000);
      responses.push(res);
      return res;
    };
    const issued = (res: Call, ...values: unknown[]) => {
      for (const v of values) if (typeof v === 'string') secrets.push([v, [res]]);
    };
    try {
      const boss = await apiKey(t, ['auth:manage']);
      secrets.push([boss.token, []]);
      const a = await account(t);
      secrets.push([a.password, []]);

      // credentials, failures, refresh rotation and reuse
      await track(login(t, { email: a.email, password: 'Wrong-Password-123' }));
      secrets.push(['Wrong-Password-123', []]);
      const s1 = await track(login(t, a));
      issued(s1, s1.body.access_token, s1.body.refresh_token);
      const s2 = await track(call(t, 'POST', '/auth/refresh', { refresh_token: s1.body.refresh_token }));
      issued(s2, s2.body.access_token, s2.body.refresh_token);
      await track(call(t, 'POST', '/auth/refresh', { refresh_token: s1.body.refresh_token }));
      const s3 = expectTokens(await track(login(t, a)));
      issued(responses[responses.length - 1], s3.access_token, s3.refresh_token);
      const h = bearer(s3.access_token);

      // MFA set-up, login challenge, wrong and right codes
      const setup = await track(call(t, 'POST', '/auth/mfa/setup', undefined, h));
      issued(setup, setup.body.secret, setup.body.otpauth_url);
      const secret = setup.body.secret as string;
      await track(call(t, 'POST', '/auth/mfa/verify', { code: codeAt(secret, clock.now().getTime()) }, h));
      await track(call(t, 'PATCH', '/auth/mfa/enable', { enabled: true }, h));
      clock.advance(30_000);
      const challenge = await track(login(t, a));
      issued(challenge, challenge.body.mfa_token);
      await track(
        call(t, 'POST', '/auth/login/mfa_verify', { mfa_token: challenge.body.mfa_token, code: '000000' }),
      );
      const mfa = await track(
        call(t, 'POST', '/auth/login/mfa_verify', {
          mfa_token: challenge.body.mfa_token,
          code: codeAt(secret, clock.now().getTime()),
        }),
      );
      issued(mfa, mfa.body.access_token, mfa.body.refresh_token);
      clock.advance(30_000);
      await track(
        call(
          t,
          'PATCH',
          '/auth/mfa/enable',
          { enabled: false, code: codeAt(secret, clock.now().getTime()) },
          h,
        ),
      );

      // password change, reset over SMTP
      await track(
        call(
          t,
          'POST',
          '/user/change_password',
          { current_password: 'Nope-Nope-123', new_password: 'Changed-Pw-456' },
          h,
        ),
      );
      secrets.push(['Nope-Nope-123', []], ['Changed-Pw-456', []]);
      await track(
        call(
          t,
          'POST',
          '/user/change_password',
          { current_password: a.password, new_password: 'Changed-Pw-456' },
          h,
        ),
      );
      await track(call(t, 'POST', '/auth/password_reset/request', { email: a.email }));
      const resetToken = tokenIn((await smtp.waitFor(1))[0].raw)!;
      secrets.push([resetToken, []], ['Reset-Pw-789', []]);
      await track(
        call(t, 'POST', '/auth/password_reset/confirm', { token: resetToken, new_password: 'Reset-Pw-789' }),
      );
      await track(
        call(t, 'POST', '/auth/password_reset/confirm', { token: resetToken, new_password: 'Reset-Pw-789' }),
      );

      // external IdP: a good and an expired ID token
      const now = Math.floor(clock.now().getTime() / 1000);
      const sign = (exp: number) =>
        new SignJWT({ email: a.email, email_verified: true })
          .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
          .setIssuer('https://idp.test')
          .setAudience('svc')
          .setSubject('s')
          .setExpirationTime(exp)
          .sign(pair.privateKey);
      const idTokens = [await sign(now + 300), await sign(now - 600)];
      for (const it of idTokens) secrets.push([it, []]);
      const idp = await track(call(t, 'POST', '/auth/login/external_idp', { id_token: idTokens[0] }));
      issued(idp, idp.body.access_token, idp.body.refresh_token);
      await track(call(t, 'POST', '/auth/login/external_idp', { id_token: idTokens[1] }));

      // devices
      const reg = await track(
        call(t, 'POST', '/auth/device/register', { user_id: a.id, name: 'd' }, boss.headers),
      );
      issued(reg, reg.body.registration_token);
      const dev = await track(
        call(t, 'POST', '/auth/device/login', { registration_token: reg.body.registration_token }),
      );
      issued(dev, dev.body.access_token, dev.body.refresh_token);
      await track(call(t, 'POST', '/auth/device/login', { registration_token: reg.body.registration_token }));
      await track(call(t, 'GET', `/refresh_token?user_id=${a.id}&limit=250`, undefined, boss.headers));
      await track(call(t, 'GET', '/device', undefined, boss.headers));

      await t.ctx.services.auth.flushMail();
      expect(responses.length).toBeGreaterThan(20);
      expect(secrets.length).toBeGreaterThan(20);
      const logs = t.logText();
      expect(logs.length).toBeGreaterThan(1000);
      for (const [secret, allowed] of secrets) {
        expect(logs.includes(secret), `log contains ${secret.slice(0, 12)}…`).toBe(false);
        for (const res of responses) {
          if (allowed.includes(res)) continue;
          expect(
            res.raw.includes(secret),
            `response ${res.raw.slice(0, 80)} contains ${secret.slice(0, 12)}…`,
          ).toBe(false);
        }
      }
      // The TOTP secret is not in the store in clear either.
      const rows = await t.ctx.store.db.selectFrom('users').selectAll().execute();
      expect(JSON.stringify(rows)).not.toContain(secret);
    } finally {
      await t.close();
      await smtp.close();
      await new Promise<void>((r) => jwks.close(() => r()));
    }
  });
});
