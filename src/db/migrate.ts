import {
  type Kysely,
  type Migration,
  type MigrationProvider,
  type MigrationResultSet,
  Migrator,
  sql,
} from 'kysely';
import { migrations } from './migrations/index.js';
import type { Store } from './store.js';

const provider: MigrationProvider = {
  getMigrations: async () => migrations as Record<string, Migration>,
};

function migrator(store: Store): Migrator {
  // Kysely's Migrator takes a PostgreSQL advisory lock (and a lock table row) around the run,
  // so two processes migrating one database at once apply each migration exactly once.
  return new Migrator({ db: store.db as unknown as Kysely<unknown>, provider });
}

/** Applies every pending migration. Idempotent, and safe with several processes starting at once. */
export async function migrateToLatest(store: Store): Promise<string[]> {
  if (store.dialect === 'sqlite') return migrateSqlite(store);
  return applied(await migrator(store).migrateToLatest());
}

function applied({ error, results }: MigrationResultSet): string[] {
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

/**
 * SQLite: Kysely takes no lock there and runs each migration outside a transaction, so two processes
 * starting on one new file could both create the same table, and a failure mid-way left a half-applied
 * schema. The whole run is one BEGIN IMMEDIATE transaction on the store's connection instead (SQLite
 * DDL is transactional): a second process waits for the write lock (busy_timeout), then finds nothing
 * to do; a failure rolls everything back.
 */
async function migrateSqlite(store: Store): Promise<string[]> {
  return store.db.connection().execute(async (conn) => {
    await sql`begin immediate`.execute(conn);
    try {
      const result = await new Migrator({
        db: conn as unknown as Kysely<unknown>,
        provider,
      }).migrateToLatest();
      const names = applied(result);
      await sql`commit`.execute(conn);
      return names;
    } catch (err) {
      await sql`rollback`.execute(conn);
      throw err;
    }
  });
}

/** True when every known migration has been applied. */
export async function migrationsApplied(store: Store): Promise<boolean> {
  const all = await migrator(store).getMigrations();
  return all.every((m) => m.executedAt !== undefined);
}
