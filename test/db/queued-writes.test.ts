import { type Kysely, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prepared } from '../../src/db/prepared.js';
import { openStore, type Store } from '../../src/db/store.js';
import { dialectName, sharedDatabase, type TestDatabase } from '../helpers/store.js';

// The probe table is not part of svc's schema: the statements are built on an untyped view of it.
// biome-ignore lint/suspicious/noExplicitAny: a table made by this test alone
type AnyDb = Kysely<any>;

const insertProbe = prepared((db, _dialect, n: number) =>
  (db as AnyDb).insertInto('queue_probe').values({ n }),
);
const readProbe = prepared((db, dialect, n: number) => {
  const q = (db as AnyDb).selectFrom('queue_probe').select('n').where('n', '=', n);
  return dialect === 'postgres' ? q.forShare() : q;
});

/**
 * Writes queued on a transaction (`prepared(...).queue`, src/db/pg-pipeline.ts): on PostgreSQL they go
 * out with the transaction's next statement instead of a round trip each, and BEGIN with the first
 * one; on SQLite they run at once. Either way the transaction stays all or nothing and reads its
 * own writes.
 */
describe(`writes queued on a transaction (${dialectName})`, () => {
  let db: TestDatabase;
  let store: Store;
  let observer: Store;
  beforeAll(async () => {
    db = await sharedDatabase('svc-queue-');
    store = openStore(db.url, { guardTransactions: true });
    observer = openStore(db.url);
    await sql`create table queue_probe (n integer primary key)`.execute(store.db);
  });
  afterAll(async () => {
    await store.close();
    await observer.close();
    await db.drop();
  });

  const committed = async (ns: number[]) =>
    (
      await sql<{ n: number }>`select n from queue_probe where n in (${sql.join(ns)}) order by n`.execute(
        observer.db,
      )
    ).rows.map((r) => r.n);

  it('a queued write is read back by the transaction and committed with it', async () => {
    const seen = await store.transaction(async (tx) => {
      await insertProbe.queue(tx.db, 1);
      await insertProbe.queue(tx.db, 2);
      return (await readProbe.execute(tx.db, 2)).rows;
    });
    expect(seen).toEqual([{ n: 2 }]);
    expect(await committed([1, 2])).toEqual([1, 2]);
  });

  it('a queued write that fails fails the commit with its own error, and nothing of the transaction is kept', async () => {
    await insertProbe.execute(store.db, 10);
    const attempt = store.transaction(async (tx) => {
      await insertProbe.execute(tx.db, 11);
      await insertProbe.queue(tx.db, 12);
      await insertProbe.queue(tx.db, 10); // taken: a duplicate key
      return 'answered';
    });
    await expect(attempt).rejects.toThrow(/unique|duplicate/i);
    expect(await committed([10, 11, 12])).toEqual([10]);
    // The connection is clean for the next transaction.
    await store.transaction((tx) => insertProbe.queue(tx.db, 13));
    expect(await committed([13])).toEqual([13]);
  });

  it('a callback that throws after queuing writes nothing', async () => {
    const attempt = store.transaction(async (tx) => {
      await insertProbe.queue(tx.db, 20);
      throw new Error('changed its mind');
    });
    await expect(attempt).rejects.toThrow('changed its mind');
    const before = store.transaction(async () => {
      throw new Error('before any statement');
    });
    await expect(before).rejects.toThrow('before any statement');
    expect(await committed([20])).toEqual([]);
  });

  it('outside a transaction a queued write runs at once', async () => {
    await insertProbe.queue(store.db, 30);
    expect(await committed([30])).toEqual([30]);
  });
});
