import { once } from 'node:events';
import { sql } from 'kysely';
import { type CliCommand, CliError } from '../../cli/command.js';
import { iso } from '../../lib/clock.js';

type Context = Parameters<CliCommand['run']>[0];

/** `--since`/`--until` as stored timestamps; unset: from the beginning, until now. */
function timeRange(ctx: Context, values: Record<string, unknown>): { since: string; until: string } {
  const at = (flag: string, fallback: Date) => {
    const given = values[flag];
    if (given === undefined) return iso(fallback);
    const ms = Date.parse(String(given));
    if (Number.isNaN(ms)) throw new CliError(`--${flag} must be an ISO 8601 time, got "${given}"`);
    return iso(new Date(ms));
  };
  return { since: at('since', new Date(0)), until: at('until', ctx.clock.now()) };
}

/** One JSON object per line on standard output, waiting whenever the pipe is full. */
async function writeLines(records: AsyncIterable<unknown>): Promise<number> {
  let written = 0;
  for await (const record of records) {
    if (!process.stdout.write(`${JSON.stringify(record)}\n`)) await once(process.stdout, 'drain');
    written++;
  }
  return written;
}

const RANGE = {
  since: { type: 'string', value: 'T', help: 'records created at or after this ISO 8601 time' },
  until: { type: 'string', value: 'T', help: 'records created before this ISO 8601 time (default: now)' },
} as const;

/** docs/reliability.md "Export": archive what retention will remove. */
export const exportRunsCommand: CliCommand = {
  name: 'export runs',
  summary: 'write workflow runs with their nodes as NDJSON to standard output, oldest first',
  options: {
    ...RANGE,
    subscription: { type: 'string', value: 'ID', help: 'only runs of this subscription' },
  },
  async run(ctx, values) {
    const { since, until } = timeRange(ctx, values);
    const subscriptionId = values.subscription as string | undefined;
    const n = await writeLines(ctx.services.workflows.exportRuns({ since, until, subscriptionId }));
    ctx.log.info({ runs: n, since, until }, 'exported runs');
  },
};

export const exportDeliveriesCommand: CliCommand = {
  name: 'export deliveries',
  summary: 'write webhook deliveries with their attempts as NDJSON to standard output, oldest first',
  options: { ...RANGE, webhook: { type: 'string', value: 'ID', help: 'only deliveries of this webhook' } },
  async run(ctx, values) {
    const { since, until } = timeRange(ctx, values);
    const webhookId = values.webhook as string | undefined;
    const n = await writeLines(ctx.services.webhooks.exportDeliveries({ since, until, webhookId }));
    ctx.log.info({ deliveries: n, since, until }, 'exported deliveries');
  },
};

/** The store's size in bytes: a SQLite file's pages, or a PostgreSQL database's size. */
async function storeBytes(ctx: Context): Promise<number> {
  if (ctx.store.dialect === 'sqlite') {
    const pages = await sql<{ page_count: number }>`pragma page_count`.execute(ctx.store.db);
    const size = await sql<{ page_size: number }>`pragma page_size`.execute(ctx.store.db);
    return pages.rows[0].page_count * size.rows[0].page_size;
  }
  const r = await sql<{ bytes: string }>`select pg_database_size(current_database()) as bytes`.execute(
    ctx.store.db,
  );
  return Number(r.rows[0].bytes);
}

const mib = (bytes: number) => `${(bytes / 1_048_576).toFixed(1)} MiB`;

/**
 * `svc vacuum` (docs/reliability.md "Disk space"): on SQLite, rewrites the file without its free
 * pages and converts it to incremental auto-vacuum (a file made by an older svc), so the prune job
 * can give space back from then on; on PostgreSQL, VACUUM ANALYZE, or with --full VACUUM FULL, which
 * returns space to the system but locks each table while it rewrites it.
 */
export const vacuumCommand: CliCommand = {
  name: 'vacuum',
  summary: "shrink the store: rewrite a SQLite file without its free pages, or VACUUM PostgreSQL's tables",
  options: {
    full: {
      type: 'boolean',
      help: 'PostgreSQL: VACUUM FULL (gives space back to the system; locks each table while it runs)',
    },
  },
  async run(ctx, values) {
    const before = await storeBytes(ctx);
    let mode = '';
    if (ctx.store.dialect === 'sqlite') {
      await sql`pragma auto_vacuum = INCREMENTAL`.execute(ctx.store.db);
      await sql`vacuum`.execute(ctx.store.db);
      await sql`pragma wal_checkpoint(TRUNCATE)`.execute(ctx.store.db);
      const now = await sql<{ auto_vacuum: number }>`pragma auto_vacuum`.execute(ctx.store.db);
      if (now.rows[0].auto_vacuum === 2) mode = ', incremental auto-vacuum on';
    } else {
      await sql.raw(values.full ? 'vacuum (full, analyze)' : 'vacuum (analyze)').execute(ctx.store.db);
    }
    const after = await storeBytes(ctx);
    console.log(`vacuumed: ${mib(before)} before, ${mib(after)} after${mode}`);
  },
};
