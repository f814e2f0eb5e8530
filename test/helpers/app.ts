import { Writable } from 'node:stream';
import pino from 'pino';
import { buildApp } from '../../src/app/build-app.js';
import { loggerOptions } from '../../src/app/logger.js';
import { closeContext, createContext } from '../../src/app/runtime.js';
import type { AppContext } from '../../src/app/types.js';
import type { EventHandler } from '../../src/areas/events/handlers.js';
import { loadConfig } from '../../src/config/config.js';
import type { App, RouteEntry } from '../../src/http/app.js';
import type { Clock } from '../../src/lib/clock.js';
import { TEST_SECRETS } from './secrets.js';
import { freshDatabase } from './store.js';

export interface TestApp {
  app: App;
  ctx: AppContext;
  routes: RouteEntry[];
  /** Every log line the app wrote, as parsed JSON (for redaction tests). */
  logs: Record<string, unknown>[];
  /** Raw log text, for scanning for leaked secrets. */
  logText(): string;
  close(): Promise<void>;
}

export interface TestAppOptions {
  env?: Record<string, string>;
  clock?: Clock;
  /** Use this database URL instead of a fresh one (e.g. a shared SQLite file). */
  databaseUrl?: string;
  /** Event handlers the outbox drain calls after the areas' own (probes). */
  eventHandlers?: EventHandler[];
}

/** Builds the real app on a fresh store with logs captured; nothing is stubbed. */
export async function startTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const database = options.databaseUrl
    ? { url: options.databaseUrl, drop: async () => {} }
    : await freshDatabase();
  const config = loadConfig({
    NODE_ENV: 'test',
    SVC_DATABASE_URL: database.url,
    SVC_LOG_LEVEL: 'info',
    SVC_WORKER: 'off',
    // Cheap password hashes keep the suite fast; production uses the default cost.
    SVC_PASSWORD_HASH_COST: '10',
    ...TEST_SECRETS,
    ...options.env,
  });
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      lines.push(chunk.toString());
      cb();
    },
  });
  const log = pino(loggerOptions(config.logLevel), sink);
  const ctx = await createContext(config, {
    log,
    clock: options.clock,
    guardTransactions: true,
    eventHandlers: options.eventHandlers,
  });
  const { app, routes } = await buildApp(ctx);
  return {
    app,
    ctx,
    routes,
    get logs() {
      return lines.flatMap((l) => l.split('\n').filter(Boolean)).map((l) => JSON.parse(l));
    },
    logText: () => lines.join(''),
    async close() {
      try {
        await app.close();
        await closeContext(ctx);
      } finally {
        await database.drop();
      }
    },
  };
}
