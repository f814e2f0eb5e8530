import { defineConfig } from 'vitest/config';

// The store under test comes from SVC_TEST_DATABASE_URL (default: in-memory SQLite). Tests that only
// make sense on PostgreSQL (several processes, LISTEN/NOTIFY, SKIP LOCKED) are *.pg.test.ts and run
// only when that variable names a PostgreSQL database; .ci/run runs the suite once per store.
const onPostgres = /^postgres(ql)?:\/\//.test(process.env.SVC_TEST_DATABASE_URL ?? '');

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: onPostgres ? [] : ['test/**/*.pg.test.ts'],
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 30_000,
    sequence: { concurrent: false },
  },
});
