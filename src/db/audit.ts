/**
 * How rows carry the audit columns (created_at, updated_at, updated_by, deleted_at) and soft deletes.
 * It lives in db/ next to schema.ts because these columns are a convention of the tables, shared by
 * every area's tables.ts; lib/ knows no tables and http/ no rows. Services that build rows use it too.
 *
 * Each helper writes exactly the columns its name says, so use it only on a table that has all of
 * them: TypeScript checks no excess property that comes from a spread or a function's result, so a
 * column the table lacks would type-check and fail only when the SQL runs. Tables without
 * `updated_by` (runs, deliveries, tasks, plugin definitions) or without `updated_at` (refresh tokens,
 * workflow edges) spell their few columns out instead.
 *
 * And the row helpers every store shares, which take the table as their second argument (so the
 * architecture check sees who touches which table): the active row of an id is read with
 * `findActive` and changed through `updateActive`, whose answer says whether there was one; a row by
 * another unique key is `findWhere` (`countWhere` counts); a plain list of active rows is
 * `listActive`. Other reads of active rows spell out `.where('deleted_at', 'is', null)`.
 */
import type { Kysely, Selectable, Transaction, UpdateObject } from 'kysely';
import { type ListFilters, type ListResult, type Page, paginate, whereFilters } from '../http/list.js';
import type { Database } from './schema.js';
import { updatedAny } from './store.js';

/** The columns of a new row: created and last changed now, by `by`, not deleted. */
export function auditInsert<By extends string | null>(at: string, by: By) {
  return { created_at: at, updated_at: at, updated_by: by, deleted_at: null };
}

/** The columns every change of a row sets. */
export function auditUpdate<By extends string | null>(at: string, by: By) {
  return { updated_at: at, updated_by: by };
}

/** The change that soft-deletes a row: the row stays, marked deleted, and counts as a change. */
export function softDeleted<By extends string | null>(at: string, by: By) {
  return { deleted_at: at, updated_at: at, updated_by: by };
}

/** Tables whose rows have an `id` and a soft-delete column. */
type SoftDeletable = {
  [K in keyof Database]: Database[K] extends { id: string; deleted_at: string | null } ? K : never;
}[keyof Database];

/**
 * Changes the active row `id` of `table` (a soft delete too); false when there is none: missing, or
 * deleted meanwhile. The `deleted_at is null` condition makes concurrent deletes safe: on PostgreSQL a
 * second one waits for the first's row lock, then matches nothing, so exactly one succeeds.
 */
export async function updateActive<T extends SoftDeletable>(
  db: Kysely<Database> | Transaction<Database>,
  table: T,
  id: string,
  changes: UpdateObject<Database, T>,
): Promise<boolean> {
  // Kysely cannot narrow a table name held in a generic; the signature above keeps callers checked.
  const res = await (db as Kysely<Database>)
    .updateTable(table as SoftDeletable)
    .set(changes as never)
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  return updatedAny(res);
}

/**
 * The active row `id` of `table`; undefined when it is missing or soft-deleted. `columns` (default:
 * every column) keeps secret columns (hashes) out; `orDeleted` finds a soft-deleted row too (what a
 * delete answers).
 */
export async function findActive<
  T extends SoftDeletable,
  C extends keyof Selectable<Database[T]> & string = keyof Selectable<Database[T]> & string,
>(
  db: Kysely<Database> | Transaction<Database>,
  table: T,
  id: string,
  opts: { columns?: readonly C[]; orDeleted?: boolean } = {},
): Promise<Pick<Selectable<Database[T]>, C> | undefined> {
  const where = opts.orDeleted ? { id } : { id, deleted_at: null };
  return findWhere<T, C>(db, table, where as Equalities<T>, opts.columns);
}

/**
 * Column values a row must have, each compared with `=` (`null`: `is null`). Every value must be
 * given: an undefined one would match any row, so it throws (a caller's bug) instead.
 */
type Equalities<T extends keyof Database> = {
  [K in keyof Selectable<Database[T]> & string]?: string | number | null;
};

// biome-ignore lint/suspicious/noExplicitAny: one helper over every table's builder
function whereAll<Q extends { where(column: any, op: '=' | 'is', value: any): any }>(q: Q, where: object): Q {
  let out = q;
  for (const [column, value] of Object.entries(where)) {
    if (value === undefined) throw new Error(`no value for ${column}: it would match every row`);
    out = out.where(column, value === null ? 'is' : '=', value);
  }
  return out;
}

/**
 * The row of `table` whose columns have the values of `where` (a unique key: a token hash, or an id
 * under its parent's URL so that another parent's row is not found); `columns` as in findActive.
 */
export async function findWhere<
  T extends keyof Database,
  C extends keyof Selectable<Database[T]> & string = keyof Selectable<Database[T]> & string,
>(
  db: Kysely<Database> | Transaction<Database>,
  table: T,
  where: Equalities<T>,
  columns?: readonly C[],
): Promise<Pick<Selectable<Database[T]>, C> | undefined> {
  // As in updateActive: the generic table name is checked at the call, not inside.
  const rows = whereAll((db as Kysely<Database>).selectFrom(table as keyof Database), where);
  const row = await (columns ? rows.select(columns as never) : rows.selectAll()).executeTakeFirst();
  return row as Pick<Selectable<Database[T]>, C> | undefined;
}

/** How many rows of `table` have the values of `where`. */
export async function countWhere<T extends keyof Database>(
  db: Kysely<Database> | Transaction<Database>,
  table: T,
  where: Equalities<T>,
): Promise<number> {
  const rows = whereAll((db as Kysely<Database>).selectFrom(table as keyof Database), where);
  const row = await rows.select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow();
  return Number(row.n);
}

/**
 * A page of the active rows of `table` that pass `filters`, each mapped by `map`; `columns` as in
 * `paginate`. A list that needs more (a join, who may see what) builds its query with `whereFilters`.
 */
export function listActive<T extends SoftDeletable, R>(
  db: Kysely<Database> | Transaction<Database>,
  table: T,
  page: Page,
  filters: ListFilters,
  map: (row: Selectable<Database[T]>) => R,
  columns?: readonly string[],
): Promise<ListResult<R>> {
  // As in updateActive: the generic table name is checked at the call, not inside.
  const active = (db as Kysely<Database>).selectFrom(table as SoftDeletable).where('deleted_at', 'is', null);
  return paginate(whereFilters(active, filters), page, map, columns);
}
