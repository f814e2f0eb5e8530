import { defineConfig } from 'vitest/config';

// The store under test comes from SVC_TEST_DATABASE_URL (default: in-memory SQLite). Tests that only
// make sense on PostgreSQL (several processes, LISTEN/NOTIFY, SKIP LOCKED) are *.pg.test.ts and use
// `describePg` (test/helpers/store.ts): elsewhere they report themselves skipped. With CI=true a run
// that would skip them fails instead (test/helpers/global-setup.ts); .ci/run's SQLite pass excludes
// them explicitly and its PostgreSQL pass runs them.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'console/test/**/*.test.ts'],
    globalSetup: ['test/helpers/global-setup.ts'],
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 30_000,
    sequence: { concurrent: false },
  },
});
