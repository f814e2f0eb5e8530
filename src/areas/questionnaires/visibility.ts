import { type Expression, type SqlBool, sql } from 'kysely';

/**
 * Who sees what in the catalogue, as SQL fragments the stores (and other areas' lists, through the
 * service) compose: grants match a user or their roles, and a folder grant reaches every descendant.
 */
/** SQL of the questionnaire catalogue. Rows are mapped here; nothing above knows the dialect. */

/** Who a permission check is about: a user and the ids of the roles they hold. */
export interface Grantees {
  userId: string;
  roleIds: readonly string[];
}

/**
 * Deepest folder nesting a walk follows. The service keeps trees at most MAX_FOLDER_DEPTH deep, so
 * walks always reach the root (the cycle check relies on that); this only bounds a corrupted tree.
 */
export const MAX_DEPTH = 1000;

/** Deepest a folder may sit: level 1 is a root folder. */
export const MAX_FOLDER_DEPTH = 100;

/** `grantee_type/grantee_id` matches the user or one of their roles. */
export function granteeMatch(g: Grantees, alias = ''): Expression<SqlBool> {
  const type = sql.ref(`${alias}grantee_type`);
  const id = sql.ref(`${alias}grantee_id`);
  const user = sql<SqlBool>`(${type} = 'USER' and ${id} = ${g.userId})`;
  if (g.roleIds.length === 0) return user;
  return sql<SqlBool>`(${user} or (${type} = 'ROLE' and ${id} in (${sql.join([...g.roleIds])})))`;
}

/**
 * Ids of the folders the grantees can see: folders granted to them and every descendant (access is
 * inherited down the tree). A recursive CTE (SQLite and PostgreSQL alike); UNION (not UNION ALL)
 * keeps each folder once, so overlapping grants cost nothing and the recursion always ends.
 */
export function visibleFolderIds(g: Grantees) {
  return sql<{ id: string }>`(with recursive visible_folder(id) as (
    select fp.folder_id from folder_permission fp where fp.deleted_at is null and ${granteeMatch(g, 'fp.')}
    union
    select f.id from folder f join visible_folder v on f.parent_id = v.id
  ) select id from visible_folder)`;
}

export function grantedQuestionnaireIds(g: Grantees) {
  return sql<{ id: string }>`(select qp.questionnaire_id from questionnaire_permission qp
    where qp.deleted_at is null and ${granteeMatch(g, 'qp.')})`;
}

/** Questionnaires the grantees can see: granted directly, or inside a visible folder. */
export function questionnaireVisible(g: Grantees): Expression<SqlBool> {
  return sql<SqlBool>`(questionnaire.folder_id in ${visibleFolderIds(g)} or questionnaire.id in ${grantedQuestionnaireIds(g)})`;
}

/**
 * Keeps the rows of another table whose `column` names a questionnaire (deleted or not) the grantees
 * can see: one inside a visible folder, or one granted directly. For other areas' lists
 * (`where(filter('questionnaire_submission.questionnaire_id'))`).
 *
 * Two IN-subqueries joined by OR, on purpose: PostgreSQL then evaluates each once and probes it as a
 * hashed subplan per row. A single `in (a union b)` is pulled up into a semi-join whose size PostgreSQL
 * cannot estimate (the recursive CTE), and it chose a nested loop comparing every row with every
 * visible id, 3-4x slower than the unrestricted page (bench/records). SQLite reads both forms alike.
 */
export type QuestionnaireFilter = (column: string) => Expression<SqlBool>;

export function questionnaireFilter(g: Grantees): QuestionnaireFilter {
  return (column) => {
    const col = sql.ref(column);
    return sql<SqlBool>`(${col} in (select vq.id from questionnaire vq where vq.folder_id in ${visibleFolderIds(g)})
      or ${col} in ${grantedQuestionnaireIds(g)})`;
  };
}
