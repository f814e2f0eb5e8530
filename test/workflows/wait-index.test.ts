import { CompiledQuery, type Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../src/db/store.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { dialectName } from '../helpers/store.js';

/**
 * The lookups that must stay index lookups however many runs wait (docs/workflows.md "WAIT_EVENT",
 * "CALL"): the store's own query plan for an event's keys, a run's children and retention's check
 * for children in flight. PostgreSQL is asked with sequential scans off: on a near-empty table it
 * rightly prefers one, and the question is whether the index serves the query at all.
 */
describe(`the wait and child lookups use their indexes (${dialectName})`, () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  /** The plan of `query` as text. */
  async function plan(query: (db: Db) => { compile(): CompiledQuery }): Promise<string> {
    return t.ctx.store.transaction(async (tx) => {
      const db = tx.db as unknown as Kysely<unknown>;
      const compiled = query(tx.db).compile();
      if (tx.dialect === 'postgres') {
        await db.executeQuery(CompiledQuery.raw('set local enable_seqscan = off'));
        const rows = await db.executeQuery<{ 'QUERY PLAN': string }>(
          CompiledQuery.raw(`explain ${compiled.sql}`, [...compiled.parameters]),
        );
        return rows.rows.map((r) => r['QUERY PLAN']).join('\n');
      }
      const rows = await db.executeQuery<{ detail: string }>(
        CompiledQuery.raw(`explain query plan ${compiled.sql}`, [...compiled.parameters]),
      );
      return rows.rows.map((r) => r.detail).join('\n');
    });
  }

  it("an event's keys: one lookup in the partial index of waiting nodes", async () => {
    const text = await plan((db) =>
      db
        .selectFrom('workflow_run_node')
        .select(['id', 'workflow_run_id', 'wait_key'])
        .where('wait_key', 'in', ['spec:"o-1"', 'spec:"o-2"']),
    );
    expect(text).toContain('workflow_run_node_wait');
    expect(text).not.toMatch(/SCAN workflow_run_node\b(?! USING)|Seq Scan/);
  });

  it("a run's children, and retention's check for children in flight: the partial index on parent_run_id", async () => {
    const children = await plan((db) =>
      db
        .selectFrom('workflow_run')
        .select('id')
        .where('parent_run_id', '=', 'r-1')
        .where('status', 'in', ['pending', 'running']),
    );
    expect(children).toContain('workflow_run_parent');
    expect(children).not.toMatch(/Seq Scan/);
  });
});
