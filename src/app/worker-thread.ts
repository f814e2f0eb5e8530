import { availableParallelism } from 'node:os';
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker as Thread } from 'node:worker_threads';
import {
  AggregatorRegistry,
  type MetricObjectWithValues,
  type MetricValue,
  type Registry,
} from 'prom-client';
import type { Config, WorkerMode } from '../config/config.js';
import { sqliteFile } from '../db/store.js';
import type { AppContext } from './types.js';

/** What `svc serve` hands its worker thread: the configuration, development secrets included. */
export interface WorkerThreadData {
  config: Config;
  /** A SQLite file's write lock, shared with the API's connection (src/db/thread-lock.ts). */
  threadLock?: SharedArrayBuffer;
}

type Metrics = MetricObjectWithValues<MetricValue<string>>[];

/**
 * Where `svc serve` runs its worker: SVC_WORKER, with `auto` resolved. `auto` takes a worker thread
 * on a SQLite file when the machine has two cores or more: SQLite's work is done on svc's own
 * threads, so the worker's share moves to the second core (more executions/s and a lower p99, for
 * a second isolate's memory; docs/performance.md "A second core"). On PostgreSQL the
 * server's backends already use the second core and a thread measured slower, so `auto` keeps the
 * worker on the API's thread there, as on one core. An in-memory SQLite database is one connection's
 * own, which a thread could not see: its worker always stays on the API's thread.
 */
export function workerPlacement(
  config: Pick<Config, 'worker' | 'databaseUrl'>,
  cores = availableParallelism(),
): WorkerMode {
  const file = config.databaseUrl.startsWith('sqlite:') ? sqliteFile(config.databaseUrl) : undefined;
  if (file === null) return config.worker === 'off' ? 'off' : 'main';
  if (config.worker !== 'auto') return config.worker;
  return file !== undefined && cores >= 2 ? 'thread' : 'main';
}

/** Messages between the main thread and the worker thread. */
export type ThreadMessage =
  | { kind: 'wake'; name: string }
  | { kind: 'metrics'; id: number; metrics?: Metrics }
  | { kind: 'stop' }
  | { kind: 'ready' };

export interface WorkerThread {
  /** The thread's counters and histograms, to add to this process's /metrics. */
  metrics(): Promise<Metrics>;
  /** Lets the steps in flight finish, then ends the thread (and no longer restarts it). */
  stop(): Promise<void>;
}

// The thread's module, built (.js) or, from source (.ts, the test suite), loaded through tsx's hooks,
// which a thread does not inherit.
const ENTRY = new URL(`../cli/worker-thread${extname(fileURLToPath(import.meta.url))}`, import.meta.url);
const FROM_SOURCE = ENTRY.pathname.endsWith('.ts');
const RESTART_MIN_MS = 1_000;
const RESTART_MAX_MS = 30_000;
const METRICS_TIMEOUT_MS = 2_000;
/**
 * The worker thread's old generation, at most. Not for safety (the thread's live heap is far below
 * it) but for memory: V8 lets a heap grow up to 4x its live size between full collections
 * when its limit is 2 GiB or more (Node's default is 4 GiB on this machine), and at most 1.4x
 * at 512 MiB. Under load the thread's short-lived run state reaches the old generation, so with the
 * default the process peaked far higher; see docs/performance.md "Memory". svc now fixes the
 * growing factor for the whole process (SVC_HEAP_GROWING_PERCENT, src/app/heap.ts); the limit
 * keeps the thread's factor at 1.4 or less when SVC_HEAP_GROWING_PERCENT=0 gives V8 its choice.
 * Should the thread ever reach the limit it ends and is started again like any thread that died
 * (nothing is lost).
 */
const THREAD_HEAP_MB = 512;

