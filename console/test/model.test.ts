import { describe, expect, it } from 'vitest';
import { allows } from '../src/access';
import {
  drawableFromInput,
  drawableFromRecord,
  inputFromRecord,
  nodesOfGraphError,
} from '../src/graph/model';
import { matchRoute } from '../src/router';
import { formatDuration, runActions, sameNodes, timeline } from '../src/runs/timeline';

const record = {
  subscription: {} as never,
  available_paths: [],
  nodes: [
    {
      id: 'n1',
      event_subscription_id: 's',
      key: 'derive',
      name: 'derive',
      description: null,
      type: 'COMPUTE',
      config: { logic: { var: 'a' } },
      retry_policy: null,
      timeout_ms: null,
      continue_on_error: false,
      created_at: '',
    },
    {
      id: 'n2',
      event_subscription_id: 's',
      key: 'done',
      name: 'Finish',
      description: null,
      type: 'END',
      config: null,
      retry_policy: null,
      timeout_ms: 500,
      continue_on_error: true,
      created_at: '',
    },
  ],
  edges: [
    {
      id: 'e1',
      event_subscription_id: 's',
      from_node_id: 'n1',
      to_node_id: 'n2',
      label: null,
      condition_jsonlogic: { var: 'ok' },
      on_failure: false,
      created_at: '',
    },
    {
      id: 'e2',
      event_subscription_id: 's',
      from_node_id: 'n1',
      to_node_id: 'n2',
      label: null,
      condition_jsonlogic: null,
      on_failure: true,
      created_at: '',
    },
  ],
};

describe('graph model', () => {
  it('turns the stored graph into the PUT form: keys instead of ids, only the fields that say something', () => {
    expect(inputFromRecord(record)).toEqual({
      nodes: [
        { key: 'derive', type: 'COMPUTE', config: { logic: { var: 'a' } } },
        { key: 'done', type: 'END', name: 'Finish', timeout_ms: 500, continue_on_error: true },
      ],
      edges: [
        { from_node_id: 'derive', to_node_id: 'done', condition_jsonlogic: { var: 'ok' } },
        { from_node_id: 'derive', to_node_id: 'done', on_failure: true },
      ],
    });
    expect(drawableFromRecord(record).edges).toEqual([
      { id: 'e1', from: 'derive', to: 'done', label: null, condition: { var: 'ok' }, onFailure: false },
      { id: 'e2', from: 'derive', to: 'done', label: null, condition: null, onFailure: true },
    ]);
  });

  it('draws whatever a draft holds that can be drawn', () => {
    const drawable = drawableFromInput({
      nodes: [{ key: 'a', type: 'COMPUTE' }, { key: '' }, null, { key: 'a', type: 'END' }, { key: 'b' }],
      edges: [{ from_node_id: 'a', to_node_id: 'b' }, { from_node_id: 1 }],
    });
    expect(drawable.nodes.map((n) => n.key)).toEqual(['a', 'b']);
    expect(drawable.edges).toHaveLength(1);
    expect(drawableFromInput('not a graph')).toEqual({ nodes: [], edges: [] });
  });

  it("finds the nodes a 400 names: a node's field, an edge's two ends, a cycle", () => {
    const sent = { nodes: [{ key: 'a' }, { key: 'b' }], edges: [{ from_node_id: 'a', to_node_id: 'b' }] };
    expect(nodesOfGraphError({ field: 'nodes.1.config.logic' }, sent)).toEqual(['b']);
    expect(nodesOfGraphError({ field: 'nodes.0' }, sent)).toEqual(['a']);
    expect(nodesOfGraphError({ field: 'nodes.10.key' }, sent)).toEqual([]);
    expect(nodesOfGraphError({ field: 'edges.0.to_node_id' }, sent)).toEqual(['a', 'b']);
    expect(nodesOfGraphError({ field: 'edges', cycle: ['a', 'b'] }, sent)).toEqual(['a', 'b']);
    expect(nodesOfGraphError({ field: 'nodes' }, sent)).toEqual([]);
    expect(nodesOfGraphError(undefined, sent)).toEqual([]);
  });
});

describe('run timeline', () => {
  const node = (
    key: string,
    position: number,
    start: number | null,
    end: number | null,
    status = 'completed',
  ) => ({
    node_key: key,
    node_type: 'COMPUTE',
    status,
    position,
    attempts: 1,
    started_at: start === null ? null : new Date(start).toISOString(),
    completed_at: end === null ? null : new Date(end).toISOString(),
  });

  it('places each node on the span of the run, in traversal order; a running node runs until now', () => {
    const { rows, spanMs } = timeline(
      [
        node('b', 1, 1_000, 3_000),
        node('a', 0, 0, 1_000),
        node('c', 2, 3_000, null, 'running'),
        node('d', 3, null, null, 'pending'),
      ],
      4_000,
    );
    expect(spanMs).toBe(4_000);
    expect(rows.map((r) => r.node.node_key)).toEqual(['a', 'b', 'c', 'd']);
    expect(rows.map((r) => [r.offset, r.width, r.durationMs])).toEqual([
      [0, 25, 1_000],
      [25, 50, 2_000],
      [75, 25, 1_000],
      [0, 0, null],
    ]);
  });

  it('a run where nothing started has no bars', () => {
    const { rows, spanMs } = timeline([node('a', 0, null, null, 'pending')], 10);
    expect(spanMs).toBe(0);
    expect(rows[0]).toMatchObject({ width: 0, durationMs: null });
  });

  it('formats durations and offers the run controls the API accepts in each status', () => {
    expect([formatDuration(null), formatDuration(12), formatDuration(1_234), formatDuration(61_000)]).toEqual(
      ['—', '12 ms', '1.23 s', '1 min 1 s'],
    );
    expect(runActions('running')).toEqual({ cancel: true, rerun: false, retry: false });
    expect(runActions('failed')).toEqual({ cancel: false, rerun: true, retry: true });
    expect(runActions('completed')).toEqual({ cancel: false, rerun: true, retry: false });
  });

  it("tells when the subscription's graph is no longer the one the run ran", () => {
    const ran = [{ node_key: 'a' }, { node_key: 'b' }];
    expect(sameNodes(['b', 'a'], ran)).toBe(true);
    expect(sameNodes(['a'], ran)).toBe(false);
    expect(sameNodes(['a', 'b', 'c'], ran)).toBe(false);
    expect(sameNodes(['a', 'c'], ran)).toBe(false);
  });
});

describe('access and routes', () => {
  it('opens an operation by the same rule as the server: any of its scopes, none for any signed-in caller', () => {
    expect(allows(['workflow:read'], 'GET /api/v1/workflow_run')).toBe(true);
    expect(allows(['webhook:read'], 'GET /api/v1/workflow_run')).toBe(false);
    expect(allows([], 'GET /api/v1/current_user')).toBe(true);
    expect(allows(['plugin:delete'], 'DELETE /api/v1/plugin_instance/{id}')).toBe(true);
    expect(allows(['workflow:read'], 'GET /api/v1/no_such_thing')).toBe(false);
  });

  it('matches console paths with parameters', () => {
    expect(matchRoute('/runs/:id', '/runs/abc%20d')).toEqual({ id: 'abc d' });
    expect(matchRoute('/runs/:id', '/runs')).toBeNull();
    expect(matchRoute('/runs', '/runs')).toEqual({});
    expect(matchRoute('/subscriptions/new', '/subscriptions/x')).toBeNull();
  });
});
