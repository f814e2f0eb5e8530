import {
  type Compilable,
  type CompiledQuery,
  type Kysely,
  PostgresAdapter,
  type QueryResult,
  RawNode,
} from 'kysely';
import { QUEUED } from './pg-pipeline.js';
import type { Database } from './schema.js';
import type { Db, Dialect } from './store.js';

/** A value a prepared statement binds: what the drivers take as a parameter. */
type Leaf = string | number | bigint | boolean | null | undefined | Uint8Array;
/** An argument: a value, a list of values (`in`), a row, or rows (`values`); checked as it is walked. */
type Arg = unknown;

/**
 * One shape of a statement, kept for as long as the process runs: only what binding needs. Kysely's
 * operation tree and the compile-time parameters are not kept: for a batch of 256 rows they held
 * thousands of nodes and strings per shape, a large part of the worker thread's live heap under
 * load (docs/performance.md "Memory").
 */
interface Compiled {
  sql: string;
  /**
   * For each parameter, the index of the call's value it takes, or -1 for a constant of the
   * statement; null when the parameters are the call's values in order (most inserts).
   */
  slots: Int32Array | null;
  /** The statement's own constants, in the order they occur among its parameters. */
  constants: unknown[];
  /**
   * A stand-in for Kysely's operation tree, which no driver reads when a compiled query is executed
   * (Kysely's SQLite driver reads it only to stream, which svc never does with a prepared statement).
   */
  query: CompiledQuery['query'];
  queryId: CompiledQuery['queryId'];
}

/** Shapes kept per statement and store. */
const MAX_SHAPES = 1024;
/**
 * Marks a parameter slot while a shape is compiled (every value is a sentinel then): NUL never occurs
 * in svc's SQL text or in a statement's own constants.
 */
const MARK = '\u0000';
const sentinel = (n: number) => `${MARK}${n}${MARK}`;
const slotOf = (p: unknown): number =>
  typeof p === 'string' && p.length > 2 && p.startsWith(MARK) && p.endsWith(MARK)
    ? Number(p.slice(1, -1))
    : -1;
const isRow = (x: unknown): x is Record<string, unknown> =>
  typeof x === 'object' && x !== null && Object.getPrototypeOf(x) === Object.prototype;

/**
 * Walks the arguments in one fixed order: each value goes through `leaf`, and the shape (list
 * lengths, row keys, which values are undefined) is written into the key, so two calls with one key
 * build the same SQL. A row of the same shape as the row before it adds only to a count, so a batch's
 * key stays short. With `keep`, it also answers the arguments with each value replaced by what
 * `leaf` answered (for compiling); a call that only binds skips building that copy.
 */
function walk(args: readonly Arg[], leaf: (v: Leaf) => Leaf, keep: boolean): { key: string; mapped: Arg[] } {
  // Rows are plain objects of plain values; anything else (an expression, a Date) is refused.
  let key = '';
  let previousRow: string | undefined;
  let repeats = 0;
  const endRepeats = () => {
    if (repeats > 0) key += `*${repeats}`;
    repeats = 0;
    previousRow = undefined;
  };
  const value = (v: unknown): Leaf => {
    if (v !== null && typeof v === 'object' && !(v instanceof Uint8Array))
      throw new TypeError('a prepared statement binds plain values only');
    return v === undefined ? undefined : leaf(v as Leaf);
  };
  const row = (r: Record<string, unknown>) => {
    const out: Record<string, Leaf> | undefined = keep ? {} : undefined;
    let shape = '';
    for (const k in r) {
      const v = r[k];
      shape += v === undefined ? `${k}=u,` : `${k}=,`;
      const mapped = value(v);
      if (out) out[k] = mapped;
    }
    if (shape === previousRow) repeats++;
    else {
      endRepeats();
      key += `{${shape}}`;
      previousRow = shape;
    }
    return out;
  };
  const one = (x: unknown) => {
    if (isRow(x)) return row(x);
    endRepeats();
    key += x === undefined ? 'u' : '.';
    return value(x);
  };
  const mapped: Arg[] = [];
  for (const a of args) {
    endRepeats();
    if (Array.isArray(a)) {
      key += `[${a.length}`;
      if (keep) mapped.push(a.map(one));
      else for (const x of a) one(x);
    } else {
      key += '|';
      const m = one(a);
      if (keep) mapped.push(m);
    }
  }
  endRepeats();
  return { key, mapped };
}

/** The parameters of one call: its values, placed among the statement's own constants. */
function parametersOf(c: Compiled, values: Leaf[]): readonly unknown[] {
  if (!c.slots) return values;
  const parameters = new Array<unknown>(c.slots.length);
  let constant = 0;
  for (let i = 0; i < c.slots.length; i++) {
    const slot = c.slots[i];
    parameters[i] = slot === -1 ? c.constants[constant++] : values[slot];
  }
  return parameters;
}

