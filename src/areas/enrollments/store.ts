import type { Static } from '@sinclair/typebox';
import { type Expression, type SqlBool, sql } from 'kysely';
import { type Db, type Tx, updatedAny } from '../../db/store.js';
import type { Page } from '../../http/list.js';
import { paginate, whereEquals, whereTimeRanges } from '../../http/list.js';
import type { TimeRangeFilters } from '../../http/list-schemas.js';
import type { Enrollment as EnrollmentSchema } from './schemas.js';
import type { EnrollmentTable } from './tables.js';
import type { EnrollmentStatus } from './transitions.js';

/** A connection or a transaction: reads run on either. */

/** An enrollment as the API shows it. */
export type Enrollment = Static<typeof EnrollmentSchema>;

const parseJson = (v: string | null) => (v === null ? null : (JSON.parse(v) as Record<string, unknown>));
export const jsonText = (v: Record<string, unknown> | null | undefined) =>
  v === null || v === undefined ? null : JSON.stringify(v);

function toEnrollment(row: EnrollmentTable, questionnaireIds: string[]): Enrollment {
  return {
    id: row.id,
    user_id: row.user_id,
    questionnaire_ids: questionnaireIds,
    status: row.status as EnrollmentStatus,
    consent_required: row.consent_required === 1,
    consent_version: row.consent_version,
    consented_at: row.consented_at,
    starts_at: row.starts_at,
    ends_at: row.ends_at,
    schedule: parseJson(row.schedule),
    metadata: parseJson(row.metadata),
    status_reason: row.status_reason,
    status_changed_at: row.status_changed_at,
    created_by: row.created_by,
    created_at: row.created_at,
    updated_at: row.updated_at,
    updated_by: row.updated_by,
    deleted_at: row.deleted_at,
  };
}

/** Questionnaire ids of each enrollment, in their stored order. */
async function questionnaireIdsOf(db: Db, enrollmentIds: string[]): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>(enrollmentIds.map((id) => [id, []]));
  if (enrollmentIds.length === 0) return out;
  const rows = await db
    .selectFrom('enrollment_questionnaire')
    .select(['enrollment_id', 'questionnaire_id'])
    .where('enrollment_id', 'in', enrollmentIds)
    .orderBy('enrollment_id')
    .orderBy('position')
    .execute();
  for (const r of rows) out.get(r.enrollment_id)?.push(r.questionnaire_id);
  return out;
}

async function withQuestionnaires(db: Db, rows: EnrollmentTable[]): Promise<Enrollment[]> {
  const ids = await questionnaireIdsOf(
    db,
    rows.map((r) => r.id),
  );
  return rows.map((r) => toEnrollment(r, ids.get(r.id) ?? []));
}

/**
 * Which enrollments a caller may see: 'all', or the filter of the questionnaires it can see (an
 * enrollment is visible when at least one of its questionnaires is).
 */
export type Visibility = 'all' | ((column: string) => Expression<SqlBool>);

function visibleOnly<Q extends ReturnType<typeof activeEnrollments>>(q: Q, visible: Visibility): Q {
  if (visible === 'all') return q;
  return q.where('enrollment.id', 'in', (eb) =>
    eb
      .selectFrom('enrollment_questionnaire')
      .select('enrollment_questionnaire.enrollment_id')
      .where(visible('enrollment_questionnaire.questionnaire_id')),
  ) as Q;
}

const activeEnrollments = (db: Db) => db.selectFrom('enrollment').where('enrollment.deleted_at', 'is', null);

export async function findEnrollment(db: Db, id: string): Promise<Enrollment | undefined> {
  const row = await activeEnrollments(db).selectAll().where('id', '=', id).executeTakeFirst();
  if (!row) return undefined;
  return (await withQuestionnaires(db, [row]))[0];
}

/**
 * The active enrollment, read inside a write transaction and held until it ends. PostgreSQL: the row
 * FOR SHARE, so a concurrent status change, questionnaire change or delete (each an UPDATE of this row
 * first) waits for the transaction, and one that committed first is what this read sees; its
 * questionnaires are read after the lock. SQLite runs one write transaction at a time.
 */
export async function lockEnrollment(tx: Tx, id: string): Promise<Enrollment | undefined> {
  let q = activeEnrollments(tx.db).selectAll().where('id', '=', id);
  if (tx.dialect === 'postgres') q = q.forShare();
  const row = await q.executeTakeFirst();
  if (!row) return undefined;
  return (await withQuestionnaires(tx.db, [row]))[0];
}

export async function insertEnrollment(
  db: Db,
  row: EnrollmentTable,
  questionnaireIds: string[],
  open: boolean,
): Promise<void> {
  await db.insertInto('enrollment').values(row).execute();
  await insertQuestionnaires(db, row, questionnaireIds, open);
}

type EnrollmentOf = Pick<EnrollmentTable, 'id' | 'user_id'>;

async function insertQuestionnaires(db: Db, enrollment: EnrollmentOf, ids: string[], open: boolean) {
  if (ids.length === 0) return;
  await db
    .insertInto('enrollment_questionnaire')
    .values(
      ids.map((questionnaire_id, position) => ({
        enrollment_id: enrollment.id,
        questionnaire_id,
        position,
        user_id: enrollment.user_id,
        open_key: open ? 1 : null,
      })),
    )
    .execute();
}

/** Sets the enrollment's questionnaires, in this order, in place of those it had. */
export async function replaceQuestionnaires(db: Db, enrollment: EnrollmentOf, ids: string[], open: boolean) {
  await db.deleteFrom('enrollment_questionnaire').where('enrollment_id', '=', enrollment.id).execute();
  await insertQuestionnaires(db, enrollment, ids, open);
}

