import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import SQLite from 'better-sqlite3';
import {
  CompiledQuery,
  Kysely,
  type Dialect as KyselyDialect,
  PostgresDialect,
  type PostgresPool,
  type PostgresPoolClient,
  SqliteDialect,
  sql,
  type Transaction,
} from 'kysely';
import type pg from 'pg';
import { pgDriver } from './pg-driver.js';
import { pipelined } from './pg-pipeline.js';
import type { Database } from './schema.js';
import { lockedWrites, ThreadWriteLock } from './thread-lock.js';
import { groupCommit, insideTransaction, NESTED, oneTransaction } from './transactions.js';

export type Dialect = 'sqlite' | 'postgres';

/** What a store function queries: the store's connection, or a transaction's (`tx.db`). */
export type Db = Kysely<Database> | Transaction<Database>;

/** Whether an update changed a row: how a conditional update (compare-and-set) tells it won. */
export const updatedAny = (result: { numUpdatedRows: bigint } | undefined): boolean =>
  Number(result?.numUpdatedRows ?? 0) > 0;

/**
 * A write in progress. Areas receive it from `Store.transaction` and pass it to `publish`, which
 * only accepts a Tx: an event cannot be written outside the transaction of the change it reports.
 */
export interface Tx {
  readonly db: Transaction<Database>;
  readonly dialect: Dialect;
  /** Runs after a successful commit (never after a rollback). Used to wake the worker. */
  afterCommit(fn: () => void): void;
}

export interface Store {
  readonly db: Kysely<Database>;
  readonly dialect: Dialect;
  readonly url: string;
  /** Every write of an area goes through here. */
  transaction<T>(fn: (tx: Tx) => Promise<T>): Promise<T>;
  /**
   * One write that needs no transaction of its own (the worker's claims and settles). On SQLite it
   * joins the group commit: run alone it would be a commit of its own, writing the pages it touched
   * to the WAL again (the commit was the largest cost of those statements). On PostgreSQL it runs
   * as it is, without BEGIN and COMMIT round trips.
   */
  write<T>(fn: (db: Db) => Promise<T>): Promise<T>;
  /**
   * A read of committed data outside any transaction: the per-request credential check. On a SQLite
   * file it runs on a connection of its own, so it neither waits behind another request's open
   * transaction nor pays Kysely's connection hand-off (see openSqlite).
   */
  readCommitted<R>(query: CompiledQuery<R>): Promise<R[]>;
  /** Statements and transactions run since the store opened (on /metrics; the pipeline benchmark's per-execution counts). */
  readonly activity: StoreActivity;
  /** A SQLite file's write lock between this process's threads (src/db/thread-lock.ts). */
  readonly threadLock?: ThreadWriteLock;
  close(): Promise<void>;
}

export interface StoreActivity {
  statements: number;
  transactions: number;
}

/** Transaction control (BEGIN, COMMIT, ROLLBACK, savepoints): not counted as statements. */
const CONTROL = /^(?:begin|start transaction|commit|rollback|savepoint|release)\b/i;

/** Counts a statement about to run; every SQL text passes here (withStatementCache, withPreparedStatements). */
function countStatement(activity: StoreActivity, sqlText: string): void {
  if (!CONTROL.test(sqlText)) activity.statements++;
}

/**
 * Refuses a connection to code running inside a transaction callback: such code must use `tx.db`.
 * On SQLite (one connection) the query would wait forever for the connection the transaction holds;
 * on PostgreSQL it would silently run outside the transaction. Failing loudly beats both.
 */
