import { type Selectable, sql } from 'kysely';
import { batches, prepared } from '../../db/prepared.js';
import { type Db, updatedAny } from '../../db/store.js';
import { paginate, whereTimeRanges } from '../../http/list.js';
import type { CloudEvent } from './cloudevent.js';
import type { EventDeliveryTask, EventDeliveryTaskQuery } from './schemas.js';
import type { EventDeliveryTaskTable } from './tables.js';

/** SQL of the outbox: every statement the publisher, the drain and the task list run. */

export type TaskRow = Selectable<EventDeliveryTaskTable>;

const TABLE = 'event_delivery_task';

const insertTaskStatement = prepared((db, _dialect, row: TaskRow) => db.insertInto(TABLE).values(row));

/** Writes one new task; in a transaction on PostgreSQL, sent with its commit (`queue`). */
export async function insertTask(db: Db, row: TaskRow): Promise<void> {
  await insertTaskStatement.queue(db, row);
}

/**
 * Writes the tasks whose event id is new (one task per event id, a unique index); answers the event
 * ids written. A producer publishing the same event again writes nothing.
 */
export async function insertNewTasks(db: Db, rows: TaskRow[]): Promise<Set<string>> {
  const written = new Set<string>();
  for (const batch of batches(db, rows, 100)) {
    const out = await db
      .insertInto(TABLE)
      .values(batch)
      .onConflict((oc) => oc.column('event_id').doNothing())
      .returning('event_id')
      .execute();
    for (const r of out) written.add(r.event_id);
  }
  return written;
}

/** Events of a type written in [from, to], oldest first (replay). */
export async function eventsBetween(
  db: Db,
  eventType: string,
  from: string,
  to: string,
  limit: number,
): Promise<Array<{ cloudevent: string; created_at: string }>> {
  return db
    .selectFrom(TABLE)
    .select(['cloudevent', 'created_at'])
    .where('event_type', '=', eventType)
    .where('created_at', '>=', from)
    .where('created_at', '<=', to)
    .orderBy('created_at')
    .orderBy('event_id')
    .limit(limit)
    .execute();
}

/** The sources of the events with these ids that have a task (what a duplicate id came from). */
export async function sourcesOf(db: Db, eventIds: string[]): Promise<Map<string, string>> {
  if (eventIds.length === 0) return new Map();
  const rows = await db
    .selectFrom(TABLE)
    .select(['event_id', 'cloudevent'])
    .where('event_id', 'in', eventIds)
    .execute();
  return new Map(rows.map((r) => [r.event_id, (JSON.parse(r.cloudevent) as { source: string }).source]));
}

/**
 * Claims up to `limit` due PENDING tasks for `workerId` in one statement: IN_PROGRESS, attempts + 1
 * (an attempt counts when it starts, so a task that kills its worker still runs out of attempts),
 * leased until `leaseUntil`. Returned oldest first.
 */
const claimStatement = prepared(
  (db, dialect, now: string, leaseUntil: string, workerId: string, limit: number) => {
    const claimed = {
      status: 'IN_PROGRESS',
      attempts: sql<number>`attempts + 1`,
      locked_until: leaseUntil,
      locked_by: workerId,
      updated_at: now,
    } as const;
    if (dialect === 'postgres') {
      // Several workers claim at once: FOR UPDATE SKIP LOCKED hands each a disjoint batch without
      // waiting on the others' row locks. A CTE with FOR UPDATE is evaluated exactly once, which an
      // `IN (subquery LIMIT n)` is not guaranteed to be.
      return db
        .with('claimable', (qb) =>
          qb
            .selectFrom(TABLE)
            .select('id')
            .where('status', '=', 'PENDING')
            .where('next_attempt_at', '<=', now)
            .orderBy('next_attempt_at')
            .limit(limit)
            .forUpdate()
            .skipLocked(),
        )
        .updateTable(TABLE)
        .from('claimable')
        .set(claimed)
        .whereRef(`${TABLE}.id`, '=', 'claimable.id')
        .returningAll(TABLE);
    }
    // SQLite has one writer at a time: a single UPDATE statement is the whole claim transaction, so
    // two processes on one database file can never claim the same row. No row locks exist to skip.
    return db
      .updateTable(TABLE)
      .set(claimed)
      .where('id', 'in', (qb) =>
        qb
          .selectFrom(TABLE)
          .select('id')
          .where('status', '=', 'PENDING')
          .where('next_attempt_at', '<=', now)
          .orderBy('next_attempt_at')
          .limit(limit),
      )
      .returningAll();
  },
);

