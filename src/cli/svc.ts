#!/usr/bin/env node
import { parseArgs } from 'node:util';
import pino from 'pino';
import { buildApp } from '../app/build-app.js';
import { loggerOptions } from '../app/logger.js';
import { closeContext, createContext, createWorker } from '../app/runtime.js';
import type { AppContext } from '../app/types.js';
import { ConfigError, loadConfig } from '../config/config.js';
import { migrateToLatest } from '../db/migrate.js';
import { openStore } from '../db/store.js';
import { AppError } from '../http/errors.js';
import { VERSION } from '../version.js';
import { cliCommands } from './commands.js';

const USAGE = `svc ${VERSION}

Usage:
  svc serve             serve the API (and run the background worker unless SVC_WORKER=false)
  svc worker            run the background worker only
  svc migrate           apply pending database migrations
${cliCommands.map((c) => `  ${c.usage.padEnd(22)}${c.summary}`).join('\n')}

Configuration comes from the environment; see README.md.`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (!command || command === 'help' || command === '--help' || command === '-h') {
    console.log(USAGE);
    return command ? 0 : 1;
  }
  if (command === '--version' || command === 'version') {
    console.log(VERSION);
    return 0;
  }
  const config = loadConfig();
  if (command === 'migrate') {
    const store = openStore(config.databaseUrl);
    try {
      const applied = await migrateToLatest(store);
      console.log(applied.length ? `applied: ${applied.join(', ')}` : 'migrations are up to date');
    } finally {
      await store.close();
    }
    return 0;
  }
  if (command === 'serve') return serve(await createContext(config), config.worker);
  if (command === 'worker') return runWorkerOnly(await createContext(config));
  const sub = cliCommands.find((c) => c.name === `${command} ${rest[0] ?? ''}`.trim() || c.name === command);
  if (!sub) {
    console.error(`svc: unknown command "${argv.join(' ')}"\n\n${USAGE}`);
    return 2;
  }
  const args = sub.name.includes(' ') ? rest.slice(1) : rest;
  const { values } = parseArgs({ args, options: sub.options, strict: true, allowPositionals: false });
  // One-shot commands print their result on stdout; their logs go to stderr.
  const ctx = await createContext(config, {
    log: pino(loggerOptions(config.logLevel), pino.destination(2)),
    startup: false,
  });
  try {
    await sub.run(ctx, values as Record<string, string | string[] | boolean | undefined>);
  } finally {
    await closeContext(ctx);
  }
  return 0;
}

async function serve(ctx: AppContext, withWorker: boolean): Promise<number> {
  const { app } = await buildApp(ctx);
  const worker = withWorker ? createWorker(ctx) : undefined;
  const address = await app.listen({ port: ctx.config.port, host: ctx.config.host });
  worker?.start();
  ctx.log.info(
    { address, worker: Boolean(worker) },
    `svc ${VERSION} listening on ${address} (docs at ${address}/docs, store: ${ctx.store.dialect})`,
  );
  await untilSignal(ctx, async () => {
    // Stop accepting and finish in-flight requests, then let the worker finish its current steps.
    // close() drops the keep-alive connections idle at that moment; one busy then goes idle once its
    // answer is sent and would hold the close until its keep-alive timeout (72 s): drop those too.
    const sweep = setInterval(() => app.server.closeIdleConnections(), 50);
    try {
      await app.close();
    } finally {
      clearInterval(sweep);
    }
    await worker?.stop();
  });
  return 0;
}

async function runWorkerOnly(ctx: AppContext): Promise<number> {
  const worker = createWorker(ctx);
  worker.start();
  ctx.log.info(`svc ${VERSION} worker started (store: ${ctx.store.dialect})`);
  await untilSignal(ctx, () => worker.stop());
  return 0;
}

/** Waits for SIGTERM/SIGINT, then shuts down gracefully; a second signal exits at once. */
function untilSignal(ctx: AppContext, shutdown: () => Promise<void>): Promise<void> {
  return new Promise((resolve) => {
    let closing = false;
    const onSignal = (signal: string) => {
      if (closing) {
        ctx.log.warn({ signal }, 'second signal: exiting now');
        process.exit(1);
      }
      closing = true;
      ctx.log.info({ signal }, 'shutting down: finishing in-flight work');
      shutdown()
        .then(() => closeContext(ctx))
        .then(() => {
          ctx.log.info('shut down cleanly');
          resolve();
        })
        .catch((err) => {
          ctx.log.error({ err }, 'shutdown failed');
          process.exit(1);
        });
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  });
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    // One clear line for configuration and usage mistakes; a stack only for the unexpected.
    if (err instanceof ConfigError) console.error(`svc: configuration error: ${err.message}`);
    else if (
      err?.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' ||
      err?.code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE'
    )
      console.error(`svc: ${err.message}`);
    else if (err?.code === 'SVC_CLI' || err instanceof AppError) console.error(`svc: ${err.message}`);
    // A system error at start (address in use, host unknown, store unreachable or unopenable) is the
    // environment's, not a bug: one line saying what failed.
    else if (
      typeof err?.code === 'string' &&
      (err.syscall || /^(E[A-Z]+|SQLITE_\w+|\d{2}[0-9A-Z]{3})$/.test(err.code))
    )
      console.error(`svc: cannot start: ${err.message}`);
    else console.error(err);
    process.exit(1);
  },
);
