/**
 * Workflow engine throughput: runs completed per second for a 5-node graph (COMPUTE -> SWITCH -> two
 * conditional COMPUTE branches -> JOIN ANY), triggered by published events, every run and run-node
 * persisted, on SQLite (file, WAL) and PostgreSQL. Next to it, the ceiling: the outbox drain rate of
 * the same events when no subscription matches (publish -> drain -> router lookup -> DONE).
 *
 * The real worker (src/worker) runs the real jobs (outbox drain + workflows); events are published
 * first (a backlog), then the worker is started and timed until every run has completed.
 *
 * With BENCH_N8N_BIN set to an n8n binary (installed outside the project, see docs/workflows.md), the
 * same graph also runs on n8n (./n8n.ts), and next to it svc with the events published one per
 * transaction while the worker runs ("live", the closest svc analogue of n8n's webhook-triggered runs).
 *
 * `npm run bench -- workflow [events-per-round] [rounds]`
 * Env: SVC_BENCH_PG_URL (default postgres://postgres@127.0.0.1:5432/postgres; "off" skips PostgreSQL),
 * SVC_BENCH_STORES (default "sqlite,postgres"), BENCH_N8N_BIN (unset: no n8n comparison),
 * BENCH_N8N_CONCURRENCY (requests in flight, default 16), BENCH_N8N_WARMUP (default 200 executions),
 * BENCH_FANOUT_ROUNDS (runs of each fan-out graph, default 30; 0 skips the fan-out part, ./fanout.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { createContext, createWorker } from '../../src/app/runtime.js';
import type { AppContext } from '../../src/app/types.js';
import { loadConfig } from '../../src/config/config.js';
import { newId } from '../../src/lib/ids.js';
import { createPostgresDatabase } from '../../test/helpers/database.js';
import { median } from '../lib/load.js';
import { measureFanOut, printFanOut, RECEIVER_DELAY_MS } from './fanout.js';
import { measureN8n, type N8nResult } from './n8n.js';

const EVENTS = Number(process.argv[2] ?? 2000);
const ROUNDS = Number(process.argv[3] ?? 3);
const PG_URL = process.env.SVC_BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const N8N_BIN = process.env.BENCH_N8N_BIN;

const GRAPH = {
  nodes: [
    { key: 'score', type: 'COMPUTE', config: { logic: { '*': [{ var: 'event.data.n' }, 2] } } },
    { key: 'route', type: 'SWITCH' },
    {
      key: 'high',
      type: 'COMPUTE',
      config: { logic: { cat: ['high:', { var: 'nodes.score.output.result' }] } },
    },
    {
      key: 'low',
      type: 'COMPUTE',
      config: { logic: { cat: ['low:', { var: 'nodes.score.output.result' }] } },
    },
    { key: 'join', type: 'JOIN', config: { mode: 'ANY' } },
  ],
  edges: [
    { from_node_id: 'score', to_node_id: 'route' },
    {
      from_node_id: 'route',
      to_node_id: 'high',
      condition_jsonlogic: { '>=': [{ var: 'nodes.score.output.result' }, 100] },
    },
    {
      from_node_id: 'route',
      to_node_id: 'low',
      condition_jsonlogic: { '<': [{ var: 'nodes.score.output.result' }, 100] },
    },
    { from_node_id: 'high', to_node_id: 'join' },
    { from_node_id: 'low', to_node_id: 'join' },
  ],
};

interface Store {
  url: string;
  drop(): Promise<void>;
}

async function sqliteStore(): Promise<Store> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-wf-'));
  return { url: `sqlite:${dir}/svc.db`, drop: async () => rmSync(dir, { recursive: true, force: true }) };
}

async function pgStore(): Promise<Store> {
  return createPostgresDatabase(PG_URL, 'svc_bench');
}

async function context(url: string, extra: Record<string, string> = {}): Promise<AppContext> {
  const config = loadConfig({
    ...extra,
    NODE_ENV: 'test',
    SVC_DATABASE_URL: url,
    SVC_LOG_LEVEL: 'warn',
    SVC_JWT_SECRET: 'bench-jwt-secret-that-is-long-enough-0123456789',
    SVC_VAULT_ENCRYPTION_KEY: 'bench-vault-key',
    SVC_OUTBOX_DRAIN_INTERVAL_MS: '50',
    SVC_WORKFLOW_POLL_INTERVAL_MS: '50',
    // The bench starts far more than the rate guard's default 6000 runs a minute on one subscription.
    SVC_WORKFLOW_MAX_RUNS_PER_MINUTE: '0',
  });
  return createContext(config, { log: pino({ level: 'warn' }) });
}

async function publish(ctx: AppContext, count: number, perTransaction = 100): Promise<void> {
  for (let i = 0; i < count; i += perTransaction) {
    await ctx.store.transaction(async (tx) => {
      for (let j = i; j < Math.min(count, i + perTransaction); j++) {
        const id = newId();
        await ctx.services.events.publish(tx, {
          type: 'svc.user.created',
          source: '/api/v1/user',
          subject: id,
          data: { user_id: id, email: `${id.slice(0, 8)}@bench.test`, n: j % 100 },
        });
      }
    });
  }
}

async function countWhere(ctx: AppContext, what: 'tasks' | 'runs'): Promise<number> {
  const row =
    what === 'tasks'
      ? await ctx.store.db
          .selectFrom('event_delivery_task')
          .where('status', '=', 'DONE')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      : await ctx.store.db
          .selectFrom('workflow_run')
          .where('status', '=', 'completed')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Starts the worker on a published backlog; answers seconds until `target` rows reached `what`. */
