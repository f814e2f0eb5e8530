/**
 * What the HTTP benchmarks share: a receiver that counts the calls it gets, an API client signed
 * in as the harness's admin, batches of events through `POST /event`, and waiting for a count.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { EMAIL, PASSWORD } from '../pipeline/harness.js';

/** An HTTP receiver on 127.0.0.1 that answers every request `{"ok":true}` and counts them. */
export function counter() {
  let count = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      count++;
      res.setHeader('content-type', 'application/json');
      res.end('{"ok":true}');
    });
  });
  return new Promise<{ url: string; count(): number; close(): void }>((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
        count: () => count,
        close: () => server.close(),
      }),
    ),
  );
}

// biome-ignore lint/suspicious/noExplicitAny: answers are read field by field, as in the tests
export type Call = (method: string, path: string, body?: unknown, type?: string) => Promise<any>;

/** An API client of the svc at `base`, signed in as the harness's admin. */
export async function client(base: string): Promise<Call> {
  const call = async (
    method: string,
    path: string,
    body?: unknown,
    token?: string,
    type = 'application/json',
  ) => {
    const res = await fetch(`${base}/api/v1${path}`, {
      method,
      headers: { 'content-type': type, ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return text ? JSON.parse(text) : {};
  };
  const token = (await call('POST', '/auth/login/credentials', { email: EMAIL, password: PASSWORD }))
    .access_token;
  return (method, path, body, type) => call(method, path, body, token, type);
}

/** Posts `total` events made by `event(i)` in batches of 100, four batches at a time. */
export async function postEvents(call: Call, total: number, event: (i: number) => unknown): Promise<void> {
  const starts: number[] = [];
  for (let i = 0; i < total; i += 100) starts.push(i);
  const next = async () => {
    for (let b = starts.shift(); b !== undefined; b = starts.shift()) {
      const batch = Array.from({ length: Math.min(100, total - b) }, (_, i) => event(b + i));
      await call('POST', '/event', batch, 'application/cloudevents-batch+json');
    }
  };
  await Promise.all([next(), next(), next(), next()]);
}

/** Resolves once `done()` holds, checking every 20 ms; throws after `timeoutMs`. */
export async function until(done: () => boolean | Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}
