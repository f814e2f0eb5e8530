import { type Kysely, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { batches, prepared } from '../../src/db/prepared.js';
import { openStore, type Store } from '../../src/db/store.js';
import { dialectName, sharedDatabase, type TestDatabase } from '../helpers/store.js';

interface Probe {
  id: string;
  kind: string;
  n: number | null;
  note?: string;
}
// The probe table is not part of svc's schema: the statements are built on an untyped view of it.
// biome-ignore lint/suspicious/noExplicitAny: a table made by this test alone
type AnyDb = Kysely<any>;

const insertProbes = prepared((db, _dialect, rows: Probe[]) =>
  (db as AnyDb).insertInto('prepared_probe').values(rows).returning(['id', 'note']),
);
const probesOfKind = prepared((db, dialect, ids: string[], minimum: number) => {
  const q = (db as AnyDb)
    .selectFrom('prepared_probe')
    .select(['id', 'n', 'note'])
    .where('id', 'in', ids)
    .where('n', '>=', minimum)
    .where('kind', '=', 'probe') // a constant of the statement, not a value of the call
    .orderBy('id');
  return dialect === 'postgres' ? q.forShare() : q;
});

/**
 * Prepared statements (src/db/prepared.ts): built with Kysely once per shape, re-bound with each
 * call's values, on the real store.
 */
describe(`prepared statements (${dialectName})`, () => {
  let db: TestDatabase;
  let store: Store;
  beforeAll(async () => {
    db = await sharedDatabase('svc-prepared-');
    store = openStore(db.url);
    await sql`create table prepared_probe (id text primary key, kind text not null, n integer, note text default 'none')`.execute(
      store.db,
    );
  });
  afterAll(async () => {
    await store.close();
    await db.drop();
  });

  it('binds each call its own values, across row counts and columns left out', async () => {
    const first = await insertProbes.execute(store.db, [
      { id: 'a', kind: 'probe', n: 1, note: 'first' },
      { id: 'b', kind: 'probe', n: null, note: 'second' },
    ]);
    expect(first.rows).toEqual([
      { id: 'a', note: 'first' },
      { id: 'b', note: 'second' },
    ]);
    // Same shape, new values; then one row with `note` left out, so the column's default applies.
    await insertProbes.execute(store.db, [
      { id: 'c', kind: 'probe', n: 3, note: 'third' },
      { id: 'd', kind: 'other', n: 4, note: 'fourth' },
    ]);
    const defaulted = await insertProbes.execute(store.db, [
      { id: 'e', kind: 'probe', n: 5, note: undefined },
    ]);
    expect(defaulted.rows).toEqual([{ id: 'e', note: 'none' }]);

    const some = await probesOfKind.execute(store.db, ['a', 'c', 'd', 'e'], 3);
    expect(some.rows).toEqual([
      { id: 'c', n: 3, note: 'third' },
      { id: 'e', n: 5, note: 'none' },
    ]);
    const fewer = await probesOfKind.execute(store.db, ['a'], 0);
    expect(fewer.rows).toEqual([{ id: 'a', n: 1, note: 'first' }]);
  });

  it('tells apart batches whose rows leave out a column at different places', async () => {
    // Runs of rows of one shape are counted in the key: each of these is a shape of its own. A value
    // left out of one row of several is DEFAULT on PostgreSQL and NULL on SQLite (Kysely's dialects).
    const leftOut = dialectName === 'postgres' ? 'none' : null;
    const batches: Probe[][] = [
      [
        { id: 'r1', kind: 'probe', n: 1, note: 'x' },
        { id: 'r2', kind: 'probe', n: 2, note: undefined },
        { id: 'r3', kind: 'probe', n: 3, note: 'y' },
      ],
      [
        { id: 'r4', kind: 'probe', n: 4, note: undefined },
        { id: 'r5', kind: 'probe', n: 5, note: 'x' },
        { id: 'r6', kind: 'probe', n: 6, note: 'y' },
      ],
      [
        { id: 'r7', kind: 'probe', n: 7, note: 'x' },
        { id: 'r8', kind: 'probe', n: 8, note: 'y' },
        { id: 'r9', kind: 'probe', n: 9, note: undefined },
      ],
    ];
    for (const rows of batches) {
      const { rows: back } = await insertProbes.execute(store.db, rows);
      expect(back).toEqual(rows.map((r) => ({ id: r.id, note: r.note ?? leftOut })));
    }
    const stored = await probesOfKind.execute(
      store.db,
      ['r1', 'r2', 'r3', 'r4', 'r5', 'r6', 'r7', 'r8', 'r9'],
      0,
    );
    expect(stored.rows.map((r) => [r.id, r.n, r.note])).toEqual(
      batches.flat().map((r) => [r.id, r.n, r.note ?? leftOut]),
    );
  });

  it('cuts a batch into powers of two on SQLite and at the bound on PostgreSQL, each row once', async () => {
    const rows: Probe[] = Array.from({ length: 237 }, (_, i) => ({
      id: `batch-${String(i).padStart(3, '0')}`,
      kind: 'probe',
      n: i,
      note: `row ${i}`,
    }));
    const sizes: number[] = [];
    const before = store.activity.statements;
    for (const batch of batches(store.db, rows, 100)) {
      sizes.push(batch.length);
      await insertProbes.execute(store.db, batch);
    }
    // SQLite keeps a prepared statement per row count: 64, 32, 8, 4 and 1 are five of the seven
    // (1, 2, 4 … 64) any batch up to 100 can use, where every count from 1 to 100 would be a hundred.
    expect(sizes).toEqual(dialectName === 'sqlite' ? [64, 64, 64, 32, 8, 4, 1] : [100, 100, 37]);
    expect(store.activity.statements - before).toBe(sizes.length);
    const stored = await probesOfKind.execute(
      store.db,
      rows.map((r) => r.id),
      0,
    );
    expect(stored.rows.map((r) => [r.id, r.n, r.note])).toEqual(rows.map((r) => [r.id, r.n, r.note]));
    expect([...batches(store.db, [], 100)]).toEqual([]);
  });

  it('inside a transaction, on its connection', async () => {
    await expect(
      store.transaction(async (tx) => {
        await insertProbes.execute(tx.db, [{ id: 'f', kind: 'probe', n: 6, note: 'rolled back' }]);
        expect((await probesOfKind.execute(tx.db, ['f'], 0)).rows).toHaveLength(1);
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect((await probesOfKind.execute(store.db, ['f'], 0)).rows).toEqual([]);
  });

  it('refuses values that are not plain, and values that would become SQL text', () => {
    expect(() =>
      insertProbes.compile(store.db, [{ id: 'g', kind: 'probe', n: new Date() as never, note: 'x' }]),
    ).toThrow('plain values only');
    const intoText = prepared((db, _dialect, column: string) =>
      (db as AnyDb).selectFrom('prepared_probe').select(sql.ref(column).as('x')),
    );
    expect(() => intoText.compile(store.db, 'id')).toThrow('into its SQL text');
  });
});
