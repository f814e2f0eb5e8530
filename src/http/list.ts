import { type Expression, type SelectQueryBuilder, type SqlBool, sql } from 'kysely';

export interface Page {
  limit: number;
  offset: number;
  sort_by: string;
  sort_dir: 'asc' | 'desc';
}

export interface ListResult<T> {
  items: T[];
  total: number;
}

/**
 * A list query split into its page (limit, offset, sort) and the rest, its filters. Routes do this and
 * hand both to the service, which answers a ListResult; the route wraps it with `envelope`.
 */
export function splitListQuery<Q extends Page>(query: Q): { page: Page; filters: Omit<Q, keyof Page> } {
  const { limit, offset, sort_by, sort_dir, ...filters } = query;
  return { page: { limit, offset, sort_by, sort_dir }, filters };
}

/** The list answer of every list route (docs/errors.md "Errors"). */
export function envelope<K extends string, T>(
  key: K,
  result: ListResult<T>,
  page: Pick<Page, 'limit' | 'offset'>,
) {
  return {
    [key]: result.items,
    total: result.total,
    limit: page.limit,
    offset: page.offset,
    has_next: page.offset + result.items.length < result.total,
    has_previous: page.offset > 0,
  } as { [k in K]: T[] } & {
    total: number;
    limit: number;
    offset: number;
    has_next: boolean;
    has_previous: boolean;
  };
}

/**
 * Runs a filtered query twice: once for the total, once for the page in the requested order
 * (ties broken by id so pages never overlap). `base` carries the filters and no selection.
 */
export async function paginate<R>(
  // biome-ignore lint/suspicious/noExplicitAny: one generic helper over every table's builder
  base: SelectQueryBuilder<any, any, any>,
  page: Page,
  // biome-ignore lint/suspicious/noExplicitAny: rows are mapped by the store that knows their table
  map: (row: any) => R,
  /** Explicit columns keep secret columns (hashes) out of lists; default: every column. */
  columns?: readonly string[],
): Promise<ListResult<R>> {
  const [count, rows] = await Promise.all([
    base.select((eb) => eb.fn.countAll().as('total')).executeTakeFirstOrThrow(),
    (columns ? base.select(columns as never) : base.selectAll())
      // NULLs sort as the largest value on both stores (PostgreSQL's default; SQLite's is the reverse),
      // so a page order never depends on the dialect.
      .orderBy(page.sort_by, (ob) =>
        page.sort_dir === 'asc' ? ob.asc().nullsLast() : ob.desc().nullsFirst(),
      )
      .orderBy('id', page.sort_dir)
      .limit(page.limit)
      .offset(page.offset)
      .execute(),
  ]);
  return { items: rows.map(map), total: Number((count as { total: number | string }).total) };
}

/** Escapes LIKE wildcards so user input matches literally. */
export function likePattern(value: string): string {
  return `%${value.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** Normalises an ISO-8601 input to the stored fixed-width form, so text comparison is time order. */
export function isoParam(value: string): string {
  return new Date(value).toISOString();
}

/**
 * Applies the `<column>_gte` / `<column>_lte` filters of `filters` (declared with `TimeRanges`) to
 * `q`, inclusive, each time normalised to the stored form.
 */
// biome-ignore lint/suspicious/noExplicitAny: one helper over every table's builder
export function whereTimeRanges<Q extends SelectQueryBuilder<any, any, any>>(
  q: Q,
  filters: object,
  columns: readonly string[],
): Q {
  const f = filters as Record<string, unknown>;
  let out = q;
  for (const column of columns) {
    const gte = f[`${column}_gte`];
    const lte = f[`${column}_lte`];
    if (typeof gte === 'string') out = out.where(column, '>=', isoParam(gte)) as Q;
    if (typeof lte === 'string') out = out.where(column, '<=', isoParam(lte)) as Q;
  }
  return out;
}

/** Any query builder with a `where` (select, update, delete), whatever its table. */
// biome-ignore lint/suspicious/noExplicitAny: one helper over every table's builder
type Filterable = { where(column: any, op: '=', value: any): unknown };

/**
 * Applies equality filters (a list's, or those of a bulk change): `column = value` for each value
 * given (undefined or '' filters nothing). A boolean compares with the stored 0/1 (db/schema.ts).
 */
export function whereEquals<Q extends Filterable>(
  q: Q,
  filters: Record<string, string | number | boolean | undefined>,
): Q {
  let out = q;
  for (const [column, value] of Object.entries(filters)) {
    if (value === undefined || value === '') continue;
    out = out.where(column, '=', typeof value === 'boolean' ? Number(value) : value) as Q;
  }
  return out;
}

/** Case-insensitive substring match on a column, the same on SQLite and PostgreSQL. */
function containsInsensitive(column: string, value: string): Expression<SqlBool> {
  // SQLite's LIKE has no default escape character, so ESCAPE is explicit for both stores.
  return sql<SqlBool>`lower(${sql.ref(column)}) like ${likePattern(value.toLowerCase())} escape '\\'`;
}

/**
 * A list's filters, declared: each value given narrows the rows, a value not given (undefined, or
 * '', which list schemas refuse anyway) narrows nothing. Lists apply them with `listActive` or
 * `whereFilters`; range filters (numbers, `whereTimeRanges`) are spelled out beside them.
 */
export interface ListFilters {
  /** `column = value` (as `whereEquals`). */
  equals?: Record<string, string | number | boolean | undefined>;
  /** Case-insensitive partial match, one column each (`name`-like filters). */
  contains?: Record<string, string | undefined>;
  /** The list's `search`: a case-insensitive partial match in any of the columns. */
  search?: { value: string | undefined; in: readonly string[] };
}

/** Any select query, whatever its table. */
// biome-ignore lint/suspicious/noExplicitAny: one helper over every table's builder
type AnySelect = SelectQueryBuilder<any, any, any>;

/** Applies a list's declared filters to `q`. */
export function whereFilters<Q extends AnySelect>(q: Q, filters: ListFilters): Q {
  let out = whereEquals(q, filters.equals ?? {});
  for (const [column, value] of Object.entries(filters.contains ?? {})) {
    if (value) out = out.where(containsInsensitive(column, value)) as Q;
  }
  const search = filters.search;
  if (search?.value) {
    const value = search.value;
    out = out.where((eb) => eb.or(search.in.map((column) => containsInsensitive(column, value)))) as Q;
  }
  return out;
}
