import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { manualClock } from '../../src/lib/clock.js';
import { account, bearer, type Call, call, codeAt, expectTokens, login } from '../auth/helpers.js';
import { startSmtp, tokenIn } from '../auth/smtp.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { admin, apiKey } from '../helpers/auth.js';
import { OtlpReceiver } from '../helpers/otlp-receiver.js';
import { dialectName } from '../helpers/store.js';
import { receiver } from '../webhooks/helpers.js';
import { type Json, settle } from '../workflows/helpers.js';

/** The spellings a secret may be echoed in (the masking's own list, docs/vault.md): each is searched for. */
function spellings(secret: string): string[] {
  const b64 = Buffer.from(secret).toString('base64');
  return [
    secret,
    secret.toUpperCase(),
    encodeURIComponent(secret),
    Buffer.from(secret).toString('hex'),
    b64.replace(/=+$/, ''),
    b64.replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, ''),
  ].filter((x) => x.length >= 8);
}

/** Every row of every table, as text (what a database dump or a backup would show). */
async function everyStoredRow(t: TestApp): Promise<string> {
  const tables =
    t.ctx.store.dialect === 'postgres'
      ? (
          await t.ctx.store.db
            .selectFrom('information_schema.tables' as never)
            .select('table_name as name' as never)
            .where('table_schema' as never, '=', 'public' as never)
            .execute()
        ).map((r) => (r as { name: string }).name)
      : (
          await t.ctx.store.db
            .selectFrom('sqlite_master' as never)
            .select('name' as never)
            .where('type' as never, '=', 'table' as never)
            .execute()
        ).map((r) => (r as { name: string }).name);
  let out = '';
  for (const table of tables) {
    const rows = await t.ctx.store.db
      .selectFrom(table as never)
      .selectAll()
      .execute();
    out += `${table}: ${JSON.stringify(rows)}\n`;
  }
  return out;
}

/**
 * Secrets never leak (#21 item 6): one test drives every flow that touches a secret — passwords,
 * access and refresh tokens, MFA secrets and codes, reset tokens, device tokens, API keys, the
 * external IdP's tokens, vault SECRET values resolved into plugin calls (an ACTION whose receiver
 * echoes them back in several encodings, a manual invoke, the email action), webhook signing secrets
 * (create, rotate, deliveries, the test send) and the SMTP password in SVC_SMTP_URL — with logging
 * at trace level in production mode and every span exported. Then the captured log, every response,
 * every row of every table and every exported span are searched for each secret in each spelling. Only the answer that hands a secret out may
 * hold it.
 */
