import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe } from 'vitest';
import { createPostgresDatabase, type TestDatabase } from './database.js';

export type { TestDatabase };

/** The store every integration test runs on: SVC_TEST_DATABASE_URL, or in-memory SQLite. */
export const TEST_DATABASE_URL = process.env.SVC_TEST_DATABASE_URL ?? 'sqlite::memory:';
export const onPostgres = /^postgres(ql)?:\/\//.test(TEST_DATABASE_URL);
export const dialectName = onPostgres ? 'postgres' : 'sqlite';

/**
 * `describe` for tests that need PostgreSQL (several processes, LISTEN/NOTIFY, SKIP LOCKED): every
 * `*.pg.test.ts` uses it, so without PostgreSQL they report themselves skipped instead of vanishing.
 * With CI=true a skipped one fails the run (test/helpers/global-setup.ts).
 */
export const describePg = describe.skipIf(!onPostgres);

/**
 * A fresh, empty database for one test: a new in-memory SQLite, or a new PostgreSQL database created
 * next to the one SVC_TEST_DATABASE_URL names (so parallel test files never share state).
 */
export async function freshDatabase(): Promise<TestDatabase> {
  if (!onPostgres) return { url: 'sqlite::memory:', drop: async () => {} };
  return createPostgresDatabase(TEST_DATABASE_URL);
}

/** A database file path for tests that need several processes on one SQLite store. */
export function sqliteFileUrl(dir: string): string {
  return `sqlite:${dir}/svc.db`;
}

/**
 * A fresh database that several connections or processes can open: a new PostgreSQL database, or a
 * SQLite file in a new temporary directory `dir` (in-memory SQLite is one connection's own). `drop`
 * removes either, directory included.
 */
export async function sharedDatabase(prefix: string): Promise<TestDatabase & { dir: string }> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const database = onPostgres ? await freshDatabase() : { url: sqliteFileUrl(dir), drop: async () => {} };
  return {
    dir,
    url: database.url,
    async drop() {
      await database.drop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Fails fast instead of hanging: on SQLite a query waiting for the one busy connection waits forever. */
export const within = <T>(p: Promise<T>, ms = 3000): Promise<T> =>
  Promise.race([
    p,
    new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms)),
  ]);