async function timeWorker(ctx: AppContext, what: 'tasks' | 'runs', target: number): Promise<number> {
  const worker = createWorker(ctx);
  const started = performance.now();
  worker.start();
  for (;;) {
    if ((await countWhere(ctx, what)) >= target) break;
    if (performance.now() - started > 300_000) throw new Error(`${what} did not finish`);
    await new Promise((r) => setTimeout(r, 20));
  }
  const seconds = (performance.now() - started) / 1000;
  await worker.stop();
  return seconds;
}

/**
 * Live: the worker runs while `count` events are published one per transaction (as one webhook request
 * would); answers seconds from the first publish until every run completed.
 */
async function timeLive(ctx: AppContext, count: number): Promise<number> {
  const worker = createWorker(ctx);
  worker.start();
  const started = performance.now();
  await publish(ctx, count, 1);
  for (;;) {
    if ((await countWhere(ctx, 'runs')) >= count) break;
    if (performance.now() - started > 300_000) throw new Error('runs did not finish');
    await new Promise((r) => setTimeout(r, 20));
  }
  const seconds = (performance.now() - started) / 1000;
  await worker.stop();
  return seconds;
}

async function measureLive(make: () => Promise<Store>): Promise<number> {
  const runs: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const store = await make();
    const ctx = await context(store.url);
    const sub = await ctx.services.subscriptions.create('bench', {
      name: 'bench',
      event_type: 'svc.user.created',
    });
    await ctx.services.subscriptions.putGraph('bench', sub.id, GRAPH);
    runs.push(EVENTS / (await timeLive(ctx, EVENTS)));
    await ctx.store.close();
    await store.drop();
    console.log(`  sqlite live round ${round + 1}: ${runs[round].toFixed(0)} runs/s`);
  }
  return median(runs);
}

const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(', ');

async function measure(name: string, make: () => Promise<Store>) {
  const drain: number[] = [];
  const runs: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    // Ceiling: the outbox drain of the same events, no subscription matching.
    {
      const store = await make();
      const ctx = await context(store.url);
      const sub = await ctx.services.subscriptions.create('bench', {
        name: 'elsewhere',
        event_type: 'svc.folder.deleted',
      });
      await ctx.services.subscriptions.putGraph('bench', sub.id, GRAPH);
      await publish(ctx, EVENTS);
      const base = await countWhere(ctx, 'tasks');
      drain.push(EVENTS / (await timeWorker(ctx, 'tasks', base + EVENTS)));
      await ctx.store.close();
      await store.drop();
    }
    // Workflows: every event starts a 5-node run; timed until every run completed.
    {
      const store = await make();
      const ctx = await context(store.url);
      const sub = await ctx.services.subscriptions.create('bench', {
        name: 'bench',
        event_type: 'svc.user.created',
      });
      await ctx.services.subscriptions.putGraph('bench', sub.id, GRAPH);
      await publish(ctx, EVENTS);
      runs.push(EVENTS / (await timeWorker(ctx, 'runs', EVENTS)));
      const nodes = await ctx.store.db
        .selectFrom('workflow_run_node')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('status', 'in', ['completed', 'skipped'])
        .executeTakeFirstOrThrow();
      if (Number(nodes.n) !== EVENTS * 5)
        throw new Error(`expected ${EVENTS * 5} finished run nodes, found ${nodes.n}`);
      await ctx.store.close();
      await store.drop();
    }
    console.log(
      `  ${name} round ${round + 1}: drain ${drain[round].toFixed(0)} events/s, workflows ${runs[round].toFixed(0)} runs/s`,
    );
  }
  return { name, drain: median(drain), runs: median(runs) };
}

