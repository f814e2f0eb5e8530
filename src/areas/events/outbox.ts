import type { Logger } from 'pino';
import type { Store } from '../../db/store.js';
import { type Clock, iso } from '../../lib/clock.js';
import { ClaimGate } from '../../worker/claim-gate.js';
import { DueTimer } from '../../worker/due-timer.js';
import { createLease } from '../../worker/lease.js';
import { interruptionIsFree } from '../../worker/retry-policy.js';
import type { Wakeups } from '../../worker/wakeups.js';
import type { Job } from '../../worker/worker.js';
import { newWorkerId } from '../../worker/worker-id.js';
import type { CloudEvent } from './cloudevent.js';
import type { EventHandler } from './handlers.js';
import type { OutboxMetrics } from './metrics.js';
import { afterFailure, OUTBOX_RETRY } from './retry.js';
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
  releaseTasks,
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

/** The lease of a task written already claimed by this process's drain (`OutboxJob.claim`). */
export interface HeldTask {
  locked_by: string;
  locked_until: string;
}

export type OutboxJob = Job & {
  readonly workerId: string;
  /**
   * The lease for a task about to be written, so that it is born claimed by this drain: null when
   * the drain does not run in this process (SVC_WORKER=off, or in the worker thread) or already
   * holds MAX_LOCAL_TASKS in memory. The task is then written due and claimed from the store.
   */
  claim(): HeldTask | null;
  /** Tasks written with `claim()`'s lease, once committed: stepped from memory, never claimed again. */
  started(rows: readonly TaskRow[]): void;
  /** Starts LISTEN (PostgreSQL) so this process wakes when another one publishes. */
  start(): void;
  stop(): Promise<void>;
};

const MAX_ERROR_LENGTH = 2_000;
/** Never re-arm the due-timer closer than this: a due task another worker holds locked must not spin us. */
const MIN_TIMER_MS = 50;
/** Past this many tasks waiting in memory, new tasks are written due (claimed from the store). */
const MAX_LOCAL_TASKS = 10_000;

/**
 * The outbox drain (docs/events.md "The outbox drain"): claim a batch, hand each event to every handler, then settle
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
  // Tasks this process wrote already claimed by this drain (docs/events.md "Tasks born claimed"),
  // waiting for the next step. The store holds each one, leased to `workerId`.
  let running = false;
  const local: Array<{ row: TaskRow; leaseUntil: number }> = [];
  // Housekeeping's cadence doubles as the poll of the store while tasks flow through memory.
  const claims = new ClaimGate(deps.wakeups, OUTBOX_JOB, housekeepingMs);

  /**
   * Expired leases are interrupted attempts (the worker crashed or stalled, not the event's fault):
   * due again at once, the attempt given back. Past the policy's interruptions one counts as a
   * failed attempt, settled by the same rule as a handler's failure.
   */
  async function reapExpiredLeases(now: Date): Promise<void> {
    const expired = await expiredLeases(store.db, iso(now), batchSize);
    for (const task of expired) {
      const what = `lease of ${task.locked_by ?? 'a worker'} expired during attempt ${task.attempts} (worker stopped or stalled)`;
      let reaped: boolean;
      let outcome: 'retry' | 'failed' = 'retry';
      if (interruptionIsFree(OUTBOX_RETRY, Number(task.interruptions))) {
        reaped = await store.write((db) =>
          interrupt(db, task, `${what}; retried, not counted as an attempt`, iso(now)),
        );
      } else {
        const update = failedAttempt(
          task,
          `${what}, after ${OUTBOX_RETRY.maxInterruptions} interruptions`,
          now,
        );
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

  async function release(ids: string[]): Promise<void> {
    try {
      await store.write((db) => releaseTasks(db, ids, workerId, iso(clock.now())));
    } catch (err) {
      // Their lease runs out instead, and the reaper hands them back.
      log.warn({ err, tasks: ids.length }, 'outbox: handing back unstarted tasks failed');
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
      if (housekeeping) {
        // Set first: a step that returns early (more is waiting) must not make the next one housekeep too.
        housekeepingAt = nowMs + housekeepingMs;
        await reapExpiredLeases(now);
      }
      // The store is asked when it may hold due tasks this drain was not handed (a wake: an event
      // written due, another process's NOTIFY or commit, the due-timer; a retry of this drain's come
      // due; housekeeping; nothing in memory). Tasks born claimed need no claim.
      // A task waiting in memory is this drain's until its lease runs out; with less than half of it
      // left it is not started from memory (it may not be ours by the time it settles): it is handed
      // back at once, due now, its attempt given back, and claimed again like any due task.
      const isLate = (t: (typeof local)[number]) => t.leaseUntil - nowMs <= lease.ms / 2;
      // In arrival order, so the oldest is first: none is late unless it is.
      const late = local.length > 0 && isLate(local[0]) ? local.filter(isLate) : [];
      if (late.length > 0) {
        const ids = new Set(late.map((t) => t.row.id));
        local.splice(0, local.length, ...local.filter((t) => !ids.has(t.row.id)));
        await release([...ids]);
      }
      const retryDue = knownDueAt !== null && knownDueAt <= nowMs;
      const askStore = claims.shouldAsk(
        nowMs,
        housekeeping || retryDue || local.length === 0 || late.length > 0,
      );
      const mine = local.splice(0, askStore ? Math.ceil(batchSize / 2) : batchSize).map((t) => t.row);
      let tasks = mine;
      if (askStore) {
        const limit = batchSize - mine.length;
        const claimed = await store.write((db) =>
          claimTasks(db, { now: iso(now), leaseUntil: lease.until(), workerId, limit }),
        );
        claims.claimed(claimed.length, limit);
        if (claimed.length > 0) tasks = mine.length > 0 ? [...claimed, ...mine] : claimed;
      }
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
      if (claims.more || local.length > 0) return true;
      if (housekeeping) {
        const due = await nextDueAt(store.db);
        knownDueAt = due ? Date.parse(due) : null;
        if (knownDueAt !== null) dueTimer.arm(knownDueAt);
      } else {
        // What was due by `now` was claimable in this step; look ahead only.
        if (knownDueAt !== null && knownDueAt <= nowMs) knownDueAt = null;
        dueTimer.arm(earliest(knownDueAt, housekeepingAt));
      }
      return false;
    },
    claim() {
      if (!running || local.length >= MAX_LOCAL_TASKS) return null;
      return { locked_by: workerId, locked_until: lease.until() };
    },
    started(rows) {
      if (!running) {
        // Committed after this drain stopped: hand them back at once rather than at lease expiry.
        void release(rows.map((r) => r.id));
        return;
      }
      for (const row of rows) local.push({ row, leaseUntil: Date.parse(row.locked_until!) });
      deps.wakeups.nudge(OUTBOX_JOB);
    },
    start() {
      running = true;
      deps.signal.listen();
    },
    async stop() {
      running = false;
      dueTimer.clear();
      // The loop has ended: tasks still waiting in memory go back to the store, due now.
      await release(local.splice(0).map((t) => t.row.id));
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
