import { threadId } from 'node:worker_threads';
import type SQLite from 'better-sqlite3';

/**
 * Hands SQLite's write lock between the threads of one process (svc serve's API thread and its
 * worker thread, each on a connection of its own) without SQLite's busy handler: that handler polls
 * by sleeping (1, 2, 5, 10 ms...), so a thread that found the file locked for a few hundred µs lost a
 * millisecond or more, and each thread's commits stalled the other. A thread about to write waits
 * here instead, on a word of shared memory, and is woken the moment the other commits.
 *
 * It only schedules: correctness stays with SQLite's own locks (a wait that runs out, or another
 * process's lock, falls back to busy_timeout). The word holds the owner's thread id + 1, so the
 * main thread can free it should a worker thread die holding it (`releaseFor`).
 *
 * A COMMIT's automatic checkpoint (every ~1,000 pages, several ms) runs under it too. Checkpoints
 * outside it were measured and not kept: without one inside, the log never starts over under load
 * (docs/performance.md "Measured and not kept").
 */
export class ThreadWriteLock {
  private readonly cell: Int32Array;
  private readonly me = threadId + 1;

  constructor(
    readonly buffer: SharedArrayBuffer = new SharedArrayBuffer(4),
    private readonly waitMs = 5_000,
  ) {
    this.cell = new Int32Array(buffer);
  }

  /** Takes the lock; false when it waited `waitMs` in vain (then SQLite's busy_timeout decides). */
  acquire(): boolean {
    const deadline = Date.now() + this.waitMs;
    for (;;) {
      const tried = this.tryTake(deadline);
      if (typeof tried === 'boolean') return tried;
      Atomics.wait(this.cell, 0, tried.owner, tried.left);
    }
  }

  /** `acquire` without blocking the thread's event loop while it waits (before a BEGIN). */
  async acquireAsync(): Promise<boolean> {
    const deadline = Date.now() + this.waitMs;
    for (;;) {
      const tried = this.tryTake(deadline);
      if (typeof tried === 'boolean') return tried;
      const waited = waitAsync(this.cell, 0, tried.owner, tried.left);
      if (waited.async) await waited.value;
    }
  }

  /** One try: taken (true), out of time (false), or whom to wait for and how long at most. */
  private tryTake(deadline: number): boolean | { owner: number; left: number } {
    const owner = Atomics.compareExchange(this.cell, 0, 0, this.me);
    if (owner === 0) return true;
    const left = deadline - Date.now();
    return left <= 0 ? false : { owner, left };
  }

  release(): void {
    this.releaseFor(threadId);
  }

  /** Frees the lock if the thread `id` held it (this one's, or one that ended holding it). */
  releaseFor(id: number): void {
    if (Atomics.compareExchange(this.cell, 0, id + 1, 0) === id + 1) Atomics.notify(this.cell, 0, 1);
  }
}

// Node 20 has it; TypeScript's ES2023 library does not declare it yet.
const waitAsync = (
  Atomics as unknown as {
    waitAsync(
      cell: Int32Array,
      index: number,
      value: number,
      timeout: number,
    ): { async: false; value: string } | { async: true; value: Promise<string> };
  }
).waitAsync;

const BEGIN = /^\s*begin\b/i;

/**
 * A connection's statements, each run under the lock where it writes: from a BEGIN (or a write
 * outside a transaction) until the connection is out of its transaction again. Reads outside a
 * transaction never take it (WAL readers do not block writers). Answers what wraps a prepared
 * statement (kept in the statement cache, so once per SQL text).
 */
export function lockedWrites(conn: SQLite.Database, lock: ThreadWriteLock) {
  let held = false;
  /**
   * Takes the lock ahead of a transaction's BEGIN, waiting without blocking: the API thread keeps
   * accepting and checking requests meanwhile (they join the next group commit).
   */
  const beforeBegin = async (): Promise<void> => {
    if (!held && !conn.inTransaction) held = await lock.acquireAsync();
  };
  const locked = <T>(takes: boolean, run: () => T): T => {
    if (!held && !conn.inTransaction) {
      if (!takes) return run();
      held = lock.acquire();
    }
    try {
      return run();
    } finally {
      if (held && !conn.inTransaction) {
        held = false;
        lock.release();
      }
    }
  };
  const wrap = (stmt: SQLite.Statement, sqlText: string): SQLite.Statement => {
    // Transaction control counts as read-only to SQLite; a BEGIN starts a write all the same.
    const takes = !stmt.readonly || BEGIN.test(sqlText);
    return {
      reader: stmt.reader,
      readonly: stmt.readonly,
      all: (...params: unknown[]) => locked(takes, () => stmt.all(...params)),
      run: (...params: unknown[]) => locked(takes, () => stmt.run(...params)),
      get: (...params: unknown[]) => locked(takes, () => stmt.get(...params)),
      iterate: (...params: unknown[]) => stmt.iterate(...params),
    } as unknown as SQLite.Statement;
  };
  return { wrap, beforeBegin };
}
