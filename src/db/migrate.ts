import { type Kysely, type Migration, type MigrationProvider, Migrator } from 'kysely';
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

/** Applies every pending migration. Idempotent. */
export async function migrateToLatest(store: Store): Promise<string[]> {
  const { error, results } = await migrator(store).migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

/** True when every known migration has been applied. */
export async function migrationsApplied(store: Store): Promise<boolean> {
  const all = await migrator(store).getMigrations();
  return all.every((m) => m.executedAt !== undefined);
}
