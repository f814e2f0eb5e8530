import { type Expression, type SqlBool, sql } from 'kysely';
import { updateActive } from '../../db/audit.js';
import type { Db, Store, Tx } from '../../db/store.js';
import { containsInsensitive, isoParam, type ListResult, type Page, paginate } from '../../http/list.js';
import {
  type Folder,
  type FolderPermission,
  grantee,
  type Questionnaire,
  type QuestionnairePermission,
  type QuestionnaireRevision,
  toFolder,
  toQuestionnaire,
  toRevision,
} from './records.js';
import type {
  FolderPermissionTable,
  FolderTable,
  GranteeType,
  PermissionLevel,
  QuestionnairePermissionTable,
  QuestionnaireRevisionTable,
  QuestionnaireStatus,
  QuestionnaireTable,
  RevisionOperation,
} from './tables.js';

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
const MAX_DEPTH = 1000;

/** Deepest a folder may sit: level 1 is a root folder. */
export const MAX_FOLDER_DEPTH = 100;

/** `grantee_type/grantee_id` matches the user or one of their roles. */
function granteeMatch(g: Grantees, alias = ''): Expression<SqlBool> {
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
function visibleFolderIds(g: Grantees) {
  return sql<{ id: string }>`(with recursive visible_folder(id) as (
    select fp.folder_id from folder_permission fp where fp.deleted_at is null and ${granteeMatch(g, 'fp.')}
    union
    select f.id from folder f join visible_folder v on f.parent_id = v.id
  ) select id from visible_folder)`;
}

function grantedQuestionnaireIds(g: Grantees) {
  return sql<{ id: string }>`(select qp.questionnaire_id from questionnaire_permission qp
    where qp.deleted_at is null and ${granteeMatch(g, 'qp.')})`;
}

/** Questionnaires the grantees can see: granted directly, or inside a visible folder. */
function questionnaireVisible(g: Grantees): Expression<SqlBool> {
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

export interface QuestionnaireFilters {
  status?: QuestionnaireStatus;
  folder_id?: string;
  lineage_root_id?: string;
  name?: string;
  search?: string;
  created_by?: string;
  created_at_gte?: string;
  created_at_lte?: string;
  updated_at_gte?: string;
  updated_at_lte?: string;
}

export interface RevisionFilters {
  operation?: RevisionOperation;
  created_by?: string;
  created_at_gte?: string;
  created_at_lte?: string;
  sequence_gte?: number;
  sequence_lte?: number;
}

export interface FolderFilters {
  parent_id?: string;
  root?: boolean;
  name?: string;
  search?: string;
}

export interface PermissionFilters {
  object_id?: string;
  user_id?: string;
  role_id?: string;
  level?: PermissionLevel;
}

/** A folder and its place in the chain above a starting folder (depth 0 = the folder itself). */
export interface ChainLink {
  id: string;
  parent_id: string | null;
  config: string;
  deleted_at: string | null;
  depth: number;
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

export function createQuestionnaireStore(store: Store) {
  return {
    // ---- questionnaires

    /** An active (not soft-deleted) questionnaire, or undefined. */
    async findQuestionnaire(id: string, db: Db = store.db): Promise<Questionnaire | undefined> {
      const row = await db
        .selectFrom('questionnaire')
        .selectAll()
        .where('id', '=', id)
        .where('deleted_at', 'is', null)
        .executeTakeFirst();
      return row ? toQuestionnaire(row) : undefined;
    },

    /** A questionnaire whether deleted or not. */
    async findAnyQuestionnaire(id: string, db: Db = store.db): Promise<Questionnaire | undefined> {
      const row = await db.selectFrom('questionnaire').selectAll().where('id', '=', id).executeTakeFirst();
      return row ? toQuestionnaire(row) : undefined;
    },

    async findQuestionnaires(ids: readonly string[], db: Db = store.db): Promise<Questionnaire[]> {
      if (ids.length === 0) return [];
      const rows = await db
        .selectFrom('questionnaire')
        .selectAll()
        .where('id', 'in', [...new Set(ids)])
        .where('deleted_at', 'is', null)
        .execute();
      return rows.map(toQuestionnaire);
    },

    /**
     * Reads a questionnaire (deleted or not) for a change, holding its row until the transaction ends.
     * PostgreSQL needs the row lock so concurrent changes of one questionnaire take turns: each diffs
     * against the state the previous one committed and takes the next sequence. SQLite runs one write
     * transaction at a time (one connection), so the plain read is already serialised.
     */
    async lockQuestionnaire(tx: Tx, id: string): Promise<QuestionnaireTable | undefined> {
      let q = tx.db.selectFrom('questionnaire').selectAll().where('id', '=', id);
      if (tx.dialect === 'postgres') q = q.forUpdate();
      return q.executeTakeFirst();
    },

    /**
     * The active questionnaires among `ids`, read inside another area's write transaction and held
     * until it ends. PostgreSQL: FOR SHARE, so a concurrent publish, archive or delete (which locks the
     * row FOR UPDATE) waits for that transaction, and one that committed first is what this read sees
     * (the row is re-checked after the wait, so a questionnaire deleted meanwhile is left out). Rows
     * are locked in id order. SQLite runs one write transaction at a time, so the read is serialised.
     */
    async lockActiveQuestionnaires(tx: Tx, ids: readonly string[]): Promise<Questionnaire[]> {
      if (ids.length === 0) return [];
      let q = tx.db
        .selectFrom('questionnaire')
        .selectAll()
        .where('id', 'in', [...new Set(ids)])
        .where('deleted_at', 'is', null)
        .orderBy('id');
      if (tx.dialect === 'postgres') q = q.forShare();
      return (await q.execute()).map(toQuestionnaire);
    },

    async insertQuestionnaire(tx: Tx, row: QuestionnaireTable): Promise<void> {
      await tx.db.insertInto('questionnaire').values(row).execute();
    },

    async updateQuestionnaire(tx: Tx, id: string, changes: Partial<QuestionnaireTable>): Promise<void> {
      await tx.db.updateTable('questionnaire').set(changes).where('id', '=', id).execute();
    },

    async listQuestionnaires(
      page: Page,
      f: QuestionnaireFilters,
      opts: { deleted: boolean; visibleTo?: Grantees },
    ): Promise<ListResult<Questionnaire>> {
      let q = store.db.selectFrom('questionnaire').where('deleted_at', opts.deleted ? 'is not' : 'is', null);
      if (opts.visibleTo) q = q.where(questionnaireVisible(opts.visibleTo));
      if (f.status) q = q.where('status', '=', f.status);
      if (f.folder_id) q = q.where('folder_id', '=', f.folder_id);
      if (f.lineage_root_id) q = q.where('lineage_root_id', '=', f.lineage_root_id);
      if (f.created_by) q = q.where('created_by', '=', f.created_by);
      if (f.name !== undefined) q = q.where(containsInsensitive('name', f.name));
      if (f.search !== undefined) {
        const s = f.search;
        q = q.where((eb) => eb.or([containsInsensitive('name', s), containsInsensitive('description', s)]));
      }
      if (f.created_at_gte) q = q.where('created_at', '>=', isoParam(f.created_at_gte));
      if (f.created_at_lte) q = q.where('created_at', '<=', isoParam(f.created_at_lte));
      if (f.updated_at_gte) q = q.where('updated_at', '>=', isoParam(f.updated_at_gte));
      if (f.updated_at_lte) q = q.where('updated_at', '<=', isoParam(f.updated_at_lte));
      return paginate(q, page, toQuestionnaire);
    },

    /** Tree nodes: active questionnaires of the given folders (null = the root), without the documents. */
    async questionnairesForTree(f: {
      statuses: readonly QuestionnaireStatus[];
      visibleTo?: Grantees;
    }): Promise<Array<Omit<QuestionnaireTable, 'payload' | 'config' | 'schedule_payload'>>> {
      let q = store.db
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
    },

    // ---- revisions

    async insertRevision(tx: Tx, row: QuestionnaireRevisionTable): Promise<void> {
      await tx.db.insertInto('questionnaire_revision').values(row).execute();
    },

    async findRevision(questionnaireId: string, id: string): Promise<QuestionnaireRevision | undefined> {
      const row = await store.db
        .selectFrom('questionnaire_revision')
        .selectAll()
        .where('id', '=', id)
        .where('questionnaire_id', '=', questionnaireId)
        .executeTakeFirst();
      return row ? toRevision(row) : undefined;
    },

    async listRevisions(questionnaireId: string, page: Page, f: RevisionFilters) {
      let q = store.db.selectFrom('questionnaire_revision').where('questionnaire_id', '=', questionnaireId);
      if (f.operation) q = q.where('operation', '=', f.operation);
      if (f.created_by) q = q.where('created_by', '=', f.created_by);
      if (f.created_at_gte) q = q.where('created_at', '>=', isoParam(f.created_at_gte));
      if (f.created_at_lte) q = q.where('created_at', '<=', isoParam(f.created_at_lte));
      if (f.sequence_gte !== undefined) q = q.where('sequence', '>=', f.sequence_gte);
      if (f.sequence_lte !== undefined) q = q.where('sequence', '<=', f.sequence_lte);
      return paginate(q, page, toRevision);
    },

    /** Revisions 1..sequence in order: what a snapshot replays. */
    async revisionsUpTo(questionnaireId: string, sequence: number): Promise<QuestionnaireRevision[]> {
      const rows = await store.db
        .selectFrom('questionnaire_revision')
        .selectAll()
        .where('questionnaire_id', '=', questionnaireId)
        .where('sequence', '<=', sequence)
        .orderBy('sequence', 'asc')
        .execute();
      return rows.map(toRevision);
    },

    // ---- folders

    async findFolder(id: string, db: Db = store.db): Promise<Folder | undefined> {
      const row = await db
        .selectFrom('folder')
        .selectAll()
        .where('id', '=', id)
        .where('deleted_at', 'is', null)
        .executeTakeFirst();
      return row ? toFolder(row) : undefined;
    },

    /**
     * An active folder, held until the transaction ends: FOR UPDATE by the change that deletes it, FOR
     * SHARE by writes that put something inside it, so nothing lands in a folder being deleted. SQLite
     * serialises write transactions, so there the plain read suffices.
     */
    async lockFolder(tx: Tx, id: string, mode: 'share' | 'update'): Promise<FolderTable | undefined> {
      let q = tx.db.selectFrom('folder').selectAll().where('id', '=', id).where('deleted_at', 'is', null);
      if (tx.dialect === 'postgres') q = mode === 'update' ? q.forUpdate() : q.forShare();
      return q.executeTakeFirst();
    },

    /**
     * Moves of folders take turns on PostgreSQL (a transaction-scoped advisory lock): two concurrent
     * moves could each pass the cycle check and together make a cycle. SQLite serialises writes anyway.
     */
    async serialiseFolderMoves(tx: Tx): Promise<void> {
      if (tx.dialect === 'postgres')
        await sql`select pg_advisory_xact_lock(hashtext('svc.folder.move'))`.execute(tx.db);
    },

    async insertFolder(tx: Tx, row: FolderTable): Promise<void> {
      await tx.db.insertInto('folder').values(row).execute();
    },

    /** Changes an active folder; false when it is gone (deleted meanwhile). */
    updateFolder: (tx: Tx, id: string, changes: Partial<FolderTable>) =>
      updateActive(tx.db, 'folder', id, changes),

    /** The folder and its ancestors (deleted or not), nearest first. */
    async folderChain(folderId: string, db: Db = store.db): Promise<ChainLink[]> {
      const { rows } =
        await sql<ChainLink>`with recursive chain(id, parent_id, config, deleted_at, depth) as (
          select id, parent_id, config, deleted_at, 0 from folder where id = ${folderId}
          union all
          select f.id, f.parent_id, f.config, f.deleted_at, c.depth + 1 from folder f
            join chain c on f.id = c.parent_id where c.depth < ${MAX_DEPTH}
        ) select id, parent_id, config, deleted_at, depth from chain order by depth`.execute(db);
      return rows.map((r) => ({ ...r, depth: Number(r.depth) }));
    },

    /** Levels of the subtree under `folderId`, itself included (1: no subfolders). */
    async subtreeHeight(folderId: string, db: Db = store.db): Promise<number> {
      const { rows } = await sql<{ height: number | string | null }>`with recursive sub(id, level) as (
          select id, 1 from folder where id = ${folderId}
          union all
          select f.id, s.level + 1 from folder f
            join sub s on f.parent_id = s.id where f.deleted_at is null and s.level < ${MAX_DEPTH}
        ) select max(level) as height from sub`.execute(db);
      return Number(rows[0]?.height ?? 1);
    },

    async countFolderContents(tx: Tx, id: string): Promise<{ folders: number; questionnaires: number }> {
      const [folders, questionnaires] = await Promise.all([
        tx.db
          .selectFrom('folder')
          .select((eb) => eb.fn.countAll().as('n'))
          .where('parent_id', '=', id)
          .where('deleted_at', 'is', null)
          .executeTakeFirstOrThrow(),
        tx.db
          .selectFrom('questionnaire')
          .select((eb) => eb.fn.countAll().as('n'))
          .where('folder_id', '=', id)
          .where('deleted_at', 'is', null)
          .executeTakeFirstOrThrow(),
      ]);
      return { folders: Number(folders.n), questionnaires: Number(questionnaires.n) };
    },

    async listFolders(page: Page, f: FolderFilters, visibleTo?: Grantees): Promise<ListResult<Folder>> {
      let q = store.db.selectFrom('folder').where('deleted_at', 'is', null);
      if (visibleTo) q = q.where(sql<SqlBool>`folder.id in ${visibleFolderIds(visibleTo)}`);
      if (f.parent_id) q = q.where('parent_id', '=', f.parent_id);
      if (f.root !== undefined) q = q.where('parent_id', f.root ? 'is' : 'is not', null);
      if (f.name !== undefined) q = q.where(containsInsensitive('name', f.name));
      if (f.search !== undefined) {
        const s = f.search;
        q = q.where((eb) => eb.or([containsInsensitive('name', s), containsInsensitive('description', s)]));
      }
      return paginate(q, page, toFolder);
    },

    /** Every active folder the grantees can see (all of them without `visibleTo`), for the tree. */
    async foldersForTree(visibleTo?: Grantees): Promise<Folder[]> {
      let q = store.db.selectFrom('folder').selectAll().where('deleted_at', 'is', null);
      if (visibleTo) q = q.where(sql<SqlBool>`folder.id in ${visibleFolderIds(visibleTo)}`);
      return (await q.orderBy('name').orderBy('id').execute()).map(toFolder);
    },

    // ---- permissions

    /** The levels granted to the grantees on these folders and (optionally) on one questionnaire. */
    async grantedLevels(
      g: Grantees,
      on: { folderIds: readonly string[]; questionnaireId?: string },
    ): Promise<PermissionLevel[]> {
      const levels: PermissionLevel[] = [];
      if (on.folderIds.length > 0) {
        const rows = await store.db
          .selectFrom('folder_permission')
          .select('level')
          .where('folder_id', 'in', [...on.folderIds])
          .where('deleted_at', 'is', null)
          .where(granteeMatch(g))
          .execute();
        levels.push(...rows.map((r) => r.level));
      }
      if (on.questionnaireId) {
        const rows = await store.db
          .selectFrom('questionnaire_permission')
          .select('level')
          .where('questionnaire_id', '=', on.questionnaireId)
          .where('deleted_at', 'is', null)
          .where(granteeMatch(g))
          .execute();
        levels.push(...rows.map((r) => r.level));
      }
      return levels;
    },

    /**
     * Every level granted to the grantees on each of these questionnaires (deleted or not), directly or
     * on a folder above it, in one query: a recursive walk up from each questionnaire's folder joined to
     * the folder grants, plus the questionnaire grants. Rows repeat per grant; the caller takes the highest.
     */
    async grantedLevelsOnQuestionnaires(
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
        store.db,
      );
      return rows;
    },

    async insertFolderPermission(tx: Tx, row: FolderPermissionTable): Promise<void> {
      await tx.db.insertInto('folder_permission').values(row).execute();
    },

    async insertQuestionnairePermission(tx: Tx, row: QuestionnairePermissionTable): Promise<void> {
      await tx.db.insertInto('questionnaire_permission').values(row).execute();
    },

    async findFolderPermission(id: string, db: Db = store.db): Promise<FolderPermission | undefined> {
      const row = await db
        .selectFrom('folder_permission')
        .selectAll()
        .where('id', '=', id)
        .where('deleted_at', 'is', null)
        .executeTakeFirst();
      return row ? toPermission('folder', row) : undefined;
    },

    async findQuestionnairePermission(
      id: string,
      db: Db = store.db,
    ): Promise<QuestionnairePermission | undefined> {
      const row = await db
        .selectFrom('questionnaire_permission')
        .selectAll()
        .where('id', '=', id)
        .where('deleted_at', 'is', null)
        .executeTakeFirst();
      return row ? toPermission('questionnaire', row) : undefined;
    },

    async updatePermission(
      tx: Tx,
      object: PermissionObject,
      id: string,
      changes: { level?: PermissionLevel; updated_at: string; updated_by: string; deleted_at?: string },
    ): Promise<boolean> {
      return updateActive(tx.db, permissionTable(object), id, changes);
    },

    async listFolderPermissions(page: Page, f: PermissionFilters, visibleTo?: Grantees) {
      let q = store.db.selectFrom('folder_permission').where('deleted_at', 'is', null);
      if (visibleTo) q = q.where(sql<SqlBool>`folder_permission.folder_id in ${visibleFolderIds(visibleTo)}`);
      if (f.object_id) q = q.where('folder_id', '=', f.object_id);
      q = permissionFilters(q, f);
      return paginate(q, page, (r: FolderPermissionTable) => toPermission('folder', r));
    },

    async listQuestionnairePermissions(page: Page, f: PermissionFilters, visibleTo?: Grantees) {
      let q = store.db.selectFrom('questionnaire_permission').where('deleted_at', 'is', null);
      if (visibleTo) {
        q = q.where(
          sql<SqlBool>`questionnaire_permission.questionnaire_id in (select questionnaire.id from questionnaire where ${questionnaireVisible(visibleTo)})`,
        );
      }
      if (f.object_id) q = q.where('questionnaire_id', '=', f.object_id);
      q = permissionFilters(q, f);
      return paginate(q, page, (r: QuestionnairePermissionTable) => toPermission('questionnaire', r));
    },
  };
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

export type QuestionnaireStore = ReturnType<typeof createQuestionnaireStore>;
