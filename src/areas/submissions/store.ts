import type { Static } from '@sinclair/typebox';
import { type Expression, type SqlBool, sql } from 'kysely';
import { updateActive } from '../../db/audit.js';
import { prepared } from '../../db/prepared.js';
import type { Db, Tx } from '../../db/store.js';
import { type Page, paginate, whereEquals, whereTimeRanges } from '../../http/list.js';
import type { TimeRangeFilters } from '../../http/list-schemas.js';
import type { Submission as SubmissionSchema } from './schemas.js';
import type { QuestionnaireSubmissionTable } from './tables.js';

/** A submission as the API shows it. */
export type Submission = Static<typeof SubmissionSchema>;

export function toSubmission(r: QuestionnaireSubmissionTable): Submission {
  return {
    id: r.id,
    questionnaire_id: r.questionnaire_id,
    questionnaire_revision: r.questionnaire_revision === null ? null : Number(r.questionnaire_revision),
    user_id: r.user_id,
    enrollment_id: r.enrollment_id,
    is_anonymous: r.is_anonymous === 1,
    answers: JSON.parse(r.answers) as Record<string, unknown>,
    metadata: r.metadata === null ? null : (JSON.parse(r.metadata) as Record<string, unknown>),
    api_key_id: r.api_key_id,
    created_by: r.created_by,
    created_at: r.created_at,
    updated_at: r.updated_at,
    updated_by: r.updated_by,
    deleted_at: r.deleted_at,
  };
}

const insertSubmissionStatement = prepared((db, _dialect, row: QuestionnaireSubmissionTable) =>
  db.insertInto('questionnaire_submission').values(row),
);

/** Writes one new submission; in a transaction on PostgreSQL, sent with its commit (`queue`). */
export async function insertSubmission(db: Db, row: QuestionnaireSubmissionTable): Promise<void> {
  await insertSubmissionStatement.queue(db, row);
}

/** Whether `userId` has a submission to the questionnaire that is not deleted. */
export async function hasActiveSubmission(db: Db, questionnaireId: string, userId: string): Promise<boolean> {
  const row = await db
    .selectFrom('questionnaire_submission')
    .select('id')
    .where('user_id', '=', userId)
    .where('questionnaire_id', '=', questionnaireId)
    .where('deleted_at', 'is', null)
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

/**
 * Serialises one respondent's submissions to one questionnaire until `tx` ends, so "at most one"
 * checked inside it holds at commit. PostgreSQL: a transaction advisory lock on the pair (the
 * questionnaire row is only held FOR SHARE, which two submissions can both hold). SQLite: write
 * transactions are serialised already (BEGIN IMMEDIATE).
 */
export async function lockRespondent(tx: Tx, questionnaireId: string, userId: string): Promise<void> {
  if (tx.dialect !== 'postgres') return;
  await sql`select pg_advisory_xact_lock(hashtextextended(${`submission:${questionnaireId}:${userId}`}, 0))`.execute(
    tx.db,
  );
}

/**
 * Which submissions a caller may see: 'all', or the filter of the questionnaires it can see (a
 * submission is visible when its questionnaire is).
 */
export type Visibility = 'all' | ((column: string) => Expression<SqlBool>);

function activeSubmissions(db: Db, visible: Visibility) {
  const q = db.selectFrom('questionnaire_submission').where('deleted_at', 'is', null);
  return visible === 'all' ? q : q.where(visible('questionnaire_submission.questionnaire_id'));
}

export async function findSubmission(db: Db, id: string): Promise<Submission | undefined> {
  const row = await activeSubmissions(db, 'all').selectAll().where('id', '=', id).executeTakeFirst();
  return row ? toSubmission(row) : undefined;
}

/** Applies `changes` to an active submission; false when it is gone (deleted meanwhile). */
export async function updateSubmission(
  db: Db,
  id: string,
  changes: Partial<QuestionnaireSubmissionTable>,
): Promise<boolean> {
  return updateActive(db, 'questionnaire_submission', id, changes);
}

export interface SubmissionFilters extends TimeRangeFilters<'created_at' | 'updated_at'> {
  questionnaire_id?: string;
  user_id?: string;
  enrollment_id?: string;
  is_anonymous?: boolean;
}

export const SUBMISSION_SORT = ['created_at', 'updated_at', 'questionnaire_id', 'user_id'] as const;

export async function listSubmissions(db: Db, page: Page, f: SubmissionFilters, visible: Visibility) {
  let q = activeSubmissions(db, visible);
  q = whereEquals(q, {
    questionnaire_id: f.questionnaire_id,
    user_id: f.user_id,
    enrollment_id: f.enrollment_id,
    is_anonymous: f.is_anonymous,
  });
  return paginate(whereTimeRanges(q, f, ['created_at', 'updated_at']), page, toSubmission);
}
