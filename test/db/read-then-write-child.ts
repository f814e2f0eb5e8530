/**
 * One process of the SQLite concurrency test: after "go" on stdin, runs read-then-write transactions
 * (read the counter, yield, write it plus one) through the real store; any failure exits non-zero.
 */
import { createInterface } from 'node:readline';
import { sql } from 'kysely';
import { openStore } from '../../src/db/store.js';

const [url, count] = process.argv.slice(2);
const store = openStore(url);
const lines = createInterface({ input: process.stdin });
console.log('ready');
await new Promise<void>((resolve) => lines.once('line', () => resolve()));
lines.close();
for (let i = 0; i < Number(count); i++) {
  await store.transaction(async (tx) => {
    const { rows } = await sql<{ n: number }>`select n from counter where id = 1`.execute(tx.db);
    await new Promise((resolve) => setTimeout(resolve, 1)); // let the other process commit meanwhile
    await sql`update counter set n = ${rows[0].n + 1} where id = 1`.execute(tx.db);
  });
}
await store.close();
