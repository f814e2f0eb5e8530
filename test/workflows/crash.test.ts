import type { ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import { waitForOutput } from '../helpers/cli.js';
import { type SharedStore, startSharedStore } from '../helpers/shared-store.js';
import { dialectName } from '../helpers/store.js';
import { type Api, api, type Json, nodesOf, pluginInstance, publish, runsOf, workflow } from './helpers.js';
import { wftestPluginDir } from './plugin.js';

/**
 * Durable execution across a crash: a real `svc worker` process (the CLI) is killed with SIGKILL while
 * one run waits in a DELAY and two runs are inside an ACTION (one idempotent, one not); a new worker
 * process then finishes every run correctly from its last persisted step.
 */
describe(`crash recovery with a real worker process (${dialectName})`, () => {
  let shared: SharedStore;
  let t: TestApp;
  let a: Api;
  let worker: ChildProcess | undefined;
  const pluginDir = wftestPluginDir();

  function startWorker(): ChildProcess {
    return shared.worker({
      SVC_PLUGIN_DIR: pluginDir,
      SVC_WORKFLOW_LEASE_MS: '1500',
      SVC_WORKFLOW_POLL_INTERVAL_MS: '100',
      SVC_OUTBOX_DRAIN_INTERVAL_MS: '100',
      SVC_LOG_LEVEL: 'info',
    });
  }

  async function eventually<T>(
    what: string,
    check: () => Promise<T | false | undefined>,
    ms = 20_000,
  ): Promise<T> {
    const deadline = Date.now() + ms;
    for (;;) {
      const value = await check();
      if (value) return value;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  const lines = (file: string): Json[] =>
    existsSync(file)
      ? readFileSync(file, 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l))
      : [];

  beforeAll(async () => {
    shared = await startSharedStore('svc-wf-crash-', { SVC_PLUGIN_DIR: pluginDir });
    t = shared.t;
    a = await api(t);
  });
  afterAll(() => shared.close());

  it('finishes a DELAY, both kinds of interrupted ACTION and two branches in flight after the worker is killed and restarted', async () => {
    const wftest = await pluginInstance(a, 'wftest');
    const idemLog = join(shared.dir, 'idempotent.log');
    const onceLog = join(shared.dir, 'once.log');
    const branchLog = join(shared.dir, 'branches.log');
    const delayed = await workflow(a, {
      nodes: [
        { key: 'wait', type: 'DELAY', config: { delay_ms: 2_500 } },
        {
          key: 'after',
          type: 'COMPUTE',
          config: { logic: { cat: ['woke for ', { var: 'event.data.user_id' }] } },
        },
      ],
      edges: [{ from_node_id: 'wait', to_node_id: 'after' }],
    });
    const idempotent = await workflow(a, {
      nodes: [
        {
          key: 'call',
          type: 'ACTION',
          config: {
            plugin_instance_id: wftest,
            plugin_action: 'hang',
            input_mapping: { ms: 3_000, log: idemLog },
          },
        },
        { key: 'after', type: 'COMPUTE', config: { logic: { var: 'nodes.call.output.done' } } },
      ],
      edges: [{ from_node_id: 'call', to_node_id: 'after' }],
    });
    const once = await workflow(a, {
      nodes: [
        {
          key: 'call',
          type: 'ACTION',
          config: {
            plugin_instance_id: wftest,
            plugin_action: 'hang_once',
            input_mapping: { ms: 3_000, log: onceLog },
          },
        },
        { key: 'after', type: 'COMPUTE', config: { logic: 'never' } },
      ],
      edges: [{ from_node_id: 'call', to_node_id: 'after' }],
    });

    // Two branches in flight at once, joined, then one more call.
    const hang = (key: string) => ({
      key,
      type: 'ACTION',
      config: {
        plugin_instance_id: wftest,
        plugin_action: 'hang',
        input_mapping: { ms: 3_000, log: branchLog, branch: key },
      },
    });
    const branches = await workflow(a, {
      nodes: [
        hang('left'),
        hang('right'),
        { key: 'both', type: 'JOIN' },
        {
          key: 'joined',
          type: 'ACTION',
          config: {
            plugin_instance_id: wftest,
            plugin_action: 'record',
            input_mapping: { log: branchLog, marker: 'joined' },
          },
        },
      ],
      edges: [
        { from_node_id: 'left', to_node_id: 'both' },
        { from_node_id: 'right', to_node_id: 'both' },
        { from_node_id: 'both', to_node_id: 'joined' },
      ],
    });

    worker = startWorker();
    await waitForOutput(worker, /worker started/);
    const event = await publish(t, {});

    // The first worker reaches the DELAY and is inside both ACTIONs.
    const [delayRun] = await eventually('the DELAY to be waiting', async () => {
      const runs = await runsOf(a, delayed.id);
      return runs.length === 1 && (await nodesOf(a, runs[0].id)).wait.status === 'running' && runs;
    });
    await eventually(
      'every action to be in flight',
      async () => lines(idemLog).length === 1 && lines(onceLog).length === 1 && lines(branchLog).length === 2,
    );
    const firstPid = lines(idemLog)[0].pid;
    const waiting = (await nodesOf(a, delayRun.id)).wait;
    expect(waiting.resume_at).not.toBeNull();

    worker.kill('SIGKILL');
    await new Promise((r) => worker?.once('exit', r));
    // Nothing finished while no worker ran.
    for (const sub of [delayed.id, idempotent.id, once.id, branches.id])
      expect((await runsOf(a, sub))[0].status).toBe('running');

    worker = startWorker();
    await waitForOutput(worker, /worker started/);
    const finished = await eventually('every run to finish', async () => {
      const runs = await Promise.all(
        [delayed.id, idempotent.id, once.id, branches.id].map(async (s) => (await runsOf(a, s))[0]),
      );
      return runs.every((r) => r.status !== 'running') && runs;
    });
    const [d, i, o, b] = finished;

    // DELAY: the persisted timer was picked up by the new process; the run went on from there.
    expect(d.status).toBe('completed');
    const dn = await nodesOf(a, d.id);
    expect(dn.wait).toMatchObject({ status: 'completed', attempts: 1, resume_at: null });
    expect(Date.parse(dn.wait.completed_at)).toBeGreaterThanOrEqual(Date.parse(waiting.resume_at));
    expect(dn.after.output).toEqual({ result: `woke for ${event.data.user_id}` });

    // Idempotent ACTION: the interrupted attempt was run again, with the same idempotency key.
    expect(i.status).toBe('completed');
    const inodes = await nodesOf(a, i.id);
    expect(inodes.call).toMatchObject({
      status: 'completed',
      attempts: 2,
      output: { done: true, key: `${i.id}:call` },
    });
    expect(inodes.after.output).toEqual({ result: true });
    const idemCalls = lines(idemLog);
    expect(idemCalls.map((c) => c.key)).toEqual([`${i.id}:call`, `${i.id}:call`]);
    expect(idemCalls[1].pid).not.toBe(firstPid);

    // Non-idempotent ACTION: not invoked again; the node fails saying why; the run fails.
    expect(o.status).toBe('failed');
    const onodes = await nodesOf(a, o.id);
    expect(onodes.call.status).toBe('failed');
    expect(onodes.call.error).toBe(
      'attempt 1 was in flight when its worker stopped and may have reached the plugin; action "hang_once" is not idempotent, so it was not invoked again',
    );
    expect(onodes.after.status).toBe('pending');
    expect(lines(onceLog)).toHaveLength(1);

    // Two branches in flight at the crash: both ran again (idempotent), both completed once, and
    // what follows their JOIN ran exactly once.
    expect(b.status).toBe('completed');
    const bnodes = await nodesOf(a, b.id);
    for (const k of ['left', 'right'])
      expect(bnodes[k]).toMatchObject({ status: 'completed', attempts: 2, output: { done: true } });
    expect(bnodes.both).toMatchObject({ status: 'completed', output: { completed: ['left', 'right'] } });
    const branchCalls = lines(branchLog);
    expect(
      branchCalls
        .filter((c) => c.action === 'hang')
        .map((c) => c.key)
        .sort(),
    ).toEqual([`${b.id}:left`, `${b.id}:left`, `${b.id}:right`, `${b.id}:right`]);
    expect(branchCalls.filter((c) => c.action === 'record')).toHaveLength(1);

    // No run is left running, and every run released its lease.
    const rows = await t.ctx.store.db
      .selectFrom('workflow_run')
      .select(['status', 'wake_at', 'locked_by'])
      .execute();
    for (const r of rows) expect(r).toMatchObject({ wake_at: null, locked_by: null });
  }, 60_000);
});
