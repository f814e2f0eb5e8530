import pino, { type Logger } from 'pino';
import type { EventHandler } from '../areas/events/handlers.js';
import type { Config } from '../config/config.js';
import { migrateToLatest } from '../db/migrate.js';
import { openStore, type Store } from '../db/store.js';
import { type Clock, systemClock } from '../lib/clock.js';
import { Worker } from '../worker/worker.js';
import { withDevSecrets } from './dev-secrets.js';
import { loggerOptions } from './logger.js';
import { createServices } from './services.js';
import { runStartup } from './startup.js';
import { createTracer } from './tracing.js';
import type { AppContext } from './types.js';

export interface RuntimeOptions {
  clock?: Clock;
  log?: Logger;
  store?: Store;
  /** Open the store with the transaction guard (the test suite; see src/db/store.ts for its cost). */
  guardTransactions?: boolean;
  /**
   * Run the areas' start-up tasks (bootstrap admin, plugin discovery). One-shot CLI commands skip
   * them: a command run without the server's plugin settings must not mark its plugins disabled.
   */
  startup?: boolean;
  /** Event handlers called after the areas' own (tests' and benchmarks' probes). */
  eventHandlers?: readonly EventHandler[];
  /** A SQLite file's write lock shared with another thread of this process (SVC_WORKER=thread). */
  threadLock?: SharedArrayBuffer;
  /** The process runs the worker alone (`svc worker`), beside processes that serve the API. */
  workerOnly?: boolean;
}

/** Opens the store, applies migrations, builds the services and runs the areas' start-up tasks. */
export async function createContext(config: Config, options: RuntimeOptions = {}): Promise<AppContext> {
  const log = options.log ?? pino(loggerOptions(config.logLevel));
  const fullConfig = withDevSecrets(config, log);
  const store =
    options.store ??
    openStore(fullConfig.databaseUrl, {
      guardTransactions: options.guardTransactions,
      threadLock: options.threadLock,
    });
  await migrateToLatest(store);
  const clock = options.clock ?? systemClock;
  const tracer = await createTracer(fullConfig.tracing, log);
  const services = createServices({
    config: fullConfig,
    store,
    clock,
    log,
    tracer,
    extraEventHandlers: options.eventHandlers,
    workerOnly: options.workerOnly,
  });
  const ctx: AppContext = { config: fullConfig, store, clock, log, tracer, services };
  if (options.startup !== false) await runStartup(ctx);
  return ctx;
}

export function createWorker(ctx: AppContext): Worker {
  return new Worker(ctx.services.jobs, ctx.services.wakeups, ctx.log);
}

/**
 * Flushes what the services buffer (webhook attempts in flight and their results, API key usage,
 * mail in flight), then closes the store.
 */
export async function closeContext(ctx: AppContext): Promise<void> {
  await ctx.services.webhookEngine.close();
  await ctx.services.auth.close();
  await ctx.services.identity.close();
  await ctx.store.close();
  // Last: the spans of everything closed above are exported before the process ends.
  await ctx.tracer.shutdown();
}
