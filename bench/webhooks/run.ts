/**
 * `npm run bench -- webhooks`: webhook fan-out. EVENTS events, each to WEBHOOKS webhooks pointed at a
 * local receiver (10,000 deliveries by default), on SQLite (a WAL file, as deployed) and PostgreSQL.
 *
 * Per run: hand the events to the dispatcher (the drain's handler: one delivery row per webhook and
 * event), then the sender delivers them all (claim under lease, sign both signatures, POST, record
 * result and attempt row). Figures: delivered/s of the sender (first claim to last result written),
 * and end to end (dispatch + send).
 *
 * Ceiling, same run, same receiver: the raw rate of the same HTTP client (the guarded undici agent)
 * posting the same bodies with the same headers and the same number of requests in flight (the
 * sender's pool size), no store. The sender can never beat it; sender/ceiling is the ratio to watch.
 *
 * The receiver runs in a worker thread (its own event loop) and answers 204 after reading the body.
 * Env: BENCH_EVENTS (1000), BENCH_WEBHOOKS (10), BENCH_RUNS (5), BENCH_PG_URL (default
 * postgres://postgres@127.0.0.1:5432/postgres; a fresh database is created and dropped; "off" skips).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import pino from 'pino';
import { request } from 'undici';
import { createContext } from '../../src/app/runtime.js';
import type { AppContext } from '../../src/app/types.js';
import type { CloudEvent } from '../../src/areas/events/cloudevent.js';
import { signDelivery } from '../../src/areas/webhooks/signing.js';
import { loadConfig } from '../../src/config/config.js';
import { newId } from '../../src/lib/ids.js';
import { guardedDispatcher } from '../../src/lib/net-guard.js';
import { createPostgresDatabase } from '../../test/helpers/database.js';
import { median } from '../lib/load.js';

const EVENTS = Number(process.env.BENCH_EVENTS ?? 1_000);
const WEBHOOKS = Number(process.env.BENCH_WEBHOOKS ?? 10);
const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const PG_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
/** The sender's pool (engine default): attempts in flight per process. */
const IN_FLIGHT = 128;
const DELIVERIES = EVENTS * WEBHOOKS;

const RECEIVER = `
const { parentPort } = require('node:worker_threads');
const http = require('node:http');
let count = 0;
const server = http.createServer((req, res) => {
  req.on('data', () => {});
  req.on('end', () => { count++; res.writeHead(204); res.end(); });
});
server.keepAliveTimeout = 60000;
server.listen(0, '127.0.0.1', () => parentPort.postMessage({ port: server.address().port }));
parentPort.on('message', (m) => {
  if (m === 'count') parentPort.postMessage({ count });
  if (m === 'close') server.close(() => process.exit(0));
});
`;

async function startReceiver(): Promise<{ url: string; count(): Promise<number>; close(): Promise<void> }> {
  const worker = new Worker(RECEIVER, { eval: true });
  const port = await new Promise<number>((resolve) => worker.once('message', (m) => resolve(m.port)));
  return {
    url: `http://127.0.0.1:${port}/hook`,
    count: () =>
      new Promise((resolve) => {
        worker.once('message', (m) => resolve(m.count));
        worker.postMessage('count');
      }),
    close: async () => {
      await worker.terminate();
    },
  };
}

function event(i: number): CloudEvent {
  const id = newId();
  return {
    specversion: '1.0',
    id,
    source: '/api/v1/questionnaire_submission',
    type: 'svc.submission.created',
    subject: id,
    time: new Date().toISOString(),
    datacontenttype: 'application/json',
    data: {
      submission_id: id,
      questionnaire_id: 'q-1',
      answers: { q1: 'yes', q2: i, note: 'x'.repeat(200) },
    },
  };
}

interface StoreChoice {
  name: string;
  url: string;
  drop(): Promise<void>;
}

function sqliteStore(): StoreChoice {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-webhooks-'));
  return {
    name: 'sqlite',
    url: `sqlite:${dir}/svc.db`,
    drop: async () => rmSync(dir, { recursive: true, force: true }),
  };
}

async function postgresStore(): Promise<StoreChoice | undefined> {
  if (PG_URL === 'off') return undefined;
  try {
    return { name: 'postgres', ...(await createPostgresDatabase(PG_URL, 'svc_bench_wh')) };
  } catch (err) {
    console.log(`postgres: skipped (${(err as Error).message})`);
    return undefined;
  }
}

/** The same client, bodies and headers as the sender, `IN_FLIGHT` at a time, no store. */
async function ceiling(url: string, secret: string, bodies: string[]): Promise<number> {
  const dispatcher = guardedDispatcher({ allowPrivate: true, timeoutMs: 10_000 });
  let next = 0;
  const started = performance.now();
  async function lane() {
    while (next < bodies.length) {
      const i = next++;
      const headers = signDelivery({
        secret,
        webhookId: 'w',
        deliveryId: `d${i}`,
        eventType: 'svc.submission.created',
        timestamp: Math.floor(Date.now() / 1000),
        body: bodies[i] as string,
      });
      const res = await request(url, {
        method: 'POST',
        headers: { ...headers, 'user-agent': 'svc-webhooks/bench' },
        body: bodies[i],
        dispatcher,
        signal: AbortSignal.timeout(10_000),
      });
      await res.body.text();
      if (res.statusCode !== 204) throw new Error(`ceiling: HTTP ${res.statusCode}`);
    }
  }
  await Promise.all(Array.from({ length: IN_FLIGHT }, lane));
  const seconds = (performance.now() - started) / 1000;
  await dispatcher.close();
  return bodies.length / seconds;
}

