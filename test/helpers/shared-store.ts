import type { ChildProcess } from 'node:child_process';
import { startTestApp, type TestApp } from './app.js';
import { spawnCli } from './cli.js';
import { sharedDatabase, type TestDatabase } from './store.js';

/**
 * A store shared by this test process and real `svc worker` processes: a SQLite file in a temporary
 * directory, or a fresh PostgreSQL database. `t` is a test app on it (to make things and read them
 * back); `worker()` starts the CLI worker on it. `close()` kills the workers still running and
 * removes the store.
 */
export interface SharedStore {
  dir: string;
  database: TestDatabase;
  t: TestApp;
  /** Starts `svc worker` on the store with `env` on top of the store's settings. */
  worker(env?: Record<string, string>): ChildProcess;
  close(): Promise<void>;
}

export async function startSharedStore(
  prefix: string,
  appEnv: Record<string, string> = {},
): Promise<SharedStore> {
  const database = await sharedDatabase(prefix);
  const dir = database.dir;
  const t = await startTestApp({ databaseUrl: database.url, env: appEnv });
  const children: ChildProcess[] = [];
  return {
    dir,
    database,
    t,
    worker(env = {}) {
      const child = spawnCli(['worker'], { SVC_DATABASE_URL: database.url, SVC_DATA_DIR: dir, ...env });
      children.push(child);
      return child;
    },
    async close() {
      for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
      await t.close();
      await database.drop();
    },
  };
}
