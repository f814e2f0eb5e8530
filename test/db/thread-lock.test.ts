import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { CompiledQuery } from 'kysely';
import { describe, expect, it } from 'vitest';
import { openStore } from '../../src/db/store.js';
import { ThreadWriteLock } from '../../src/db/thread-lock.js';

/**
 * The write lock svc serve's API thread and worker thread share on a SQLite file (the threads'
 * writes themselves are covered end to end in test/worker/worker-thread.test.ts). Two locks on one
 * buffer stand for the two threads; a real thread shows a dead holder being freed.
 */
describe('ThreadWriteLock', () => {
  it('excludes a second holder; a wait that runs out answers false (SQLite busy_timeout decides then)', () => {
    const a = new ThreadWriteLock();
    const b = new ThreadWriteLock(a.buffer, 50);
    expect(a.acquire()).toBe(true);
    const started = Date.now();
    expect(b.acquire()).toBe(false);
    expect(Date.now() - started).toBeGreaterThanOrEqual(45);
    a.release();
    expect(b.acquire()).toBe(true);
    b.release();
  });

  it('an asynchronous wait is woken by the release, without polling', async () => {
    const a = new ThreadWriteLock();
    const b = new ThreadWriteLock(a.buffer, 5_000);
    expect(a.acquire()).toBe(true);
    let got: boolean | undefined;
    const waiting = b.acquireAsync().then((v) => (got = v));
    await new Promise((r) => setTimeout(r, 30));
    expect(got).toBeUndefined();
    a.release();
    expect(await waiting).toBe(true);
    b.release();
  });

  it('frees a lock its holder thread took and never released (a thread that died)', async () => {
    const lock = new ThreadWriteLock(undefined, 50);
    const thread = new Worker(
      `const { workerData, threadId } = require('node:worker_threads');
       Atomics.store(new Int32Array(workerData), 0, threadId + 1);`,
      { eval: true, workerData: lock.buffer },
    );
    const id = thread.threadId;
    await new Promise((r) => thread.once('exit', r));
    expect(lock.acquire()).toBe(false);
    lock.releaseFor(id + 1); // another thread's id: nothing happens
    expect(lock.acquire()).toBe(false);
    lock.releaseFor(id);
    expect(lock.acquire()).toBe(true);
    lock.release();
  });

  it('is on a store only where threads share its file: one thread on a file pays nothing for it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-lock-'));
    const alone = openStore(`sqlite:${join(dir, 'a.db')}`);
    const shared = openStore(`sqlite:${join(dir, 'b.db')}`, { threadLock: new SharedArrayBuffer(4) });
    try {
      expect(alone.threadLock).toBeUndefined();
      expect(shared.threadLock).toBeInstanceOf(ThreadWriteLock);
      // A write through the shared store leaves the lock free once it has committed.
      await shared.transaction((tx) => tx.db.executeQuery(CompiledQuery.raw('create table t (x int)')));
      const other = new ThreadWriteLock(shared.threadLock!.buffer, 50);
      expect(other.acquire()).toBe(true);
      other.release();
    } finally {
      await alone.close();
      await shared.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