function guarded(
  dialect: KyselyDialect,
  activity: StoreActivity,
  beginSql?: string,
  beforeBegin?: () => Promise<void>,
): KyselyDialect {
  return {
    createAdapter: () => dialect.createAdapter(),
    createQueryCompiler: () => dialect.createQueryCompiler(),
    createIntrospector: (db: Kysely<unknown>) => dialect.createIntrospector(db),
    createDriver() {
      const driver = dialect.createDriver();
      return {
        init: () => driver.init(),
        acquireConnection() {
          if (insideTransaction.getStore()?.open) return Promise.reject(new Error(NESTED));
          return driver.acquireConnection();
        },
        beginTransaction: async (conn, settings) => {
          activity.transactions++;
          if (beforeBegin) await beforeBegin();
          if (beginSql) await conn.executeQuery(CompiledQuery.raw(beginSql));
          else await driver.beginTransaction(conn, settings);
        },
        commitTransaction: (conn) => driver.commitTransaction(conn),
        rollbackTransaction: (conn) => driver.rollbackTransaction(conn),
        releaseConnection: (conn) => driver.releaseConnection(conn),
        destroy: () => driver.destroy(),
      };
    },
  };
}

export interface StoreOptions {
  /** Refuse `store.db` inside a transaction callback (tests; see insideTransaction for the cost). */
  guardTransactions?: boolean;
  /**
   * SQLite file: the write lock shared with the other threads of this process on the same file
   * (svc serve's API thread and its worker thread; src/db/thread-lock.ts). Without it (one thread
   * on the file, the default) statements run as prepared, with nothing added to the hot path.
   */
  threadLock?: SharedArrayBuffer;
}

export function openStore(url: string, options: StoreOptions = {}): Store {
  const guard = options.guardTransactions ?? false;
  if (url.startsWith('sqlite:')) return openSqlite(url, guard, options.threadLock);
  return openPostgres(url, guard);
}

/**
 * Switches a file to WAL. On a new file two processes starting at once (svc serve and svc worker)
 * both take the switch's lock; SQLite answers SQLITE_BUSY at once to one of them, without its busy
 * handler (waiting could deadlock), so the switch is retried here for as long as busy_timeout would wait.
 */
function enableWal(conn: SQLite.Database): void {
  const deadline = Date.now() + 5_000;
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (;;) {
    try {
      conn.pragma('journal_mode = WAL');
      return;
    } catch (err) {
      if ((err as { code?: string }).code !== 'SQLITE_BUSY' || Date.now() > deadline) throw err;
      // Start-up only, before anything else runs: a short synchronous pause is harmless.
      Atomics.wait(pause, 0, 0, 20);
    }
  }
}

/** The file a `sqlite:` URL names, or null for `sqlite::memory:` (one connection's own database). */
export function sqliteFile(url: string): string | null {
  const path = url.slice('sqlite:'.length);
  return path === ':memory:' ? null : path;
}

function openSqlite(url: string, guard: boolean, threadLock?: SharedArrayBuffer): Store {
  const file = sqliteFile(url);
  const memory = file === null;
  if (!memory) mkdirSync(dirname(file), { recursive: true });
  const conn = new SQLite(file ?? ':memory:');
  // Takes effect on a new file only (before its first table): freed pages can then be given back to
  // the file system by the prune job. An older file keeps its mode until `svc vacuum` converts it.
  conn.pragma('auto_vacuum = INCREMENTAL');
  // WAL lets readers in other processes (svc worker next to svc serve) proceed during writes.
  if (!memory) enableWal(conn);
  conn.pragma('foreign_keys = ON');
  conn.pragma('busy_timeout = 5000');
  conn.pragma('synchronous = NORMAL');
  // Transactions here are writes (read-then-write), so they BEGIN IMMEDIATE: a deferred BEGIN reads
  // from a snapshot and, if another process (svc worker next to svc serve) committed since, its first
  // write fails at once with SQLITE_BUSY_SNAPSHOT, which busy_timeout cannot wait out. IMMEDIATE takes
  // the write lock up front and waits under busy_timeout instead. In one process it costs nothing:
  // the single connection already runs one transaction at a time; reads outside transactions are
  // unaffected (WAL).
  const activity: StoreActivity = { statements: 0, transactions: 0 };
  const lock = !memory && threadLock ? new ThreadWriteLock(threadLock) : undefined;
  const writes = lock && lockedWrites(conn, lock);
  const db = new Kysely<Database>({
    dialect: guarded(
      new SqliteDialect({ database: withStatementCache(conn, activity, 256, writes?.wrap) }),
      activity,
      'begin immediate',
      writes?.beforeBegin,
    ),
  });
  const store = makeStore(db, 'sqlite', url, guard, activity);
  // An in-memory database is one connection's own; only a file can be read from a second one.
  if (memory) return store;
  // The reader: Kysely's single connection is held for the whole of every transaction, awaits
  // included, so a read through it queues behind any write in progress. WAL lets this second
  // connection read the last committed state meanwhile, synchronously, without the hand-off.
  const reader = new SQLite(file);
  reader.pragma('busy_timeout = 5000');
  // Batched credential checks come in many shapes (one per batch size): room for all of them.
  const statements = withStatementCache(reader, activity, 256);
  return {
    ...store,
    threadLock: lock,
    async readCommitted<R>(query: CompiledQuery<R>) {
      return statements.prepare(query.sql).all(query.parameters as unknown[]) as R[];
    },
    async close() {
      await store.close();
      reader.close();
    },
  };
}

