import type { Logger } from 'pino';
import type { Store } from '../../db/store.js';
import { type Clock, iso } from '../../lib/clock.js';
import { DueTimer } from '../../worker/due-timer.js';
import { createLease } from '../../worker/lease.js';
import type { Wakeups } from '../../worker/wakeups.js';
import type { Job } from '../../worker/worker.js';
import { newWorkerId } from '../../worker/worker-id.js';
import type { CloudEvent } from './cloudevent.js';
import type { EventHandler } from './handlers.js';
import type { OutboxMetrics } from './metrics.js';
import { afterFailure, MAX_INTERRUPTIONS } from './retry.js';
import { OUTBOX_JOB, type OutboxSignal } from './signal.js';
import {
  claimTasks,
  expiredLeases,
  extendLeases,
  type FailureUpdate,
  interrupt,
  markDone,
  markFailed,
  nextDueAt,
  type TaskRow,
} from './store.js';

export interface OutboxOptions {
  /** Tasks claimed per step, handed to every handler together. */
  batchSize?: number;
  /** How long a claim is exclusive; renewed every third of it while handlers run. */
  leaseMs: number;
  intervalMs: number;
  /** One attempt's handlers may run this long before the attempt counts as failed. */
  handlerTimeoutMs?: number;
  /** Identifies this drain in `locked_by`; unique per job instance. */
  workerId?: string;
}

export interface OutboxDeps {
  store: Store;
  clock: Clock;
  log: Logger;
  wakeups: Wakeups;
  /** Every consumer of events, in call order; fixed at construction (src/app/services.ts). */
  handlers: readonly EventHandler[];
  signal: OutboxSignal;
  metrics: OutboxMetrics;
}

export type OutboxJob = Job & {
  readonly workerId: string;
  /** Starts LISTEN (PostgreSQL) so this process wakes when another one publishes. */
  start(): void;
  stop(): Promise<void>;
};

const MAX_ERROR_LENGTH = 2_000;
/** Never re-arm the due-timer closer than this: a due task another worker holds locked must not spin us. */
const MIN_TIMER_MS = 50;

/**
 * The outbox drain (SPEC Pipeline 2): claim a batch, hand each event to every handler, then settle
 * each task: DONE, or the retry rule of retry.ts (PENDING later, or FAILED). Leases that ran out
 * count as failed attempts. Run by the worker as the job `outbox`, woken after every publish.
 */
