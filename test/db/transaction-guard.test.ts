import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../../src/db/store.js';
import { dialectName, freshDatabase, type TestDatabase, within } from '../helpers/store.js';

describe(`store.transaction guard (${dialectName})`, () => {
  let db: TestDatabase;
  let store: Store;
  beforeAll(async () => {
    db = await freshDatabase();
    store = openStore(db.url, { guardTransactions: true });
  });
  afterAll(async () => {
    await store.close();
    await db.drop();
  });

  it('refuses store.db inside a transaction callback, rolling the transaction back', async () => {
    await sql`create table guard_probe (n integer not null)`.execute(store.db);
    const misuse = store.transaction(async (tx) => {
      await sql`insert into guard_probe (n) values (1)`.execute(tx.db);
      await sql`select count(*) from guard_probe`.execute(store.db);
    });
    await expect(within(misuse)).rejects.toThrow('store.db used inside a transaction callback: use tx.db');
    const rows = await sql<{ n: number }>`select n from guard_probe`.execute(store.db);
    expect(rows.rows).toEqual([]);
  });

  it('refuses a nested store.transaction, and keeps working afterwards', async () => {
    const nested = store.transaction(() => store.transaction(async () => 1));
    await expect(within(nested)).rejects.toThrow('store.db used inside a transaction callback');
    expect(await store.transaction(async (tx) => (await sql`select 1 as one`.execute(tx.db)).rows)).toEqual([
      { one: 1 },
    ]);
  });

  it('allows tx.db inside, and store.db in after-commit hooks and after the transaction', async () => {
    let afterCommit: Promise<unknown> | undefined;
    await store.transaction(async (tx) => {
      await sql`insert into guard_probe (n) values (2)`.execute(tx.db);
      tx.afterCommit(() => {
        afterCommit = sql`select n from guard_probe`.execute(store.db);
      });
    });
    expect(((await within(afterCommit!)) as { rows: unknown[] }).rows).toEqual([{ n: 2 }]);
    expect((await sql`select n from guard_probe`.execute(store.db)).rows).toEqual([{ n: 2 }]);
  });

  it('lets work the callback started without awaiting use store.db once the callback is done', async () => {
    let late: Promise<unknown> | undefined;
    await store.transaction(async () => {
      late = new Promise((resolve) => setTimeout(resolve, 20)).then(() => sql`select 1`.execute(store.db));
    });
    await expect(within(late!)).resolves.toBeDefined();
  });
});
