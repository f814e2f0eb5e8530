import { type Expression, type SqlBool, sql } from 'kysely';
import { findActive, updateActive } from '../../db/audit.js';
import type { Db, Tx } from '../../db/store.js';
import { type Page, paginate, whereEquals } from '../../http/list.js';
import { type FolderPermission, grantee, type QuestionnairePermission } from './records.js';
import type {
  FolderPermissionTable,
  GranteeType,
  PermissionLevel,
  QuestionnairePermissionTable,
} from './tables.js';
import {
  type Grantees,
  granteeMatch,
  MAX_DEPTH,
  questionnaireVisible,
  visibleFolderIds,
} from './visibility.js';

/** Folder and questionnaire grants (tables folder_permission, questionnaire_permission). */
export interface PermissionFilters {
  object_id?: string;
  user_id?: string;
  role_id?: string;
  level?: PermissionLevel;
}

type PermissionObject = 'folder' | 'questionnaire';

type PermissionTable = 'folder_permission' | 'questionnaire_permission';

const permissionTable = (o: PermissionObject): PermissionTable => `${o}_permission`;

function toPermission(o: 'folder', r: FolderPermissionTable): FolderPermission;

function toPermission(o: 'questionnaire', r: QuestionnairePermissionTable): QuestionnairePermission;

function toPermission(o: PermissionObject, r: FolderPermissionTable | QuestionnairePermissionTable) {
  const {
    grantee_type: _t,
    grantee_id: _g,
    ...rest
  } = r as FolderPermissionTable & QuestionnairePermissionTable;
  return {
    ...rest,
    ...(o === 'folder'
      ? { folder_id: (r as FolderPermissionTable).folder_id }
      : { questionnaire_id: (r as QuestionnairePermissionTable).questionnaire_id }),
    ...grantee(r),
  };
}

/** The levels granted to the grantees on these folders and (optionally) on one questionnaire. */
export async function grantedLevels(
  db: Db,
  g: Grantees,
  on: { folderIds: readonly string[]; questionnaireId?: string },
): Promise<PermissionLevel[]> {
  const levels: PermissionLevel[] = [];
  if (on.folderIds.length > 0) {
    const rows = await db
      .selectFrom('folder_permission')
      .select('level')
      .where('folder_id', 'in', [...on.folderIds])
      .where('deleted_at', 'is', null)
      .where(granteeMatch(g))
      .execute();
    levels.push(...rows.map((r) => r.level));
  }
  if (on.questionnaireId) {
    const rows = await db
      .selectFrom('questionnaire_permission')
      .select('level')
      .where('questionnaire_id', '=', on.questionnaireId)
      .where('deleted_at', 'is', null)
      .where(granteeMatch(g))
      .execute();
    levels.push(...rows.map((r) => r.level));
  }
  return levels;
}

/**
 * Every level granted to the grantees on each of these questionnaires (deleted or not), directly or
 * on a folder above it, in one query: a recursive walk up from each questionnaire's folder joined to
 * the folder grants, plus the questionnaire grants. Rows repeat per grant; the caller takes the highest.
 */
export async function grantedLevelsOnQuestionnaires(
  db: Db,
  g: Grantees,
  questionnaireIds: readonly string[],
): Promise<Array<{ questionnaire_id: string; level: PermissionLevel }>> {
  const ids = [...new Set(questionnaireIds)];
  if (ids.length === 0) return [];
  const { rows } = await sql<{ questionnaire_id: string; level: PermissionLevel }>`
    with recursive up(questionnaire_id, folder_id, depth) as (
      select q.id, q.folder_id, 0 from questionnaire q
        where q.id in (${sql.join(ids)}) and q.folder_id is not null
      union all
      select up.questionnaire_id, f.parent_id, up.depth + 1 from up join folder f on f.id = up.folder_id
        where f.parent_id is not null and up.depth < ${MAX_DEPTH}
    )
    select up.questionnaire_id, fp.level from up join folder_permission fp on fp.folder_id = up.folder_id
      where fp.deleted_at is null and ${granteeMatch(g, 'fp.')}
    union all
    select qp.questionnaire_id, qp.level from questionnaire_permission qp
      where qp.questionnaire_id in (${sql.join(ids)}) and qp.deleted_at is null and ${granteeMatch(g, 'qp.')}`.execute(
    db,
  );
  return rows;
}

export async function insertFolderPermission(tx: Tx, row: FolderPermissionTable): Promise<void> {
  await tx.db.insertInto('folder_permission').values(row).execute();
}

export async function insertQuestionnairePermission(
  tx: Tx,
  row: QuestionnairePermissionTable,
): Promise<void> {
  await tx.db.insertInto('questionnaire_permission').values(row).execute();
}

export async function findFolderPermission(db: Db, id: string): Promise<FolderPermission | undefined> {
  const row = await findActive(db, 'folder_permission', id);
  return row ? toPermission('folder', row) : undefined;
}

export async function findQuestionnairePermission(
  db: Db,
  id: string,
): Promise<QuestionnairePermission | undefined> {
  const row = await findActive(db, 'questionnaire_permission', id);
  return row ? toPermission('questionnaire', row) : undefined;
}

export async function updatePermission(
  tx: Tx,
  object: PermissionObject,
  id: string,
  changes: { level?: PermissionLevel; updated_at: string; updated_by: string; deleted_at?: string },
): Promise<boolean> {
  return updateActive(tx.db, permissionTable(object), id, changes);
}

export async function listFolderPermissions(db: Db, page: Page, f: PermissionFilters, visibleTo?: Grantees) {
  let q = db.selectFrom('folder_permission').where('deleted_at', 'is', null);
  if (visibleTo) q = q.where(sql<SqlBool>`folder_permission.folder_id in ${visibleFolderIds(visibleTo)}`);
  q = whereEquals(q, { folder_id: f.object_id });
  q = permissionFilters(q, f);
  return paginate(q, page, (r: FolderPermissionTable) => toPermission('folder', r));
}

export async function listQuestionnairePermissions(
  db: Db,
  page: Page,
  f: PermissionFilters,
  visibleTo?: Grantees,
) {
  let q = db.selectFrom('questionnaire_permission').where('deleted_at', 'is', null);
  if (visibleTo) {
    q = q.where(
      sql<SqlBool>`questionnaire_permission.questionnaire_id in (select questionnaire.id from questionnaire where ${questionnaireVisible(visibleTo)})`,
    );
  }
  q = whereEquals(q, { questionnaire_id: f.object_id });
  q = permissionFilters(q, f);
  return paginate(q, page, (r: QuestionnairePermissionTable) => toPermission('questionnaire', r));
}

// biome-ignore lint/suspicious/noExplicitAny: shared by the two permission tables' builders
function permissionFilters<Q extends { where: (...args: any[]) => Q }>(q: Q, f: PermissionFilters): Q {
  let out = q;
  if (f.user_id) out = out.where(granteeIs('USER', f.user_id));
  if (f.role_id) out = out.where(granteeIs('ROLE', f.role_id));
  if (f.level) out = out.where(sql<SqlBool>`level = ${f.level}`);
  return out;
}

function granteeIs(type: GranteeType, id: string): Expression<SqlBool> {
  return sql<SqlBool>`(grantee_type = ${type} and grantee_id = ${id})`;
}
