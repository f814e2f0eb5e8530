import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { openStore } from '../../src/db/store.js';
import { sqliteFileUrl } from '../helpers/store.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CHILD = fileURLToPath(new URL('./read-then-write-child.ts', import.meta.url));
const PER_PROCESS = 150;

function startChild(url: string) {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, url, String(PER_PROCESS)], {
    cwd: ROOT,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d) => {
    stderr += d;
  });
  const ready = new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
  const done = new Promise<{ code: number | null; stderr: string }>((resolve) =>
    child.on('exit', (code) => resolve({ code, stderr })),
  );
  return { child, ready, done };
}

/** Two processes on one SQLite file (svc serve next to svc worker), whatever store the suite runs on. */
describe('SQLite transactions across processes on one file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-sqlite-'));
  const children: ChildProcess[] = [];
  afterAll(() => {
    for (const c of children) c.kill();
    rmSync(dir, { recursive: true, force: true });
  });

  it('concurrent read-then-write transactions all succeed (BEGIN IMMEDIATE waits; no SQLITE_BUSY_SNAPSHOT)', async () => {
    const url = sqliteFileUrl(dir);
    const store = openStore(url);
    await sql`create table counter (id integer primary key, n integer not null)`.execute(store.db);
    await sql`insert into counter (id, n) values (1, 0)`.execute(store.db);
    const runs = [startChild(url), startChild(url)];
    children.push(...runs.map((r) => r.child));
    await Promise.all(runs.map((r) => r.ready));
    for (const r of runs) r.child.stdin.end('go\n');
    const results = await Promise.all(runs.map((r) => r.done));
    for (const r of results) expect(r, r.stderr).toMatchObject({ code: 0 });
    // Serialized writers: no increment was lost either.
    const { rows } = await sql<{ n: number }>`select n from counter where id = 1`.execute(store.db);
    expect(rows[0].n).toBe(2 * PER_PROCESS);
    await store.close();
  });
});