/**
 * Kysely prepares every query anew; preparing costs more than running most of our statements. A
 * cache of prepared statements by SQL text keeps the hot paths (auth, drain, engine) lean. When full
 * it drops the statement prepared longest ago (a hit does not reorder: the hot texts are few and are
 * prepared again at once if dropped, and the bookkeeping of an LRU would cost every request).
 * Safe because every query runs to completion (`all`/`run`) under Kysely's connection mutex; nothing
 * here streams (`iterate`) on SQLite.
 */
function withStatementCache(
  conn: SQLite.Database,
  activity: StoreActivity,
  size = 256,
  wrap?: (stmt: SQLite.Statement, sqlText: string) => SQLite.Statement,
) {
  const cache = new Map<string, SQLite.Statement>();
  return {
    close: () => conn.close(),
    // Kysely's SQLite driver prepares every statement it runs: the one place to count them.
    prepare(sqlText: string) {
      countStatement(activity, sqlText);
      let stmt = cache.get(sqlText);
      if (!stmt) {
        stmt = INCREMENTAL_VACUUM.test(sqlText) ? steppedToTheEnd(conn, sqlText) : conn.prepare(sqlText);
        if (wrap) stmt = wrap(stmt, sqlText);
        if (cache.size >= size) cache.delete(cache.keys().next().value as string);
        cache.set(sqlText, stmt);
      }
      return stmt;
    },
  };
}

const INCREMENTAL_VACUUM = /^\s*pragma\s+incremental_vacuum\b/i;

/**
 * `PRAGMA incremental_vacuum(N)` frees one page per step, and Kysely runs a statement that answers
 * no rows with a single step (`run`): through it the pragma would free one page. This one runs the
 * pragma to its end (`exec`), so the prune job's call frees the N pages it asks for.
 */
function steppedToTheEnd(conn: SQLite.Database, sqlText: string): SQLite.Statement {
  return {
    reader: false,
    readonly: false,
    run: () => {
      conn.exec(sqlText);
      return { changes: 0, lastInsertRowid: 0 };
    },
  } as unknown as SQLite.Statement;
}

/** How long opening a PostgreSQL connection may take before the attempt counts as the store being down. */
export const CONNECT_TIMEOUT_MS = 5_000;

/** Clients whose connection failed while checked out, and why (see openPostgres). */
const lostConnections = new WeakMap<pg.ClientBase, Error>();

