import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { admin } from '../helpers/auth.js';
import { dialectName } from '../helpers/store.js';
import { countingListener } from '../helpers/tcp-listener.js';
import { client } from '../plugins/helpers.js';

/**
 * The SSRF matrix (docs/webhooks.md "Which URLs are accepted"): every address trick, through the
 * three ways svc reaches out: a webhook's url, the `http` action and the `email` action's SMTP host.
 * Each is refused with the address class as its reason, and nothing connects: a listener on the
 * loopback port the loopback cases name counts every connection attempt, and stays at zero.
 */
describe(`SSRF matrix over webhooks, the http action and the email action (${dialectName})`, () => {
  let t: TestApp;
  let api: ReturnType<typeof client>;
  let httpInstance: string;
  let port: number;
  let listener: Awaited<ReturnType<typeof countingListener>>;

  beforeAll(async () => {
    listener = await countingListener();
    port = listener.port;
    t = await startTestApp();
    api = client(t, (await admin(t)).headers);
    httpInstance = await api.instance('http');
  });
  afterAll(async () => {
    await t.close();
    await listener.close();
  });

  /** [case, host as written in a URL, the reason every surface must give]. */
  const cases = (): Array<[string, string, string]> => [
    ['loopback v4', `127.0.0.1:${port}`, 'loopback'],
    ['loopback v4, another address of 127/8', '127.8.9.10', 'loopback'],
    ['loopback, decimal form', `2130706433:${port}`, 'loopback'],
    ['loopback, hex form', `0x7f.0.0.1:${port}`, 'loopback'],
    ['loopback, octal form', `0177.0.0.1:${port}`, 'loopback'],
    ['loopback, short form', `127.1:${port}`, 'loopback'],
    ['loopback v6', `[::1]:${port}`, 'loopback'],
    ['a name that resolves to loopback', `localhost:${port}`, 'loopback'],
    ['userinfo trick', `public.example.com@127.0.0.1:${port}`, 'loopback'],
    ['unspecified v4', `0.0.0.0:${port}`, 'unspecified'],
    ['unspecified v6', '[::]', 'unspecified'],
    ['private 10/8', '10.1.2.3', 'private'],
    ['private 172.16/12', '172.20.0.1', 'private'],
    ['private 192.168/16', '192.168.1.1', 'private'],
    ['unique local v6', '[fd12:3456::1]', 'uniqueLocal'],
    ['link-local v4', '169.254.10.10', 'linkLocal'],
    ['link-local v6', '[fe80::1]', 'linkLocal'],
    ['cloud metadata v4', '169.254.169.254', 'metadata'],
    ['cloud metadata v6', '[fd00:ec2::254]', 'metadata'],
    ['carrier-grade NAT', '100.64.0.1', 'carrierGradeNat'],
    ['multicast v4', '224.0.0.1', 'multicast'],
    ['multicast v6', '[ff02::1]', 'multicast'],
    ['broadcast', '255.255.255.255', 'broadcast'],
    ['reserved 240/4', '240.0.0.1', 'reserved'],
    ['documentation range', '192.0.2.1', 'reserved'],
    ['IPv4-mapped loopback', `[::ffff:127.0.0.1]:${port}`, 'ipv4Mapped'],
    ['IPv4-mapped metadata, hex', '[::ffff:a9fe:a9fe]', 'ipv4Mapped'],
    ['IPv4-compatible loopback', '[::127.0.0.1]', 'ipv4Compatible'],
    ['IPv4-translated loopback', '[::ffff:0:7f00:1]', 'ipv4Translated'],
    ['NAT64 of loopback', '[64:ff9b::127.0.0.1]', 'nat64'],
    ['NAT64 of private', '[64:ff9b::10.0.0.1]', 'nat64'],
    ['6to4 of private', '[2002:c0a8:0101::1]', 'sixToFour'],
    ['Teredo', '[2001:0:4136:e378::1]', 'tunnel'],
  ];

  it('has at least 30 cases', () => {
    expect(cases().length).toBeGreaterThanOrEqual(30);
  });

  it('webhooks refuse each with 400 WEBHOOK.URL_FORBIDDEN and the reason', async () => {
    for (const [name, host, reason] of cases()) {
      const res = await api.call('POST', '/webhook', {
        name: 'ssrf',
        url: `https://${host}/hook`,
        event_types: ['*'],
      });
      expect(res.status, name).toBe(400);
      expect(res.json(), name).toMatchObject({
        code: 'WEBHOOK.URL_FORBIDDEN',
        details: { field: 'url', reason },
      });
    }
  });

  it('the http action refuses each with 400 PLUGIN.INVALID_INPUT and the reason', async () => {
    for (const [name, host, reason] of cases()) {
      const res = await api.invoke(httpInstance, {
        action: 'request',
        payload: { method: 'GET', url: `https://${host}/internal` },
      });
      expect(res.status, name).toBe(400);
      expect(res.json(), name).toMatchObject({
        code: 'PLUGIN.INVALID_INPUT',
        details: { field: 'url', reason },
      });
    }
  });

  it('the email action refuses each SMTP host with the reason', async () => {
    for (const [name, host, reason] of cases()) {
      // The SMTP host as a user configures it: the URL's host name, brackets and port left out.
      const url = new URL(`https://${host}/`);
      const smtpHost = url.hostname.replace(/^\[|\]$/g, '');
      const res = await api.sendMail(smtpHost, port);
      expect(res.status, name).toBe(502);
      expect(res.json(), name).toMatchObject({
        code: 'PLUGIN.INVOCATION_FAILED',
        details: { field: 'host', reason },
      });
    }
  });

  it('schemes other than https are refused everywhere, and nothing ever connected', async () => {
    for (const url of [
      `http://127.0.0.1:${port}/`,
      'ftp://8.8.8.8/',
      'file:///etc/passwd',
      'gopher://8.8.8.8/',
    ]) {
      const hook = await api.call('POST', '/webhook', { name: 'scheme', url, event_types: ['*'] });
      expect(hook.status, url).toBe(400);
      expect(hook.json().details.reason, url).toBe('scheme');
      const call = await api.invoke(httpInstance, { action: 'request', payload: { method: 'GET', url } });
      expect(call.status, url).toBe(400);
      expect(call.json().details.reason, url).toBe('scheme');
    }
    expect(listener.seen.connections).toBe(0);
  });
});
