import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { CloudEvent } from '../../src/areas/events/cloudevent.js';
import { RunMachine } from '../../src/areas/workflows/machine.js';
import type { NodeType } from '../../src/areas/workflows/node-config.js';
import { buildPlan, type GraphEdge, type GraphNode, type Plan } from '../../src/areas/workflows/plan.js';
import type { NodeState } from '../../src/areas/workflows/run-state.js';

/**
 * Property: on random DAGs with every node type, random edge conditions, failures, retries, delays
 * and crashes (the machine rebuilt from its persisted states, an ACTION possibly in flight), no node
 * attempt ever starts before every one of its predecessors has finished or been skipped, and every
 * run ends completed or failed with no node left running.
 */

const EVENT: CloudEvent = {
  specversion: '1.0',
  id: 'evt-1',
  source: '/test',
  type: 'svc.test',
  time: '2026-01-01T00:00:00.000Z',
  datacontenttype: 'application/json',
  data: { n: 5 },
};

const nodeSpec = fc.record({
  type: fc.constantFrom<NodeType>('COMPUTE', 'COMPUTE', 'ACTION', 'ACTION', 'SWITCH', 'JOIN', 'DELAY', 'END'),
  fails: fc.boolean(),
  continueOnError: fc.boolean(),
  retries: fc.integer({ min: 1, max: 3 }),
  idempotent: fc.boolean(),
});

const graphArb = fc.integer({ min: 1, max: 12 }).chain((n) =>
  fc.record({
    specs: fc.array(nodeSpec, { minLength: n, maxLength: n }),
    perm: fc.shuffledSubarray([...Array(n).keys()], { minLength: n, maxLength: n }),
    edges: fc.array(
      fc.record({
        a: fc.nat(n - 1),
        b: fc.nat(n - 1),
        cond: fc.constantFrom('none', 'true', 'false', 'output'),
      }),
      { maxLength: n * 2 },
    ),
    crashes: fc.array(fc.nat(40), { maxLength: 3 }),
    outcomes: fc.array(fc.boolean(), { minLength: 50, maxLength: 50 }),
  }),
);

type Graph = typeof graphArb extends fc.Arbitrary<infer T> ? T : never;

function makePlan(g: Graph) {
  const nodes: GraphNode[] = g.specs.map((s, i) => ({
    id: `n${i}`,
    event_subscription_id: 'sub',
    key: `k${i}`,
    name: `k${i}`,
    description: null,
    type: s.type,
    config:
      s.type === 'COMPUTE'
        ? { logic: s.fails ? { throw: 'boom' } : { '+': [{ var: 'event.data.n' }, i] } }
        : s.type === 'ACTION'
          ? { plugin_instance_id: s.idempotent ? 'idem' : 'once', plugin_action: 'run', input_mapping: { i } }
          : s.type === 'DELAY'
            ? { delay_ms: 1000 * (i + 1) }
            : s.type === 'JOIN'
              ? { mode: s.fails ? 'ALL' : 'ANY' }
              : null,
    retry_policy: { max_attempts: s.retries, backoff: 'fixed', base_seconds: 1 },
    timeout_ms: null,
    continue_on_error: s.continueOnError,
    created_at: EVENT.time,
  }));
  const edges: GraphEdge[] = g.edges
    .filter((e) => e.a !== e.b)
    .map((e, i) => {
      const [x, y] = g.perm.indexOf(e.a) < g.perm.indexOf(e.b) ? [e.a, e.b] : [e.b, e.a];
      const condition =
        e.cond === 'none'
          ? null
          : e.cond === 'true'
            ? { '==': [1, 1] }
            : e.cond === 'false'
              ? { '==': [1, 2] }
              : { '!!': [{ var: `nodes.k${x}.output` }] };
      return {
        id: `e${i}`,
        event_subscription_id: 'sub',
        from_node_id: `n${x}`,
        to_node_id: `n${y}`,
        label: null,
        condition_jsonlogic: condition,
        on_failure: false,
        created_at: EVENT.time,
      };
    });
  return buildPlan('sub', 1, nodes, edges);
}

/**
 * Drives a run as the engine does, in rounds: every ACTION the machine says may start is started,
 * then all of them answer (in order, each per `outcomes`), then the machine advances again.
 */