async function benchStore(choice: StoreChoice): Promise<void> {
  const rx = await startReceiver();
  const config = loadConfig({
    NODE_ENV: 'test',
    SVC_DATABASE_URL: choice.url,
    SVC_WORKER: 'off',
    SVC_ALLOW_PRIVATE_NETWORKS: 'true',
    SVC_JWT_SECRET: 'bench-jwt-secret-that-is-long-enough-0123456789',
    SVC_VAULT_ENCRYPTION_KEY: 'bench-vault-key',
    SVC_LOG_LEVEL: 'warn',
  });
  const ctx: AppContext = await createContext(config, { log: pino({ level: 'warn' }) });
  const { webhooks, webhookEngine } = ctx.services;
  const actor = newId();
  let secret = '';
  for (let i = 0; i < WEBHOOKS; i++) {
    const hook = await webhooks.create(actor, {
      name: `bench-${i}`,
      url: rx.url,
      event_types: ['svc.submission.created'],
    });
    secret = hook.secret;
  }
  const sendRates: number[] = [];
  const e2eRates: number[] = [];
  const dispatchRates: number[] = [];
  const ceilings: number[] = [];
  const ratios: number[] = [];
  const e2eRatios: number[] = [];
  try {
    for (let run = 1; run <= RUNS; run++) {
      const events = Array.from({ length: EVENTS }, (_, i) => event(i));
      const before = await rx.count();
      // The ceiling is measured right before and right after the sender, with this run's bodies, and
      // averaged: the machine's load drifts, and each run's ratio compares like with like.
      const bodies = Array.from({ length: DELIVERIES }, (_, i) => JSON.stringify(events[i % EVENTS]));
      const cBefore = await ceiling(rx.url, secret, bodies);
      const t0 = performance.now();
      // The drain hands events over in claimed batches (its default: 100 at a time).
      for (let i = 0; i < events.length; i += 100) {
        await webhooks.dispatcher.handle(events.slice(i, i + 100) as CloudEvent[]);
      }
      const t1 = performance.now();
      await webhookEngine.deliverDue();
      const t2 = performance.now();
      const cAfter = await ceiling(rx.url, secret, bodies);
      const c = (cBefore + cAfter) / 2;
      const counted = (await rx.count()) - before - 2 * DELIVERIES; // minus the ceiling's requests
      const rows = await ctx.store.db
        .selectFrom('webhook_delivery')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('status', '=', 'SUCCESS')
        .executeTakeFirstOrThrow();
      if (counted !== DELIVERIES || Number(rows.n) !== DELIVERIES * run) {
        throw new Error(
          `run ${run}: receiver counted ${counted}, SUCCESS rows ${rows.n}, expected ${DELIVERIES}`,
        );
      }
      const send = DELIVERIES / ((t2 - t1) / 1000);
      const e2e = DELIVERIES / ((t2 - t0) / 1000);
      const dispatchRate = DELIVERIES / ((t1 - t0) / 1000);
      sendRates.push(send);
      e2eRates.push(e2e);
      dispatchRates.push(dispatchRate);
      ceilings.push(c);
      ratios.push(send / c);
      e2eRatios.push(e2e / c);
      console.log(
        `  run ${run}: sender ${send.toFixed(0)}/s, end to end ${e2e.toFixed(0)}/s, ` +
          `dispatch ${dispatchRate.toFixed(0)} rows/s, ceiling ${cBefore.toFixed(0)}/${cAfter.toFixed(0)}/s (before/after), ` +
          `sender/ceiling ${(send / c).toFixed(2)}`,
      );
    }
    const s = median(sendRates);
    const e = median(e2eRates);
    const c = median(ceilings);
    console.log(
      `${choice.name}: ${DELIVERIES} deliveries (${EVENTS} events x ${WEBHOOKS} webhooks), median of ${RUNS}: ` +
        `sender ${s.toFixed(0)} delivered/s, end to end ${e.toFixed(0)}/s, dispatch ${median(dispatchRates).toFixed(0)} rows/s, ` +
        `ceiling (raw client) ${c.toFixed(0)}/s; median of per-run ratios: sender/ceiling ${median(ratios).toFixed(2)}, ` +
        `end-to-end/ceiling ${median(e2eRatios).toFixed(2)}`,
    );
  } finally {
    await webhookEngine.close();
    await ctx.store.close();
    await rx.close();
  }
}

console.log(
  `webhook fan-out: ${EVENTS} events x ${WEBHOOKS} webhooks = ${DELIVERIES} deliveries, ${IN_FLIGHT} in flight`,
);
for (const make of [async () => sqliteStore(), postgresStore]) {
  const choice = await make();
  if (!choice) continue;
  try {
    await benchStore(choice);
  } finally {
    await choice.drop();
  }
}
