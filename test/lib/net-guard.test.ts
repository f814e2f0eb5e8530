import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  assertAllowedUrl,
  classifyAddress,
  ForbiddenTargetError,
  guardedDispatcher,
} from '../../src/lib/net-guard.js';

async function refusal(url: string): Promise<ForbiddenTargetError> {
  try {
    await assertAllowedUrl(url, { allowPrivate: false });
  } catch (err) {
    expect(err).toBeInstanceOf(ForbiddenTargetError);
    return err as ForbiddenTargetError;
  }
  throw new Error(`expected ${url} to be refused`);
}

describe('assertAllowedUrl refuses every non-public class', () => {
  const cases: Array<[string, string, string]> = [
    ['loopback v4', 'https://127.0.0.1/hook', 'loopback'],
    ['loopback v4 other', 'https://127.8.9.10/', 'loopback'],
    ['loopback decimal form', 'https://2130706433/', 'loopback'],
    ['loopback hex form', 'https://0x7f.0.0.1/', 'loopback'],
    ['loopback v6', 'https://[::1]/', 'loopback'],
    ['localhost name', 'https://localhost/', 'loopback'],
    ['private 10/8', 'https://10.1.2.3/', 'private'],
    ['private 172.16/12', 'https://172.20.0.1/', 'private'],
    ['private 192.168/16', 'https://192.168.1.1/', 'private'],
    ['unique local v6', 'https://[fd12:3456::1]/', 'uniqueLocal'],
    ['link-local v4', 'https://169.254.10.10/', 'linkLocal'],
    ['link-local v6', 'https://[fe80::1]/', 'linkLocal'],
    ['CGNAT', 'https://100.64.0.1/', 'carrierGradeNat'],
    ['CGNAT top', 'https://100.127.255.254/', 'carrierGradeNat'],
    ['multicast v4', 'https://224.0.0.1/', 'multicast'],
    ['multicast v6', 'https://[ff02::1]/', 'multicast'],
    ['unspecified v4', 'https://0.0.0.0/', 'unspecified'],
    ['unspecified v6', 'https://[::]/', 'unspecified'],
    ['broadcast', 'https://255.255.255.255/', 'broadcast'],
    ['reserved 240/4', 'https://240.0.0.1/', 'reserved'],
    ['documentation v4', 'https://192.0.2.1/', 'reserved'],
    ['documentation v6', 'https://[2001:db8::1]/', 'reserved'],
    ['metadata v4', 'https://169.254.169.254/latest/meta-data/', 'metadata'],
    ['metadata v6', 'https://[fd00:ec2::254]/', 'metadata'],
    ['IPv4-mapped loopback', 'https://[::ffff:127.0.0.1]/', 'ipv4Mapped'],
    ['IPv4-mapped private', 'https://[::ffff:10.0.0.1]/', 'ipv4Mapped'],
    ['IPv4-mapped metadata hex', 'https://[::ffff:a9fe:a9fe]/', 'ipv4Mapped'],
    ['IPv4-compatible', 'https://[::127.0.0.1]/', 'ipv4Compatible'],
    ['IPv4-translated', 'https://[::ffff:0:7f00:1]/', 'ipv4Translated'],
    ['NAT64 of loopback', 'https://[64:ff9b::127.0.0.1]/', 'nat64'],
    ['NAT64 of private', 'https://[64:ff9b::10.0.0.1]/', 'nat64'],
    ['6to4 of private', 'https://[2002:c0a8:0101::1]/', 'sixToFour'],
    ['Teredo', 'https://[2001:0:4136:e378::1]/', 'tunnel'],
  ];
  for (const [name, url, reason] of cases) {
    it(`${name}: ${url}`, async () => {
      const err = await refusal(url);
      expect(err.reason).toBe(reason);
      expect(err.message).toMatch(/only public addresses are allowed/);
    });
  }

  it('refuses http:// and other schemes without allowPrivate', async () => {
    for (const url of ['http://8.8.8.8/', 'ftp://8.8.8.8/', 'file:///etc/passwd', 'gopher://8.8.8.8/']) {
      const err = await refusal(url);
      expect(err.reason).toBe('scheme');
      expect(err.message).toMatch(/only https:\/\//);
    }
  });

  it('refuses a malformed URL and an unresolvable host with a clear message', async () => {
    expect((await refusal('not a url')).reason).toBe('invalid_url');
    const err = await refusal('https://no-such-host.invalid/');
    expect(err.reason).toBe('unresolvable');
    expect(err.message).toContain('no-such-host.invalid');
  });

  it('accepts public literals (v4, v6, NAT64 and 6to4 of public)', async () => {
    for (const url of [
      'https://8.8.8.8/',
      'https://93.184.216.34:8443/x?y=1',
      'https://[2606:4700:4700::1111]/',
      'https://[64:ff9b::8.8.8.8]/',
      'https://[2002:0808:0808::1]/',
    ]) {
      await expect(assertAllowedUrl(url, { allowPrivate: false })).resolves.toBeUndefined();
    }
  });

  it('allowPrivate accepts private addresses and http, but still not other schemes', async () => {
    await expect(assertAllowedUrl('http://127.0.0.1:9/', { allowPrivate: true })).resolves.toBeUndefined();
    await expect(assertAllowedUrl('https://10.0.0.1/', { allowPrivate: true })).resolves.toBeUndefined();
    await expect(assertAllowedUrl('ftp://10.0.0.1/', { allowPrivate: true })).rejects.toBeInstanceOf(
      ForbiddenTargetError,
    );
  });

  it('classifyAddress names classes and passes public ones', () => {
    expect(classifyAddress('1.1.1.1')).toBeNull();
    expect(classifyAddress('2a00:1450:4001::1')).toBeNull();
    expect(classifyAddress('[::1]')).toBe('loopback');
    expect(classifyAddress('fe80::1%eth0')).toBe('linkLocal');
    expect(classifyAddress('nonsense')).toBe('invalid');
  });
});

describe('guardedDispatcher checks the address actually connected', () => {
  let server: http.Server;
  let port = 0;
  let hits = 0;
  let connections = 0;
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      hits++;
      if (req.url === '/redirect') {
        res.writeHead(302, { location: 'http://127.0.0.1/elsewhere' });
        res.end();
        return;
      }
      res.end('ok');
    });
    server.on('connection', () => {
      connections++;
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise((r) => server.close(r));
  });

  async function failure(url: string): Promise<unknown> {
    const dispatcher = guardedDispatcher({ allowPrivate: false, timeoutMs: 2000 });
    try {
      await request(url, { dispatcher, method: 'POST', body: 'x' });
    } catch (err) {
      return err;
    } finally {
      await dispatcher.close();
    }
    throw new Error(`expected ${url} to fail`);
  }

  it('refuses an IP-literal loopback target before a TCP connection is opened (http and https)', async () => {
    const before = { hits, connections };
    for (const url of [`http://127.0.0.1:${port}/`, `https://127.0.0.1:${port}/`, `https://[::1]:${port}/`]) {
      const err = await failure(url);
      expect(err).toBeInstanceOf(ForbiddenTargetError);
      expect((err as ForbiddenTargetError).reason).toBe('loopback');
    }
    expect({ hits, connections }).toEqual(before);
  });

  it('refuses a hostname resolving to loopback (DNS-rebinding style) through the lookup', async () => {
    const before = hits;
    const err = (await failure(`http://localhost:${port}/`)) as Error;
    expect(String(err.message ?? err) + String((err as { cause?: Error }).cause?.message ?? '')).toMatch(
      /loopback address/,
    );
    expect(hits).toBe(before);
  });

  it('with allowPrivate it connects, and never follows a redirect', async () => {
    const dispatcher = guardedDispatcher({ allowPrivate: true, timeoutMs: 2000 });
    try {
      const ok = await request(`http://127.0.0.1:${port}/`, { dispatcher });
      expect(ok.statusCode).toBe(200);
      expect(await ok.body.text()).toBe('ok');
      const before = hits;
      const redirect = await request(`http://127.0.0.1:${port}/redirect`, { dispatcher });
      expect(redirect.statusCode).toBe(302);
      await redirect.body.dump();
      expect(hits).toBe(before + 1);
    } finally {
      await dispatcher.close();
    }
  });
});
