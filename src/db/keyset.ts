import { type RawBuilder, sql } from 'kysely';

/** The position of a row in creation order: where the next page starts after it. */
export interface CreationKey {
  created_at: string;
  id: string;
}

/**
 * Rows after `key` in (created_at, id) order. The plain `created_at >=` term is what lets either
 * store start an index range there; the row value then skips the rows of that instant already read.
 */
export const createdAfter = (key: CreationKey): RawBuilder<boolean> =>
  sql<boolean>`created_at >= ${key.created_at} and (created_at, id) > (${key.created_at}, ${key.id})`;

/**
 * Every row a query selects, a page at a time in creation order, each page starting after the last
 * row of the one before: memory holds one page however many rows there are (`svc export`).
 * `page(after, size)` answers the rows after `after` (all from the start when undefined), ordered by
 * (created_at, id), at most `size`.
 */
export async function* pagesByCreation<R extends CreationKey>(
  page: (after: CreationKey | undefined, size: number) => Promise<R[]>,
  size: number,
): AsyncGenerator<R[]> {
  let after: CreationKey | undefined;
  for (;;) {
    const rows = await page(after, size);
    if (rows.length > 0) yield rows;
    if (rows.length < size) return;
    const last = rows[rows.length - 1];
    after = { created_at: last.created_at, id: last.id };
  }
}
