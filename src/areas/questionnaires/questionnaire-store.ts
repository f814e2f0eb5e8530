import { sql } from 'kysely';
import { findActive, findWhere } from '../../db/audit.js';
import { prepared } from '../../db/prepared.js';
import type { Db, Tx } from '../../db/store.js';
import {
  type ListResult,
  type Page,
  paginate,
  whereEquals,
  whereFilters,
  whereTimeRanges,
} from '../../http/list.js';
import type { TimeRangeFilters } from '../../http/list-schemas.js';
import { type Questionnaire, type QuestionnaireRevision, toQuestionnaire, toRevision } from './records.js';
import type {
  QuestionnaireRevisionTable,
  QuestionnaireStatus,
  QuestionnaireTable,
  RevisionOperation,
} from './tables.js';
import { type Grantees, questionnaireVisible } from './visibility.js';

/** Questionnaires and their revisions (tables questionnaire, questionnaire_revision). */
export interface QuestionnaireFilters extends TimeRangeFilters<'created_at' | 'updated_at'> {
  status?: QuestionnaireStatus;
  folder_id?: string;
  lineage_root_id?: string;
  name?: string;
  search?: string;
  created_by?: string;
}

export interface RevisionFilters extends TimeRangeFilters<'created_at'> {
  operation?: RevisionOperation;
  created_by?: string;
  sequence_gte?: number;
  sequence_lte?: number;
}

/** An active (not soft-deleted) questionnaire, or undefined. */
export async function findQuestionnaire(db: Db, id: string): Promise<Questionnaire | undefined> {
  const row = await findActive(db, 'questionnaire', id);
  return row ? toQuestionnaire(row) : undefined;
}

/** A questionnaire whether deleted or not. */
export async function findAnyQuestionnaire(db: Db, id: string): Promise<Questionnaire | undefined> {
  const row = await db.selectFrom('questionnaire').selectAll().where('id', '=', id).executeTakeFirst();
  return row ? toQuestionnaire(row) : undefined;
}

export async function findQuestionnaires(db: Db, ids: readonly string[]): Promise<Questionnaire[]> {
  if (ids.length === 0) return [];
  const rows = await db
    .selectFrom('questionnaire')
    .selectAll()
    .where('id', 'in', [...new Set(ids)])
    .where('deleted_at', 'is', null)
    .execute();
  return rows.map(toQuestionnaire);
}

/**
 * Reads a questionnaire (deleted or not) for a change, holding its row until the transaction ends.
 * PostgreSQL needs the row lock so concurrent changes of one questionnaire take turns: each diffs
 * against the state the previous one committed and takes the next sequence. SQLite runs one write
 * transaction at a time (one connection), so the plain read is already serialised.
 */
export async function lockQuestionnaire(tx: Tx, id: string): Promise<QuestionnaireTable | undefined> {
  let q = tx.db.selectFrom('questionnaire').selectAll().where('id', '=', id);
  if (tx.dialect === 'postgres') q = q.forUpdate();
  return q.executeTakeFirst();
}

const lockActiveStatement = prepared((db, dialect, ids: string[]) => {
  const q = db
    .selectFrom('questionnaire')
    .selectAll()
    .where('id', 'in', ids)
    .where('deleted_at', 'is', null)
    .orderBy('id');
  return dialect === 'postgres' ? q.forShare() : q;
});

/**
 * The active questionnaires among `ids`, read inside another area's write transaction and held
 * until it ends. PostgreSQL: FOR SHARE, so a concurrent publish, archive or delete (which locks the
 * row FOR UPDATE) waits for that transaction, and one that committed first is what this read sees
 * (the row is re-checked after the wait, so a questionnaire deleted meanwhile is left out). Rows
 * are locked in id order. SQLite runs one write transaction at a time, so the read is serialised.
 */
export async function lockActiveQuestionnaires(tx: Tx, ids: readonly string[]): Promise<Questionnaire[]> {
  if (ids.length === 0) return [];
  const { rows } = await lockActiveStatement.execute(tx.db, [...new Set(ids)]);
  return rows.map(toQuestionnaire);
}

// `1 / count(*)`: 1 while the row is as remembered, a division by zero once it changed or went (on
// PostgreSQL an error that fails the transaction; on SQLite null). FOR SHARE sits in the sub-select,
// the one place PostgreSQL allows it beside an aggregate.
const holdUnchangedStatement = prepared((db, dialect, id: string, sequence: number) =>
  sql<{ held: number | string | null }>`select 1 / count(*) as held from (select 1 from questionnaire
    where id = ${id} and revision_sequence = ${sequence} and deleted_at is null${dialect === 'postgres' ? sql` for share` : sql``}) as unchanged`.compile(
    db,
  ),
);