export const dialectOf = (db: Db): Dialect =>
  db.getExecutor().adapter instanceof PostgresAdapter ? 'postgres' : 'sqlite';

/**
 * The rows of a multi-row statement, cut into the batches it runs in, each at most `max` rows.
 *
 * On SQLite every row count is a statement of its own in the connection's cache of prepared
 * statements, and for hundreds of rows its program is a large piece of native memory: batches of
 * every size from 1 to `max` kept up to 256 such statements per connection, prepared again and again
 * as they were evicted (docs/performance.md "Memory"). So on SQLite batches are cut into powers of
 * two, the largest that fits first (37 rows: 32, 4, 1): a handful of shapes per statement, at the
 * cost of a few more statements per batch, which SQLite runs without a round trip. On PostgreSQL,
 * where each statement can be a round trip, a batch is cut only at `max`.
 */
export function* batches<T>(db: Db, rows: readonly T[], max: number): Generator<T[]> {
  const powers = dialectOf(db) === 'sqlite';
  const floorPower = (n: number) => 1 << (31 - Math.clz32(n)); // the largest power of two <= n
  const top = powers ? floorPower(max) : max;
  for (let i = 0; i < rows.length; ) {
    const left = Math.min(rows.length - i, top);
    const size = powers ? floorPower(left) : left;
    yield rows.slice(i, i + size);
    i += size;
  }
}

/**
 * A statement built with Kysely once per dialect and shape (the number of rows or ids, which columns
 * are set), then only re-bound with each call's values. Building and compiling through Kysely was a large share
 * of the pipeline's CPU (docs/performance.md "What makes it fast"); the hottest statements are prepared instead.
 *
 * `build` must use its arguments as values only (they become the statement's parameters; a value
 * that ends up in the SQL text is refused when the statement is first compiled); anything that
 * changes the SQL's shape is either in the key (lengths, keys, undefined) or the dialect.
 */
export function prepared<A extends Arg[], R>(
  build: (db: Kysely<Database>, dialect: Dialect, ...args: A) => Compilable<R> | CompiledQuery<R>,
) {
  // Per Kysely adapter, so a process holding both stores (the tests) keeps their SQL apart.
  const cache = new WeakMap<object, Map<string, Compiled>>();

  const compileFor = (db: Db, args: A): Compiled => {
    const dialect = dialectOf(db);
    let n = 0;
    const { mapped } = walk(args, () => sentinel(n++), true);
    const built = build(db as Kysely<Database>, dialect, ...(mapped as A));
    const compiled = 'sql' in built ? built : built.compile(); // sql`…` templates compile themselves
    if (compiled.sql.includes(MARK)) throw new Error('a prepared statement put a value into its SQL text');
    const slots = Int32Array.from(compiled.parameters, slotOf);
    const inOrder = slots.length === n && slots.every((slot, i) => slot === i);
    return {
      sql: compiled.sql,
      slots: inOrder ? null : slots,
      constants: compiled.parameters.filter((_, i) => slots[i] === -1),
      query: RawNode.createWithSql(compiled.sql),
      queryId: compiled.queryId,
    };
  };

  const bind = (db: Db, args: A): CompiledQuery<R> => {
    const values: Leaf[] = [];
    const { key } = walk(
      args,
      (v) => {
        values.push(v);
        return v;
      },
      false,
    );
    const adapter = db.getExecutor().adapter;
    let byKey = cache.get(adapter);
    if (!byKey) {
      byKey = new Map();
      cache.set(adapter, byKey);
    }
    let c = byKey.get(key);
    if (!c) {
      c = compileFor(db, args);
      // Shapes are few (batch sizes, columns left out); past the bound, a shape is compiled per call
      // rather than letting an unusual caller grow the cache without end.
      if (byKey.size < MAX_SHAPES) byKey.set(key, c);
    }
    return {
      sql: c.sql,
      parameters: parametersOf(c, values),
      query: c.query,
      queryId: c.queryId,
    } as CompiledQuery<R>;
  };

  return {
    /** The statement for these values, for `store.readCommitted`. */
    compile: (db: Db, ...args: A): CompiledQuery<R> => bind(db, args),
    execute: (db: Db, ...args: A): Promise<QueryResult<R>> => db.executeQuery(bind(db, args)),
    /**
     * A write whose result the transaction does not read (an insert of a new row). In a PostgreSQL
     * transaction it is sent with the transaction's next statement, usually its COMMIT, rather than
     * in a round trip of its own (pg-pipeline.ts); should it fail, that statement fails with its
     * error, so the transaction is still all or nothing. Anywhere else it runs at once.
     */
    queue: async (db: Db, ...args: A): Promise<void> => {
      const query = bind(db, args);
      const postgres = dialectOf(db) === 'postgres';
      await db.executeQuery(postgres ? { ...query, sql: QUEUED + query.sql } : query);
    },
  };
}
