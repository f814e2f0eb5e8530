import { findActive, listActive, softDeleted, updateActive } from '../../db/audit.js';
import type { Db, Tx } from '../../db/store.js';
import type { ListResult, Page } from '../../http/list.js';
import type { ScheduleFireTable, ScheduleTable } from './tables.js';

/** SQL of schedules and their fires. */

export interface ScheduleFilters {
  enabled?: boolean;
  event_type?: string;
  search?: string;
}

export type SchedulePatch = Partial<Omit<ScheduleTable, 'id' | 'created_at' | 'deleted_at'>>;

export async function insertSchedule(db: Db, row: ScheduleTable): Promise<void> {
  await db.insertInto('schedule').values(row).execute();
}

export async function findSchedule(db: Db, id: string): Promise<ScheduleTable | undefined> {
  return findActive(db, 'schedule', id);
}

export function listSchedules(db: Db, page: Page, f: ScheduleFilters): Promise<ListResult<ScheduleTable>> {
  const filters = {
    equals: { enabled: f.enabled, event_type: f.event_type },
    search: { value: f.search, in: ['name'] },
  };
  return listActive(db, 'schedule', page, filters, (r) => r);
}

export async function updateSchedule(db: Db, id: string, patch: SchedulePatch): Promise<boolean> {
  return updateActive(db, 'schedule', id, patch);
}

export async function softDeleteSchedule(db: Db, id: string, at: string, by: string): Promise<boolean> {
  return updateActive(db, 'schedule', id, { ...softDeleted(at, by), next_fire_at: null });
}

/** Enabled schedules whose next fire time has come, earliest first. */
export async function dueSchedules(db: Db, now: string, limit: number): Promise<ScheduleTable[]> {
  return db
    .selectFrom('schedule')
    .selectAll()
    .where('enabled', '=', 1)
    .where('deleted_at', 'is', null)
    .where('next_fire_at', '<=', now)
    .orderBy('next_fire_at')
    .limit(limit)
    .execute();
}

/**
 * The schedule, if still due, held for this transaction; on PostgreSQL a schedule another worker
 * holds is skipped (it fires it), on SQLite the one writer serialises anyway.
 */
export async function lockDue(tx: Tx, id: string, now: string): Promise<ScheduleTable | undefined> {
  let q = tx.db
    .selectFrom('schedule')
    .selectAll()
    .where('id', '=', id)
    .where('enabled', '=', 1)
    .where('deleted_at', 'is', null)
    .where('next_fire_at', '<=', now);
  if (tx.dialect === 'postgres') q = q.forUpdate().skipLocked();
  return q.executeTakeFirst();
}

/** The earliest next fire time of any enabled schedule (the job's timer). */
export async function earliestFire(db: Db): Promise<string | null> {
  const row = await db
    .selectFrom('schedule')
    .select((eb) => eb.fn.min('next_fire_at').as('at'))
    .where('enabled', '=', 1)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  return (row?.at as string | null | undefined) ?? null;
}

/** Records a fire; false when this (schedule, fire time) fired already (another worker, a retry). */
export async function insertFire(db: Db, row: ScheduleFireTable): Promise<boolean> {
  const out = await db
    .insertInto('schedule_fire')
    .values(row)
    .onConflict((oc) => oc.columns(['schedule_id', 'fire_time']).doNothing())
    .returning('fire_time')
    .execute();
  return out.length > 0;
}
