import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../../src/lib/clock.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { runCli } from '../helpers/cli.js';
import {
  dialectName,
  onPostgres,
  sharedDatabase,
  sqliteFileUrl,
  type TestDatabase,
} from '../helpers/store.js';
import { type Api, api, job, publishMany, workflow } from '../workflows/helpers.js';

const CYCLES = 10;
const PER_CYCLE = 600;

/**
 * Bounded storage (docs/reliability.md "Disk space"): under a steady load whose runs retention
 * removes, the store stops growing. On SQLite the prune job's own pass keeps the file level (freed
 * pages reused, the surplus given back); on PostgreSQL the tables level off once vacuumed, which
 * autovacuum does in production and VACUUM does here between cycles.
 */
describe(`the store stays level under a steady load with retention (${dialectName})`, () => {
  let database: TestDatabase & { dir: string };
  let t: TestApp;
  let a: Api;
  const clock = manualClock(new Date(Math.floor(Date.now() / 1000) * 1000));

  beforeAll(async () => {
    database = await sharedDatabase('svc-disk-');
    t = await startTestApp({
      clock,
      databaseUrl: database.url,
      env: {
        // Each cycle is a second: about three cycles' records are kept at any time.
        SVC_RETENTION_COMPLETED_RUNS_SECONDS: '3',
        SVC_RETENTION_OUTBOX_SECONDS: '3',
        SVC_ACCESS_TOKEN_TTL_SECONDS: '86400',
      },
    });
    a = await api(t);
  });
  afterAll(async () => {
    await t.close();
    await database.drop();
  });

  /** Bytes the store takes: the SQLite file's pages, or the PostgreSQL tables the runs live in. */
  async function size(): Promise<number> {
    if (!onPostgres) {
      const pages = await sql<{ page_count: number }>`pragma page_count`.execute(t.ctx.store.db);
      return pages.rows[0].page_count * 4096;
    }
    await sql`vacuum workflow_run, workflow_run_node, event_delivery_task`.execute(t.ctx.store.db);
    const r = await sql<{ bytes: string }>`
      select sum(pg_total_relation_size(c)) as bytes
        from unnest(array['workflow_run', 'workflow_run_node', 'event_delivery_task']::regclass[]) c`.execute(
      t.ctx.store.db,
    );
    return Number(r.rows[0].bytes);
  }

  it('holds its size once retention removes as much as arrives, within ±10%', async () => {
    const wf = await workflow(a, {
      nodes: [
        { key: 'c', type: 'COMPUTE', config: { logic: { cat: ['y'.repeat(2_000), { var: 'event.id' }] } } },
      ],
    });
    const sizes: number[] = [];
    for (let cycle = 0; cycle < CYCLES; cycle++) {
      await publishMany(t, PER_CYCLE, PER_CYCLE, `${cycle}-`);
      clock.advance(1_000);
      await job(t, 'prune').run();
      sizes.push(await size());
    }
    // Three cycles' runs kept, older ones removed.
    const runs = await a.call('GET', `/workflow_run?event_subscription_id=${wf.id}&limit=1`);
    expect(runs.body.total).toBeGreaterThanOrEqual(2 * PER_CYCLE);
    expect(runs.body.total).toBeLessThanOrEqual(3 * PER_CYCLE);
    // From the fifth cycle on (runs kept for three): every size within ±10% of the middle of the range.
    const steady = sizes.slice(4);
    const middle = (Math.min(...steady) + Math.max(...steady)) / 2;
    for (const size of steady)
      expect(Math.abs(size - middle) / middle, `sizes ${sizes}`).toBeLessThanOrEqual(0.1);
    // And it did grow at first: the level is what three cycles take, not an empty store.
    expect(middle).toBeGreaterThan(2 * sizes[0]);

    // Load gone, everything past its period: the SQLite file gives back what it no longer needs.
    clock.advance(10_000);
    await job(t, 'prune').run();
    if (!onPostgres) expect(await size()).toBeLessThan(middle / 2);
  }, 300_000);
});

describe('svc vacuum converts an older SQLite file and shrinks it', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-vacuum-'));
  const url = sqliteFileUrl(dir);
  const file = url.slice('sqlite:'.length);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('a file made without auto-vacuum gets it, and gives its free pages back', async () => {
    // A file from before: a table exists before svc first opens it, so its mode can no longer change.
    const old = new Database(file);
    old.exec(`create table filler (x text);
      with recursive n(i) as (select 1 union all select i + 1 from n where i < 3000)
      insert into filler select hex(randomblob(1000)) from n`);
    old.close();
    const env = { SVC_DATABASE_URL: url, SVC_DATA_DIR: dir };
    expect((await runCli(['migrate'], env)).code).toBe(0);
    const read = () => {
      const db = new Database(file, { readonly: true });
      try {
        return {
          mode: db.pragma('auto_vacuum', { simple: true }) as number,
          bytes: (db.pragma('page_count', { simple: true }) as number) * 4096,
        };
      } finally {
        db.close();
      }
    };
    expect(read().mode).toBe(0);
    const dropper = new Database(file);
    dropper.exec('drop table filler');
    dropper.close();
    const full = read().bytes;
    expect(full).toBeGreaterThan(6_000_000);

    const out = await runCli(['vacuum'], env);
    expect(out.code).toBe(0);
    expect(out.stdout).toMatch(/^vacuumed: [\d.]+ MiB before, [\d.]+ MiB after, incremental auto-vacuum on/);
    const after = read();
    expect(after.mode).toBe(2);
    expect(after.bytes).toBeLessThan(full / 4);
  });
});
