import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import { dialectName } from '../helpers/store.js';
import { type Api, type Json, onlyRun, publish, settle, startWorkflowApp, workflow } from './helpers.js';

/**
 * Branches run side by side (docs/workflows.md "Branches and JOIN"), on the real clock: node
 * timestamps prove the overlap, JOIN ANY / N_OF_M complete before their slow branch, a JOIN's
 * timeout runs from the first arrival and stops the run's other branches.
 */
describe(`parallel branches and JOIN (${dialectName})`, () => {
  let t: TestApp;
  let a: Api;
  let wftest: string;

  beforeAll(async () => {
    ({ t, a, wftest } = await startWorkflowApp());
  });
  afterAll(() => t.close());

  const slow = (key: string, ms: number, extra: Record<string, unknown> = {}) => ({
    key,
    type: 'ACTION',
    config: { plugin_instance_id: wftest, plugin_action: 'slow', input_mapping: { ms } },
    ...extra,
  });
  const at = (n: Json, field: 'started_at' | 'completed_at') => Date.parse(n[field]);

  it('two independent ACTION branches overlap in time: the run takes one branch, not two', async () => {
    const wf = await workflow(a, {
      nodes: [slow('left', 600), slow('right', 600), { key: 'both', type: 'JOIN' }],
      edges: [
        { from_node_id: 'left', to_node_id: 'both' },
        { from_node_id: 'right', to_node_id: 'both' },
      ],
    });
    await publish(t);
    await settle(t);
    const { run, nodes } = await onlyRun(a, wf.id);
    expect(run.status).toBe('completed');
    // Each started before the other finished.
    expect(at(nodes.left, 'started_at')).toBeLessThan(at(nodes.right, 'completed_at'));
    expect(at(nodes.right, 'started_at')).toBeLessThan(at(nodes.left, 'completed_at'));
    expect(Date.parse(run.completed_at) - Date.parse(run.started_at)).toBeLessThan(1_100);
    expect(nodes.both.output).toEqual({
      mode: 'ALL',
      completed: ['left', 'right'],
      failed: [],
      skipped: [],
      pending: [],
    });
  });

  it('JOIN ANY completes with its first branch; the slow branch keeps running and the run ends after it', async () => {
    const wf = await workflow(a, {
      nodes: [
        { key: 'fast', type: 'COMPUTE', config: { logic: { cat: ['hi ', { var: 'event.data.email' }] } } },
        slow('slow', 700),
        { key: 'first', type: 'JOIN', config: { mode: 'ANY' } },
        { key: 'after', type: 'COMPUTE', config: { logic: { var: 'nodes.fast.output.result' } } },
      ],
      edges: [
        { from_node_id: 'fast', to_node_id: 'first' },
        { from_node_id: 'slow', to_node_id: 'first' },
        { from_node_id: 'first', to_node_id: 'after' },
      ],
    });
    await publish(t);
    await settle(t);
    const { run, nodes } = await onlyRun(a, wf.id);
    expect(run.status).toBe('completed');
    expect(nodes.first).toMatchObject({
      status: 'completed',
      output: { mode: 'ANY', completed: ['fast'], failed: [], skipped: [], pending: ['slow'] },
    });
    expect(at(nodes.first, 'completed_at')).toBeLessThan(at(nodes.slow, 'completed_at'));
    expect(at(nodes.after, 'completed_at')).toBeLessThan(at(nodes.slow, 'completed_at'));
    expect(nodes.slow.status).toBe('completed');
    expect(Date.parse(run.completed_at)).toBeGreaterThanOrEqual(at(nodes.slow, 'completed_at'));
  });

  it('JOIN N_OF_M completes as soon as n_required branches completed', async () => {
    const wf = await workflow(a, {
      nodes: [
        slow('a', 50),
        slow('b', 80),
        slow('c', 800),
        { key: 'two', type: 'JOIN', config: { mode: 'N_OF_M', n_required: 2 } },
      ],
      edges: ['a', 'b', 'c'].map((k) => ({ from_node_id: k, to_node_id: 'two' })),
    });
    await publish(t);
    await settle(t);
    const { nodes } = await onlyRun(a, wf.id);
    expect(nodes.two).toMatchObject({
      status: 'completed',
      output: { mode: 'N_OF_M', completed: ['a', 'b'], pending: ['c'] },
    });
    expect(at(nodes.two, 'completed_at')).toBeLessThan(at(nodes.c, 'completed_at'));
  });

  it('a JOIN timeout runs from the first arrival; branches that meet inside it pass', async () => {
    const wf = await workflow(a, {
      nodes: [slow('one', 500), slow('two', 520), { key: 'meet', type: 'JOIN', timeout_ms: 300 }],
      edges: [
        { from_node_id: 'one', to_node_id: 'meet' },
        { from_node_id: 'two', to_node_id: 'meet' },
      ],
    });
    await publish(t);
    await settle(t);
    const { run, nodes } = await onlyRun(a, wf.id);
    expect(run.status).toBe('completed');
    expect(nodes.meet.output).toMatchObject({ completed: ['one', 'two'], pending: [] });
  });

  it('a JOIN timeout that passes before its branches arrive fails it; the run stops the branch in flight', async () => {
    const wf = await workflow(a, {
      nodes: [
        { key: 'quick', type: 'COMPUTE', config: { logic: 1 } },
        slow('late', 900),
        { key: 'meet', type: 'JOIN', timeout_ms: 300 },
      ],
      edges: [
        { from_node_id: 'quick', to_node_id: 'meet' },
        { from_node_id: 'late', to_node_id: 'meet' },
      ],
    });
    await publish(t);
    await settle(t);
    const { run, nodes } = await onlyRun(a, wf.id);
    expect(run.status).toBe('failed');
    expect(nodes.meet.error).toBe(
      'JOIN ALL timed out: timeout_ms 300 passed after the first predecessor finished (completed: "quick"; failed: none; skipped: none; still running: "late")',
    );
    const waited = at(nodes.meet, 'completed_at') - at(nodes.quick, 'completed_at');
    expect(waited).toBeGreaterThanOrEqual(300);
    expect(waited).toBeLessThan(900);
    // No node is left running under a finished run: the call in flight was abandoned.
    expect(nodes.late).toMatchObject({ status: 'failed', attempts: 1 });
    expect(nodes.late.error).toMatch(
      /^stopped: the run failed \(node "meet" \(JOIN\) failed: .*the attempt in flight was abandoned$/,
    );
  });

  it('a branch failing without continue_on_error stops the run at once, abandoning the other branch', async () => {
    const wf = await workflow(a, {
      nodes: [
        slow('long', 900),
        {
          key: 'broken',
          type: 'ACTION',
          config: { plugin_instance_id: wftest, plugin_action: 'fail_with', input_mapping: { why: 'no' } },
        },
      ],
    });
    await publish(t);
    await settle(t);
    const { run, nodes } = await onlyRun(a, wf.id);
    expect(run.status).toBe('failed');
    expect(run.error).toContain('node "broken" (ACTION) failed');
    expect(nodes.long.status).toBe('failed');
    expect(Date.parse(run.completed_at) - at(nodes.long, 'started_at')).toBeLessThan(900);
  });

  it('timeout_ms bounds a COMPUTE evaluation: one that takes longer fails its attempt', async () => {
    const wf = await workflow(a, {
      nodes: [
        {
          key: 'heavy',
          type: 'COMPUTE',
          timeout_ms: 1,
          config: {
            logic: {
              reduce: [{ var: 'event.data.items' }, { '+': [{ var: 'current' }, { var: 'accumulator' }] }, 0],
            },
          },
        },
      ],
    });
    await publish(t, { items: Array.from({ length: 400_000 }, (_, i) => i % 7) });
    await settle(t);
    const { run, nodes } = await onlyRun(a, wf.id);
    expect(run.status).toBe('failed');
    expect(nodes.heavy.error).toMatch(
      /^attempt 1 timed out: the expression took \d+ ms, more than timeout_ms 1$/,
    );
  });
});