console.log(
  `workflow engine: ${EVENTS} events per round, ${ROUNDS} rounds, 5-node graph, every run and node persisted`,
);
console.log(`load average at start: ${load()}\n`);
const stores = (process.env.SVC_BENCH_STORES ?? 'sqlite,postgres').split(',');
const results = [];
if (stores.includes('sqlite')) results.push(await measure('sqlite', sqliteStore));
if (stores.includes('postgres') && PG_URL !== 'off') results.push(await measure('postgres', pgStore));
console.log(
  '\nstore       outbox drain (ceiling)   workflow runs completed   runs / drain   nodes persisted/s',
);
for (const r of results) {
  console.log(
    `${r.name.padEnd(12)}${`${r.drain.toFixed(0)} events/s`.padStart(22)}${`${r.runs.toFixed(0)} runs/s`.padStart(26)}${`${((100 * r.runs) / r.drain).toFixed(0)}%`.padStart(15)}${`${(r.runs * 5).toFixed(0)}`.padStart(20)}`,
  );
}
console.log('\n(medians of the rounds; goal >= 500 runs/s on SQLite)');

// Fan-out: one COMPUTE -> 4 parallel ACTIONs (receiver answers after 20 ms) -> JOIN ALL -> END, beside
// the same graph with one branch (the ceiling). Branches overlap, so the ratio should stay <= 1.5x.
const FANOUT_ROUNDS = Number(process.env.BENCH_FANOUT_ROUNDS ?? 30);
if (FANOUT_ROUNDS > 0) {
  console.log(
    `\nfan-out: ${FANOUT_ROUNDS} runs of each graph, one at a time, receiver answering after ${RECEIVER_DELAY_MS} ms`,
  );
  console.log(
    'store               1 branch: run wall     4 branches: run wall   4 / 1    publish->seen 1 / 4',
  );
  for (const r of results) {
    const store = r.name === 'sqlite' ? await sqliteStore() : await pgStore();
    const ctx = await context(store.url, { SVC_ALLOW_PRIVATE_NETWORKS: 'true' });
    printFanOut(r.name, await measureFanOut(ctx, FANOUT_ROUNDS));
    await ctx.store.close();
    await store.drop();
  }
  console.log(
    '(medians, min-max in brackets; run wall = its persisted started_at -> completed_at; goal 4 / 1 <= 1.5x)',
  );
}

// n8n, the same graph on the same machine (optional).
if (!N8N_BIN) {
  console.log(
    '\nn8n comparison skipped: set BENCH_N8N_BIN to an n8n binary (see docs/workflows.md, Throughput)',
  );
} else {
  console.log(`\nsvc live and n8n: ${EVENTS} events per round, ${ROUNDS} rounds\n`);
  const live = await measureLive(sqliteStore);
  const n8n: N8nResult = await measureN8n(N8N_BIN, {
    events: EVENTS,
    rounds: ROUNDS,
    warmup: Number(process.env.BENCH_N8N_WARMUP ?? 200),
    concurrency: Number(process.env.BENCH_N8N_CONCURRENCY ?? 16),
  });
  const sqlite = results.find((r) => r.name === 'sqlite');
  console.log(`\nn8n ${n8n.version}, settings:`);
  for (const [k, v] of Object.entries(n8n.settings)) console.log(`  ${k}=${v}`);
  console.log('\nengine                                        completed/s    svc / n8n');
  const row = (name: string, rate: number, ratio = true) =>
    console.log(
      `${name.padEnd(44)}${rate.toFixed(0).padStart(12)}${ratio ? `${(rate / n8n.executionsPerSecond).toFixed(1)}x`.padStart(13) : ''}`,
    );
  if (sqlite) row('svc SQLite, backlog (runs/s)', sqlite.runs);
  row('svc SQLite, live: 1 event per transaction', live);
  for (const r of results.filter((r) => r.name !== 'sqlite')) row(`svc ${r.name}, backlog (runs/s)`, r.runs);
  row('n8n SQLite, webhook (executions/s)', n8n.executionsPerSecond, false);
  console.log(
    `\n(n8n: first request to last execution saved, ${process.env.BENCH_N8N_CONCURRENCY ?? 16} requests in flight; requests answered at ${n8n.acceptedPerSecond.toFixed(0)}/s; goal svc >= 10x n8n)`,
  );
}
console.log(`load average at end: ${load()}`);
