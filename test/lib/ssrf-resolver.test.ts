import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { admin } from '../helpers/auth.js';
import { startDnsServer } from '../helpers/dns-server.js';
import { dialectName } from '../helpers/store.js';
import { countingListener } from '../helpers/tcp-listener.js';
import { client } from '../plugins/helpers.js';
import { cloudEvent, createHook, deliveries, dispatch } from '../webhooks/helpers.js';

/**
 * The SSRF matrix's name cases, with a real DNS server of the test's own (SVC_DNS_SERVERS): names
 * that resolve to private addresses, through all three surfaces, and DNS rebinding (a public answer
 * for the check, loopback for the connection) through the two that check before they connect.
 * A listener on the loopback port every name points at counts connections: it stays at zero.
 */
describe(`SSRF through a resolver: private names and DNS rebinding (${dialectName})`, () => {
  let t: TestApp;
  let api: ReturnType<typeof client>;
  let headers: Record<string, string>;
  let httpInstance: string;
  let port: number;
  let listener: Awaited<ReturnType<typeof countingListener>>;
  /** name -> [A answers, AAAA answers]; `rebind-*` names answer public once, then loopback. */
  const zone: Record<string, [string[], string[]]> = {
    'private.internal.test': [['10.1.2.3'], []],
    'meta.internal.test': [['169.254.169.254'], []],
    'loop.internal.test': [['127.0.0.1'], []],
    'loop6.internal.test': [[], ['::1']],
    'mixed.internal.test': [['8.8.8.8', '127.0.0.1'], []],
    'mapped.internal.test': [[], ['::ffff:127.0.0.1']],
    'nat64.internal.test': [[], ['64:ff9b::a00:1']],
  };
  const reasons: Record<string, string> = {
    'private.internal.test': 'private',
    'meta.internal.test': 'metadata',
    'loop.internal.test': 'loopback',
    'loop6.internal.test': 'loopback',
    'mixed.internal.test': 'loopback',
    'mapped.internal.test': 'ipv4Mapped',
    'nat64.internal.test': 'nat64',
  };
  let dns: Awaited<ReturnType<typeof startDnsServer>>;

  beforeAll(async () => {
    dns = await startDnsServer((name, type, asked) => {
      if (name.startsWith('rebind-')) return type === 'A' ? [asked <= 1 ? '8.8.8.8' : '127.0.0.1'] : [];
      const entry = zone[name];
      return entry ? entry[type === 'A' ? 0 : 1] : [];
    });
    listener = await countingListener();
    port = listener.port;
    t = await startTestApp({ env: { SVC_DNS_SERVERS: dns.address, SVC_WEBHOOK_TIMEOUT_MS: '2000' } });
    headers = (await admin(t)).headers;
    api = client(t, headers);
    httpInstance = await api.instance('http');
  });
  afterAll(async () => {
    await t.close();
    await dns.close();
    await listener.close();
  });

  it('names resolving to private addresses are refused with their reason by webhooks, the http action and the email action', async () => {
    for (const [name, reason] of Object.entries(reasons)) {
      const hook = await api.call('POST', '/webhook', {
        name: 'ssrf',
        url: `https://${name}:${port}/hook`,
        event_types: ['*'],
      });
      expect(hook.status, name).toBe(400);
      expect(hook.json(), name).toMatchObject({
        code: 'WEBHOOK.URL_FORBIDDEN',
        details: { field: 'url', reason },
      });

      const call = await api.invoke(httpInstance, {
        action: 'request',
        payload: { method: 'GET', url: `https://${name}:${port}/internal` },
      });
      expect(call.status, name).toBe(400);
      expect(call.json(), name).toMatchObject({
        code: 'PLUGIN.INVALID_INPUT',
        details: { field: 'url', reason },
      });

      const sent = await api.sendMail(name, port);
      expect(sent.status, name).toBe(502);
      expect(sent.json(), name).toMatchObject({
        code: 'PLUGIN.INVOCATION_FAILED',
        details: { field: 'host', reason },
      });
      // The names were asked of the test's server (A and AAAA together), not the system's resolver.
      expect(dns.asked(name)).toBeGreaterThan(0);
    }
    expect(listener.seen.connections).toBe(0);
  });

  it('a webhook whose name turns to loopback after it was saved is refused at connect (DNS rebinding)', async () => {
    const name = 'rebind-hook.example.test';
    const hook = await createHook(t, headers, {
      name: 'rebind',
      url: `https://${name}:${port}/hook`,
      event_types: ['*'],
    });
    expect(dns.asked(name)).toBe(1); // the check at create saw 8.8.8.8
    await dispatch(t, cloudEvent());
    await t.ctx.services.webhookEngine.deliverDue();
    const [d] = await deliveries(t, headers, hook.id);
    expect(dns.asked(name)).toBeGreaterThanOrEqual(2); // the connection asked again
    expect(d).toMatchObject({ status: 'PENDING', attempts: 1, http_status: null });
    expect(d?.error).toMatch(/^forbidden target: Target 127\.0\.0\.1 is a loopback address/);
    expect(listener.seen.connections).toBe(0);
  });

  it('an http action whose name turns to loopback between its check and its connection is refused', async () => {
    const name = 'rebind-call.example.test';
    const res = await api.invoke(httpInstance, {
      action: 'request',
      payload: { method: 'GET', url: `https://${name}:${port}/internal` },
    });
    expect(dns.asked(name)).toBeGreaterThanOrEqual(2); // checked (public), then connected (loopback)
    expect(res.status).toBe(502);
    expect(JSON.stringify(res.json())).toMatch(/loopback address/);
    expect(listener.seen.connections).toBe(0);
  });

  it('the email action resolves once and connects to the address it checked, so a second answer never matters', async () => {
    const name = 'loop.internal.test';
    const before = dns.asked(name);
    await api.sendMail(name, port);
    expect(dns.asked(name) - before).toBe(1);
    expect(listener.seen.connections).toBe(0);
  });
});
