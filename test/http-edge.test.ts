import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './helpers/app.js';
import { dialectName } from './helpers/store.js';

/** Sends raw bytes to the server and answers everything it wrote back before closing. */
function raw(port: number, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(request));
    let text = '';
    socket.on('data', (d) => {
      text += d.toString();
    });
    socket.on('close', () => resolve(text));
    socket.on('error', reject);
  });
}

const bodyOf = (response: string) => JSON.parse(response.slice(response.indexOf('\r\n\r\n') + 4));

/** What Node's HTTP parser and Fastify's shutdown refuse also gets the contract's body (CONTRACTS §2). */
describe(`HTTP edge cases on a listening server (${dialectName})`, () => {
  let t: TestApp;
  let port: number;
  beforeAll(async () => {
    t = await startTestApp();
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    port = (t.app.server.address() as net.AddressInfo).port;
  });
  afterAll(() => t.close());

  it('a malformed request is 400 with the error body, and the connection closes', async () => {
    for (const request of [
      'GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header Name: 1\r\n\r\n',
      'POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab',
      'NOT-A-REQUEST\r\n\r\n',
    ]) {
      const response = await raw(port, request);
      expect(response, request).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
      expect(bodyOf(response)).toEqual({ code: 'VALIDATION_ERROR', message: 'Malformed HTTP request' });
    }
  });

  it('headers over the limit are 431 HEADERS_TOO_LARGE', async () => {
    const response = await raw(
      port,
      `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
    );
    expect(response).toMatch(/^HTTP\/1\.1 431 /);
    expect(bodyOf(response)).toEqual({ code: 'HEADERS_TOO_LARGE', message: 'Request headers are too large' });
  });

  it('a request arriving once shutdown began is 503 SERVICE_UNAVAILABLE with Connection: close', async () => {
    const other = await startTestApp();
    await other.app.listen({ port: 0, host: '127.0.0.1' });
    const otherPort = (other.app.server.address() as net.AddressInfo).port;
    const body = '{"email":"a@example.test","password":"not-the-password"}';
    const socket = net.connect(otherPort, '127.0.0.1');
    let text = '';
    socket.on('data', (d) => {
      text += d.toString();
    });
    const ended = new Promise((r) => socket.on('close', r));
    await new Promise((r) => socket.once('connect', r));
    // A request in flight (its body still arriving) keeps the shutdown waiting; the next request on
    // the same connection arrives after shutdown began.
    socket.write(
      `POST /api/v1/auth/login/credentials HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`,
    );
    await new Promise((r) => setTimeout(r, 50));
    const closing = other.app.close();
    await new Promise((r) => setTimeout(r, 50));
    socket.write(`${body.slice(10)}GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n`);
    await ended;
    await closing;
    await other.close();
    const second = text.slice(text.indexOf('HTTP/1.1', 10));
    expect(text).toMatch(/^HTTP\/1\.1 401 /);
    expect(second).toMatch(/^HTTP\/1\.1 503 /);
    expect(second.toLowerCase()).toContain('connection: close');
    expect(bodyOf(second)).toEqual({ code: 'SERVICE_UNAVAILABLE', message: 'The service is shutting down' });
  });
});
