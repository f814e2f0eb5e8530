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
 * Active rows are filtered with the plain `.where('deleted_at', 'is', null)` (docs/architecture.md);
 * the active row of an id is read with `findActive`, and changed through `updateActive`, whose answer
 * says whether there was one.
 */
import type { Kysely, Selectable, Transaction, UpdateObject } from 'kysely';
import type { Database } from './schema.js';

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
  return Number(res.numUpdatedRows) > 0;
}

/** The active row `id` of `table`, every column; undefined when it is missing or soft-deleted. */
export async function findActive<T extends SoftDeletable>(
  db: Kysely<Database> | Transaction<Database>,
  table: T,
  id: string,
): Promise<Selectable<Database[T]> | undefined> {
  // As in updateActive: the generic table name is checked at the call, not inside.
  const row = await (db as Kysely<Database>)
    .selectFrom(table as SoftDeletable)
    .selectAll()
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  return row as Selectable<Database[T]> | undefined;
}
