import { AsyncLocalStorage } from 'node:async_hooks';
import { CompiledQuery, type ControlledTransaction, type Kysely } from 'kysely';
import type { Database } from './schema.js';
import type { Dialect, Store, Tx } from './store.js';

// How `Store.transaction` runs callbacks: one transaction each (PostgreSQL), or group commit (SQLite).

/**
 * Marks the async context of a transaction callback while it runs. Work the callback starts without
 * awaiting (timers, fire-and-forget promises) inherits the mark, so the mark is turned off when the
 * callback settles: only a query made while the transaction is still open is refused.
 *
 * Only stores opened with `guardTransactions` (the test suite's) mark anything. On Node 20 the first
 * AsyncLocalStorage.run turns on promise hooks for the whole process, after which every promise costs
 * several times as much: a tax on
 * every hot path to catch a programming error that the test suite already catches.
 */
export const insideTransaction = new AsyncLocalStorage<{ open: boolean }>();

export const NESTED = 'store.db used inside a transaction callback: use tx.db';

/** Runs a transaction callback, marked when the store guards transactions (see insideTransaction). */
function runMarked<T>(guard: boolean, fn: () => Promise<T>): Promise<T> {
  if (!guard) return fn();
  const mark = { open: true };
  return insideTransaction.run(mark, fn).finally(() => {
    mark.open = false;
  });
}

/** One callback in one transaction of its own. */
export async function oneTransaction<T>(
  db: Kysely<Database>,
  dialect: Dialect,
  guard: boolean,
  fn: (tx: Tx) => Promise<T>,
): Promise<T> {
  const hooks: Array<() => void> = [];
  // The callback runs marked, so the guard above refuses `store.db` there; the connection itself
  // is acquired (and the after-commit hooks run) outside the mark.
  const result = await db.transaction().execute((trx) => {
    const tx: Tx = { db: trx, dialect, afterCommit: (hook) => hooks.push(hook) };
    return runMarked(guard, () => fn(tx));
  });
  for (const hook of hooks) hook();
  return result;
}

/** The savepoint statements of a group, compiled once (two or three per callback: worth it). */
const SAVEPOINT = {
  savepoint: CompiledQuery.raw('savepoint svc_tx'),
  release: CompiledQuery.raw('release svc_tx'),
  'rollback to': CompiledQuery.raw('rollback to svc_tx'),
};

/** The most callbacks one SQLite commit carries: bounds how long the first of them waits for it. */
const GROUP_LIMIT = 64;

interface Queued {
  fn: (tx: Tx) => Promise<unknown>;
  resolve(value: unknown): void;
  reject(err: unknown): void;
}

/**
 * Group commit on SQLite. Its one connection runs one transaction at a time, and a commit costs more
 * than the statements it commits (it writes every page they touched to the WAL, a large share of a
 * submission request). So callbacks that queue while a transaction runs share the next
 * commit: each runs in a savepoint of its own inside one `BEGIN IMMEDIATE`, in arrival order, and a
 * callback that throws is rolled back to its savepoint and rejected alone. The commit comes when the
 * queue is empty (or GROUP_LIMIT callbacks in), and only then does any of them resolve and run its
 * after-commit hooks: nothing is answered before it is durable, exactly as with a commit each. Under
 * no load a group is one callback, with no wait. Should the commit fail, or an error take the whole
 * transaction with it (SQLite rolls back everything on SQLITE_FULL or an I/O error), every callback
 * of the group is rejected: none of them was committed.
 */
export function groupCommit(db: Kysely<Database>, guard: boolean): Store['transaction'] {
  const queue: Queued[] = [];
  let running = false;
  const control = (trx: ControlledTransaction<Database>, command: keyof typeof SAVEPOINT) =>
    trx.executeQuery(SAVEPOINT[command]);

  async function runGroup(): Promise<void> {
    let trx: ControlledTransaction<Database>;
    try {
      trx = await db.startTransaction().execute();
    } catch (err) {
      // No transaction could begin (the lock of another process held past busy_timeout): the group fails.
      for (const q of queue.splice(0, GROUP_LIMIT)) q.reject(err);
      return;
    }
    const done: Array<{ q: Queued; result: unknown; hooks: Array<() => void> }> = [];
    let lost: unknown;
    for (let n = 0; n < GROUP_LIMIT && queue.length > 0 && lost === undefined; n++) {
      const q = queue.shift() as Queued;
      const hooks: Array<() => void> = [];
      const tx: Tx = { db: trx, dialect: 'sqlite', afterCommit: (hook) => hooks.push(hook) };
      try {
        await control(trx, 'savepoint');
        const result = await runMarked(guard, () => q.fn(tx));
        await control(trx, 'release');
        done.push({ q, result, hooks });
      } catch (err) {
        q.reject(err);
        try {
          await control(trx, 'rollback to');
          await control(trx, 'release');
        } catch {
          lost = err; // the savepoint is gone: SQLite ended the whole transaction
        }
      }
    }
    try {
      if (lost !== undefined) throw lost;
      await trx.commit().execute();
    } catch (err) {
      await trx
        .rollback()
        .execute()
        .catch(() => {});
      for (const { q } of done) q.reject(err);
      return;
    }
    for (const { q, result, hooks } of done) {
      // A hook that throws fails its own caller (committed all the same, as with a transaction of its
      // own), never the rest of the group.
      try {
        for (const hook of hooks) hook();
        q.resolve(result);
      } catch (err) {
        q.reject(err);
      }
    }
  }

  async function drain(): Promise<void> {
    running = true;
    try {
      while (queue.length > 0) await runGroup();
    } finally {
      running = false;
    }
  }

  return <T>(fn: (tx: Tx) => Promise<T>) =>
    new Promise<T>((resolve, reject) => {
      // A transaction begun inside another's callback would wait for the group running that callback.
      if (insideTransaction.getStore()?.open) throw new Error(NESTED);
      queue.push({ fn, resolve: resolve as (value: unknown) => void, reject });
      if (!running) void drain();
    });
}
