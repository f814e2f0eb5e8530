import { type TObject, type TOptional, type TProperties, type TSchema, Type } from '@sinclair/typebox';
import { Timestamp } from './schemas.js';

/** The list query language of every list endpoint (docs/errors.md "Errors"): paging, sorting, filters, the envelope. */

/**
 * The inclusive range filters of a list query, `<column>_gte` and `<column>_lte` for each time
 * column: `...TimeRanges('created_at', 'updated_at')`. Stores apply them with `whereTimeRanges`.
 */
export function TimeRanges<C extends string>(...columns: C[]) {
  return Object.fromEntries(
    columns.flatMap((c) => [
      [`${c}_gte`, Type.Optional(Timestamp)],
      [`${c}_lte`, Type.Optional(Timestamp)],
    ]),
  ) as { [K in `${C}_gte` | `${C}_lte`]: TOptional<typeof Timestamp> };
}

/** The filter fields `TimeRanges` declares, as the stores' filter types spell them. */
export type TimeRangeFilters<C extends string> = { [K in `${C}_gte` | `${C}_lte`]?: string };
/**
 * Largest `offset` a list accepts. Unbounded, a value past 2^63 reached the store as a float
 * (SQLite: SQLITE_MISMATCH; PostgreSQL: bigint out of range) and answered 500; 10^9 is far beyond any
 * real page and fits every store's integer.
 */
export const MAX_OFFSET = 1_000_000_000;

/** The order of a list when the query names none: newest first. */
const NEWEST_FIRST = { sortBy: 'created_at', sortDir: 'desc' } as const;

/**
 * Query of a list endpoint: limit/offset (docs/errors.md "Errors": limit 1..250, default 25; offset 0..MAX_OFFSET),
 * sorting over `sortable` (an unknown column is a 400 naming the allowed values; `defaults` when the
 * query names none, newest first unless said otherwise), plus the endpoint's own filters.
 */
export function ListQuery<P extends TProperties>(
  sortable: readonly string[],
  filters: P,
  defaults: { sortBy: string; sortDir?: 'asc' | 'desc' } = NEWEST_FIRST,
) {
  if (!sortable.includes(defaults.sortBy)) throw new Error(`default sort ${defaults.sortBy} is not sortable`);
  return Type.Object(
    {
      limit: Type.Integer({ minimum: 1, maximum: 250, default: 25 }),
      offset: Type.Integer({ minimum: 0, maximum: MAX_OFFSET, default: 0 }),
      sort_by: Type.Union(
        sortable.map((s) => Type.Literal(s)),
        { default: defaults.sortBy },
      ),
      sort_dir: Type.Union([Type.Literal('asc'), Type.Literal('desc')], {
        default: defaults.sortDir ?? 'desc',
      }),
      ...filters,
    },
    { additionalProperties: false },
  );
}

/** Response of a list endpoint: the items under `key` plus the envelope. */
export function ListResponse<K extends string, T extends TSchema>(key: K, item: T): TObject {
  const properties: TProperties = {
    [key]: Type.Array(item),
    total: Type.Integer(),
    limit: Type.Integer(),
    offset: Type.Integer(),
    has_next: Type.Boolean(),
    has_previous: Type.Boolean(),
  };
  return Type.Object(properties);
}

/** A query boolean: exactly `true` or `false` (docs/errors.md "Errors"). */
export const QueryBoolean = Type.Boolean();

/**
 * A list's partial-match filter (`search`, and `name`-like filters): case-insensitive, on `what`.
 * Bounded: a longer value is a 400, where SQLite would refuse the LIKE pattern (over 50,000 bytes)
 * with a 500; no search needs more than a URL's length.
 */
export const Search = (what: string, maxLength = 200) =>
  Type.String({ minLength: 1, maxLength, description: `Case-insensitive partial match on ${what}.` });
