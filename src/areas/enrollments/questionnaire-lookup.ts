import type { Expression, SqlBool } from 'kysely';
import type { Tx } from '../../db/store.js';
import type { Principal } from '../../http/access.js';
import { AppError } from '../../http/errors.js';
import { atLeast } from '../questionnaires/access.js';

/**
 * What this area needs of the questionnaires area (`services.questionnaires`): the active record by id.
 * Structural, so the questionnaires service satisfies it without either area importing the other's store.
 */
export interface QuestionnaireRecord {
  id: string;
  name: string;
  status: string;
  folder_id?: string | null;
  description?: string | null;
  payload?: Record<string, unknown> | null;
  config?: Record<string, unknown> | null;
  schedule_payload?: Record<string, unknown> | null;
  /** Sequence of the questionnaire's latest revision: which version a submission answered. */
  revision_sequence?: number;
  updated_at?: string;
}

export type PermissionLevel = 'VIEW' | 'EDIT' | 'MANAGE';

/**
 * The folder and questionnaire permissions as they apply to records of questionnaires (enrollments,
 * submissions): docs/platform.md "Permissions". Built once per request by `accessOf`.
 */
export interface RecordAccess {
  /** `admin` and `integration` holders: nothing is narrowed. */
  unrestricted: boolean;
  /**
   * 'all', or a filter keeping the rows whose `column` names a questionnaire the caller can see
   * (`q.where(filter('questionnaire_submission.questionnaire_id'))`).
   */
  questionnaireFilter: 'all' | ((column: string) => Expression<SqlBool>);
  /** The caller's level on each questionnaire id; null: it cannot see it. One query for any number. */
  levels(ids: readonly string[]): Promise<Map<string, PermissionLevel | null>>;
}

export interface QuestionnaireLookup {
  /** The active questionnaire; throws AppError QUESTIONNAIRE.NOT_FOUND. */
  get(id: string): Promise<QuestionnaireRecord>;
  /** The active ones among `ids`; missing or deleted ones are left out. */
  getMany(ids: readonly string[]): Promise<QuestionnaireRecord[]>;
  /**
   * The active ones among `ids`, read inside this area's write transaction and held until it ends
   * (PostgreSQL FOR SHARE): a concurrent publish, archive or delete committed before is seen, one not
   * yet committed waits for the write. Checks that must still hold at commit are made on these.
   */
  lockActive(tx: Tx, ids: readonly string[]): Promise<QuestionnaireRecord[]>;
  /**
   * One active questionnaire held like `lockActive`, answered from the questionnaires area's memory
   * when it has read it before (`remembered`); the hold then fails the transaction, at its commit or
   * at once, if the row changed since (`changedWhileHeld`), and the caller runs it again `fresh`.
   */
  holdActive(
    tx: Tx,
    id: string,
    opts: { fresh: boolean },
  ): Promise<{ questionnaire: QuestionnaireRecord | undefined; remembered: boolean }>;
  changedWhileHeld(err: unknown): boolean;
  /** What `principal` may see and change of the catalogue (one role lookup). */
  accessOf(principal: Pick<Principal, 'userId'>): Promise<RecordAccess>;
}

/** Which questionnaires' records `principal` may see: the filter of `RecordAccess`, for a list. */
export async function visibleRecords(lookup: QuestionnaireLookup, principal: Pick<Principal, 'userId'>) {
  return (await lookup.accessOf(principal)).questionnaireFilter;
}

/**
 * The permission rules for one record of these questionnaires (an enrollment, a submission). It is
 * visible when the caller can see at least one of them, otherwise `notFound` is thrown: exactly the
 * answer for a missing record. With `need` EDIT it may be changed only by a caller holding EDIT on every
 * one of them (a record of several questionnaires is changed only by someone who may change all of
 * them), otherwise 403 PERMISSION.DENIED, whose `details` name the record, `required_level`, `level`
 * (the caller's lowest level over those questionnaires, null when one of them is not visible to it) and
 * `questionnaire_ids` (those short of EDIT). One query whatever the number of questionnaires (levels
 * are found walking up from each questionnaire's folder, so a large grant costs nothing here); none
 * for an unrestricted caller.
 */
export async function requireRecordAccess(
  access: RecordAccess,
  questionnaireIds: readonly string[],
  need: 'VIEW' | 'EDIT',
  record: { what: string; details: Record<string, string>; notFound: () => AppError },
): Promise<void> {
  if (access.unrestricted) return;
  const levels = await access.levels(questionnaireIds);
  const of = (id: string) => levels.get(id) ?? null;
  if (!questionnaireIds.some((id) => of(id) !== null)) throw record.notFound();
  if (need === 'VIEW') return;
  const short = questionnaireIds.filter((id) => !atLeast(of(id), need));
  if (short.length === 0) return;
  let lowest: PermissionLevel | null = need;
  for (const id of questionnaireIds) {
    const l = of(id);
    if (l === null || lowest === null) lowest = null;
    else if (!atLeast(l, lowest)) lowest = l;
  }
  throw new AppError(
    'PERMISSION.DENIED',
    `Changing this ${record.what} needs ${need} permission on each of its questionnaires`,
    { ...record.details, required_level: need, level: lowest, questionnaire_ids: short },
  );
}

/** The active questionnaires among `ids`, keyed by id; missing or deleted ones are simply absent. */
export async function loadQuestionnaires(
  lookup: QuestionnaireLookup,
  ids: readonly string[],
): Promise<Map<string, QuestionnaireRecord>> {
  const unique = [...new Set(ids)];
  if (unique.length === 0) return new Map();
  return new Map((await lookup.getMany(unique)).map((q) => [q.id, q]));
}