export async function claimTasks(
  db: Db,
  opts: { now: string; leaseUntil: string; workerId: string; limit: number },
): Promise<TaskRow[]> {
  const { rows } = await claimStatement.execute(db, opts.now, opts.leaseUntil, opts.workerId, opts.limit);
  return (rows as TaskRow[]).sort(
    (a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id),
  );
}

/** IN_PROGRESS tasks whose lease ran out: their worker died or stalled. */
export async function expiredLeases(db: Db, now: string, limit: number): Promise<TaskRow[]> {
  return db
    .selectFrom(TABLE)
    .selectAll()
    .where('status', '=', 'IN_PROGRESS')
    .where('locked_until', '<=', now)
    .orderBy('locked_until')
    .limit(limit)
    .execute();
}

/** Marks a worker's tasks DONE, in one statement. Fenced: a task re-claimed by another worker is left alone. */
const markDoneStatement = prepared((db, _dialect, ids: string[], workerId: string, now: string) =>
  db
    .updateTable(TABLE)
    .set({ status: 'DONE', done_at: now, locked_until: null, error: null, updated_at: now })
    .where('id', 'in', ids)
    .where('status', '=', 'IN_PROGRESS')
    .where('locked_by', '=', workerId),
);

export async function markDone(db: Db, ids: string[], workerId: string, now: string): Promise<void> {
  if (ids.length > 0) await markDoneStatement.execute(db, ids, workerId, now);
}

export interface FailureUpdate {
  id: string;
  status: 'PENDING' | 'FAILED';
  /** Unchanged when null (FAILED keeps the time of the attempt that was due). */
  next_attempt_at: string | null;
  error: string;
}

/**
 * Records a failed attempt. `fence` names the claim being settled: the worker that holds it, or (for
 * a lease found expired) the exact lease read, so two workers reaping the same task update it once.
 * Returns whether the row was updated.
 */
export async function markFailed(
  db: Db,
  update: FailureUpdate,
  fence: { workerId: string } | { lockedUntil: string; attempts: number },
  now: string,
): Promise<boolean> {
  let q = db
    .updateTable(TABLE)
    .set({
      status: update.status,
      error: update.error,
      locked_until: null,
      locked_by: null,
      updated_at: now,
      ...(update.next_attempt_at ? { next_attempt_at: update.next_attempt_at } : {}),
    })
    .where('id', '=', update.id)
    .where('status', '=', 'IN_PROGRESS');
  q =
    'workerId' in fence
      ? q.where('locked_by', '=', fence.workerId)
      : q.where('locked_until', '=', fence.lockedUntil).where('attempts', '=', fence.attempts);
  const result = await q.executeTakeFirst();
  return updatedAny(result);
}

/** The columns of a task made due again now, held by nobody (a hand-back, an interruption, a retry). */
const dueAgain = (now: string) =>
  ({
    status: 'PENDING',
    next_attempt_at: now,
    locked_until: null,
    locked_by: null,
    updated_at: now,
  }) as const;

/**
 * A task whose lease ran out (its worker crashed or stalled) goes back to PENDING, due at once, with
 * the attempt the claim counted given back and one more interruption. Fenced like the reaper's
 * markFailed: only the claim that expired is undone.
 */
export async function interrupt(db: Db, task: TaskRow, error: string, now: string): Promise<boolean> {
  const result = await db
    .updateTable(TABLE)
    .set({
      ...dueAgain(now),
      attempts: sql<number>`attempts - 1`,
      interruptions: sql<number>`interruptions + 1`,
      error,
    })
    .where('id', '=', task.id)
    .where('status', '=', 'IN_PROGRESS')
    .where('locked_until', '=', task.locked_until)
    .where('attempts', '=', task.attempts)
    .executeTakeFirst();
  return updatedAny(result);
}

/**
 * Hands tasks a worker holds back unattempted (written claimed by a drain that is stopping before it
 * stepped them): PENDING, due now, the attempt their claim counted given back. Fenced by the holder.
 */
