import { sql } from 'kysely';
import type { Logger } from 'pino';
import type { Store } from '../../db/store.js';
import { type Clock, iso } from '../../lib/clock.js';
import type { Job } from '../../worker/worker.js';
import { newWorkerId } from '../../worker/worker-id.js';
import { takeLease } from './lease-store.js';
import type { RetentionMetrics } from './metrics.js';
import type { PruneStep } from './rules.js';

export const PRUNE_JOB = 'prune';
/** Records per transaction: short enough that the pipeline's own writes never wait long behind one. */
export const PRUNE_BATCH = 200;
/** The pause between two batches, in which other writers take the store. */
const BETWEEN_BATCHES_MS = 2;
/** SQLite pages returned to the file system per statement. */
const VACUUM_STEP_PAGES = 1_000;

/** One kind of record retention removes, owned by its area (runs, deliveries, outbox tasks). */
export interface Pruner {
  /** The kind, as /metrics names it. */
  kind: string;
  /**
   * Starts a pass at `now`, reading the kind's rules once: answers its step, which removes up to
   * `limit` more records retention no longer keeps, with what belongs to them.
   */
  pass(now: Date): Promise<PruneStep>;
  /** When the oldest finished record of the kind still stored was created (null: none). */
  oldest(): Promise<string | null>;
}

export interface PruneJobDeps {
  store: Store;
  clock: Clock;
  log: Logger;
  pruners: readonly Pruner[];
  metrics: RetentionMetrics;
  intervalMs: number;
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The `prune` job (docs/reliability.md "Retention"): every interval, one worker (the holder of the
 * maintenance lease) removes what retention no longer keeps, kind by kind, in batches of short
 * transactions, then gives a SQLite file's surplus free pages back. A pass killed midway leaves only
 * whole batches done; the next pass, by any worker once the lease runs out, carries on. Each pass
 * logs one line with its counts.
 */
export function createPruneJob(deps: PruneJobDeps): Job {
  const { store, clock, log } = deps;
  const holder = newWorkerId();
  // Long enough to outlast a busy pass between renewals; short enough that a dead holder is replaced soon.
  const leaseMs = Math.max(3 * deps.intervalMs, 1_000);
  const lease = (ms: number) => {
    const now = clock.now();
    return takeLease(store, PRUNE_JOB, holder, iso(now), iso(new Date(now.getTime() + ms)));
  };

  async function prunePass(): Promise<Record<string, number>> {
    const removed: Record<string, number> = {};
    for (const pruner of deps.pruners) {
      const step = await pruner.pass(clock.now());
      for (;;) {
        // Renewed every batch: while this pass runs, nobody else starts one.
        if (!(await lease(leaseMs))) return removed;
        const batch = await step(PRUNE_BATCH);
        for (const [table, rows] of Object.entries(batch.rows)) {
          removed[table] = (removed[table] ?? 0) + rows;
          deps.metrics.removed(table, rows);
        }
        if (batch.records < PRUNE_BATCH) break;
        await pause(BETWEEN_BATCHES_MS);
      }
    }
    return removed;
  }

  return {
    name: PRUNE_JOB,
    intervalMs: deps.intervalMs,
    async run() {
      if (!(await lease(leaseMs))) return false;
      const started = Date.now();
      const removed = await prunePass();
      const pruned = Date.now();
      const freedPages = store.dialect === 'sqlite' ? await returnFreePages(store) : 0;
      // Held until the next pass is due, so other workers' timers do not start one in between.
      await lease(deps.intervalMs);
      log.info(
        { removed, ms: pruned - started, freed_pages: freedPages, vacuum_ms: Date.now() - pruned },
        'prune pass',
      );
      return false;
    },
  };
}

/**
 * On a SQLite file in incremental auto-vacuum (every file svc creates; `svc vacuum` converts older
 * ones), gives back the free pages beyond a quarter of the file: freed pages are reused by new rows
 * anyway, so the file stays level at steady state, and shrinks after a burst is removed.
 */
async function returnFreePages(store: Store): Promise<number> {
  const mode = await sql<{ auto_vacuum: number }>`pragma auto_vacuum`.execute(store.db);
  if (mode.rows[0]?.auto_vacuum !== 2) return 0;
  let freed = 0;
  let lastFree = Number.POSITIVE_INFINITY;
  for (;;) {
    const pages = (await sql<{ page_count: number }>`pragma page_count`.execute(store.db)).rows[0].page_count;
    const free = (await sql<{ freelist_count: number }>`pragma freelist_count`.execute(store.db)).rows[0]
      .freelist_count;
    const surplus = free - Math.floor(pages / 4);
    // Nothing more to give back, or the last step gave nothing (never loop on a pragma that does nothing).
    if (surplus <= 0 || (freed > 0 && free >= lastFree)) return freed;
    lastFree = free;
    const step = Math.min(surplus, VACUUM_STEP_PAGES);
    await store.write((db) => sql`pragma incremental_vacuum(${sql.raw(String(step))})`.execute(db));
    freed += step;
    await pause(BETWEEN_BATCHES_MS);
  }
}