function run(plan: Plan, g: { crashes: number[]; outcomes: boolean[] }) {
  let clock = Date.parse(EVENT.time);
  const finished = new Set<string>();
  const violations: string[] = [];
  const observe = (event: 'start' | 'finish' | 'skip', key: string) => {
    if (event === 'start') {
      const node = plan.byKey.get(key);
      const preds = node?.preds ?? [];
      const early = node?.type === 'JOIN' && node.config?.mode !== 'ALL';
      // A JOIN ANY / N_OF_M may start once one predecessor finished; everything else waits for all.
      const missing = preds.filter((p) => !finished.has(p));
      if (early ? preds.length > 0 && missing.length === preds.length : missing.length > 0)
        violations.push(`${key} started before ${missing.join(', ')} finished`);
    } else finished.add(key);
  };
  let states = RunMachine.pendingStates(plan, (n) => `rn-${n.key}`);
  const runState = {
    id: 'run',
    status: 'running' as const,
    error: null,
    started_at: EVENT.time,
    completed_at: null,
  };
  let machine = new RunMachine(plan, EVENT, { ...runState }, states);
  machine.observer = observe;
  let steps = 0;
  let outcome = 0;
  const crashAt = new Set(g.crashes);
  for (;;) {
    if (++steps > 500) throw new Error('run did not end');
    if (crashAt.has(steps)) {
      // A crash: a new machine from the persisted states (attempts in flight stay "running").
      states = new Map([...states].map(([k, s]) => [k, structuredClone(s) as NodeState]));
      machine = new RunMachine(plan, EVENT, { ...machine.run }, states);
      machine.observer = observe;
    }
    const step = machine.advance(new Date(clock));
    if (machine.run.status !== 'running') break;
    if (step.invokes.length === 0) {
      if (step.wakeAt === null) throw new Error('a running run with nothing to do and nothing to wait for');
      clock = Math.max(clock, Date.parse(step.wakeAt));
      continue;
    }
    const started = [];
    for (const b of step.invokes) {
      const idempotent = b.node.config?.plugin_instance_id === 'idem';
      if (b.interrupted && !idempotent) {
        machine.attemptFailed(b.node, b.state, 'not idempotent', new Date(clock), true);
        continue;
      }
      if (b.interrupted) machine.markInterrupted(b);
      if (!machine.accepts(b.state)) continue;
      machine.beginAttempt(b.state, new Date(clock));
      started.push(b);
    }
    // A crash scheduled right now leaves these attempts in flight.
    if (crashAt.has(steps + 1)) continue;
    clock += 10;
    for (const b of started) {
      if (g.outcomes[outcome++ % g.outcomes.length])
        machine.invokeSucceeded(b, { ok: true }, new Date(clock));
      else machine.attemptFailed(b.node, b.state, 'plugin said no', new Date(clock));
    }
  }
  return { machine, states, violations };
}

describe('run machine (property)', () => {
  it('never starts a node before all its non-skipped predecessors finished; runs always end', () => {
    fc.assert(
      fc.property(graphArb, (g) => {
        const plan = makePlan(g);
        const { machine, states, violations } = run(plan, g);
        expect(violations).toEqual([]);
        expect(['completed', 'failed']).toContain(machine.run.status);
        for (const s of states.values()) expect(s.status).not.toBe('running');
        // Skipped nodes say why; failed nodes say why; completed nodes have no error.
        for (const s of states.values()) {
          if (s.status === 'skipped') expect(s.skip_reason?.edges.length).toBeGreaterThan(0);
          if (s.status === 'failed') expect(s.error).toBeTruthy();
          if (s.status === 'completed') expect(s.error).toBeNull();
        }
        // A failed run names a failed node whose continue_on_error is false.
        if (machine.run.status === 'failed') {
          // (Nodes the failure stopped on other branches say "stopped: the run failed ...".)
          const culprit = [...states.values()].find(
            (s) =>
              s.status === 'failed' &&
              !s.error?.startsWith('stopped:') &&
              !plan.byKey.get(s.key)?.continueOnError,
          );
          expect(culprit).toBeDefined();
          expect(machine.run.error).toContain(`node "${culprit?.key}"`);
        }
      }),
      { numRuns: 400 },
    );
  });

  it('simulation reaches the same terminal states as a run whose actions succeed at once', () => {
    // Without timers (no DELAY, no retry backoff) a real run and its simulation see the same rounds.
    const timerless = graphArb.map((g) => ({
      ...g,
      specs: g.specs.map((s) => ({
        ...s,
        retries: 1,
        type: s.type === 'DELAY' ? ('COMPUTE' as const) : s.type,
      })),
    }));
    fc.assert(
      fc.property(timerless, (g) => {
        const plan = makePlan(g);
        const sim = new RunMachine(
          plan,
          EVENT,
          { id: '', status: 'running', error: null, started_at: EVENT.time, completed_at: null },
          RunMachine.pendingStates(plan, () => ''),
          true,
        );
        sim.advance(new Date(EVENT.time));
        expect(sim.run.status).not.toBe('running');
        const real = run(plan, { crashes: [], outcomes: [true] });
        // Retries make no difference to a deterministic failure, so statuses agree node by node.
        for (const n of plan.nodes) expect(sim.nodes.get(n.key)?.status).toBe(real.states.get(n.key)?.status);
        expect(sim.run.status).toBe(real.machine.run.status);
      }),
      { numRuns: 300 },
    );
  });
});
