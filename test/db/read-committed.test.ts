import { CompiledQuery, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../../src/db/store.js';
import { dialectName, onPostgres, sharedDatabase, type TestDatabase, within } from '../helpers/store.js';

/**
 * store.readCommitted, the per-request credential check: on a SQLite file (how svc runs) it has a
 * connection of its own; on PostgreSQL it takes one from the pool. Either way it reads committed
 * state and does not wait for a transaction in progress.
 */
describe(`store.readCommitted (${onPostgres ? dialectName : 'sqlite file'})`, () => {
  let db: TestDatabase;
  let store: Store;
  const byId = (id: number) =>
    CompiledQuery.raw(`select n from read_probe where id = ${onPostgres ? '$1' : '?'}`, [
      id,
    ]) as CompiledQuery<{
      n: number;
    }>;
  const readN = async () => (await store.readCommitted(byId(1)))[0];

  beforeAll(async () => {
    db = await sharedDatabase('svc-read-committed-');
    store = openStore(db.url, { guardTransactions: true });
    await sql`create table read_probe (id integer primary key, n integer not null)`.execute(store.db);
    await sql`insert into read_probe (id, n) values (1, 0)`.execute(store.db);
  });
  afterAll(async () => {
    await store.close();
    await db.drop();
  });

  it('answers during an open transaction with the committed row, then sees the commit', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let updated!: () => void;
    const inside = new Promise<void>((resolve) => {
      updated = resolve;
    });
    const write = store.transaction(async (tx) => {
      await sql`update read_probe set n = 1 where id = 1`.execute(tx.db);
      updated();
      await gate;
    });
    await inside;
    expect(await within(readN())).toEqual({ n: 0 });
    release();
    await write;
    expect(await readN()).toEqual({ n: 1 });
  });

  it('answers no rows when nothing matches', async () => {
    expect(await store.readCommitted(byId(2))).toEqual([]);
  });
});
