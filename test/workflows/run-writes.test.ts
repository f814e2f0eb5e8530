import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  getRun,
  nodesOfRun,
  type RunWrite,
  toNodeState,
  writeRuns,
} from '../../src/areas/workflows/store.js';
import type { TestApp } from '../helpers/app.js';
import { dialectName } from '../helpers/store.js';
import { type Api, publish, runsOf, settle, startWorkflowApp, workflow } from './helpers.js';

/**
 * The engine's batched run write (writeRuns): one UPDATE for the runs of a batch, applied only to the
 * runs the writing worker still holds; a run lost to another worker is answered false, and neither its
 * fields nor its nodes are written.
 */
describe(`batched run writes (${dialectName})`, () => {
  let t: TestApp;
  let a: Api;
  let runIds: string[];
  beforeAll(async () => {
    ({ t, a } = await startWorkflowApp());
    // Runs that wait an hour at a DELAY: released (no worker holds them) until the test leases them.
    const wf = await workflow(a, {
      nodes: [
        { key: 'wait', type: 'DELAY', config: { delay_ms: 3_600_000 } },
        { key: 'done', type: 'END', config: {} },
      ],
      edges: [{ from_node_id: 'wait', to_node_id: 'done' }],
    });
    for (let i = 0; i < 3; i++) await publish(t);
    await settle(t);
    runIds = (await runsOf(a, wf.id)).map((r: { id: string }) => r.id);
  });
  afterAll(() => t.close());

  const lease = (id: string, worker: string) =>
    sql`update workflow_run set locked_by = ${worker} where id = ${id}`.execute(t.ctx.store.db);
  const write = async (id: string, status: 'running' | 'completed', lockedBy: string | null, at: string) => {
    const [wait] = (await nodesOfRun(t.ctx.store.db, id)).map(toNodeState);
    return {
      run: { id, status, error: null, completed_at: status === 'completed' ? at : null, started_at: at },
      lease: { wake_at: null, locked_by: lockedBy },
      nodes: [{ ...wait, status: 'completed', completed_at: at }],
      at,
    } as RunWrite;
  };

  it('writes the runs this worker holds and answers false for the one another worker has', async () => {
    expect(runIds).toHaveLength(3);
    const [mine, theirs, alsoMine] = runIds;
    await lease(mine, 'worker-a');
    await lease(theirs, 'worker-b');
    await lease(alsoMine, 'worker-a');
    const at = '2030-01-01T00:00:00.000Z';
    const items = [
      await write(mine, 'completed', null, at),
      await write(theirs, 'completed', null, at),
      await write(alsoMine, 'running', 'worker-a', at),
    ];
    const held = await t.ctx.store.transaction((tx) => writeRuns(tx.db, 'worker-a', items));
    expect(held).toEqual([true, false, true]);

    const row = async (id: string) => getRun(t.ctx.store.db, id);
    expect(await row(mine)).toMatchObject({
      status: 'completed',
      completed_at: at,
      locked_by: null,
      updated_at: at,
    });
    expect(await row(alsoMine)).toMatchObject({
      status: 'running',
      completed_at: null,
      locked_by: 'worker-a',
    });
    // The run worker-b holds is untouched, its nodes too.
    expect(await row(theirs)).toMatchObject({ status: 'running', locked_by: 'worker-b' });
    expect((await row(theirs))?.updated_at).not.toBe(at);
    const nodeOf = async (id: string) =>
      (await nodesOfRun(t.ctx.store.db, id)).find((n) => n.node_key === 'wait');
    expect(await nodeOf(mine)).toMatchObject({ status: 'completed', completed_at: at });
    expect(await nodeOf(theirs)).toMatchObject({ status: 'running' });
  });

  it('two writes of one run in a batch apply in order', async () => {
    const [, theirs] = runIds;
    await lease(theirs, 'worker-c');
    const items = [
      await write(theirs, 'running', 'worker-c', '2030-01-01T00:00:01.000Z'),
      await write(theirs, 'completed', null, '2030-01-01T00:00:02.000Z'),
    ];
    const held = await t.ctx.store.transaction((tx) => writeRuns(tx.db, 'worker-c', items));
    expect(held).toEqual([true, true]);
    expect(await getRun(t.ctx.store.db, theirs)).toMatchObject({
      status: 'completed',
      locked_by: null,
      updated_at: '2030-01-01T00:00:02.000Z',
    });
  });
});