export function createOutboxJob(deps: OutboxDeps, options: OutboxOptions): OutboxJob {
  const { store, clock, log } = deps;
  const batchSize = options.batchSize ?? 100;
  const handlerTimeoutMs = options.handlerTimeoutMs ?? 5 * 60_000;
  const workerId = options.workerId ?? newWorkerId();
  const lease = createLease(clock, options.leaseMs);
  // Wakes the drain for the next retry or lease expiry (or the next housekeeping, which may find
  // one), so it happens on time rather than at the next interval.
  const dueTimer = new DueTimer(clock, () => deps.wakeups.wake(OUTBOX_JOB), {
    horizonMs: options.intervalMs,
    minDelayMs: MIN_TIMER_MS,
  });
  // Housekeeping (reaping expired leases, asking the store for the next due time) costs three queries.
  // Under a stream of publishes the drain steps hundreds of times a second, so housekeeping runs at
  // most every `housekeepingMs`; retries this drain schedules meanwhile are tracked in `knownDueAt`.
  const housekeepingMs = Math.min(1_000, options.leaseMs / 2);
  let housekeepingAt = 0;
  let knownDueAt: number | null = null;

  /**
   * Expired leases are interrupted attempts (the worker crashed or stalled, not the event's fault):
   * due again at once, the attempt given back. Past MAX_INTERRUPTIONS an interruption counts as a
   * failed attempt, settled by the same rule as a handler's failure.
   */
  async function reapExpiredLeases(now: Date): Promise<void> {
    const expired = await expiredLeases(store.db, iso(now), batchSize);
    for (const task of expired) {
      const what = `lease of ${task.locked_by ?? 'a worker'} expired during attempt ${task.attempts} (worker stopped or stalled)`;
      let reaped: boolean;
      let outcome: 'retry' | 'failed' = 'retry';
      if (Number(task.interruptions) < MAX_INTERRUPTIONS) {
        reaped = await store.write((db) =>
          interrupt(db, task, `${what}; retried, not counted as an attempt`, iso(now)),
        );
      } else {
        const update = failedAttempt(task, `${what}, after ${MAX_INTERRUPTIONS} interruptions`, now);
        if (update.status === 'FAILED') outcome = 'failed';
        const held = { lockedUntil: task.locked_until!, attempts: task.attempts };
        reaped = await store.write((db) => markFailed(db, update, held, iso(now)));
      }
      if (reaped) {
        deps.metrics.settled(outcome);
        log.warn({ task_id: task.id, event_id: task.event_id }, 'outbox: reclaimed an expired lease');
      }
    }
  }

  /**
   * Hands the batch to every handler in turn (a failing handler does not stop the others); resolves
   * to each task's error text, or null when every handler took its event.
   */
  async function deliver(tasks: TaskRow[]): Promise<Array<string | null>> {
    const errors = tasks.map((): string[] => []);
    const events: CloudEvent[] = [];
    const indexOf = new Map<string, number>();
    for (const [i, task] of tasks.entries()) {
      try {
        const event = JSON.parse(task.cloudevent) as CloudEvent;
        events.push(event);
        indexOf.set(event.id, i);
      } catch {
        errors[i].push('stored CloudEvent is not valid JSON');
      }
    }
    if (events.length > 0) {
      for (const handler of deps.handlers) {
        let failures: Awaited<ReturnType<EventHandler['handle']>>;
        try {
          failures = await withTimeout(handler.handle(events), handlerTimeoutMs, handler.name);
        } catch (err) {
          failures = new Map(events.map((e) => [e.id, err instanceof Error ? err : new Error(String(err))]));
        }
        for (const [eventId, err] of failures ?? []) {
          const i = indexOf.get(eventId);
          if (i === undefined) continue;
          errors[i].push(`${handler.name}: ${err.message}`);
          log.warn(
            {
              handler: handler.name,
              event_id: eventId,
              event_type: tasks[i].event_type,
              attempt: tasks[i].attempts,
              err,
            },
            'outbox: event handler failed',
          );
        }
      }
    }
    return errors.map((e) => (e.length ? e.join('; ').slice(0, MAX_ERROR_LENGTH) : null));
  }

  /** Settles a claimed batch; records when the retries it schedules come due. */
  async function settle(tasks: TaskRow[], results: Array<string | null>): Promise<void> {
    const now = clock.now();
    const doneIds = tasks.filter((_, i) => results[i] === null).map((t) => t.id);
    if (doneIds.length > 0) await store.write((db) => markDone(db, doneIds, workerId, iso(now)));
    deps.metrics.settled('done', doneIds.length);
    for (const [i, task] of tasks.entries()) {
      const error = results[i];
      if (error === null) continue;
      const update = failedAttempt(task, error, now);
      await store.write((db) => markFailed(db, update, { workerId }, iso(now)));
      deps.metrics.settled(update.status === 'FAILED' ? 'failed' : 'retry');
      if (update.next_attempt_at) knownDueAt = earliest(knownDueAt, Date.parse(update.next_attempt_at));
      if (update.status === 'FAILED') {
        log.error(
          { task_id: task.id, event_id: task.event_id, attempts: task.attempts },
          'outbox: task FAILED',
        );
      }
    }
  }

  return {
    name: OUTBOX_JOB,
    intervalMs: options.intervalMs,
    workerId,
    async run() {
      const now = clock.now();
      const nowMs = now.getTime();
      const housekeeping = nowMs >= housekeepingAt;
      if (housekeeping) await reapExpiredLeases(now);
      const tasks = await store.write((db) =>
        claimTasks(db, { now: iso(now), leaseUntil: lease.until(), workerId, limit: batchSize }),
      );
      if (tasks.length > 0) {
        const ids = tasks.map((t) => t.id);
        const stopHeartbeat = lease.heartbeat(
          (until) => store.write((db) => extendLeases(db, ids, workerId, until)),
          (err) => log.warn({ err }, 'outbox: lease renewal failed'),
        );
        try {
          const results = await deliver(tasks);
          await settle(tasks, results);
        } finally {
          stopHeartbeat();
        }
      }
      if (tasks.length === batchSize) return true;
      if (housekeeping) {
        const due = await nextDueAt(store.db);
        knownDueAt = due ? Date.parse(due) : null;
        housekeepingAt = nowMs + housekeepingMs;
        if (knownDueAt !== null) dueTimer.arm(knownDueAt);
      } else {
        // What was due by `now` was claimable in this step; look ahead only.
        if (knownDueAt !== null && knownDueAt <= nowMs) knownDueAt = null;
        dueTimer.arm(earliest(knownDueAt, housekeepingAt));
      }
      return false;
    },
    start() {
      deps.signal.listen();
    },
    async stop() {
      dueTimer.clear();
      await deps.signal.close();
    },
  };
}

/** A failed attempt of `task`, placed by the retry rule (retry.ts). */
function failedAttempt(task: TaskRow, error: string, now: Date): FailureUpdate {
  const next = afterFailure(task.attempts, task.max_attempts, now);
  return {
    id: task.id,
    status: next.status,
    next_attempt_at: next.status === 'PENDING' ? iso(next.next_attempt_at) : null,
    error,
  };
}

function earliest(a: number | null, b: number): number {
  return a === null ? b : Math.min(a, b);
}

function withTimeout<T>(promise: Promise<T>, ms: number, name: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${name} did not finish within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