describe(`secrets never leak: every flow, logs, answers and stored rows (${dialectName})`, () => {
  it('drives every flow that touches a secret, then finds none of them anywhere', async () => {
    const SMTP_PASSWORD = 'smtp-Canary-7c1d9e42aa';
    const smtp = await startSmtp({ user: 'mailer', pass: SMTP_PASSWORD });
    const echo = await receiver();
    // The receiver echoes what it got, in the spellings a careless plugin or API would.
    echo.reply = (req) => {
      const token = String(req.headers.authorization ?? '');
      return {
        status: 200,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          got: req.body,
          header: req.headers.authorization,
          upper: token.toUpperCase(),
          url: `https://x.test/?t=${encodeURIComponent(token)}`,
          b64: Buffer.from(token).toString('base64'),
          hex: Buffer.from(token).toString('hex'),
        }),
      };
    };
    const pair = await generateKeyPair('ES256');
    const jwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256' };
    const jwks = createServer((_req, res) => res.end(JSON.stringify({ keys: [jwk] })));
    await new Promise<void>((r) => jwks.listen(0, '127.0.0.1', r));
    const clock = manualClock();
    // Every span is exported to a receiver of the test's, and searched too; the collector's key too.
    const otlp = await new OtlpReceiver().start();
    const COLLECTOR_KEY = 'collector-Canary-5b0e77';
    const t = await startTestApp({
      clock,
      env: {
        ...otlp.env({ OTEL_EXPORTER_OTLP_HEADERS: `x-collector-key=${COLLECTOR_KEY}` }),
        NODE_ENV: 'production',
        SVC_LOG_LEVEL: 'trace',
        SVC_SMTP_URL: smtp.url.replace('smtp://', `smtp://mailer:${SMTP_PASSWORD}@`),
        SVC_ALLOW_PRIVATE_NETWORKS: 'true',
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
      secrets.push([COLLECTOR_KEY, []]);
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

      // Vault SECRETs resolved into plugin calls: an ACTION whose receiver echoes the secret back in
      // several spellings (stored node input and output), a manual invoke, and the email action.
      const API_TOKEN = 'api-Canary-3f9b0c6d1e';
      secrets.push([API_TOKEN, []], [SMTP_PASSWORD, []]);
      const root = await admin(t);
      const ops = async (
        method: 'GET' | 'POST' | 'PUT' | 'PATCH',
        url: string,
        payload?: unknown,
      ): Promise<Call & { body: Json }> => track(call(t, method, url, payload, root.headers));
      await ops('POST', '/vault_entry', { key: 'api_token', kind: 'SECRET', value: API_TOKEN });
      await ops('POST', '/vault_entry', { key: 'smtp_password', kind: 'SECRET', value: SMTP_PASSWORD });
      const definitionId = async (name: string) =>
        (await ops('GET', `/plugin_definition?name=${name}`)).body.plugin_definitions[0].id as string;
      const httpPlugin = (
        await ops('POST', '/plugin_instance', {
          plugin_definition_id: await definitionId('http'),
          display_name: 'echo',
          enabled: true,
        })
      ).body.id as string;
      const emailPlugin = (
        await ops('POST', '/plugin_instance', {
          plugin_definition_id: await definitionId('email'),
          display_name: 'mail',
          enabled: true,
          config_json: {
            host: '127.0.0.1',
            port: Number(new URL(smtp.url).port),
            username: 'mailer',
            password: '$secret:smtp_password',
            from: 'svc <noreply@example.test>',
          },
        })
      ).body.id as string;
      const request = {
        method: 'POST',
        url: `${echo.url}/echo`,
        headers: { preserve: { authorization: '$secret:api_token' } },
        body: { preserve: { token: '$secret:api_token', note: 'plain' } },
      };
      const sub = await ops('POST', '/event_subscription', {
        name: 'echo the token',
        event_type: 'svc.folder.created',
      });
      const graph = await ops('PUT', `/event_subscription/${sub.body.id}/graph`, {
        nodes: [
          {
            key: 'call',
            type: 'ACTION',
            config: { plugin_instance_id: httpPlugin, plugin_action: 'request', input_mapping: request },
          },
          {
            key: 'mail',
            type: 'ACTION',
            config: {
              plugin_instance_id: emailPlugin,
              plugin_action: 'send',
              input_mapping: { to: 'ada@example.test', subject: 'done', text: 'the call returned' },
            },
          },
        ],
        edges: [{ from_node_id: 'call', to_node_id: 'mail' }],
      });
      expect(graph.status, graph.raw).toBe(200);
      await ops('POST', '/plugin_instance/' + httpPlugin + '/invoke', {
        action: 'request',
        payload: {
          method: 'POST',
          url: `${echo.url}/invoke`,
          headers: { authorization: '$secret:api_token' },
        },
      });

      // Webhook signing secrets: the create and rotate answers show them (only those), deliveries
      // and the test send are signed with them.
      const hook = await ops('POST', '/webhook', {
        name: 'receiver',
        url: `${echo.url}/hook`,
        event_types: ['svc.folder.created'],
      });
      issued(hook, hook.body.secret, hook.body.standard_webhooks_secret);
      const rotated = await ops('POST', `/webhook/${hook.body.id}/rotate_secret`);
      issued(rotated, rotated.body.secret, rotated.body.standard_webhooks_secret);
      await ops('GET', `/webhook/${hook.body.id}`);
      await ops('GET', '/webhook');
      await ops('POST', `/webhook/${hook.body.id}/test`, { event_type: 'svc.folder.created' });

      // The event that drives the run and the delivery.
      await ops('POST', '/folder', { name: 'go' });
      await settle(t);
      await t.ctx.services.webhookEngine.deliverDue();
      const runs = await ops('GET', `/workflow_run?event_subscription_id=${sub.body.id}`);
      expect(
        runs.body.runs.map((r: { status: string }) => r.status),
        runs.raw,
      ).toEqual(['completed']);
      const runId = runs.body.runs[0].id;
      await ops('GET', `/workflow_run/${runId}`);
      const nodes = await ops('GET', `/workflow_run/${runId}/node`);
      await ops('POST', `/workflow_run/${runId}/context`, {});
      // The secret did reach the plugin calls (so the masking had something to mask).
      expect(echo.received.filter((r) => r.headers.authorization === API_TOKEN)).toHaveLength(2);
      expect(smtp.mails.length).toBeGreaterThanOrEqual(2); // the reset mail and the action's
      expect(JSON.stringify(nodes.body)).toContain('******');
      await ops('GET', `/webhook/${hook.body.id}/delivery`);
      const deliveries = (await ops('GET', `/webhook/${hook.body.id}/delivery`)).body.deliveries;
      for (const d of deliveries) await ops('GET', `/webhook/${hook.body.id}/delivery/${d.id}/attempt`);
      await ops('GET', '/plugin_instance');
      await ops('GET', '/vault_entry');

      await t.ctx.services.auth.flushMail();
      expect(responses.length).toBeGreaterThan(40);
      expect(secrets.length).toBeGreaterThan(25);
      const logs = t.logText();
      expect(logs.length).toBeGreaterThan(1000);
      const stored = await everyStoredRow(t);
      expect(stored).toContain('workflow_run_node');
      // Every span recorded so far, exported.
      await t.ctx.tracer.shutdown();
      const spans = otlp.bodies.join('\n');
      expect(otlp.spans.filter((s) => s.name === 'plugin http.request').length).toBeGreaterThanOrEqual(2);
      expect(otlp.spans.some((s) => s.name === 'webhook.deliver')).toBe(true);
      for (const [secret, allowed] of secrets) {
        for (const spelling of spellings(secret)) {
          const what = `${secret.slice(0, 10)}… as ${spelling.slice(0, 10)}…`;
          expect(logs.includes(spelling), `the log holds ${what}`).toBe(false);
          expect(stored.includes(spelling), `a stored row holds ${what}`).toBe(false);
          expect(spans.includes(spelling), `an exported span holds ${what}`).toBe(false);
          for (const res of responses) {
            if (allowed.includes(res)) continue;
            expect(res.raw.includes(spelling), `answer ${res.raw.slice(0, 80)} holds ${what}`).toBe(false);
          }
        }
      }
    } finally {
      await t.close();
      await otlp.close();
      await smtp.close();
      await echo.close();
      await new Promise<void>((r) => jwks.close(() => r()));
    }
  });
});
