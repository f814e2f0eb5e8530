/**
 * `npm run bench -- outbox`: events published and fully drained per second, and publish→handler
 * latency (p50/p99), on SQLite (a WAL file, as deployed) and on PostgreSQL.
 *
 * Each run publishes EVENTS events, PUBLISHERS transactions in flight (like concurrent requests), one
 * event per transaction, while the real drain (the outbox job of src/areas/events/outbox.ts, run by
 * the worker loop and woken after every commit) drains them. Throughput = events / time from the first publish until every task is DONE.
 * Latency = from the publishing transaction's commit to the handler's call.
 *
 * Ceiling, measured in the same run on the same store: the raw rate of the same single-row insert
 * transactions with the same concurrency and no drain. A drain can never finish faster than its
 * events can be written, so drained/ceiling is the ratio to watch.
 *
 * Two handler sets: `probe` (only the latency probe: the outbox machinery itself) and `app` (the
 * probe after every handler of the areas, services.eventHandlers: webhook dispatcher, workflow router;
 * no webhooks or subscriptions exist, so each only looks and finds nothing).
 *
 * Env: BENCH_EVENTS (default 5000), BENCH_RUNS (3), BENCH_PUBLISHERS (4), BENCH_PG_URL (default
 * postgres://postgres@127.0.0.1:5432/postgres; a fresh database is created and dropped; "off" skips).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import pino from 'pino';
import { Registry } from 'prom-client';
import { createContext } from '../../src/app/runtime.js';
import type { AppContext } from '../../src/app/types.js';
import type { EventHandler } from '../../src/areas/events/handlers.js';
import { createOutboxMetrics } from '../../src/areas/events/metrics.js';
import { createOutboxJob } from '../../src/areas/events/outbox.js';
import { createOutboxSignal } from '../../src/areas/events/signal.js';
import { loadConfig } from '../../src/config/config.js';
import { iso, systemClock } from '../../src/lib/clock.js';
import { newId } from '../../src/lib/ids.js';
import { Worker } from '../../src/worker/worker.js';
import { createPostgresDatabase } from '../../test/helpers/database.js';
import { median } from '../lib/load.js';

const EVENTS = Number(process.env.BENCH_EVENTS ?? 5_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const PUBLISHERS = Number(process.env.BENCH_PUBLISHERS ?? 4);
const PG_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

interface Store {
  name: string;
  url: string;
  drop(): Promise<void>;
}

function sqliteStore(): Store {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-outbox-'));
  return {
    name: 'sqlite',
    url: `sqlite:${dir}/svc.db`,
    drop: async () => rmSync(dir, { recursive: true, force: true }),
  };
}

async function postgresStore(): Promise<Store | undefined> {
  if (PG_URL === 'off') return undefined;
  try {
    return { name: 'postgres', ...(await createPostgresDatabase(PG_URL, 'svc_bench')) };
  } catch (err) {
    console.log(`postgres: skipped (${(err as Error).message})`);
    return undefined;
  }
}

async function context(url: string, dataDir: string): Promise<AppContext> {
  const config = loadConfig({
    // Production settings: the registry check in publish is a development aid (docs/events.md).
    NODE_ENV: 'production',
    SVC_DATABASE_URL: url,
    SVC_JWT_SECRET: 'bench-jwt-secret-that-is-long-enough-0123456789',
    SVC_VAULT_ENCRYPTION_KEY: 'bench-vault-key',
    SVC_WORKER: 'off',
    SVC_DATA_DIR: dataDir,
  });
  return createContext(config, { log: pino({ level: 'silent' }) });
}

/** Runs `count` tasks, `concurrency` at a time. */
async function inFlight(count: number, concurrency: number, task: (i: number) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) await task(next++);
    }),
  );
}

const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];

/** The ceiling: the same rows, the same transactions, the same concurrency, nobody draining. */
async function rawInsertRate(ctx: AppContext): Promise<number> {
  const now = iso(systemClock.now());
  const started = performance.now();
  await inFlight(EVENTS, PUBLISHERS, async () => {
    const id = newId();
    const event = {
      specversion: '1.0',
      id,
      source: '/api/v1/user',
      type: 'svc.user.created',
      subject: id,
      time: now,
      datacontenttype: 'application/json',
      data: { user_id: id, email: 'bench@example.test' },
    };
    await ctx.store.transaction((tx) =>
      tx.db
        .insertInto('event_delivery_task')
        .values({
          id: newId(),
          event_id: id,
          event_type: event.type,
          cloudevent: JSON.stringify(event),
          target: 'bench-ceiling',
          status: 'DONE',
          error: null,
          attempts: 0,
          max_attempts: 3,
          interruptions: 0,
          next_attempt_at: now,
          locked_until: null,
          locked_by: null,
          done_at: now,
          created_at: now,
          updated_at: now,
        })
        .execute(),
    );
  });
  return EVENTS / ((performance.now() - started) / 1000);
}

