import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { CloudEvent } from '../../src/areas/events/cloudevent.js';
import { manualClock } from '../../src/lib/clock.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { admin, type TestPrincipal } from '../helpers/auth.js';

export interface Received {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  at: number;
}

export type Reply =
  | { status: number; body?: string; headers?: Record<string, string>; delayMs?: number }
  /** Never answer (until the socket is destroyed by the client's timeout or `release()`). */
  | 'hang'
  /** Hold the request until `release(reply)` is called. */
  | 'hold';

/**
 * A local webhook receiver: records every request with its raw body and answers as told. `down()`
 * closes the port (connection refused) and `up()` listens again on the same port.
 */
export class Receiver {
  readonly received: Received[] = [];
  reply: Reply | ((req: Received) => Reply) = { status: 200, body: 'ok' };
  inFlight = 0;
  maxInFlight = 0;
  /** TCP connections accepted (a refused target must not even get a handshake). */
  connections = 0;
  private server: http.Server;
  private held: Array<(r: Reply) => void> = [];
  private sockets = new Set<import('node:net').Socket>();
  port = 0;

  constructor() {
    this.server = this.makeServer();
  }

  private makeServer(): http.Server {
    const server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const r: Received = {
          method: req.method ?? '',
          url: req.url ?? '',
          headers: req.headers,
          body: Buffer.concat(chunks).toString('utf8'),
          at: Date.now(),
        };
        this.received.push(r);
        this.inFlight++;
        this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
        const answer = (reply: Reply) => {
          this.inFlight--;
          if (reply === 'hang' || reply === 'hold') return;
          if (res.destroyed) return;
          res.writeHead(reply.status, reply.headers ?? {});
          res.end(reply.body ?? '');
        };
        const reply = typeof this.reply === 'function' ? this.reply(r) : this.reply;
        if (reply === 'hold') this.held.push(answer);
        else if (reply === 'hang') res.on('close', () => answer('hang'));
        else if (reply.delayMs) setTimeout(() => answer(reply), reply.delayMs);
        else answer(reply);
      });
    });
    server.on('connection', (s) => {
      this.connections++;
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    server.keepAliveTimeout = 60_000;
    return server;
  }

  async up(): Promise<this> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.port, '127.0.0.1', () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  /** Closes the port: the next attempts get connection refused. */
  async down(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise((r) => this.server.close(r));
    this.server = this.makeServer();
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/hook`;
  }

  /** Answers every held request with `reply`. */
  release(reply: Reply = { status: 200, body: 'ok' }): number {
    const held = this.held.splice(0);
    for (const answer of held) answer(reply);
    return held.length;
  }

  heldCount(): number {
    return this.held.length;
  }

  byDelivery(id: string): Received[] {
    return this.received.filter((r) => r.headers['webhook-id'] === id);
  }

  async close(): Promise<void> {
    this.release({ status: 503 });
    for (const s of this.sockets) s.destroy();
    await new Promise((r) => this.server.close(r));
  }
}

export async function receiver(): Promise<Receiver> {
  return new Receiver().up();
}

/** A CloudEvent as the outbox drain hands it to handlers. */
export function cloudEvent(type = 'svc.user.created', data: Record<string, unknown> = {}): CloudEvent {
  const id = randomUUID();
  return {
    specversion: '1.0',
    id,
    source: '/api/v1/user',
    type,
    subject: id,
    time: new Date().toISOString(),
    datacontenttype: 'application/json',
    data: { user_id: id, ...data },
  };
}

/** Hands `event` to the webhook dispatcher exactly as the outbox drain does (Services.eventHandlers). */
export async function dispatch(t: TestApp, event: CloudEvent): Promise<void> {
  const handler = t.ctx.services.eventHandlers.find((h) => h.name === 'webhooks');
  if (!handler) throw new Error('the webhook dispatcher is not registered in services.eventHandlers');
  const failures = await handler.handle([event]);
  const failure = failures?.get(event.id);
  if (failure) throw failure;
}

export async function createHook(
  t: TestApp,
  headers: Record<string, string>,
  body: Record<string, unknown>,
): Promise<{ id: string; secret: string; url: string }> {
  const res = await t.app.inject({ method: 'POST', url: '/api/v1/webhook', headers, payload: body });
  if (res.statusCode !== 200) throw new Error(`create webhook failed: ${res.statusCode} ${res.body}`);
  return res.json();
}

export async function deliveries(
  t: TestApp,
  headers: Record<string, string>,
  hookId: string,
  qs = '',
): Promise<Array<Record<string, unknown> & { id: string; status: string; attempts: number }>> {
  const res = await t.app.inject({
    method: 'GET',
    url: `/api/v1/webhook/${hookId}/delivery?limit=250${qs}`,
    headers,
  });
  if (res.statusCode !== 200) throw new Error(`list deliveries failed: ${res.statusCode} ${res.body}`);
  return res.json().deliveries;
}

export async function delivery(
  t: TestApp,
  headers: Record<string, string>,
  hookId: string,
  id: string,
): Promise<
  Record<string, unknown> & { status: string; attempts: number; attempts_log: Array<Record<string, unknown>> }
> {
  const res = await t.app.inject({ method: 'GET', url: `/api/v1/webhook/${hookId}/delivery/${id}`, headers });
  if (res.statusCode !== 200) throw new Error(`get delivery failed: ${res.statusCode} ${res.body}`);
  return res.json();
}

/** Polls `check` until it is truthy (for work happening in background loops), failing after `ms`. */
export async function eventually<T>(check: () => Promise<T | undefined | false>, ms = 10_000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > until) throw new Error('condition not reached in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** An app whose clock the test moves, an admin, and a receiver: the delivery suites' start. */
export interface WebhookApp {
  t: TestApp;
  who: TestPrincipal;
  rx: Receiver;
  clock: ReturnType<typeof manualClock>;
  close(): Promise<void>;
}

export async function startWebhookApp(env: Record<string, string> = {}): Promise<WebhookApp> {
  // Close to real time, so the Standard Webhooks library's 5-minute tolerance accepts timestamps.
  const clock = manualClock(new Date(Math.floor(Date.now() / 1000) * 1000));
  const t = await startTestApp({
    clock,
    // Long-lived access tokens: tests move the clock by many minutes.
    env: { SVC_ALLOW_PRIVATE_NETWORKS: 'true', SVC_ACCESS_TOKEN_TTL_SECONDS: '86400', ...env },
  });
  const who = await admin(t);
  const rx = await receiver();
  return {
    t,
    who,
    rx,
    clock,
    async close() {
      await rx.close();
      await t.close();
    },
  };
}
