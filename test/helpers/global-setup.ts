import type { TestProject } from 'vitest/node';

const POSTGRES_URL = /^postgres(ql)?:\/\//;

/**
 * On CI a missing PostgreSQL must fail the run, not skip the `*.pg.test.ts` files quietly: when
 * CI=true, SVC_TEST_DATABASE_URL names no PostgreSQL database and the run includes such files, stop
 * with one clear message. A deliberately SQLite-only run excludes them (`--exclude`), as .ci/run does.
 */
export default async function requirePostgresOnCi(project: TestProject): Promise<void> {
  if (process.env.CI !== 'true' || POSTGRES_URL.test(process.env.SVC_TEST_DATABASE_URL ?? '')) return;
  const { testFiles } = await project.globTestFiles();
  const pgFiles = testFiles.filter((f) => f.endsWith('.pg.test.ts'));
  if (pgFiles.length === 0) return;
  throw new Error(
    `CI=true but SVC_TEST_DATABASE_URL is ${process.env.SVC_TEST_DATABASE_URL ? 'not a postgres:// URL' : 'unset'}: ` +
      `${pgFiles.length} *.pg.test.ts file(s) would be skipped. Point SVC_TEST_DATABASE_URL at a PostgreSQL ` +
      `database, or exclude them explicitly for a SQLite-only pass (--exclude 'test/**/*.pg.test.ts').`,
  );
}
