import { describe, expect, it } from 'vitest';
import { conditionText, layoutGraph, NODE_HEIGHT } from '../src/graph/layout';

describe('graph layout (dagre)', () => {
  it('ranks nodes along their edges: a diamond puts the branches side by side and the JOIN below both', () => {
    const { nodes, edges, width, height } = layoutGraph(
      [
        { key: 'start', type: 'COMPUTE' },
        { key: 'left', type: 'ACTION' },
        { key: 'right', type: 'ACTION' },
        { key: 'join', type: 'JOIN' },
      ],
      [
        { id: 'a', from: 'start', to: 'left' },
        { id: 'b', from: 'start', to: 'right', condition: { '>': [{ var: 'event.data.total' }, 5] } },
        { id: 'c', from: 'left', to: 'join' },
        { id: 'd', from: 'right', to: 'join', label: 'big' },
      ],
    );
    const at = Object.fromEntries(nodes.map((n) => [n.key, n]));
    expect(at.left.y).toBe(at.right.y);
    expect(at.left.x).not.toBe(at.right.x);
    expect(at.start.y).toBeLessThan(at.left.y);
    expect(at.join.y).toBeGreaterThan(at.left.y + NODE_HEIGHT / 2);
    expect(width).toBeGreaterThan(0);
    expect(height).toBeGreaterThan(at.join.y);
    const byId = Object.fromEntries(edges.map((e) => [e.id, e]));
    expect(byId.b.text).toBe('event.data.total > 5');
    expect(byId.d.text).toBe('big');
    expect(byId.a.text).toBeNull();
    for (const e of edges) expect(e.points.length).toBeGreaterThanOrEqual(2);
  });

  it('leaves out edges to nodes that do not exist (a half-typed draft still draws)', () => {
    const { nodes, edges } = layoutGraph(
      [{ key: 'only', type: 'END' }],
      [{ id: 'x', from: 'only', to: 'ghost' }],
    );
    expect(nodes).toHaveLength(1);
    expect(edges).toEqual([]);
  });

  it('writes conditions short: operators between their operands, long ones cut', () => {
    expect(conditionText({ '==': [{ var: 'a' }, 1] })).toBe('a == 1');
    expect(conditionText({ and: [{ '>': [{ var: 'x' }, 1] }, { '!': [{ var: 'y' }] }] })).toBe(
      'x > 1 and !y',
    );
    expect(conditionText({ in: ['a', { var: 'list' }] })).toBe('"a" in list');
    expect(conditionText(null)).toBeNull();
    const long = conditionText({ '==': [{ var: 'event.data.something.rather.long.path' }, 'a long value'] });
    expect(long?.length).toBe(40);
    expect(long?.endsWith('…')).toBe(true);
  });
});