/** Marks the enrollment's questionnaires closed, so the user may be enrolled in them again. */
export async function closeQuestionnaires(db: Db, enrollmentId: string): Promise<void> {
  await db
    .updateTable('enrollment_questionnaire')
    .set({ open_key: null })
    .where('enrollment_id', '=', enrollmentId)
    .execute();
}

/** Questionnaire ids among `questionnaireIds` in which `userId` already has an open enrollment. */
export async function openConflicts(
  db: Db,
  userId: string,
  questionnaireIds: string[],
  exceptEnrollmentId?: string,
): Promise<Array<{ questionnaire_id: string; enrollment_id: string }>> {
  if (questionnaireIds.length === 0) return [];
  let q = db
    .selectFrom('enrollment_questionnaire')
    .select(['questionnaire_id', 'enrollment_id'])
    .where('user_id', '=', userId)
    .where('open_key', '=', 1)
    .where('questionnaire_id', 'in', questionnaireIds);
  if (exceptEnrollmentId) q = q.where('enrollment_id', '!=', exceptEnrollmentId);
  return q.execute();
}

/**
 * Applies `changes` only if the enrollment is still active and (when given) still in `expectedStatus`:
 * the compare-and-set that keeps concurrent status changes from both succeeding. True when it applied.
 */
export async function updateEnrollment(
  db: Db,
  id: string,
  changes: Partial<EnrollmentTable>,
  expectedStatus?: string,
): Promise<boolean> {
  let q = db.updateTable('enrollment').set(changes).where('id', '=', id).where('deleted_at', 'is', null);
  if (expectedStatus) q = q.where('status', '=', expectedStatus);
  const res = await q.executeTakeFirst();
  return updatedAny(res);
}

export interface EnrollmentFilters extends TimeRangeFilters<'created_at'> {
  user_id?: string;
  status?: string;
  questionnaire_id?: string;
}

function filtered(db: Db, f: EnrollmentFilters, visible: Visibility) {
  let q = visibleOnly(activeEnrollments(db), visible);
  q = whereEquals(q, { user_id: f.user_id, status: f.status });
  q = whereTimeRanges(q, f, ['created_at']);
  if (f.questionnaire_id !== undefined) {
    const qid = f.questionnaire_id;
    q = q.where('id', 'in', (eb) =>
      eb.selectFrom('enrollment_questionnaire').select('enrollment_id').where('questionnaire_id', '=', qid),
    );
  }
  return q;
}

export async function listEnrollments(db: Db, page: Page, f: EnrollmentFilters, visible: Visibility) {
  const result = await paginate(filtered(db, f, visible), page, (r: EnrollmentTable) => r);
  return { items: await withQuestionnaires(db, result.items), total: result.total };
}

export interface EnrolledUserRow {
  user_id: string;
  enrollment_count: number;
  open_enrollment_count: number;
  last_enrolled_at: string;
  status_counts: Record<EnrollmentStatus, number>;
  latest_enrollment_id: string;
  latest_status: EnrollmentStatus;
}

export const ENROLLED_USER_SORT = ['last_enrolled_at', 'enrollment_count', 'user_id'] as const;

/** One row per user with matching enrollments: counts, and the latest enrollment's status. */
export async function listEnrolledUsers(
  db: Db,
  page: Page,
  f: EnrollmentFilters,
  visible: Visibility,
): Promise<{ items: EnrolledUserRow[]; total: number }> {
  const base = filtered(db, f, visible);
  const countRow = await base
    .select((eb) => eb.fn.count<number>('user_id').distinct().as('total'))
    .executeTakeFirstOrThrow();
  const sortColumn =
    page.sort_by === 'enrollment_count'
      ? sql.ref('enrollment_count')
      : page.sort_by === 'user_id'
        ? sql.ref('user_id')
        : sql.ref('last_enrolled_at');
  const dir = page.sort_dir === 'asc' ? sql`asc` : sql`desc`;
  const groups = await base
    .select((eb) => [
      'user_id',
      eb.fn.countAll<number>().as('enrollment_count'),
      eb.fn.max('created_at').as('last_enrolled_at'),
    ])
    .groupBy('user_id')
    .orderBy(sql`${sortColumn} ${dir}`)
    .orderBy('user_id', page.sort_dir)
    .limit(page.limit)
    .offset(page.offset)
    .execute();
  const userIds = groups.map((g) => g.user_id);
  const detail =
    userIds.length === 0
      ? []
      : await filtered(db, f, visible)
          .select(['id', 'user_id', 'status', 'created_at'])
          .where('user_id', 'in', userIds)
          .orderBy('created_at', 'desc')
          .orderBy('id', 'desc')
          .execute();
  const items = groups.map((g) => {
    const mine = detail.filter((d) => d.user_id === g.user_id);
    const status_counts = {
      PENDING_CONSENT: 0,
      ENROLLED: 0,
      COMPLETED: 0,
      TERMINATED_BY_PROVIDER: 0,
      TERMINATED_BY_PATIENT: 0,
    } as Record<EnrollmentStatus, number>;
    for (const d of mine) status_counts[d.status as EnrollmentStatus] += 1;
    return {
      user_id: g.user_id,
      enrollment_count: Number(g.enrollment_count),
      open_enrollment_count: status_counts.PENDING_CONSENT + status_counts.ENROLLED,
      last_enrolled_at: String(g.last_enrolled_at),
      status_counts,
      latest_enrollment_id: mine[0].id,
      latest_status: mine[0].status as EnrollmentStatus,
    };
  });
  return { items, total: Number((countRow as { total: number | string }).total) };
}