/** SQLSTATE 22012 division_by_zero: how `holdUnchanged` fails a PostgreSQL transaction. */
export const HOLD_FAILED_CODE = '22012';

/**
 * Holds an active questionnaire known to be at revision `sequence` until the transaction ends,
 * without reading it back (held.ts). On PostgreSQL the statement is queued: it leaves with the
 * transaction's commit and, if the row changed or went meanwhile, fails the transaction (SQLSTATE
 * `HOLD_FAILED_CODE`), so nothing the transaction wrote is kept. On SQLite, which serialises write
 * transactions and has no round trips, it runs at once and answers false instead.
 */
export async function holdUnchanged(tx: Tx, id: string, sequence: number): Promise<boolean> {
  if (tx.dialect === 'postgres') {
    await holdUnchangedStatement.queue(tx.db, id, sequence);
    return true;
  }
  const { rows } = await holdUnchangedStatement.execute(tx.db, id, sequence);
  return rows[0]?.held !== null && rows[0]?.held !== undefined;
}

export async function insertQuestionnaire(tx: Tx, row: QuestionnaireTable): Promise<void> {
  await tx.db.insertInto('questionnaire').values(row).execute();
}

export async function updateQuestionnaire(
  tx: Tx,
  id: string,
  changes: Partial<QuestionnaireTable>,
): Promise<void> {
  await tx.db.updateTable('questionnaire').set(changes).where('id', '=', id).execute();
}

export async function listQuestionnaires(
  db: Db,
  page: Page,
  f: QuestionnaireFilters,
  opts: { deleted: boolean; visibleTo?: Grantees },
): Promise<ListResult<Questionnaire>> {
  let q = db.selectFrom('questionnaire').where('deleted_at', opts.deleted ? 'is not' : 'is', null);
  if (opts.visibleTo) q = q.where(questionnaireVisible(opts.visibleTo));
  q = whereFilters(q, {
    equals: {
      status: f.status,
      folder_id: f.folder_id,
      lineage_root_id: f.lineage_root_id,
      created_by: f.created_by,
    },
    contains: { name: f.name },
    search: { value: f.search, in: ['name', 'description'] },
  });
  return paginate(whereTimeRanges(q, f, ['created_at', 'updated_at']), page, toQuestionnaire);
}

/** Tree nodes: active questionnaires of the given folders (null = the root), without the documents. */
export async function questionnairesForTree(
  db: Db,
  f: {
    statuses: readonly QuestionnaireStatus[];
    visibleTo?: Grantees;
  },
): Promise<Array<Omit<QuestionnaireTable, 'payload' | 'config' | 'schedule_payload'>>> {
  let q = db
    .selectFrom('questionnaire')
    .select([
      'id',
      'name',
      'description',
      'folder_id',
      'status',
      'metadata',
      'lineage_root_id',
      'forked_from_id',
      'forked_from_sequence',
      'revision_sequence',
      'published_at',
      'published_by',
      'archived_at',
      'created_at',
      'created_by',
      'updated_at',
      'updated_by',
      'deleted_at',
    ])
    .where('deleted_at', 'is', null)
    .where('status', 'in', [...f.statuses]);
  if (f.visibleTo) q = q.where(questionnaireVisible(f.visibleTo));
  return q.orderBy('name').orderBy('id').execute();
}

export async function insertRevision(tx: Tx, row: QuestionnaireRevisionTable): Promise<void> {
  await tx.db.insertInto('questionnaire_revision').values(row).execute();
}

export async function findRevision(db: Db, questionnaireId: string, id: string) {
  const row = await findWhere(db, 'questionnaire_revision', { id, questionnaire_id: questionnaireId });
  return row ? toRevision(row) : undefined;
}

export async function listRevisions(db: Db, questionnaireId: string, page: Page, f: RevisionFilters) {
  let q = db.selectFrom('questionnaire_revision').where('questionnaire_id', '=', questionnaireId);
  q = whereEquals(q, { operation: f.operation, created_by: f.created_by });
  q = whereTimeRanges(q, f, ['created_at']);
  if (f.sequence_gte !== undefined) q = q.where('sequence', '>=', f.sequence_gte);
  if (f.sequence_lte !== undefined) q = q.where('sequence', '<=', f.sequence_lte);
  return paginate(q, page, toRevision);
}

/** Revisions 1..sequence in order: what a snapshot replays. */
export async function revisionsUpTo(
  db: Db,
  questionnaireId: string,
  sequence: number,
): Promise<QuestionnaireRevision[]> {
  const rows = await db
    .selectFrom('questionnaire_revision')
    .selectAll()
    .where('questionnaire_id', '=', questionnaireId)
    .where('sequence', '<=', sequence)
    .orderBy('sequence', 'asc')
    .execute();
  return rows.map(toRevision);
}
