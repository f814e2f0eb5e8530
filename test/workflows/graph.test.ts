import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { findCycle, kahnOrder, type NodeInput, validateGraph } from '../../src/areas/workflows/graph.js';
import { AppError } from '../../src/http/errors.js';

function rejects(nodes: NodeInput[], edges: Parameters<typeof validateGraph>[1] = []): AppError {
  try {
    validateGraph(nodes, edges);
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe('WORKFLOW.INVALID_GRAPH');
    expect((err as AppError).status).toBe(400);
    return err as AppError;
  }
  throw new Error('graph was accepted');
}

const compute = (key: string, extra: Partial<NodeInput> = {}): NodeInput => ({
  key,
  type: 'COMPUTE',
  config: { logic: 1 },
  ...extra,
});

describe('graph validation', () => {
  it('normalises types case-insensitively to upper case and fills defaults', () => {
    const g = validateGraph(
      [
        { key: 'a', type: 'compute', config: { logic: { var: 'event.id' } } },
        { key: 'b', type: 'Switch' },
        { key: 'c', type: 'join', config: { mode: 'n_of_m', n_required: 1 } },
        { key: 'd', type: 'end' },
        { key: 'e', type: 'delay', config: { delay_ms: 0 } },
      ],
      [
        { from_node_id: 'a', to_node_id: 'b' },
        { from_node_id: 'b', to_node_id: 'c' },
      ],
    );
    expect(g.nodes.map((n) => n.type)).toEqual(['COMPUTE', 'SWITCH', 'JOIN', 'END', 'DELAY']);
    expect(g.nodes[1].config).toBeNull();
    expect(g.nodes[2].config).toEqual({ mode: 'N_OF_M', n_required: 1 });
    expect(g.nodes[0]).toMatchObject({
      name: 'a',
      continue_on_error: false,
      retry_policy: null,
      timeout_ms: null,
    });
  });

  it.each([
    ['', 'key must be'],
    ['has space', 'key must be'],
    ['dot.key', 'key must be'],
    ['a[0]', 'key must be'],
    ['x'.repeat(101), 'key must be'],
  ])('rejects the node key %j', (key, message) => {
    expect(rejects([compute(key)]).message).toContain(message);
  });

  it('accepts keys of letters, digits, "_" and "-"', () => {
    expect(validateGraph([compute('Ab_9-z')], []).nodes[0].key).toBe('Ab_9-z');
  });

  it('rejects duplicate keys and duplicate client ids', () => {
    expect(rejects([compute('a'), compute('a')]).message).toContain('already used by nodes.0');
    expect(rejects([compute('a', { id: 'x' }), compute('b', { id: 'x' })]).details).toEqual({
      field: 'nodes.1.id',
    });
  });

  it('rejects an unknown type, naming the allowed ones', () => {
    const err = rejects([{ key: 'a', type: 'LOOP' }]);
    expect(err.details).toMatchObject({
      field: 'nodes.0.type',
      allowed_values: [
        'ACTION',
        'COMPUTE',
        'SWITCH',
        'JOIN',
        'DELAY',
        'END',
        'WAIT_EVENT',
        'FOREACH',
        'CALL',
      ],
    });
  });

  it.each<[string, NodeInput, string]>([
    ['ACTION without config', { key: 'a', type: 'ACTION' }, 'ACTION requires config'],
    [
      'ACTION without plugin_action',
      { key: 'a', type: 'ACTION', config: { plugin_instance_id: 'p' } },
      'plugin_action is required',
    ],
    [
      'ACTION with an unknown field',
      { key: 'a', type: 'ACTION', config: { plugin_instance_id: 'p', plugin_action: 'x', extra: 1 } },
      'does not take "extra"',
    ],
    [
      'ACTION with a non-object mapping',
      {
        key: 'a',
        type: 'ACTION',
        config: { plugin_instance_id: 'p', plugin_action: 'x', input_mapping: [] },
      },
      'input_mapping must be an object',
    ],
    [
      'ACTION with a broken expression in its mapping',
      {
        key: 'a',
        type: 'ACTION',
        config: {
          plugin_instance_id: 'p',
          plugin_action: 'x',
          input_mapping: { literal: { nope_op: 1, x: 2 }, deep: { v: { and: [{ frob: 1 }] }, w: 1 } },
        },
      },
      'nodes.0 (key "a").config.input_mapping.deep.v: not a valid JSONLogic expression: at and.0: unknown operator "frob"',
    ],
    ['COMPUTE without logic', { key: 'a', type: 'COMPUTE', config: {} }, 'COMPUTE requires config.logic'],
    [
      'COMPUTE with null logic',
      { key: 'a', type: 'COMPUTE', config: { logic: null } },
      'COMPUTE requires config.logic',
    ],
    [
      'COMPUTE with null config',
      { key: 'a', type: 'COMPUTE', config: null },
      'COMPUTE requires config.logic',
    ],
    [
      'COMPUTE with an unknown operator',
      { key: 'a', type: 'COMPUTE', config: { logic: { if: [{ frobnicate: [1] }, 1, 2] } } },
      'config.logic: not a valid JSONLogic expression: at if.0: unknown operator "frobnicate"',
    ],
    [
      'SWITCH with a bad mode',
      { key: 'a', type: 'SWITCH', config: { mode: 'SOME' } },
      'FIRST_TRUE or ALL_TRUE',
    ],
    ['JOIN with a bad mode', { key: 'a', type: 'JOIN', config: { mode: 'MOST' } }, 'ALL, ANY or N_OF_M'],
    [
      'JOIN N_OF_M without n_required',
      { key: 'a', type: 'JOIN', config: { mode: 'N_OF_M' } },
      'requires config.n_required',
    ],
    [
      'JOIN with a negative timeout',
      { key: 'a', type: 'JOIN', config: { timeout_ms: -1 } },
      'timeout_ms must be an integer',
    ],
    [
      'JOIN with a timeout past a year',
      { key: 'a', type: 'JOIN', config: { timeout_ms: 1e15 } },
      'between 0 and 31536000000 (365 days)',
    ],
    ['DELAY without config', { key: 'a', type: 'DELAY' }, 'delay_ms or config.until_template'],
    [
      'DELAY with a negative delay',
      { key: 'a', type: 'DELAY', config: { delay_ms: -5 } },
      'delay_ms must be an integer between 0 and',
    ],
    [
      // 2^53 ms lies past the last date a timestamp can hold.
      'DELAY with a delay past a year',
      { key: 'a', type: 'DELAY', config: { delay_ms: Number.MAX_SAFE_INTEGER } },
      'use until_template for a later moment',
    ],
    [
      'DELAY with a broken template',
      { key: 'a', type: 'DELAY', config: { until_template: '{{ event.time + 5 parsecs }}' } },
      'until_template',
    ],
    ['END with config', { key: 'a', type: 'END', config: { x: 1 } }, 'END takes no config'],
    [
      'a negative timeout_ms',
      { key: 'a', type: 'COMPUTE', config: { logic: 1 }, timeout_ms: 0 },
      'timeout_ms must be an integer between 1',
    ],
    ['a timeout_ms past a year', { key: 'a', type: 'JOIN', timeout_ms: 1e12 }, '(365 days)'],
    [
      'timeout_ms on an END',
      { key: 'a', type: 'END', timeout_ms: 10 },
      'timeout_ms has no meaning on END nodes',
    ],
    [
      'timeout_ms on a SWITCH',
      { key: 'a', type: 'SWITCH', timeout_ms: 10 },
      'timeout_ms has no meaning on SWITCH nodes',
    ],
    [
      'timeout_ms on a DELAY',
      { key: 'a', type: 'DELAY', config: { delay_ms: 10 }, timeout_ms: 10 },
      'a DELAY waits for its config.delay_ms or until_template',
    ],
    [
      'JOIN timeout_ms twice, different',
      { key: 'a', type: 'JOIN', timeout_ms: 10, config: { timeout_ms: 20 } },
      'timeout_ms and config.timeout_ms are the same setting and differ',
    ],
    [
      // The wait before the 100th attempt would be 2^98 s.
      'an exponential retry policy whose last wait is past a year',
      { key: 'a', type: 'END', retry_policy: { max_attempts: 100, backoff: 'exponential', base_seconds: 1 } },
      'the longest wait allowed is 31536000 s (365 days)',
    ],
    [
      'a retry policy without attempts',
      { key: 'a', type: 'END', retry_policy: { max_attempts: 0 } },
      'max_attempts must be an integer >= 1',
    ],
    [
      'a retry policy with a bad backoff',
      { key: 'a', type: 'END', retry_policy: { max_attempts: 2, backoff: 'linear' as 'fixed' } },
      'backoff must be',
    ],
  ])('rejects %s', (_what, node, message) => {
    const err = rejects([node]);
    expect(err.message).toContain(message);
    // details.field is a plain path a client can follow (no key label, no quotes).
    expect(String(err.details?.field)).toMatch(/^nodes\.0(\.[A-Za-z0-9_]+)*$/);
  });

  it('details.field is the path into the request; the message names the node by key too', () => {
    const err = rejects([
      compute('a'),
      compute('b'),
      {
        key: 'c',
        type: 'ACTION',
        config: {
          plugin_instance_id: 'p',
          plugin_action: 'x',
          input_mapping: { deep: { v: { and: [{ frob: 1 }] }, w: 1 } },
        },
      },
    ]);
    expect(err.details).toEqual({ field: 'nodes.2.config.input_mapping.deep.v.and.0' });
    expect(err.message).toContain('nodes.2 (key "c").config.input_mapping.deep.v');
    expect(rejects([compute('a'), compute('b'), compute('c', { config: { logic: null } })]).details).toEqual({
      field: 'nodes.2.config.logic',
    });
    expect(rejects([compute('a', { retry_policy: { max_attempts: 0 } })]).details).toEqual({
      field: 'nodes.0.retry_policy.max_attempts',
    });
  });

  it('normalises a retry policy (backoff exponential, base 1 s by default)', () => {
    const g = validateGraph([compute('a', { retry_policy: { max_attempts: 3 } })], []);
    expect(g.nodes[0].retry_policy).toEqual({ max_attempts: 3, backoff: 'exponential', base_seconds: 1 });
  });

  it('rejects an edge to a node that is not in the request', () => {
    const err = rejects([compute('a')], [{ from_node_id: 'a', to_node_id: 'ghost' }]);
    expect(err.details).toEqual({ field: 'edges.0.to_node_id' });
    expect(err.message).toContain('"ghost" is not the id (or key) of a node in this request');
  });

  it('rejects an invalid edge condition', () => {
    const err = rejects(
      [compute('a'), compute('b')],
      [{ from_node_id: 'a', to_node_id: 'b', condition_jsonlogic: { bogus: 1 } }],
    );
    expect(err.details).toEqual({ field: 'edges.0.condition_jsonlogic' });
  });

  it('rejects N_OF_M needing more branches than the JOIN has', () => {
    const err = rejects(
      [compute('a'), { key: 'j', type: 'JOIN', config: { mode: 'N_OF_M', n_required: 2 } }],
      [{ from_node_id: 'a', to_node_id: 'j' }],
    );
    expect(err.message).toContain('n_required is 2 but the node has 1 predecessors');
  });

  it('rejects a cycle with 400 naming the nodes on it', () => {
    const err = rejects(
      [compute('start'), compute('a'), compute('b'), compute('c')],
      [
        { from_node_id: 'start', to_node_id: 'a' },
        { from_node_id: 'a', to_node_id: 'b' },
        { from_node_id: 'b', to_node_id: 'c' },
        { from_node_id: 'c', to_node_id: 'a' },
      ],
    );
    expect(err.details).toEqual({ field: 'edges', cycle: ['a', 'b', 'c'] });
    expect(err.message).toBe('the graph has a cycle: a -> b -> c -> a');
    expect(rejects([compute('self')], [{ from_node_id: 'self', to_node_id: 'self' }]).details).toEqual({
      field: 'edges',
      cycle: ['self'],
    });
  });

  it('orders nodes by Kahn, ties broken by request order', () => {
    const g = validateGraph(
      [compute('late'), compute('root'), compute('mid')],
      [
        { from_node_id: 'root', to_node_id: 'mid' },
        { from_node_id: 'mid', to_node_id: 'late' },
      ],
    );
    expect(g.order.map((i) => g.nodes[i].key)).toEqual(['root', 'mid', 'late']);
  });
});

