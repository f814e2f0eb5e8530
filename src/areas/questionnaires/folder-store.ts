import { type SqlBool, sql } from 'kysely';
import { countWhere, findActive, updateActive } from '../../db/audit.js';
import type { Db, Tx } from '../../db/store.js';
import { type ListResult, type Page, paginate, whereFilters } from '../../http/list.js';
import { type Folder, toFolder } from './records.js';
import type { FolderTable } from './tables.js';
import { type Grantees, MAX_DEPTH, visibleFolderIds } from './visibility.js';

/** The folder tree (table folder): reads, locks and the walks up and down it. */
export interface FolderFilters {
  parent_id?: string;
  root?: boolean;
  name?: string;
  search?: string;
}

/** A folder and its place in the chain above a starting folder (depth 0 = the folder itself). */
export interface ChainLink {
  id: string;
  parent_id: string | null;
  config: string;
  deleted_at: string | null;
  depth: number;
}

export async function findFolder(db: Db, id: string): Promise<Folder | undefined> {
  const row = await findActive(db, 'folder', id);
  return row ? toFolder(row) : undefined;
}

/**
 * An active folder, held until the transaction ends: FOR UPDATE by the change that deletes it, FOR
 * SHARE by writes that put something inside it, so nothing lands in a folder being deleted. SQLite
 * serialises write transactions, so there the plain read suffices.
 */
export async function lockFolder(
  tx: Tx,
  id: string,
  mode: 'share' | 'update',
): Promise<FolderTable | undefined> {
  let q = tx.db.selectFrom('folder').selectAll().where('id', '=', id).where('deleted_at', 'is', null);
  if (tx.dialect === 'postgres') q = mode === 'update' ? q.forUpdate() : q.forShare();
  return q.executeTakeFirst();
}

/**
 * Moves of folders take turns on PostgreSQL (a transaction-scoped advisory lock): two concurrent
 * moves could each pass the cycle check and together make a cycle. SQLite serialises writes anyway.
 */
export async function serialiseFolderMoves(tx: Tx): Promise<void> {
  if (tx.dialect === 'postgres')
    await sql`select pg_advisory_xact_lock(hashtext('svc.folder.move'))`.execute(tx.db);
}

export async function insertFolder(tx: Tx, row: FolderTable): Promise<void> {
  await tx.db.insertInto('folder').values(row).execute();
}

/** Changes an active folder; false when it is gone (deleted meanwhile). */
export function updateFolder(tx: Tx, id: string, changes: Partial<FolderTable>): Promise<boolean> {
  return updateActive(tx.db, 'folder', id, changes);
}

/** The folder and its ancestors (deleted or not), nearest first. */
export async function folderChain(db: Db, folderId: string): Promise<ChainLink[]> {
  const { rows } = await sql<ChainLink>`with recursive chain(id, parent_id, config, deleted_at, depth) as (
      select id, parent_id, config, deleted_at, 0 from folder where id = ${folderId}
      union all
      select f.id, f.parent_id, f.config, f.deleted_at, c.depth + 1 from folder f
        join chain c on f.id = c.parent_id where c.depth < ${MAX_DEPTH}
    ) select id, parent_id, config, deleted_at, depth from chain order by depth`.execute(db);
  return rows.map((r) => ({ ...r, depth: Number(r.depth) }));
}

/** Levels of the subtree under `folderId`, itself included (1: no subfolders). */
export async function subtreeHeight(db: Db, folderId: string): Promise<number> {
  const { rows } = await sql<{ height: number | string | null }>`with recursive sub(id, level) as (
      select id, 1 from folder where id = ${folderId}
      union all
      select f.id, s.level + 1 from folder f
        join sub s on f.parent_id = s.id where f.deleted_at is null and s.level < ${MAX_DEPTH}
    ) select max(level) as height from sub`.execute(db);
  return Number(rows[0]?.height ?? 1);
}

export async function countFolderContents(
  tx: Tx,
  id: string,
): Promise<{ folders: number; questionnaires: number }> {
  const [folders, questionnaires] = await Promise.all([
    countWhere(tx.db, 'folder', { parent_id: id, deleted_at: null }),
    countWhere(tx.db, 'questionnaire', { folder_id: id, deleted_at: null }),
  ]);
  return { folders, questionnaires };
}

export async function listFolders(
  db: Db,
  page: Page,
  f: FolderFilters,
  visibleTo?: Grantees,
): Promise<ListResult<Folder>> {
  let q = db.selectFrom('folder').where('deleted_at', 'is', null);
  if (visibleTo) q = q.where(sql<SqlBool>`folder.id in ${visibleFolderIds(visibleTo)}`);
  if (f.root !== undefined) q = q.where('parent_id', f.root ? 'is' : 'is not', null);
  q = whereFilters(q, {
    equals: { parent_id: f.parent_id },
    contains: { name: f.name },
    search: { value: f.search, in: ['name', 'description'] },
  });
  return paginate(q, page, toFolder);
}

/** Every active folder the grantees can see (all of them without `visibleTo`), for the tree. */
export async function foldersForTree(db: Db, visibleTo?: Grantees): Promise<Folder[]> {
  let q = db.selectFrom('folder').selectAll().where('deleted_at', 'is', null);
  if (visibleTo) q = q.where(sql<SqlBool>`folder.id in ${visibleFolderIds(visibleTo)}`);
  return (await q.orderBy('name').orderBy('id').execute()).map(toFolder);
}