async function drainRun(ctx: AppContext, withAppHandlers: boolean) {
  const committed = new Map<string, number>();
  const handledAt = new Map<string, number>();
  let handled = 0;
  let allHandled!: () => void;
  const done = new Promise<void>((resolve) => {
    allHandled = resolve;
  });
  const probe: EventHandler = {
    name: 'probe',
    async handle(events) {
      const now = performance.now();
      for (const event of events) {
        // First delivery only (a retry would be a second); other events (none here) are ignored.
        if (!event.data.email?.toString().startsWith('bench-') || handledAt.has(event.id)) continue;
        handledAt.set(event.id, now);
        if (++handled === EVENTS) allHandled();
      }
    },
  };
  const { store, clock, log, services, config } = ctx;
  const drain = createOutboxJob(
    {
      store,
      clock,
      log,
      wakeups: services.wakeups,
      handlers: withAppHandlers ? [...services.eventHandlers, probe] : [probe],
      signal: createOutboxSignal({ store, wakeups: services.wakeups, log, watchOtherProcesses: false }),
      metrics: createOutboxMetrics(new Registry(), store, clock),
    },
    { intervalMs: config.outboxDrainIntervalMs, leaseMs: config.outboxLeaseMs },
  );
  const worker = new Worker([drain], services.wakeups, log);
  worker.start();
  const started = performance.now();
  try {
    await inFlight(EVENTS, PUBLISHERS, async (i) => {
      const id = newId();
      await ctx.store.transaction(async (tx) => {
        const event = await ctx.services.events.publish(tx, {
          type: 'svc.user.created',
          source: '/api/v1/user',
          subject: id,
          data: { user_id: id, email: `bench-${i}@example.test` },
        });
        // Runs right after the commit, just after publish's own wake-up hook: that hook only signals the
        // drain loop, which resumes after this synchronous code, so the handler cannot run first.
        tx.afterCommit(() => committed.set(event.id, performance.now()));
      });
    });
    const published = performance.now();
    await done;
    // Fully drained: every task DONE (settled), not just handed to the handler.
    for (;;) {
      const open = await ctx.store.db
        .selectFrom('event_delivery_task')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('status', '!=', 'DONE')
        .executeTakeFirstOrThrow();
      if (Number(open.n) === 0) break;
      await new Promise((r) => setTimeout(r, 5));
    }
    const drained = performance.now();
    // A drain already in a step can pick a row up between COMMIT and the publisher resuming: then the
    // handler ran before the commit hook, and the latency is (at most) that gap, counted as 0.
    const latencies = [...handledAt]
      .map(([id, at]) => Math.max(0, at - committed.get(id)!))
      .sort((a, b) => a - b);
    return {
      publishedPerSec: EVENTS / ((published - started) / 1000),
      drainedPerSec: EVENTS / ((drained - started) / 1000),
      p50: pct(latencies, 0.5),
      p99: pct(latencies, 0.99),
    };
  } finally {
    await worker.stop();
  }
}

async function benchStore(store: Store) {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-bench-data-'));
  const ctx = await context(store.url, dataDir);
  try {
    const ceilings: number[] = [];
    const results: Record<string, Array<Awaited<ReturnType<typeof drainRun>>>> = { probe: [], app: [] };
    // Run 0 warms up (JIT, caches, the file's first pages) and is not counted.
    for (let run = 0; run <= RUNS; run++) {
      const ceilingRate = await rawInsertRate(ctx);
      const probe = await drainRun(ctx, false);
      const app = await drainRun(ctx, true);
      if (run === 0) continue;
      ceilings.push(ceilingRate);
      results.probe.push(probe);
      results.app.push(app);
    }
    const ceiling = median(ceilings);
    console.log(
      `\n${store.name}: ${EVENTS} events x ${RUNS} runs, ${PUBLISHERS} publishing transactions in flight`,
    );
    console.log(`  ceiling (raw single-row insert transactions): ${ceiling.toFixed(0)} rows/s`);
    for (const [name, runs] of Object.entries(results)) {
      const drained = median(runs.map((r) => r.drainedPerSec));
      console.log(
        `  ${name.padEnd(5)} handlers: drained ${drained.toFixed(0)} events/s (${((drained / ceiling) * 100).toFixed(0)}% of ceiling), ` +
          `published ${median(runs.map((r) => r.publishedPerSec)).toFixed(0)}/s, ` +
          `latency p50 ${median(runs.map((r) => r.p50)).toFixed(2)} ms, p99 ${median(runs.map((r) => r.p99)).toFixed(2)} ms`,
      );
    }
  } finally {
    await ctx.store.close();
    rmSync(dataDir, { recursive: true, force: true });
    await store.drop();
  }
}

if (process.env.BENCH_SQLITE !== 'off') await benchStore(sqliteStore());
const postgres = await postgresStore();
if (postgres) await benchStore(postgres);
