import { useMemo, useRef, useState } from 'preact/hooks';
import { useCan } from '../access';
import { api, ok, type Schemas } from '../api/client';
import { GraphView } from '../graph/GraphView';
import { drawableFromRecord } from '../graph/model';
import { href, navigate } from '../router';
import { formatDuration, nodeNote, runActions, sameNodes, timeline } from '../runs/timeline';
import { ErrorNote, Json, Panel, Status, when } from '../ui/bits';
import { SelectButton } from '../ui/fields';
import { Table } from '../ui/list';
import { useAction } from '../ui/use-action';
import { useAsync } from '../ui/use-async';
import { NodeData } from './NodeData';

type RunNode = Schemas['WorkflowRunNode'];
type GraphRecord = Schemas['WorkflowGraph'];
const live = (status: string | undefined) =>
  status === undefined || status === 'pending' || status === 'running';

/** One run: its timeline per node, the graph coloured by node status, each node's data, and run control. */
export function RunScreen({ id }: { id: string }) {
  const can = useCan();
  const [selected, setSelected] = useState<string | null>(null);
  const [actionError, act] = useAction();
  // The graph is read once per subscription, in parallel with the run's nodes; polls read the run only.
  const graphs = useRef(new Map<string, Promise<GraphRecord | null>>());
  const graphOf = (subscriptionId: string) => {
    let graph = graphs.current.get(subscriptionId);
    if (!graph) {
      graph = can('GET /api/v1/event_subscription/{id}/graph')
        ? ok(api.GET('/api/v1/event_subscription/{id}/graph', { params: { path: { id: subscriptionId } } }))
        : Promise.resolve(null);
      graphs.current.set(subscriptionId, graph);
    }
    return graph;
  };
  const view = useAsync(
    async () => {
      const runRead = ok(api.GET('/api/v1/workflow_run/{id}', { params: { path: { id } } }));
      const graphRead = runRead.then((run) => graphOf(run.event_subscription_id));
      const [run, nodes, graph, children] = await Promise.all([
        runRead,
        ok(api.GET('/api/v1/workflow_run/{id}/node', { params: { path: { id } } })),
        graphRead,
        ok(
          api.GET('/api/v1/workflow_run', {
            params: { query: { parent_run_id: id, limit: 25, sort_dir: 'asc' } },
          }),
        ),
      ]);
      return { run, nodes: nodes.nodes, graph, children };
    },
    [id],
    { everyMs: 1000, keepPolling: (data) => live(data?.run.status) },
  );
  const graph = view.data?.graph ?? null;
  const drawable = useMemo(() => (graph ? drawableFromRecord(graph) : null), [graph]);
  if (view.error && !view.data) return <ErrorNote error={view.error} />;
  if (!view.data) return <p class="muted">Loading…</p>;
  const { run, nodes, children } = view.data;
  const { rows } = timeline(nodes, Date.now());
  const status = Object.fromEntries(nodes.map((n) => [n.node_key, n.status]));
  const node = nodes.find((n) => n.node_key === selected) ?? null;
  const actions = runActions(run.status);
  const control = (what: 'cancel' | 'rerun' | 'retry') =>
    act(async () => {
      const params = { params: { path: { id } } };
      if (what === 'rerun') {
        const next = await ok(api.POST('/api/v1/workflow_run/{id}/rerun', params));
        navigate(`/runs/${next.id}`);
        return;
      }
      if (what === 'cancel') await ok(api.POST('/api/v1/workflow_run/{id}/cancel', params));
      if (what === 'retry') await ok(api.POST('/api/v1/workflow_run/{id}/retry', params));
      view.reload();
    });
  const may = can('POST /api/v1/workflow_run/{id}/cancel');

  return (
    <>
      <p>
        <a href={href('/runs')}>Runs</a> /
      </p>
      <div class="row" style={{ justifyContent: 'space-between' }}>
        <h1>
          Run <code>{run.id}</code> <Status status={run.status} />
        </h1>
        {may && (
          <div class="row">
            {actions.cancel && (
              <button type="button" class="danger" onClick={() => control('cancel')}>
                Cancel
              </button>
            )}
            {actions.retry && (
              <button type="button" onClick={() => control('retry')}>
                Retry failed nodes
              </button>
            )}
            {actions.rerun && (
              <button type="button" onClick={() => control('rerun')}>
                Re-run
              </button>
            )}
          </div>
        )}
      </div>
      <ErrorNote error={actionError} />
      <Panel>
        <p>
          {can('GET /api/v1/event_subscription/{id}') && (
            <>
              <a href={href(`/subscriptions/${run.event_subscription_id}`)}>Subscription</a> ·{' '}
            </>
          )}
          event <code>{run.event_type}</code> · graph version {run.graph_version} · started{' '}
          {when(run.started_at)} · completed {when(run.completed_at)}
          {run.rerun_of && (
            <>
              {' '}
              · re-run of <a href={href(`/runs/${run.rerun_of}`)}>{run.rerun_of.slice(0, 13)}…</a>
            </>
          )}
          {run.parent_run_id && (
            <>
              {' '}
              · child of{' '}
              <a href={href(`/runs/${run.parent_run_id}`)} data-parent-run={run.parent_run_id}>
                run {run.parent_run_id.slice(0, 13)}…
              </a>{' '}
              (node <code>{run.parent_node_key}</code>)
            </>
          )}
          {run.trace_id && (
            <>
              {' '}
              · trace{' '}
              {run.trace_url ? (
                <a href={run.trace_url} target="_blank" rel="noopener noreferrer" data-trace={run.trace_id}>
                  <code>{run.trace_id}</code>
                </a>
              ) : (
                <code data-trace={run.trace_id}>{run.trace_id}</code>
              )}
            </>
          )}
        </p>
        {run.error && <p class="error">{run.error}</p>}
      </Panel>
      <div class="split">
        <Panel title="Timeline">
          <div class="timeline">
            <Table label="run timeline" head={['Node', 'Status', 'Attempts', 'Duration', '']}>
              {rows.map(({ node: n, offset, width, durationMs }) => (
                <tr key={n.id} class={n.node_key === selected ? 'selected' : ''} data-node-row={n.node_key}>
                  <td>
                    <SelectButton selected={n.node_key === selected} onSelect={() => setSelected(n.node_key)}>
                      {n.node_key}
                    </SelectButton>{' '}
                    <span class="muted">{n.node_type}</span>
                    <Note node={n} />
                  </td>
                  <td>
                    <Status status={n.status} />
                  </td>
                  <td>{n.attempts}</td>
                  <td>{formatDuration(durationMs)}</td>
                  <td style={{ width: '35%' }}>
                    <div class="bar-track" title={`${when(n.started_at)} → ${when(n.completed_at)}`}>
                      <div
                        class={`bar status-${n.status}`}
                        style={{ left: `${offset}%`, width: `${width}%` }}
                      />
                    </div>
                  </td>
                </tr>
              ))}
            </Table>
          </div>
        </Panel>
        <Panel title="Graph">
          {drawable &&
            !sameNodes(
              drawable.nodes.map((n) => n.key),
              nodes,
            ) && (
              <p class="muted">
                The graph has changed since this run (it ran on version {run.graph_version}): drawn is the
                current one.
              </p>
            )}
          {drawable ? (
            <GraphView
              {...drawable}
              status={status}
              selected={selected}
              onSelect={setSelected}
              label="run graph"
            />
          ) : (
            <p class="muted">The graph is not readable with your scopes.</p>
          )}
        </Panel>
      </div>
      {node && <NodeDetail node={node} />}
      {children.total > 0 && (
        <Panel title={`Child runs (${children.total})`}>
          <Table label="child runs" head={['Run', 'Node', 'Status', 'Started', 'Completed']}>
            {children.runs.map((c) => (
              <tr key={c.id}>
                <td>
                  <a href={href(`/runs/${c.id}`)}>{c.id.slice(0, 13)}…</a>
                </td>
                <td>
                  <code>{c.parent_node_key}</code>
                </td>
                <td>
                  <Status status={c.status} />
                </td>
                <td>{when(c.started_at)}</td>
                <td>{when(c.completed_at)}</td>
              </tr>
            ))}
          </Table>
          {children.total > children.runs.length && (
            <p>
              <a href={href(`/runs?parent_run_id=${run.id}`)}>All {children.total} child runs</a>
            </p>
          )}
        </Panel>
      )}
      <Panel title="Trigger event">
        <Json value={run.trigger_event} label="trigger event" />
      </Panel>
    </>
  );
}

function NodeDetail({ node }: { node: RunNode }) {
  return (
    <Panel title={`Node ${node.node_key}`}>
      <p>
        <Status status={node.status} /> {node.node_type} · attempts {node.attempts} · started{' '}
        {when(node.started_at)} · completed {when(node.completed_at)}
        {node.resume_at && <> · resumes {when(node.resume_at)}</>}
      </p>
      <p>
        <Note node={node} />
      </p>
      <NodeData node={node} />
    </Panel>
  );
}

/** What the node waits for or how far it got (WAIT_EVENT, FOREACH), or a link to its child run (CALL). */
function Note({ node }: { node: RunNode }) {
  const note = nodeNote(node);
  if (!note) return null;
  return (
    <span class="muted" data-node-note={node.node_key}>
      {' '}
      {note.runId ? (
        <a href={href(`/runs/${note.runId}`)} data-child-run={note.runId}>
          {note.text}
        </a>
      ) : (
        note.text
      )}
    </span>
  );
}