/**
 * Runs the background worker in a worker thread (SVC_WORKER=thread): the API keeps the main thread
 * and the worker gets a core of its own, with its own store connection and services
 * (src/cli/worker-thread.ts). Every wake of the API's services (an event committed, a run to
 * resume) is forwarded to the thread. Should the thread die, it is started again after a pause
 * (1 s, doubling to 30 s): nothing is lost, the store holds every claim and lease.
 */
export function startWorkerThread(ctx: AppContext): WorkerThread {
  let thread: Thread | undefined;
  let stopping = false;
  let restartMs = RESTART_MIN_MS;
  let restartTimer: NodeJS.Timeout | undefined;
  let nextId = 0;
  const waiting = new Map<number, (metrics: Metrics) => void>();

  const start = () => {
    const entry = FROM_SOURCE
      ? `import('tsx/esm/api').then((tsx) => { tsx.register(); return import(${JSON.stringify(ENTRY.href)}); })`
      : ENTRY;
    const t = new Thread(entry, {
      eval: FROM_SOURCE,
      resourceLimits: { maxOldGenerationSizeMb: THREAD_HEAP_MB },
      workerData: { config: ctx.config, threadLock: ctx.store.threadLock?.buffer } satisfies WorkerThreadData,
    });
    thread = t;
    t.on('message', (message: ThreadMessage) => {
      if (message.kind === 'ready') restartMs = RESTART_MIN_MS;
      else if (message.kind === 'metrics') waiting.get(message.id)?.(message.metrics ?? []);
    });
    t.on('error', (err) => ctx.log.error({ err }, 'worker thread failed'));
    const id = t.threadId;
    t.on('exit', (code) => {
      if (thread === t) thread = undefined;
      ctx.store.threadLock?.releaseFor(id);
      for (const answer of waiting.values()) answer([]);
      waiting.clear();
      if (stopping) return;
      ctx.log.error({ code, restart_in_ms: restartMs }, 'worker thread ended; starting it again');
      restartTimer = setTimeout(start, restartMs);
      restartMs = Math.min(restartMs * 2, RESTART_MAX_MS);
    });
  };

  // A wake while no thread runs is dropped: a new thread's loops begin with a step anyway. One sent
  // before the thread listens waits in its port.
  ctx.services.wakeups.forward((name) => thread?.postMessage({ kind: 'wake', name } satisfies ThreadMessage));
  start();

  return {
    metrics() {
      const t = thread;
      if (!t) return Promise.resolve([]);
      const id = nextId++;
      return new Promise<Metrics>((resolve) => {
        const timer = setTimeout(() => answer([]), METRICS_TIMEOUT_MS);
        const answer = (metrics: Metrics) => {
          clearTimeout(timer);
          waiting.delete(id);
          resolve(metrics);
        };
        waiting.set(id, answer);
        t.postMessage({ kind: 'metrics', id } satisfies ThreadMessage);
      });
    },
    async stop() {
      stopping = true;
      clearTimeout(restartTimer);
      const t = thread;
      if (!t) return;
      const ended = new Promise<void>((resolve) => t.once('exit', () => resolve()));
      t.postMessage({ kind: 'stop' } satisfies ThreadMessage);
      await ended;
    },
  };
}

/**
 * This process's metrics with the worker thread's counters and histograms added: the pipeline's
 * series are counted where the work runs. Gauges (read from the store at each scrape) and Node's and
 * the process's own series come from the main thread alone, so nothing is counted twice.
 */
export async function withThreadMetrics(registry: Registry, thread: WorkerThread): Promise<Registry> {
  const [own, theirs] = await Promise.all([registry.getMetricsAsJSON(), thread.metrics()]);
  // prom-client declares `type` as a numeric enum; at run time it is the type's name.
  const events = theirs.filter(
    (m) =>
      ['counter', 'histogram'].includes(m.type as unknown as string) &&
      !m.name.startsWith('nodejs_') &&
      !m.name.startsWith('process_'),
  );
  return AggregatorRegistry.aggregate([own, events] as never);
}