function openPostgres(url: string, guard: boolean): Store {
  // A store that accepts connections but never answers (a half-up server, a network black hole) must
  // fail a request with 503 in seconds, not hold it forever.
  const pool = new (pgDriver().Pool)({
    connectionString: url,
    max: 10,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    // Statements go out without waiting for the answers before them: see pg-pipeline.ts.
    pipeline: true,
  } as pg.PoolConfig);
  // An idle client losing its connection must not crash the process; the pool replaces it.
  pool.on('error', () => {});
  // pg-pool listens for a client's errors only while it is idle: one held by a caller (in a
  // transaction, between queries, or just handed over, when a terminated backend's error arrives in
  // the same packet as its first ReadyForQuery) would emit an unhandled 'error' and end the process
  // (a PostgreSQL restart, pg_terminate_backend). Every client gets a listener of its own when it is
  // made, before anyone holds it: the query in flight fails by itself, and release destroys the client.
  pool.on('connect', (client) => {
    client.on('error', (err) => lostConnections.set(client, err));
  });
  const activity: StoreActivity = { statements: 0, transactions: 0 };
  const db = new Kysely<Database>({
    dialect: guarded(new PostgresDialect({ pool: withPreparedStatements(pool, activity) }), activity),
  });
  return makeStore(db, 'postgres', url, guard, activity);
}

/**
 * PostgreSQL parses and plans every unnamed statement anew; as a named (server-side prepared)
 * statement it is parsed once per connection. That doubled the rate of the per-request auth lookup
 * (5.7k to 10.9k queries/s here), and the drain, engine and sender send the same few statements over
 * and over too. Each distinct SQL text gets a name the first time, up to `limit` texts per process
 * (texts whose IN lists vary in length are many; past the limit they run unnamed). A text holding a
 * `;` may be several statements, which cannot be prepared: those run unnamed. Kysely passes every
 * value as a parameter, so a `;` in a value never reaches the text.
 */
function withPreparedStatements(pool: pg.Pool, activity: StoreActivity, limit = 1000): PostgresPool {
  const names = new Map<string, string>();
  const nameOf = (text: string): string | undefined => {
    let name = names.get(text);
    if (name === undefined && names.size < limit && !text.includes(';')) {
      name = `svc_${names.size.toString(36)}`;
      names.set(text, name);
    }
    return name;
  };
  return {
    async connect(): Promise<PostgresPoolClient> {
      const client = await pool.connect();
      // The client's socket, corked while a BEGIN or queued writes go out with the next statement.
      const socket = (client as unknown as pg.Client).connection.stream;
      const send = pipelined(
        (text, values) => {
          const name = nameOf(text);
          return name === undefined ? client.query(text, values) : client.query({ name, text, values });
        },
        (sends) => {
          socket.cork();
          try {
            sends();
          } finally {
            socket.uncork();
          }
        },
      );
      return {
        query: ((textOrCursor: unknown, values?: readonly unknown[]) => {
          if (typeof textOrCursor !== 'string') return client.query(textOrCursor as never);
          countStatement(activity, textOrCursor);
          return send(textOrCursor, values as unknown[]);
        }) as unknown as PostgresPoolClient['query'],
        // A client that lost its connection while held is destroyed rather than returned to the pool.
        release: () => client.release(lostConnections.get(client)),
      };
    },
    end: () => pool.end(),
  };
}

function makeStore(
  db: Kysely<Database>,
  dialect: Dialect,
  url: string,
  guard: boolean,
  activity: StoreActivity,
): Store {
  // PostgreSQL runs transactions side by side on its pool, and its WAL writer already flushes the
  // commits that arrive together in one go; SQLite has one connection, so it groups them itself.
  const transaction: Store['transaction'] =
    dialect === 'sqlite' ? groupCommit(db, guard) : (fn) => oneTransaction(db, dialect, guard, fn);
  return {
    db,
    dialect,
    url,
    activity,
    transaction,
    write: dialect === 'sqlite' ? (fn) => transaction((tx) => fn(tx.db)) : (fn) => fn(db),
    async readCommitted<R>(query: CompiledQuery<R>) {
      return (await db.executeQuery(query)).rows;
    },
    close: () => db.destroy(),
  };
}

/** True when the store answers a trivial query. */
export async function ping(store: Store): Promise<boolean> {
  try {
    await sql`select 1`.execute(store.db);
    return true;
  } catch {
    return false;
  }
}
