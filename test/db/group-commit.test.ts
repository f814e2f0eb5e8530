import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../../src/db/store.js';
import { dialectName, onPostgres, sharedDatabase, type TestDatabase } from '../helpers/store.js';

/**
 * Transactions that arrive together: on SQLite they share commits (src/db/store.ts groupCommit), on
 * PostgreSQL each has its own. On both, each callback is all or nothing on its own, and none is
 * answered (nor its after-commit hooks run) before its writes are committed.
 */
describe(`concurrent transactions (${dialectName})`, () => {
  let db: TestDatabase;
  let store: Store;
  /** A second connection that sees only committed data (a SQLite file, or the same PostgreSQL database). */
  let observer: Store;
  beforeAll(async () => {
    db = await sharedDatabase('svc-group-');
    store = openStore(db.url, { guardTransactions: true });
    observer = openStore(db.url);
    await sql`create table group_probe (n integer primary key)`.execute(store.db);
  });
  afterAll(async () => {
    await store.close();
    await observer.close();
    await db.drop();
  });

  const committed = async () =>
    (await sql<{ n: number }>`select n from group_probe order by n`.execute(observer.db)).rows.map(
      (r) => r.n,
    );

  it('a callback that throws is rolled back alone; the others commit', async () => {
    const outcomes = await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) =>
        store.transaction(async (tx) => {
          await sql`insert into group_probe (n) values (${i})`.execute(tx.db);
          await sql`insert into group_probe (n) values (${1000 + i})`.execute(tx.db);
          if (i % 5 === 2) throw new Error(`callback ${i} fails`);
          return i;
        }),
      ),
    );
    const failed = outcomes.flatMap((o, i) => (o.status === 'rejected' ? [i] : []));
    expect(failed).toEqual([2, 7, 12, 17]);
    expect((outcomes[7] as PromiseRejectedResult).reason.message).toBe('callback 7 fails');
    expect(outcomes.flatMap((o) => (o.status === 'fulfilled' ? [o.value] : []))).toHaveLength(16);
    const kept = Array.from({ length: 20 }, (_, i) => i).filter((i) => !failed.includes(i));
    expect(await committed()).toEqual([...kept, ...kept.map((i) => 1000 + i)]);
  });

  it('a statement error (a duplicate key) rolls back its own callback only', async () => {
    const outcomes = await Promise.allSettled([
      store.transaction((tx) => sql`insert into group_probe (n) values (5000)`.execute(tx.db)),
      store.transaction(async (tx) => {
        await sql`insert into group_probe (n) values (5001)`.execute(tx.db);
        await sql`insert into group_probe (n) values (0)`.execute(tx.db); // taken above
      }),
      store.transaction((tx) => sql`insert into group_probe (n) values (5002)`.execute(tx.db)),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((await committed()).filter((n) => n >= 5000)).toEqual([5000, 5002]);
  });

  it('each callback is answered, and its after-commit hooks run, only once its writes are committed', async () => {
    const seen: Array<{ n: number; visible: boolean }> = [];
    const hooks: number[] = [];
    await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        store
          .transaction(async (tx) => {
            await sql`insert into group_probe (n) values (${6000 + i})`.execute(tx.db);
            tx.afterCommit(() => hooks.push(6000 + i));
          })
          .then(async () => {
            seen.push({ n: 6000 + i, visible: (await committed()).includes(6000 + i) });
          }),
      ),
    );
    expect(seen.every((s) => s.visible)).toBe(true);
    expect([...hooks].sort()).toEqual(Array.from({ length: 10 }, (_, i) => 6000 + i));
  });

  it('an after-commit hook that throws fails its own caller only; its writes are committed', async () => {
    const outcomes = await Promise.allSettled(
      [8000, 8001, 8002].map((n) =>
        store.transaction(async (tx) => {
          await sql`insert into group_probe (n) values (${n})`.execute(tx.db);
          tx.afterCommit(() => {
            if (n === 8001) throw new Error('hook fails');
          });
          return n;
        }),
      ),
    );
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((await committed()).filter((n) => n >= 8000 && n < 9000)).toEqual([8000, 8001, 8002]);
    // The store goes on working.
    expect(await store.transaction(async () => 'still here')).toBe('still here');
  });

  it(
    onPostgres
      ? 'PostgreSQL: each callback has a transaction of its own'
      : 'SQLite: callbacks that queue together share commits',
    async () => {
      const before = { ...store.activity };
      await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          store.transaction((tx) => sql`insert into group_probe (n) values (${7000 + i})`.execute(tx.db)),
        ),
      );
      const commits = store.activity.transactions - before.transactions;
      // One statement each: BEGIN, COMMIT and the group's savepoints are not counted as statements.
      expect(store.activity.statements - before.statements).toBe(50);
      if (onPostgres) expect(commits).toBe(50);
      else {
        expect(commits).toBeGreaterThanOrEqual(1);
        expect(commits).toBeLessThan(10);
      }
      expect((await committed()).filter((n) => n >= 7000 && n < 8000)).toHaveLength(50);
    },
  );

  it(
    onPostgres
      ? 'PostgreSQL: store.write runs its statement as it is, without a transaction'
      : 'SQLite: store.write joins the group commit of the transactions queued with it',
    async () => {
      await store.write((db) => sql`insert into group_probe (n) values (9099)`.execute(db));
      const before = { ...store.activity };
      const outcomes = await Promise.allSettled([
        store.transaction((tx) => sql`insert into group_probe (n) values (9000)`.execute(tx.db)),
        store.write((db) => sql`insert into group_probe (n) values (9001)`.execute(db)),
        store.write((db) => sql`insert into group_probe (n) values (9099)`.execute(db)), // taken
        store.transaction((tx) => sql`insert into group_probe (n) values (9002)`.execute(tx.db)),
      ]);
      // A write that fails fails alone, as a transaction callback does.
      expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
      const transactions = store.activity.transactions - before.transactions;
      if (onPostgres) expect(transactions).toBe(2);
      else expect(transactions).toBeLessThanOrEqual(2);
      expect((await committed()).filter((n) => n >= 9000 && n < 9100)).toEqual([9000, 9001, 9002, 9099]);
    },
  );
});
