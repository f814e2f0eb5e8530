import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../../src/lib/clock.js';
import type { TestApp } from '../helpers/app.js';
import { dialectName } from '../helpers/store.js';
import {
  type Api,
  type Json,
  nodesOf,
  publish,
  runsOf,
  settle,
  startWorkflowApp,
  workflow,
} from './helpers.js';

/**
 * Property, through the durable engine and HTTP: on random DAGs (every node type, random edge
 * conditions, failures, retries, delays), no node starts before all of its non-skipped predecessors
 * finished, and every run ends with no node running.
 */
describe(`random DAGs through the durable engine (${dialectName})`, () => {
  let t: TestApp;
  let a: Api;
  let wftest: string;
  const clock = manualClock(new Date('2026-02-01T10:00:00.000Z'));

  beforeAll(async () => {
    ({ t, a, wftest } = await startWorkflowApp(clock));
  });
  afterAll(() => t.close());

  const kind = fc.constantFrom('COMPUTE', 'FAIL', 'ACTION', 'FLAKY', 'SWITCH', 'JOIN', 'DELAY', 'END');
  const arb = fc.integer({ min: 1, max: 8 }).chain((n) =>
    fc.record({
      kinds: fc.array(kind, { minLength: n, maxLength: n }),
      continueOnError: fc.array(fc.boolean(), { minLength: n, maxLength: n }),
      perm: fc.shuffledSubarray([...Array(n).keys()], { minLength: n, maxLength: n }),
      edges: fc.array(
        fc.record({
          a: fc.nat(n - 1),
          b: fc.nat(n - 1),
          cond: fc.constantFrom('none', 'true', 'false', 'output'),
        }),
        {
          maxLength: n * 2,
        },
      ),
    }),
  );

  function nodeOf(k: string, i: number, continueOnError: boolean) {
    const key = `n${i}`;
    const base = { key, continue_on_error: continueOnError };
    switch (k) {
      case 'COMPUTE':
        return { ...base, type: 'COMPUTE', config: { logic: { '+': [i, 1] } } };
      case 'FAIL':
        return { ...base, type: 'COMPUTE', config: { logic: { '/': [1, { var: 'event.data.word' }] } } };
      case 'ACTION':
        return {
          ...base,
          type: 'ACTION',
          config: { plugin_instance_id: wftest, plugin_action: 'record', input_mapping: { i } },
        };
      case 'FLAKY':
        return {
          ...base,
          type: 'ACTION',
          config: { plugin_instance_id: wftest, plugin_action: 'flaky', input_mapping: { fail_times: 1 } },
          retry_policy: { max_attempts: 2, backoff: 'fixed', base_seconds: 1 },
        };
      case 'DELAY':
        return { ...base, type: 'DELAY', config: { delay_ms: 1_000 * (i + 1) } };
      default:
        return { ...base, type: k };
    }
  }

  it('no node starts before its non-skipped predecessors finished', async () => {
    await fc.assert(
      fc.asyncProperty(arb, async (g) => {
        const nodes = g.kinds.map((k, i) => nodeOf(k, i, g.continueOnError[i]));
        const pairs = g.edges
          .filter((e) => e.a !== e.b)
          .map((e) => {
            const [x, y] = g.perm.indexOf(e.a) < g.perm.indexOf(e.b) ? [e.a, e.b] : [e.b, e.a];
            const condition =
              e.cond === 'none'
                ? undefined
                : e.cond === 'true'
                  ? { '==': [1, 1] }
                  : e.cond === 'false'
                    ? { '==': [1, 2] }
                    : { '!!': [{ var: `nodes.n${x}.output` }] };
            return {
              from_node_id: `n${x}`,
              to_node_id: `n${y}`,
              ...(condition ? { condition_jsonlogic: condition } : {}),
            };
          });
        const wf = await workflow(a, { nodes, edges: pairs });
        await publish(t, { word: 'w' });
        for (let i = 0; i < 20; i++) {
          await settle(t);
          const [run] = await runsOf(a, wf.id);
          if (run.status !== 'running') break;
          clock.advance(5_000);
        }
        const [run] = await runsOf(a, wf.id);
        expect(['completed', 'failed']).toContain(run.status);
        const states: Record<string, Json> = await nodesOf(a, run.id);
        for (const n of Object.values(states)) {
          expect(n.status).not.toBe('running');
          if (n.started_at === null) continue;
          for (const e of pairs.filter((p) => p.to_node_id === n.node_key)) {
            const p = states[e.from_node_id];
            expect(['completed', 'failed', 'skipped']).toContain(p.status);
            if (p.status === 'skipped') continue;
            expect(p.position).toBeLessThan(n.position);
            expect(Date.parse(p.completed_at)).toBeLessThanOrEqual(Date.parse(n.started_at));
          }
        }
      }),
      { numRuns: 25 },
    );
  }, 120_000);
});
