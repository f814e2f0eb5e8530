import { type Kysely, type Migration, Migrator } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { migrations } from '../../src/db/migrations/index.js';
import { openStore } from '../../src/db/store.js';
import { dialectName, freshDatabase } from '../helpers/store.js';

/**
 * 0024_workflows_wait_kind gives each node waiting when it runs the kind its error and wait key
 * said before: a CALL's child, a plugin limit, a WAIT_EVENT's event, a retry, a DELAY, a JOIN's
 * timeout; nodes not waiting get none.
 */
describe(`migration 0024_workflows_wait_kind (${dialectName})`, async () => {
  const database = await freshDatabase();
  const store = openStore(database.url);
  afterAll(async () => {
    await store.close();
    await database.drop();
  });
  const db = store.db as unknown as Kysely<Record<string, Record<string, unknown>>>;

  /** A row of `table` with every required column given a plain value, then `values`. */
  const rowOf = async (table: string, values: Record<string, unknown>) => {
    const meta = (await db.introspection.getTables()).find((t) => t.name === table);
    const row: Record<string, unknown> = {};
    for (const c of meta?.columns ?? []) {
      if (c.isNullable || c.hasDefaultValue) continue;
      row[c.name] = /int|numeric|real|bool/i.test(c.dataType) ? 0 : 'x';
    }
    return { ...row, ...values };
  };

  it('names the kind of every waiting node, and of no other', async () => {
    const migrator = new Migrator({
      db: db as never,
      provider: { getMigrations: async () => migrations as Record<string, Migration> },
    });
    expect((await migrator.migrateTo('0023_call_limits')).error).toBeUndefined();
    await db
      .insertInto('event_subscription')
      .values(await rowOf('event_subscription', { id: 'sub-1' }))
      .execute();
    await db
      .insertInto('workflow_run')
      .values(await rowOf('workflow_run', { id: 'run-1', event_subscription_id: 'sub-1' }))
      .execute();
    const at = '2026-05-01T10:00:00.000Z';
    const node = (id: string, type: string, status: string, extra: Record<string, unknown>) =>
      rowOf('workflow_run_node', {
        id,
        workflow_run_id: 'run-1',
        node_id: id,
        node_key: id,
        node_type: type,
        position: 0,
        status,
        error: null,
        resume_at: null,
        wait_key: null,
        created_at: at,
        updated_at: at,
        ...extra,
      });
    const rows = await Promise.all([
      node('call', 'CALL', 'running', { wait_key: 'run:child-1' }),
      node('limited', 'ACTION', 'running', { wait_key: 'limit:rate_limit:pi-1', resume_at: at }),
      node('event', 'WAIT_EVENT', 'running', { wait_key: 'spec-1:"o-1"', resume_at: at }),
      node('retry', 'ACTION', 'running', { error: 'HTTP 503', resume_at: at }),
      node('delay-retry', 'DELAY', 'running', { error: 'until_template: bad', resume_at: at }),
      node('delay', 'DELAY', 'running', { resume_at: at }),
      node('join', 'JOIN', 'running', { resume_at: at }),
      node('in-flight', 'ACTION', 'running', {}),
      node('done', 'DELAY', 'completed', { resume_at: null }),
    ]);
    for (const r of rows) await db.insertInto('workflow_run_node').values(r).execute();

    expect((await migrator.migrateTo('0024_workflows_wait_kind')).error).toBeUndefined();
    const kinds = Object.fromEntries(
      (await db.selectFrom('workflow_run_node').select(['id', 'wait_kind']).execute()).map((r) => [
        r.id,
        r.wait_kind,
      ]),
    );
    expect(kinds).toEqual({
      call: 'child',
      limited: 'limit',
      event: 'event',
      retry: 'retry',
      'delay-retry': 'retry',
      delay: 'delay',
      join: 'join_timeout',
      'in-flight': null,
      done: null,
    });
  });
});
