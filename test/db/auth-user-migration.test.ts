import { type Kysely, type Migration, Migrator, sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { migrations } from '../../src/db/migrations/index.js';
import { openStore } from '../../src/db/store.js';
import { dialectName, freshDatabase } from '../helpers/store.js';

/**
 * 0011_auth_user moves the sign-in state out of identity's `users` into auth's own `auth_user`:
 * a user with state keeps it, a user without gets no row (the defaults), and the columns are gone.
 */
describe(`migration 0011_auth_user (${dialectName})`, async () => {
  const database = await freshDatabase();
  const store = openStore(database.url);
  afterAll(async () => {
    await store.close();
    await database.drop();
  });
  const db = store.db as unknown as Kysely<Record<string, Record<string, unknown>>>;

  it('copies each user sign-in state, leaves users without one alone, and drops the columns', async () => {
    const migrator = new Migrator({
      db: db as never,
      provider: { getMigrations: async () => migrations as Record<string, Migration> },
    });
    const { error } = await migrator.migrateTo('0010_events_interruptions');
    expect(error).toBeUndefined();
    const user = (id: string, extra: Record<string, unknown>) => ({
      id,
      email: `${id}@example.test`,
      email_normalized: `${id}@example.test`,
      name: null,
      password_hash: 'x',
      mfa_enabled: 0,
      created_at: '2026-01-01T00:00:00.000Z',
      updated_at: '2026-01-01T00:00:00.000Z',
      updated_by: null,
      deleted_at: null,
      // Every row names the same columns (SQLite fills a missing one of a multi-row insert with NULL).
      mfa_secret: null,
      mfa_last_step: null,
      access_token_ttl_seconds: null,
      mfa_pending_verified: 0,
      password_reset_required: 0,
      ...extra,
    });
    await db
      .insertInto('users')
      .values([
        user('with-mfa', {
          mfa_enabled: 1,
          mfa_secret: 'gAAAAA-token',
          mfa_last_step: 123,
          access_token_ttl_seconds: 300,
        }),
        user('reset', { password_reset_required: 1 }),
        user('plain', {}),
      ])
      .execute();

    expect((await migrator.migrateTo('0011_auth_user')).error).toBeUndefined();
    const rows = await db.selectFrom('auth_user').selectAll().orderBy('user_id').execute();
    expect(rows.map((r) => r.user_id)).toEqual(['reset', 'with-mfa']);
    const mfa = rows.find((r) => r.user_id === 'with-mfa')!;
    expect(mfa).toMatchObject({
      mfa_secret: 'gAAAAA-token',
      access_token_ttl_seconds: 300,
      password_reset_required: 0,
    });
    expect(Number(mfa.mfa_last_step)).toBe(123);
    expect(Number(rows.find((r) => r.user_id === 'reset')!.password_reset_required)).toBe(1);
    // mfa_enabled stays on the user record; the moved columns are gone from it.
    const plain = await db
      .selectFrom('users')
      .selectAll()
      .where('id', '=', 'with-mfa')
      .executeTakeFirstOrThrow();
    expect(Number(plain.mfa_enabled)).toBe(1);
    expect(Object.keys(plain)).not.toContain('mfa_secret');
    expect(Object.keys(plain)).not.toContain('password_reset_required');
    // And it reverses: down puts the state back on users.
    expect((await migrator.migrateTo('0010_events_interruptions')).error).toBeUndefined();
    const back = await sql<{
      mfa_secret: string;
    }>`select mfa_secret from users where id = 'with-mfa'`.execute(db);
    expect(back.rows[0].mfa_secret).toBe('gAAAAA-token');
  });
});
