import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { migrations } from '../src/db/migrations/index.js';
import { runCli } from './helpers/cli.js';
import { describePg, freshDatabase, type TestDatabase } from './helpers/store.js';

describePg('migrations on PostgreSQL', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await freshDatabase();
  });
  afterAll(() => db.drop());

  it('two processes migrating one database at once apply each migration exactly once', async () => {
    const [a, b] = await Promise.all([
      runCli(['migrate'], { SVC_DATABASE_URL: db.url }),
      runCli(['migrate'], { SVC_DATABASE_URL: db.url }),
    ]);
    expect(a.code, a.stderr).toBe(0);
    expect(b.code, b.stderr).toBe(0);
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    const { rows } = await client.query('select name from kysely_migration order by name');
    const roles = await client.query('select key from role order by key');
    await client.end();
    expect(rows.map((r) => r.name)).toEqual(Object.keys(migrations).sort());
    expect(roles.rows.map((r) => r.key)).toEqual(['admin', 'integration', 'provider', 'responder']);
  });
});
