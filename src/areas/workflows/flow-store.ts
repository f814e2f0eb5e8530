import { sql } from 'kysely';
import { takeLocks } from '../../db/locks.js';
import { dialectOf } from '../../db/prepared.js';
import { type Db, updatedAny } from '../../db/store.js';
import { newId } from '../../lib/ids.js';
import type { PendingReason } from './flow-control.js';
import type { WorkflowRunTable } from './tables.js';

/**
 * SQL of flow control (docs/workflows.md "Flow control"): the queues of waiting runs (migration 0019's
 * `workflow_run_queue`: one indexed read finds a queue's head however long it is), the running runs a
 * concurrency limit counts, the windows throttles and rate limits count, and the per-key locks that
 * make each decision against them one at a time across processes.
 *
 * The terms a partial index of migration 0019 is defined by (status, reason) are written as literals:
 * SQLite uses a partial index only for a query whose WHERE names the values of its predicate.
 */

/** The lock name of one key of one part of a subscription. */
export const lockName = (subscriptionId: string, part: string, key: string) =>
  JSON.stringify(['flow', subscriptionId, part, key]);

/** The first waiting run of a queue in start order (priority, then arrival). */
export async function queueHead(
  db: Db,
  subscriptionId: string,
  reason: PendingReason,
  key: string,
): Promise<Pick<WorkflowRunTable, 'id' | 'wake_at'> | undefined> {
  const q = db
    .selectFrom('workflow_run')
    .select(['id', 'wake_at'])
    .where('event_subscription_id', '=', subscriptionId)
    .where('status', '=', sql.lit('pending'))
    .where('pending_reason', '=', reason)
    .where('flow_key', '=', key);
  return q.orderBy('priority', 'desc').orderBy('created_at').orderBy('id').limit(1).executeTakeFirst();
}

/**
 * Wakes a queue's head when nothing of the queue is due: it is claimed and asked again whether it
 * may start. Answers whether it woke one.
 */
export async function wakeHead(
  db: Db,
  subscriptionId: string,
  reason: PendingReason,
  key: string,
  at: string,
): Promise<boolean> {
  const head = await queueHead(db, subscriptionId, reason, key);
  if (head === undefined || head.wake_at !== null) return false;
  const res = await db
    .updateTable('workflow_run')
    .set({ wake_at: at })
    .where('id', '=', head.id)
    .where('status', '=', 'pending')
    .where('wake_at', 'is', null)
    .executeTakeFirst();
  return updatedAny(res);
}

/** Records window entries (a start, an admission). */
export async function recordWindow(
  db: Db,
  entries: Array<{ subscriptionId: string; part: 'throttle' | 'rate_limit'; key: string; at: string }>,
): Promise<void> {
  if (entries.length === 0) return;
  await db
    .insertInto('flow_window')
    .values(
      entries.map((e) => ({
        id: newId(),
        subscription_id: e.subscriptionId,
        part: e.part,
        key: e.key,
        at: e.at,
      })),
    )
    .execute();
}

/** Window entries older than `before` (no period is longer than a day): the prune job's. */
export async function pruneWindows(db: Db, before: string, limit: number): Promise<number> {
  const res = await db
    .deleteFrom('flow_window')
    .where('id', 'in', (eb) =>
      eb.selectFrom('flow_window').select('id').where('at', '<', before).orderBy('at').limit(limit),
    )
    .executeTakeFirst();
  return Number(res.numDeletedRows);
}

/** When the oldest window entry was made (null: none). */
export async function oldestWindow(db: Db): Promise<string | null> {
  const row = await db.selectFrom('flow_window').select('at').orderBy('at').limit(1).executeTakeFirst();
  return row?.at ?? null;
}

/** The open debounce run of a key: pending, folding events in, not being started. */
export async function openDebounce(
  db: Db,
  subscriptionId: string,
  key: string,
): Promise<Pick<WorkflowRunTable, 'id' | 'event_id' | 'flow_deadline' | 'debounced_events'> | undefined> {
  return db
    .selectFrom('workflow_run')
    .select(['id', 'event_id', 'flow_deadline', 'debounced_events'])
    .where('event_subscription_id', '=', subscriptionId)
    .where('status', '=', sql.lit('pending'))
    .where('pending_reason', '=', sql.lit('debounce'))
    .where('flow_key', '=', key)
    .where('locked_by', 'is', null)
    .executeTakeFirst();
}

