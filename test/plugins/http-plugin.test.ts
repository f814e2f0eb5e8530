import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { admin } from '../helpers/auth.js';
import { dialectName } from '../helpers/store.js';
import { type Answer, client } from './helpers.js';

const API_AUTH = 'Bearer http-plugin-secret-token-91c2';

/** The target the plugin calls, on 127.0.0.1; counts hits per path. */
async function startTarget() {
  const hits: Record<string, number> = {};
  const seen: Array<{ method?: string; url?: string; headers: IncomingMessage['headers']; body: string }> =
    [];
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    hits[path] = (hits[path] ?? 0) + 1;
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      seen.push({ method: req.method, url: req.url, headers: req.headers, body });
      const json = (status: number, value: unknown, headers = {}) =>
        res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(value));
      if (path === '/json') {
        return json(200, {
          hello: 'world',
          query: Object.fromEntries(new URL(req.url ?? '', 'http://x').searchParams),
          auth_ok: req.headers.authorization === API_AUTH,
        });
      }
      if (path === '/echo')
        return json(
          201,
          { body, content_type: req.headers['content-type'] ?? null },
          { 'x-multi': ['a', 'b'] },
        );
      if (path === '/redirect') return res.writeHead(302, { location: '/json' }).end();
      if (path === '/big')
        return res.writeHead(200, { 'content-type': 'text/plain' }).end('x'.repeat(1024 * 1024 + 1));
      if (path === '/text') return res.writeHead(200, { 'content-type': 'text/plain' }).end('plain text');
      if (path === '/broken-json')
        return res.writeHead(500, { 'content-type': 'application/json' }).end('{oops');
      if (path === '/empty') return res.writeHead(204).end();
      if (path === '/slow') return; // never answers
      return json(404, { error: 'not found' });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    base: `http://127.0.0.1:${port}`,
    hits,
    seen,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

