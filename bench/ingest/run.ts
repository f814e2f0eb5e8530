/**
 * bench/ingest: POST /api/v1/event, the front door of the pipeline (#16 "Speed"). One server process
 * as `npm start` runs it (API and worker together, SQLite file in WAL mode or PostgreSQL), a custom
 * event type with a data_schema, and a subscription running a one-node graph on it, so every accepted
 * event also becomes a run while the load goes on. Closed-loop load, CONNECTIONS requests in flight:
 *
 * - GET /healthz of the same server: the ceiling of the HTTP stack here;
 * - POST /event, one structured event per request: events/s accepted (202), p50 and p99;
 * - POST /event, batches of BATCH events (application/cloudevents-batch+json): events/s accepted.
 *
 * Rounds alternate the three; medians (and min-max) are printed, then how many runs the worker had
 * completed by the end and how long it took to finish the rest. Goals: >= 3000 events/s single,
 * >= 10000 batched, p99 <= 20 ms at concurrency 10 (SQLite).
 *
 * Usage: npm run bench -- ingest [sqlite|postgres://...]; BENCH_SECONDS (3), BENCH_ROUNDS (3),
 * BENCH_CONNECTIONS (10), BENCH_BATCH (100).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { buildApp } from '../../src/app/build-app.js';
import { closeContext, createContext, createWorker } from '../../src/app/runtime.js';
import { loadConfig } from '../../src/config/config.js';
import { type LoadResult, load, median } from '../lib/load.js';

const dir = mkdtempSync(join(tmpdir(), 'svc-bench-ingest-'));
const target = process.argv[2] ?? 'sqlite';
const databaseUrl = target === 'sqlite' ? `sqlite:${dir}/svc.db` : target;
const seconds = Number(process.env.BENCH_SECONDS ?? 3);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 10);
const batchSize = Number(process.env.BENCH_BATCH ?? 100);

const config = loadConfig({
  NODE_ENV: 'production',
  SVC_DATABASE_URL: databaseUrl,
  SVC_JWT_SECRET: 'bench-jwt-secret-bench-jwt-secret-0123456789',
  SVC_VAULT_ENCRYPTION_KEY: 'bench',
  SVC_LOG_LEVEL: 'silent',
  SVC_PASSWORD_HASH_COST: '10',
  // Far more runs a minute than the rate guard's default lets one subscription start.
  SVC_WORKFLOW_MAX_RUNS_PER_MINUTE: '0',
});
const ctx = await createContext(config, { log: pino({ level: 'silent' }) });
const { app } = await buildApp(ctx);
const address = await app.listen({ port: 0, host: '127.0.0.1' });
const worker = createWorker(ctx);
worker.start();

const TYPE = 'com.example.bench.order';
const identity = ctx.services.identity;
const user = await identity.createUser(null, {
  email: `bench-${Date.now()}@example.test`,
  password: 'bench-password',
  role_keys: ['admin'],
});
await ctx.services.events.types.create(user.id, {
  event_type: TYPE,
  data_schema: {
    type: 'object',
    required: ['order_id', 'total'],
    properties: { order_id: { type: 'string' }, total: { type: 'number' } },
  },
});
const sub = await ctx.services.subscriptions.create(user.id, { name: 'bench', event_type: TYPE });
await ctx.services.subscriptions.putGraph(user.id, sub.id, {
  nodes: [{ key: 'double', type: 'COMPUTE', config: { logic: { '*': [{ var: 'event.data.total' }, 2] } } }],
  edges: [],
});
const key = await identity.createApiKey(
  { userId: user.id, scopes: await identity.scopesOfUser(user.id), authPath: 'password' },
  { name: 'bench', scope_keys: ['workflow:execute'], expires_in: 3600 },
);

const event = (id: string) =>
  `{"specversion":"1.0","id":"${id}","source":"https://shop.example.com/orders","type":"${TYPE}","data":{"order_id":"${id}","total":12.5}}`;
const single = {
  method: 'POST',
  okStatus: 202,
  body: event('{{n}}'),
};
const batch = {
  method: 'POST',
  okStatus: 202,
  body: `[${Array.from({ length: batchSize }, (_, i) => event(`{{n}}-${i}`)).join(',')}]`,
};
const headers = (type: string) => ({ authorization: `Bearer ${key.token}`, 'content-type': type });

const health: LoadResult[] = [];
const singles: LoadResult[] = [];
const batches: LoadResult[] = [];
const run = {
  health: (ms: number) => load(`${address}/healthz`, {}, ms, connections),
  single: (ms: number) =>
    load(`${address}/api/v1/event`, headers('application/cloudevents+json'), ms, connections, single),
  batch: (ms: number) =>
    load(`${address}/api/v1/event`, headers('application/cloudevents-batch+json'), ms, connections, batch),
};

const count = async (sql: 'runs' | 'events') =>
  Number(
    (sql === 'runs'
      ? await ctx.store.db
          .selectFrom('workflow_run')
          .where('status', '=', 'completed')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      : await ctx.store.db
          .selectFrom('event_delivery_task')
          .where('event_type', '=', TYPE)
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
    ).n,
  );
/**
 * Waits until the worker has run every accepted event, so each measurement starts from an idle
 * server (the worker runs while the load goes on, as in production; the backlog one measurement
 * leaves must not slow the next); answers the seconds it took.
 */
