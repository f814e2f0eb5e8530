import { useId, useMemo } from 'preact/hooks';
import { type GraphEdgeIn, type GraphNodeIn, layoutGraph } from './layout';

export interface GraphViewProps {
  nodes: GraphNodeIn[];
  edges: GraphEdgeIn[];
  /** Status per node key (a run's), drawn as the node's colour. */
  status?: Record<string, string>;
  /** Node keys a validation error points at. */
  invalid?: readonly string[];
  /** Node keys a save warning points at (saved, but maybe not what was meant). */
  warned?: readonly string[];
  selected?: string | null;
  onSelect?: (key: string) => void;
  label?: string;
}

/** A workflow graph as SVG: boxes with key and type, edges with their label or condition. */
export function GraphView({
  nodes,
  edges,
  status,
  invalid,
  warned,
  selected,
  onSelect,
  label,
}: GraphViewProps) {
  const placed = useMemo(() => layoutGraph(nodes, edges), [nodes, edges]);
  const bad = new Set(invalid ?? []);
  const doubtful = new Set(warned ?? []);
  // One page may draw several graphs: each its own arrow marker id.
  const arrow = `arrow-${useId()}`;
  return (
    <svg
      class="graph"
      viewBox={`0 0 ${placed.width} ${placed.height}`}
      role="img"
      aria-label={label ?? 'workflow graph'}
      style={{ maxWidth: `${placed.width}px` }}
    >
      <defs>
        <marker
          id={arrow}
          viewBox="0 0 10 10"
          refX="9"
          refY="5"
          markerWidth="7"
          markerHeight="7"
          orient="auto"
        >
          <path d="M0,0 L10,5 L0,10 z" />
        </marker>
      </defs>
      {placed.edges.map((e) => (
        <g class={e.onFailure ? 'edge failure' : 'edge'} key={e.id} data-edge={e.id}>
          <path
            d={e.points.map((p, i) => `${i ? 'L' : 'M'}${p.x},${p.y}`).join(' ')}
            marker-end={`url(#${arrow})`}
          />
          {e.text && e.textAt && (
            <text x={e.textAt.x} y={e.textAt.y} text-anchor="middle" dominant-baseline="middle">
              {e.text}
            </text>
          )}
        </g>
      ))}
      {placed.nodes.map((n) => {
        const classes = ['node'];
        if (status?.[n.key]) classes.push(`status-${status[n.key]}`);
        if (bad.has(n.key)) classes.push('invalid');
        else if (doubtful.has(n.key)) classes.push('warned');
        if (selected === n.key) classes.push('selected');
        return (
          // biome-ignore lint/a11y/noStaticElementInteractions: a button (role, tab stop, keys) whenever onSelect is given
          <g
            class={classes.join(' ')}
            key={n.key}
            data-node={n.key}
            transform={`translate(${n.x - n.width / 2},${n.y - n.height / 2})`}
            tabIndex={onSelect ? 0 : undefined}
            role={onSelect ? 'button' : undefined}
            aria-label={`${n.key} (${n.type})${status?.[n.key] ? `: ${status[n.key]}` : ''}`}
            onClick={() => onSelect?.(n.key)}
            onKeyDown={(ev) => {
              if (ev.key === 'Enter' || ev.key === ' ') {
                ev.preventDefault();
                onSelect?.(n.key);
              }
            }}
            style={onSelect ? { cursor: 'pointer' } : undefined}
          >
            <rect width={n.width} height={n.height} rx="8" />
            <text x="10" y="20">
              {n.key.length > 22 ? `${n.key.slice(0, 21)}…` : n.key}
            </text>
            <text class="type" x="10" y="37">
              {n.type}
              {status?.[n.key] ? ` · ${status[n.key]}` : ''}
            </text>
          </g>
        );
      })}
    </svg>
  );
}