describe(`http built-in plugin (${dialectName})`, () => {
  let target: Awaited<ReturnType<typeof startTarget>>;
  let t: TestApp;
  let api: ReturnType<typeof client>;
  let instance: string;
  const answers: Answer[] = [];
  beforeAll(async () => {
    target = await startTarget();
    t = await startTestApp({ env: { SVC_ALLOW_PRIVATE_NETWORKS: 'true' } });
    api = client(t, (await admin(t)).headers, answers);
    await api.vault('api_auth', API_AUTH);
    instance = await api.instance('http', {
      base_url: `${target.base}/`,
      headers: { Authorization: '$secret:api_auth', 'X-Static': 'yes' },
    });
  });
  afterAll(async () => {
    await t.close();
    await target.close();
  });

  const request = (input: Record<string, unknown>, id = instance, extra: Record<string, string> = {}) =>
    api.invoke(id, { action: 'request', payload: input }, extra);

  it('GET answers {status, headers, body} with a parsed JSON body; config headers carry a resolved secret', async () => {
    const res = await request({
      method: 'GET',
      url: '/json',
      query: { a: 1, b: 'x y', c: true },
      headers: { 'X-Req': 'r' },
    });
    expect(res.status).toBe(200);
    const { output } = res.json();
    expect(output.status).toBe(200);
    expect(output.body).toEqual({ hello: 'world', query: { a: '1', b: 'x y', c: 'true' }, auth_ok: true });
    expect(output.headers['content-type']).toBe('application/json');
    const sent = target.seen.at(-1)!;
    expect(sent.headers['x-static']).toBe('yes');
    expect(sent.headers['x-req']).toBe('r');
  });

  it('POST sends an object as JSON and a string as it is; repeated headers are joined', async () => {
    const obj = (await request({ method: 'POST', url: '/echo', body: { n: 1, list: [true] } })).json().output;
    expect(obj).toMatchObject({
      status: 201,
      body: { body: '{"n":1,"list":[true]}', content_type: 'application/json' },
    });
    expect(obj.headers['x-multi']).toBe('a, b');
    const text = (
      await request({
        method: 'PUT',
        url: '/echo',
        body: 'a=1&b=2',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      })
    ).json().output;
    expect(text.body).toEqual({ body: 'a=1&b=2', content_type: 'application/x-www-form-urlencoded' });
  });

  it('the request headers win over the instance headers, case-insensitively', async () => {
    await request({ method: 'GET', url: '/json', headers: { 'x-static': 'overridden' } });
    expect(target.seen.at(-1)!.headers['x-static']).toBe('overridden');
  });

  it('text, empty and non-JSON bodies; statuses outside fail_on_status are answers', async () => {
    expect((await request({ method: 'GET', url: '/text' })).json().output).toMatchObject({
      status: 200,
      body: 'plain text',
    });
    expect((await request({ method: 'GET', url: '/empty' })).json().output).toMatchObject({
      status: 204,
      body: null,
    });
    expect(
      (await request({ method: 'GET', url: '/broken-json', fail_on_status: [] })).json().output,
    ).toMatchObject({ status: 500, body: '{oops' });
    expect((await request({ method: 'GET', url: '/nowhere' })).json().output).toMatchObject({ status: 404 });
    expect((await request({ method: 'HEAD', url: '/json' })).json().output).toMatchObject({
      status: 200,
      body: null,
    });
  });

  it('a status in fail_on_status (default 5xx, 429, 408) fails with PLUGIN.UPSTREAM_STATUS, keeping the answer', async () => {
    const failed = await request({ method: 'GET', url: '/broken-json' });
    expect(failed.status).toBe(502);
    expect(failed.json()).toMatchObject({
      code: 'PLUGIN.UPSTREAM_STATUS',
      details: { status: 500, body: '{oops', headers: { 'content-type': 'application/json' } },
    });
    expect(failed.json().message).toMatch(
      /^http\.request: GET answered 500; headers \{.*"content-type":"application\/json".*\}; body \{oops$/,
    );
    // 4xx are answers by default; a class or a code makes them failures.
    const strict = await request({ method: 'GET', url: '/nowhere', fail_on_status: ['4xx'] });
    expect(strict.json()).toMatchObject({ code: 'PLUGIN.UPSTREAM_STATUS', details: { status: 404 } });
    const exact = await request({ method: 'GET', url: '/nowhere', fail_on_status: [404] });
    expect(exact.status).toBe(502);
    const bad = await request({ method: 'GET', url: '/json', fail_on_status: ['3xx'] });
    expect(bad.json()).toMatchObject({ code: 'PLUGIN.INVALID_INPUT' });
  });

  it('a redirect is answered, never followed', async () => {
    const before = target.hits['/json'] ?? 0;
    const res = await request({ method: 'GET', url: '/redirect' });
    expect(res.json().output).toMatchObject({ status: 302, headers: { location: '/json' } });
    expect(target.hits['/json'] ?? 0).toBe(before);
  });

  it('a body over the cap fails with PLUGIN.INVOCATION_FAILED; max_response_bytes lowers the cap', async () => {
    const big = await request({ method: 'GET', url: '/big' });
    expect(big.status).toBe(502);
    expect(big.json()).toEqual({
      code: 'PLUGIN.INVOCATION_FAILED',
      message: 'http.request failed: response body exceeds 1048576 bytes',
    });
    const small = await api.instance('http', { base_url: target.base, max_response_bytes: 5 });
    expect((await request({ method: 'GET', url: '/text' }, small)).json().message).toBe(
      'http.request failed: response body exceeds 5 bytes',
    );
    const tooLarge = await api.create({
      plugin_definition_id: await api.definitionId('http'),
      display_name: 'x',
      enabled: true,
      config_json: { max_response_bytes: 100 * 1024 * 1024 },
    });
    expect(tooLarge.status).toBe(400);
  });

  it('timeout_ms bounds the request: 504 PLUGIN.TIMEOUT', async () => {
    const res = await request({ method: 'GET', url: '/slow', timeout_ms: 100 });
    expect(res.status).toBe(504);
    expect(res.json()).toEqual({ code: 'PLUGIN.TIMEOUT', message: 'request timed out after 100 ms' });
  });

  it('forwards the Idempotency-Key of the invocation', async () => {
    await request({ method: 'POST', url: '/echo', body: {} }, instance, {
      'idempotency-key': 'wf-run-1-node-a',
    });
    expect(target.seen.at(-1)!.headers['idempotency-key']).toBe('wf-run-1-node-a');
  });

  it('bad input is 400 PLUGIN.INVALID_INPUT: unknown method, body on GET, relative URL without base_url', async () => {
    const method = await request({ method: 'TRACE', url: '/json' });
    expect(method.status).toBe(400);
    expect(method.json().details.errors[0].path).toBe('/method');
    const getBody = await request({ method: 'GET', url: '/json', body: { a: 1 } });
    expect(getBody.json()).toMatchObject({ code: 'PLUGIN.INVALID_INPUT', details: { field: 'body' } });
    const noBase = await api.instance('http', {});
    const relative = await request({ method: 'GET', url: '/json' }, noBase);
    expect(relative.status).toBe(400);
    expect(relative.json().message).toBe('url must be an absolute URL (the instance has no base_url)');
    const scheme = await request({ method: 'GET', url: 'ftp://127.0.0.1/x' }, noBase);
    expect(scheme.status).toBe(400);
    expect(scheme.json().details).toMatchObject({ field: 'url', reason: 'scheme' });
  });

  it('the resolved header secret appears in no answer and no log line', () => {
    for (const a of answers) expect(a.body).not.toContain(API_AUTH);
    expect(t.logText()).not.toContain(API_AUTH);
  });
});

describe(`http built-in plugin without SVC_ALLOW_PRIVATE_NETWORKS (${dialectName})`, () => {
  let target: Awaited<ReturnType<typeof startTarget>>;
  let t: TestApp;
  let api: ReturnType<typeof client>;
  let instance: string;
  beforeAll(async () => {
    target = await startTarget();
    t = await startTestApp();
    api = client(t, (await admin(t)).headers);
    instance = await api.instance('http', {});
  });
  afterAll(async () => {
    await t.close();
    await target.close();
  });

  it.each([
    ['plain http', (port: number) => `http://127.0.0.1:${port}/json`, 'scheme'],
    ['loopback', (port: number) => `https://127.0.0.1:${port}/json`, 'loopback'],
    ['a name resolving to loopback', (port: number) => `https://localhost:${port}/json`, 'loopback'],
    ['a private address', () => 'https://10.1.2.3/json', 'private'],
    ['cloud metadata', () => 'https://169.254.169.254/latest/meta-data', 'metadata'],
  ])('refuses %s with 400 PLUGIN.INVALID_INPUT before connecting', async (_what, url, reason) => {
    const res = await api.invoke(instance, {
      action: 'request',
      payload: { method: 'GET', url: url(target.port) },
    });
    expect(res.status).toBe(400);
    expect(res.json()).toMatchObject({ code: 'PLUGIN.INVALID_INPUT', details: { field: 'url', reason } });
    expect(res.json().message).toMatch(/^url is not allowed: /);
    expect(target.seen).toHaveLength(0);
  });
});