const drained: number[] = [];
async function drain(): Promise<void> {
  const started = performance.now();
  const target = await count('events');
  while ((await count('runs')) < target) {
    if (performance.now() - started > 600_000) throw new Error('the worker did not catch up');
    await new Promise((r) => setTimeout(r, 50));
  }
  drained.push((performance.now() - started) / 1000);
}

console.log(
  `POST /event on ${target === 'sqlite' ? 'SQLite (file, WAL)' : 'PostgreSQL'}: ${connections} requests in flight, ` +
    `${seconds} s per measurement, ${rounds} rounds, the worker catching up between measurements; ` +
    `load average ${loadavg()[0].toFixed(2)}`,
);
// Warm-up: JIT, caches, connections.
await run.health(500);
await run.single(1000);
await run.batch(500);
await drain();
drained.length = 0;
for (let r = 0; r < rounds; r++) {
  health.push(await run.health(seconds * 1000));
  singles.push(await run.single(seconds * 1000));
  await drain();
  batches.push(await run.batch(seconds * 1000));
  await drain();
  const [h, s, b] = [health[r], singles[r], batches[r]];
  console.log(
    `  round ${r + 1}: healthz ${h.rps.toFixed(0)}/s, single ${s.rps.toFixed(0)} events/s (p99 ${s.p99Ms.toFixed(1)} ms, ` +
      `runs caught up ${drained[2 * r].toFixed(1)} s later), batch ${(b.rps * batchSize).toFixed(0)} events/s ` +
      `(runs caught up ${drained[2 * r + 1].toFixed(1)} s later); errors ${h.errors + s.errors + b.errors}`,
  );
}

const range = (xs: number[]) => `${Math.min(...xs).toFixed(0)}-${Math.max(...xs).toFixed(0)}`;
const rps = (xs: LoadResult[], k = 1) => xs.map((x) => x.rps * k);
console.log('\n                          median          min-max       p50 ms   p99 ms');
const row = (name: string, xs: LoadResult[], k = 1) =>
  console.log(
    `${name.padEnd(26)}${median(rps(xs, k)).toFixed(0).padStart(8)}/s${range(rps(xs, k)).padStart(16)}` +
      `${median(xs.map((x) => x.p50Ms))
        .toFixed(1)
        .padStart(10)}${median(xs.map((x) => x.p99Ms))
        .toFixed(1)
        .padStart(9)}`,
  );
row('GET /healthz (ceiling)', health);
row('POST /event, 1 per request', singles);
row(`POST /event, ${batchSize} per batch`, batches, batchSize);
console.log(
  `\nsingle / healthz: ${((100 * median(rps(singles))) / median(rps(health))).toFixed(0)}%; ` +
    `goals: >= 3000 events/s single, >= 10000 batched, p99 <= 20 ms`,
);
console.log(`${await count('events')} events accepted, ${await count('runs')} runs completed`);

await worker.stop();
await app.close();
await closeContext(ctx);
rmSync(dir, { recursive: true, force: true });
