import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SharedStore, startSharedStore } from '../helpers/shared-store.js';
import { dialectName } from '../helpers/store.js';
import { type Api, api, publishMany, workflow } from '../workflows/helpers.js';

const RUNS = 4_000;

/**
 * The prune job across real `svc worker` processes on one store (docs/reliability.md "Retention"):
 * a worker killed with SIGKILL in the middle of a pass leaves whole batches only (no node without
 * its run), and two workers started together prune what is left with one of them holding the lease,
 * so no pass is run twice.
 */
describe(`pruning survives kill -9 and shares out across workers (${dialectName})`, () => {
  let shared: SharedStore;
  let a: Api;
  let subscriptionId = '';
  const output = new Map<ChildProcess, string>();

  const workerEnv = {
    SVC_RETENTION_COMPLETED_RUNS_SECONDS: '1',
    SVC_PRUNE_INTERVAL_MS: '200',
    SVC_OUTBOX_DRAIN_INTERVAL_MS: '60000',
    SVC_LOG_LEVEL: 'info',
  };
  function startWorker(): ChildProcess {
    const child = shared.worker(workerEnv);
    output.set(child, '');
    const collect = (chunk: Buffer) => output.set(child, (output.get(child) ?? '') + chunk);
    child.stdout?.on('data', collect);
    child.stderr?.on('data', collect);
    return child;
  }
  const passes = (child: ChildProcess) =>
    (output.get(child) ?? '')
      .split('\n')
      .filter((l) => l.includes('"prune pass"'))
      .map((l) => JSON.parse(l) as { removed: Record<string, number> });

  const db = () => shared.t.ctx.store.db;
  const count = async (table: 'workflow_run' | 'workflow_run_node') =>
    Number(
      (
        await db()
          .selectFrom(table)
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
  const runsOfSubscription = async () =>
    Number(
      (
        await db()
          .selectFrom('workflow_run')
          .select((eb) => eb.fn.countAll().as('n'))
          .where('event_subscription_id', '=', subscriptionId)
          .executeTakeFirstOrThrow()
      ).n,
    );
  const orphanNodes = async () =>
    (
      await db()
        .selectFrom('workflow_run_node as n')
        .leftJoin('workflow_run as r', 'r.id', 'n.workflow_run_id')
        .select('n.id')
        .where('r.id', 'is', null)
        .execute()
    ).length;

  beforeAll(async () => {
    shared = await startSharedStore('svc-prune-');
    a = await api(shared.t);
    subscriptionId = (
      await workflow(a, { nodes: [{ key: 'c', type: 'COMPUTE', config: { logic: { '+': [1, 2] } } }] })
    ).id;
    // RUNS finished runs of one node each, made by the real outbox and engine of the test's app.
    await publishMany(shared.t, RUNS, 200);
    expect(await runsOfSubscription()).toBe(RUNS);
    // Older than the workers' 1-second retention.
    await new Promise((r) => setTimeout(r, 1_100));
  }, 300_000);
  afterAll(() => shared.close());

  it('a worker killed mid-pass leaves whole batches; two restarted workers finish with one lease holder', async () => {
    const nodesBefore = await count('workflow_run_node');
    const first = startWorker();
    let left = RUNS;
    const deadline = Date.now() + 60_000;
    // Killed as soon as the pass has removed something and before it is through.
    while (left === RUNS && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 2));
      left = await runsOfSubscription();
    }
    first.kill('SIGKILL');
    await new Promise((r) => first.once('exit', r));
    left = await runsOfSubscription();
    expect(left).toBeGreaterThan(0);
    expect(left).toBeLessThan(RUNS);
    expect(await orphanNodes()).toBe(0);
    // Whole transactions only: every removed run took its node with it.
    expect(nodesBefore - (await count('workflow_run_node'))).toBe(RUNS - left);

    const second = startWorker();
    const third = startWorker();
    const until = Date.now() + 60_000;
    while ((await runsOfSubscription()) > 0 && Date.now() < until)
      await new Promise((r) => setTimeout(r, 50));
    expect(await runsOfSubscription()).toBe(0);
    expect(await orphanNodes()).toBe(0);
    // Stopped gracefully, each worker has written out every line it logged.
    for (const c of [second, third]) c.kill('SIGTERM');
    await Promise.all([second, third].map((c) => new Promise((r) => c.once('exit', r))));
    const removedBy = (child: ChildProcess) =>
      passes(child).reduce((sum, p) => sum + (p.removed.workflow_run ?? 0), 0);
    const holders = [second, third].filter((c) => passes(c).length > 0);
    expect(holders).toHaveLength(1);
    // What the killed worker left, removed exactly once.
    expect(removedBy(second) + removedBy(third)).toBe(left);
  }, 180_000);
});