/** Folds an event into an open debounce run: it becomes the trigger, and the wait starts again. */
export async function fold(
  db: Db,
  id: string,
  change: Pick<
    WorkflowRunTable,
    'event_id' | 'event_type' | 'trigger_event' | 'causation_depth' | 'wake_at' | 'priority' | 'updated_at'
  >,
): Promise<boolean> {
  const res = await db
    .updateTable('workflow_run')
    .set((eb) => ({ ...change, debounced_events: eb('debounced_events', '+', 1) }))
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .where('locked_by', 'is', null)
    .executeTakeFirst();
  return updatedAny(res);
}

/** A claimed waiting run starts: running under `concurrencyKey`, held by the worker that claimed it. */
export async function startWaiting(
  db: Db,
  id: string,
  workerId: string,
  at: string,
  leaseUntil: string,
  concurrencyKey: string | null,
): Promise<WorkflowRunTable | undefined> {
  return db
    .updateTable('workflow_run')
    .set({
      status: 'running',
      started_at: at,
      pending_reason: null,
      flow_key: null,
      flow_deadline: null,
      concurrency_key: concurrencyKey,
      wake_at: leaseUntil,
      updated_at: at,
    })
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .where('locked_by', '=', workerId)
    .returningAll()
    .executeTakeFirst();
}

/** A claimed waiting run waits again, in the queue of `reason` and `key`, due at `wakeAt` (null: when woken). */
export async function waitAgain(
  db: Db,
  id: string,
  workerId: string,
  at: string,
  wait: { reason: PendingReason; key: string; wakeAt: string | null },
): Promise<boolean> {
  const res = await db
    .updateTable('workflow_run')
    .set({
      pending_reason: wait.reason,
      flow_key: wait.key,
      wake_at: wait.wakeAt,
      locked_by: null,
      updated_at: at,
    })
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .where('locked_by', '=', workerId)
    .executeTakeFirst();
  return updatedAny(res);
}

/**
 * A claimed waiting run that cannot start (its flow key fails under the flow control in force now):
 * `skipped` with the reason, its nodes skipped, as a cancel leaves them.
 */
export async function skipWaiting(db: Db, id: string, workerId: string, at: string, reason: string) {
  const res = await db
    .updateTable('workflow_run')
    .set({
      status: 'skipped',
      error: reason,
      completed_at: at,
      pending_reason: null,
      flow_key: null,
      wake_at: null,
      locked_by: null,
      updated_at: at,
    })
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .where('locked_by', '=', workerId)
    .executeTakeFirst();
  if (!updatedAny(res)) return;
  await db
    .updateTable('workflow_run_node')
    .set({
      status: 'skipped',
      skip_reason: JSON.stringify({ message: reason, edges: [] }),
      completed_at: at,
      updated_at: at,
    })
    .where('workflow_run_id', '=', id)
    .where('status', '=', 'pending')
    .execute();
}

/**
 * Runs ended under concurrency keys (a finish, a failure, a cancel): each key's queue head is woken
 * to take the room, under the key's lock so a decision in flight sees the end or is seen by it.
 * Answers whether any head was woken.
 */
export async function releaseConcurrency(
  db: Db,
  ended: ReadonlyArray<{ subscriptionId: string; key: string }>,
  at: string,
): Promise<boolean> {
  if (ended.length === 0) return false;
  const unique = new Map(ended.map((e) => [lockName(e.subscriptionId, 'concurrency', e.key), e]));
  await takeLocks(db, unique.keys());
  // Most ends leave no queue behind: one read per subscription finds the keys that have one.
  const keysBySub = new Map<string, Set<string>>();
  for (const e of unique.values()) {
    const keys = keysBySub.get(e.subscriptionId) ?? new Set<string>();
    keys.add(e.key);
    keysBySub.set(e.subscriptionId, keys);
  }
  let woke = false;
  for (const [subscriptionId, keys] of keysBySub) {
    for (const key of await queuedKeys(db, subscriptionId, 'concurrency', [...keys]))
      if (await wakeHead(db, subscriptionId, 'concurrency', key, at)) woke = true;
  }
  return woke;
}

