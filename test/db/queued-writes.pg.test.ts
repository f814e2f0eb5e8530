import { type Kysely, sql } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { prepared } from '../../src/db/prepared.js';
import { openStore, type Store } from '../../src/db/store.js';
import { describePg, sharedDatabase, type TestDatabase } from '../helpers/store.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';

// biome-ignore lint/suspicious/noExplicitAny: a table made by this test alone
type AnyDb = Kysely<any>;

const insertProbe = prepared((db, _dialect, n: number) =>
  (db as AnyDb).insertInto('queue_rt_probe').values({ n }),
);
const readProbe = prepared((db, _dialect, n: number) =>
  (db as AnyDb).selectFrom('queue_rt_probe').select('n').where('n', '=', n).forShare(),
);

/** What queued writes save on PostgreSQL (src/db/pg-pipeline.ts): round trips, counted on the wire. */
describePg('writes queued on a PostgreSQL transaction: round trips', () => {
  let db: TestDatabase;
  let store: Store;
  beforeAll(async () => {
    db = await sharedDatabase('svc-queue-rt-');
    store = openStore(db.url);
    await sql`create table queue_rt_probe (n integer primary key)`.execute(store.db);
  });
  afterAll(async () => {
    await store.close();
    await db.drop();
  });

  const committed = async (ns: number[]) =>
    (
      await sql<{ n: number }>`select n from queue_rt_probe where n in (${sql.join(ns)}) order by n`.execute(
        store.db,
      )
    ).rows.map((r) => r.n);

  it('the request-shaped transaction takes two round trips instead of five', async () => {
    const url = new URL(db.url);
    const counter = await new TcpProxy({ host: url.hostname, port: Number(url.port || 5432) }).up();
    const counted = openStore(counter.route(db.url));
    try {
      // Open the connection (and name the statements) first, so only the transactions are counted.
      const shape = (queue: boolean, base: number) =>
        counted.transaction(async (tx) => {
          await readProbe.execute(tx.db, 1);
          const write = queue ? insertProbe.queue : insertProbe.execute;
          await write(tx.db, base);
          await write(tx.db, base + 1);
        });
      await shape(true, 40);
      await shape(false, 42);
      counter.turns = 0;
      await shape(false, 44);
      const oneByOne = counter.turns;
      counter.turns = 0;
      await shape(true, 46);
      const queued = counter.turns;
      // BEGIN goes out with the read either way; the queued inserts go out with the COMMIT.
      expect({ oneByOne, queued }).toEqual({ oneByOne: 4, queued: 2 });
      expect(await committed([44, 45, 46, 47])).toEqual([44, 45, 46, 47]);
    } finally {
      await counted.close();
      await counter.down();
    }
  });
});