/** Random DAGs: edges only from a lower to a higher index of a random permutation. */
const dag = fc
  .integer({ min: 1, max: 25 })
  .chain((n) =>
    fc.record({
      n: fc.constant(n),
      perm: fc.shuffledSubarray([...Array(n).keys()], { minLength: n, maxLength: n }),
      pairs: fc.array(fc.tuple(fc.nat(n - 1), fc.nat(n - 1)), { maxLength: n * 3 }),
    }),
  )
  .map(({ n, perm, pairs }) => ({
    n,
    edges: pairs
      .filter(([a, b]) => a !== b)
      .map(([a, b]) => (a < b ? [perm[a], perm[b]] : [perm[b], perm[a]]) as [number, number]),
  }));

describe('Kahn order (property)', () => {
  it('every edge goes forward in the order, and every node appears once', () => {
    fc.assert(
      fc.property(dag, ({ n, edges }) => {
        const order = kahnOrder(n, edges);
        expect([...order].sort((x, y) => x - y)).toEqual([...Array(n).keys()]);
        const pos = new Map(order.map((v, i) => [v, i]));
        for (const [a, b] of edges) expect(pos.get(a)).toBeLessThan(pos.get(b) as number);
        expect(findCycle(n, edges)).toEqual([]);
      }),
      { numRuns: 300 },
    );
  });

  it('a back edge makes a cycle that findCycle reports', () => {
    fc.assert(
      fc.property(dag, fc.nat(), ({ n, edges }, pick) => {
        if (edges.length === 0) return;
        const [a, b] = edges[pick % edges.length];
        const withBack = [...edges, [b, a] as [number, number]];
        expect(kahnOrder(n, withBack).length).toBeLessThan(n);
        const cycle = findCycle(n, withBack);
        expect(cycle.length).toBeGreaterThan(0);
        // Consecutive nodes of the reported cycle are joined by edges, and it closes.
        for (let i = 0; i < cycle.length; i++) {
          const from = cycle[i];
          const to = cycle[(i + 1) % cycle.length];
          expect(withBack.some(([x, y]) => x === from && y === to)).toBe(true);
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('graph validation limits', () => {
  it('refuses templates nested too deeply instead of overflowing the stack', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 5000; i++) deep = { k: deep, n: i };
    const err = rejects([{ key: 'a', type: 'COMPUTE', config: { logic: deep as Record<string, unknown> } }]);
    expect(err.message).toContain('nested more than 64 levels deep');
    let expr: unknown = 1;
    for (let i = 0; i < 5000; i++) expr = { '!': [expr] };
    const e2 = rejects([{ key: 'a', type: 'COMPUTE', config: { logic: { if: [expr, 1, 2] } } }]);
    expect(String(e2.details?.field)).toMatch(/^nodes\.0\.config\.logic(\.[A-Za-z0-9_!]+)*$/);
  });
});