/** Runs of the subscription running under each of these concurrency keys (absent: none). */
export async function runningUnderKeys(db: Db, subscriptionId: string, keys: readonly string[]) {
  const out = new Map<string, number>();
  if (keys.length === 0) return out;
  const rows = await db
    .selectFrom('workflow_run')
    .select((eb) => ['concurrency_key', eb.fn.countAll<number>().as('n')])
    .where('event_subscription_id', '=', subscriptionId)
    .where('status', '=', sql.lit('running'))
    .where('concurrency_key', 'in', [...keys])
    .groupBy('concurrency_key')
    .execute();
  for (const r of rows) out.set(r.concurrency_key as string, Number(r.n));
  return out;
}

/**
 * Which of these keys' queues of `reason` have waiting runs: one probe of the queue's index per key
 * (its first entry), never a read of the queue itself, so the answer costs the same with 10 runs
 * waiting or 100,000 (a DISTINCT over the keys read every entry of a long queue).
 */
export async function queuedKeys(
  db: Db,
  subscriptionId: string,
  reason: PendingReason,
  keys: readonly string[],
): Promise<Set<string>> {
  if (keys.length === 0) return new Set();
  const unique = [...new Set(keys)];
  let rows: Array<{ key: string }>;
  if (dialectOf(db) === 'postgres') {
    // A lateral probe with LIMIT 1, whatever the statistics say: on a queue grown since its last
    // ANALYZE, `exists` was planned as a semi-join that read the whole queue.
    const found = await sql<{ key: string }>`select k.key from unnest(${unique}::text[]) as k(key)
      cross join lateral (select 1 from workflow_run where event_subscription_id = ${subscriptionId}
        and status = 'pending' and pending_reason = ${reason} and flow_key = k.key limit 1) as q`.execute(db);
    rows = found.rows;
  } else {
    // SQLite runs a correlated `exists` as one probe per row.
    const given = sql.join(unique.map((k) => sql`(${k})`));
    const found = await sql<{ key: string }>`select k.column1 as key from (values ${given}) as k
      where exists (select 1 from workflow_run where event_subscription_id = ${subscriptionId}
        and status = 'pending' and pending_reason = ${reason} and flow_key = k.column1)`.execute(db);
    rows = found.rows;
  }
  return new Set(rows.map((r) => r.key));
}

/** Instants of each key's window entries after `since`, oldest first. */
export async function windowsSince(
  db: Db,
  subscriptionId: string,
  part: 'throttle' | 'rate_limit',
  keys: readonly string[],
  since: string,
): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>(keys.map((k) => [k, []]));
  if (keys.length === 0) return out;
  const rows = await db
    .selectFrom('flow_window')
    .select(['key', 'at'])
    .where('subscription_id', '=', subscriptionId)
    .where('part', '=', part)
    .where('key', 'in', [...keys])
    .where('at', '>', since)
    .orderBy('key')
    .orderBy('at')
    .execute();
  for (const r of rows) out.get(r.key)?.push(r.at);
  return out;
}

/** Waiting runs per subscription and reason (the metrics' read, off the queue's partial index). */
export async function waitingRuns(db: Db) {
  const rows = await db
    .selectFrom('workflow_run')
    .select((eb) => ['event_subscription_id', 'pending_reason', eb.fn.countAll<number>().as('n')])
    .where('status', '=', sql.lit('pending'))
    .where('pending_reason', 'is not', null)
    .groupBy(['event_subscription_id', 'pending_reason'])
    .execute();
  return rows.map((r) => ({
    subscriptionId: r.event_subscription_id,
    reason: r.pending_reason as PendingReason,
    count: Number(r.n),
  }));
}