export async function releaseTasks(db: Db, ids: string[], workerId: string, now: string): Promise<void> {
  if (ids.length === 0) return;
  await db
    .updateTable(TABLE)
    .set({ ...dueAgain(now), attempts: sql<number>`attempts - 1` })
    .where('id', 'in', ids)
    .where('status', '=', 'IN_PROGRESS')
    .where('locked_by', '=', workerId)
    .execute();
}

/** A FAILED task made PENDING again, due now, with its counts reset (POST /event_delivery_task/{id}/retry). */
export async function retryFailed(db: Db, id: string, now: string): Promise<boolean> {
  const result = await db
    .updateTable(TABLE)
    .set({ ...dueAgain(now), attempts: 0, interruptions: 0, error: null, done_at: null })
    .where('id', '=', id)
    .where('status', '=', 'FAILED')
    .executeTakeFirst();
  return updatedAny(result);
}

export async function findTask(db: Db, id: string): Promise<TaskRow | undefined> {
  return db.selectFrom(TABLE).selectAll().where('id', '=', id).executeTakeFirst();
}

/** Pushes the lease of a worker's in-flight tasks forward while its handlers run. */
export async function extendLeases(db: Db, ids: string[], workerId: string, until: string): Promise<void> {
  if (ids.length === 0) return;
  await db
    .updateTable(TABLE)
    .set({ locked_until: until })
    .where('id', 'in', ids)
    .where('status', '=', 'IN_PROGRESS')
    .where('locked_by', '=', workerId)
    .execute();
}

/** The earliest moment the drain has work: a PENDING task coming due, or a lease running out. */
export async function nextDueAt(db: Db): Promise<string | null> {
  const [pending, leased] = await Promise.all([
    db
      .selectFrom(TABLE)
      .select((eb) => eb.fn.min('next_attempt_at').as('at'))
      .where('status', '=', 'PENDING')
      .executeTakeFirst(),
    db
      .selectFrom(TABLE)
      .select((eb) => eb.fn.min('locked_until').as('at'))
      .where('status', '=', 'IN_PROGRESS')
      .executeTakeFirst(),
  ]);
  const times = [pending?.at, leased?.at].filter((t): t is string => typeof t === 'string');
  return times.length ? times.sort()[0] : null;
}

export async function listTasks(db: Db, query: EventDeliveryTaskQuery) {
  let base = db.selectFrom(TABLE);
  if (query.status) base = base.where('status', '=', query.status);
  if (query.target) base = base.where('target', '=', query.target);
  base = whereTimeRanges(base, query, ['created_at', 'next_attempt_at', 'done_at']);
  return paginate(base, query, toTask);
}

export function toTask(row: TaskRow): EventDeliveryTask {
  return {
    id: row.id,
    event_id: row.event_id,
    event_type: row.event_type,
    cloudevent: JSON.parse(row.cloudevent) as CloudEvent as unknown as Record<string, unknown>,
    target: row.target,
    status: row.status,
    error: row.error,
    attempts: Number(row.attempts),
    max_attempts: Number(row.max_attempts),
    interruptions: Number(row.interruptions),
    next_attempt_at: row.next_attempt_at,
    locked_until: row.locked_until,
    locked_by: row.locked_by,
    done_at: row.done_at,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** Tasks not yet settled (PENDING or IN_PROGRESS), and when the oldest of them was written. */
export async function backlog(db: Db): Promise<{ tasks: number; oldestCreatedAt: string | null }> {
  // One status at a time: each is read through its own partial index (migration 0018).
  let tasks = 0;
  let oldest: string | null = null;
  for (const status of ['PENDING', 'IN_PROGRESS'] as const) {
    const row = await db
      .selectFrom(TABLE)
      .select((eb) => [eb.fn.countAll<number | string>().as('tasks'), eb.fn.min('created_at').as('oldest')])
      .where('status', '=', status)
      .executeTakeFirst();
    tasks += Number(row?.tasks ?? 0);
    const first = (row?.oldest as string | null) ?? null;
    if (first !== null && (oldest === null || first < oldest)) oldest = first;
  }
  return { tasks, oldestCreatedAt: oldest };
}
