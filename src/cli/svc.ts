#!/usr/bin/env node
import { parseArgs } from 'node:util';
import pino from 'pino';
import { buildApp } from '../app/build-app.js';
import { boundHeapGrowth } from '../app/heap.js';
import { loggerOptions } from '../app/logger.js';
import { closeContext, createContext, createWorker } from '../app/runtime.js';
import type { AppContext } from '../app/types.js';
import { startWorkerThread, withThreadMetrics, workerPlacement } from '../app/worker-thread.js';
import { type Config, ConfigError, loadConfig, type WorkerMode } from '../config/config.js';
import { migrateToLatest } from '../db/migrate.js';
import { openStore } from '../db/store.js';
import { AppError } from '../http/errors.js';
import { VERSION } from '../version.js';
import { type CliCommand, type CliOption, commandHelp, parseArgsOptions, synopsis } from './command.js';
import { cliCommands } from './commands.js';

/** A command of the `svc` binary: the three process roles here, plus what the areas contribute. */
interface Entry {
  name: string;
  summary: string;
  options: Record<string, CliOption>;
  start(config: Config, values: Values): Promise<number>;
}
type Values = Record<string, string | string[] | boolean | undefined>;

const entries: Entry[] = [
  {
    name: 'serve',
    summary:
      'serve the API, and the background worker unless SVC_WORKER=off (in a thread of its own on a SQLite file, given two cores)',
    options: {},
    start: async (config) => {
      const heapGrowth = boundHeapGrowth(config.heapGrowingPercent);
      const where = workerPlacement(config);
      return serve(
        // The API thread's connection and the worker thread's share one write lock (src/db/thread-lock.ts).
        await createContext(config, {
          threadLock: where === 'thread' ? new SharedArrayBuffer(4) : undefined,
        }),
        where,
        heapGrowth,
      );
    },
  },
  {
    name: 'worker',
    summary: 'run the background worker only (outbox drain, workflow timers, webhook retries)',
    options: {},
    start: async (config) => {
      const heapGrowth = boundHeapGrowth(config.heapGrowingPercent);
      return runWorkerOnly(await createContext(config, { workerOnly: true }), heapGrowth);
    },
  },
  {
    name: 'migrate',
    summary: 'apply pending database migrations and exit',
    options: {},
    start: migrate,
  },
  ...cliCommands.map((c) => ({
    ...c,
    start: (config: Config, values: Values) => runOnce(config, c, values),
  })),
];

const USAGE = `svc ${VERSION}: an access-controlled event, workflow and integration service

Usage: svc <command> [options]

Commands:
${entries.map((e) => `  ${e.name.padEnd(18)}${e.summary}`).join('\n')}

Options:
  -h, --help        show this help (\`svc <command> --help\` shows a command's options)
  -v, --version     print the version

Configuration comes from the environment; see README.md.`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (!command || command === 'help' || command === '--help' || command === '-h') {
    console.log(USAGE);
    return command ? 0 : 1;
  }
  if (command === '--version' || command === '-v' || command === 'version') {
    console.log(VERSION);
    return 0;
  }
  const two = `${command} ${rest[0] ?? ''}`;
  const entry = entries.find((e) => e.name === two || e.name === command);
  if (!entry) {
    // `svc user` or `svc user --help`: the group's subcommands.
    const group = entries.filter((e) => e.name.startsWith(`${command} `));
    const asked = rest.length === 0 || rest[0] === '--help' || rest[0] === '-h';
    if (group.length > 0 && asked) {
      const lines = group.map((e) => `  ${synopsis(e.name, e.options)}\n      ${e.summary}`);
      console.log(`Usage: svc ${command} <subcommand> [options]\n\nSubcommands:\n${lines.join('\n')}`);
      return rest.length === 0 ? 2 : 0;
    }
    console.error(`svc: unknown command "${argv.join(' ')}"\n\n${USAGE}`);
    return 2;
  }
  const args = entry.name.includes(' ') ? rest.slice(1) : rest;
  const { values } = parseArgs({ args, options: parseArgsOptions(entry.options), strict: true });
  // Help never loads the configuration, opens the store or starts anything.
  if (values.help) {
    console.log(commandHelp(entry.name, entry.summary, entry.options));
    return 0;
  }
  return entry.start(loadConfig(), values as Values);
}

async function migrate(config: Config): Promise<number> {
  const store = openStore(config.databaseUrl);
  try {
    const applied = await migrateToLatest(store);
    console.log(applied.length ? `applied: ${applied.join(', ')}` : 'migrations are up to date');
  } finally {
    await store.close();
  }
  return 0;
}

/** A one-shot area command: prints its result on stdout; its logs go to stderr. */
async function runOnce(config: Config, command: CliCommand, values: Values): Promise<number> {
  const ctx = await createContext(config, {
    log: pino(loggerOptions(config.logLevel), pino.destination(2)),
    startup: false,
  });
  try {
    await command.run(ctx, values);
  } finally {
    await closeContext(ctx);
  }
  return 0;
}

/** `heapGrowth`: what src/app/heap.ts made of SVC_HEAP_GROWING_PERCENT, said in the start-up line. */
async function serve(ctx: AppContext, where: WorkerMode, heapGrowth: string): Promise<number> {
  const thread = where === 'thread' ? startWorkerThread(ctx) : undefined;
  const { app } = await buildApp(ctx, {
    scrapeMetrics: thread && (() => withThreadMetrics(ctx.services.metrics, thread)),
  });
  const worker = where === 'main' ? createWorker(ctx) : undefined;
  // Fastify writes the one listening line (per address it binds), in our words.
  await app.listen({
    port: ctx.config.port,
    host: ctx.config.host,
    listenTextResolver: (address) =>
      `svc ${VERSION} listening on ${address} (console at ${address}/console, docs at ${address}/docs, store: ${ctx.store.dialect}, ` +
      `worker: ${{ thread: 'worker thread', main: 'in-process', off: 'off' }[where]}, heap growth: ${heapGrowth})`,
  });
  worker?.start();
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
    await thread?.stop();
  });
  return 0;
}

async function runWorkerOnly(ctx: AppContext, heapGrowth: string): Promise<number> {
  const worker = createWorker(ctx);
  worker.start();
  ctx.log.info(`svc ${VERSION} worker started (store: ${ctx.store.dialect}, heap growth: ${heapGrowth})`);
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
    else if (typeof err?.code === 'string' && err.code.startsWith('ERR_PARSE_ARGS_'))
      console.error(`svc: ${err.message} (see svc --help)`);
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
