import { useEffect, useState } from 'preact/hooks';
import { useCan } from '../access';
import { api, ok, type Schemas } from '../api/client';
import type { paths } from '../api/schema';
import { GraphView } from '../graph/GraphView';
import { drawableFromRecord } from '../graph/model';
import { href } from '../router';
import { ErrorNote, Json, Panel, parseJson, Status } from '../ui/bits';
import { CodeArea, SelectButton } from '../ui/fields';
import { Table } from '../ui/list';
import { useAction } from '../ui/use-action';
import { useAsync } from '../ui/use-async';
import { NodeData } from './NodeData';
import { Playground } from './Playground';

type TestResult =
  paths['/api/v1/event_subscription/{id}/test']['post']['responses'][200]['content']['application/json'];

/** A dry run on an event (prefilled from the event type's examples): per node status, data and paths. */
export function TestPanel({ subscription }: { subscription: Schemas['EventSubscription'] }) {
  const can = useCan();
  const [eventText, setEventText] = useState('');
  const [result, setResult] = useState<TestResult | null>(null);
  const [error, run] = useAction();
  const [selected, setSelected] = useState<string | null>(null);
  // Read again with each result: the graph may have been saved since the last test.
  const graph = useAsync(
    () => ok(api.GET('/api/v1/event_subscription/{id}/graph', { params: { path: { id: subscription.id } } })),
    [subscription.id, result],
  );
  const example = useAsync(async () => {
    const skeleton = {
      specversion: '1.0',
      id: 'console-test-1',
      source: '/console',
      type: subscription.event_type,
      data: {},
    };
    if (!can('GET /api/v1/event_definition/{event_type}')) return skeleton;
    const res = await api.GET('/api/v1/event_definition/{event_type}', {
      params: { path: { event_type: subscription.event_type } },
    });
    return (res.data?.examples?.[0] as Record<string, unknown> | undefined) ?? skeleton;
  }, [subscription.event_type]);
  useEffect(() => {
    if (example.data && eventText === '') setEventText(JSON.stringify(example.data, null, 2));
  }, [example.data]);

  const [published, setPublished] = useState<string | null>(null);
  const publish = () => {
    setPublished(null);
    return run(async () => {
      const event = parseJson(eventText, 'event') as never;
      const answer = await ok(api.POST('/api/v1/event', { body: event }));
      if ('id' in answer) {
        setPublished(
          answer.duplicate ? `${answer.id} before: a duplicate id starts nothing; change the id` : answer.id,
        );
      }
    });
  };
  const test = () =>
    run(async () => {
      const event = parseJson(eventText, 'event') as never;
      const answer = await ok(
        api.POST('/api/v1/event_subscription/{id}/test', {
          params: { path: { id: subscription.id } },
          body: { event },
        }),
      );
      setResult(answer);
      setSelected(answer.nodes[0]?.key ?? null);
    });
  const node = result?.nodes.find((n) => n.key === selected) ?? null;
  const status = Object.fromEntries((result?.nodes ?? []).map((n) => [n.key, n.status]));

  return (
    <Panel
      title="Test with an event"
      actions={
        <>
          <button class="primary" type="button" onClick={test}>
            Run test
          </button>
          {can('POST /api/v1/event') && (
            <button
              type="button"
              onClick={publish}
              title="POST /event: a real event, with real runs and effects"
            >
              Publish as a real event
            </button>
          )}
        </>
      }
    >
      {published !== null && (
        <p role="status">
          Published event <code>{published}</code>.{' '}
          <a href={href(`/runs?event_subscription_id=${encodeURIComponent(subscription.id)}`)}>
            Runs of this subscription
          </a>
        </p>
      )}
      <div class="split">
        <CodeArea
          label="Event (a CloudEvent; nothing is stored, no ACTION is called)"
          name="test-event"
          rows={12}
          value={eventText}
          onChange={setEventText}
        />
        <div>
          <ErrorNote error={error} />
          {result && (
            <>
              <p>
                Result: <Status status={result.status} /> {result.routing.matched ? 'routed' : 'not routed'}
                {result.routing.reasons.length > 0 && (
                  <span class="muted"> ({result.routing.reasons.join('; ')})</span>
                )}
              </p>
              {result.error && <p class="error">{result.error}</p>}
              <Table label="test nodes" head={['Node', 'Type', 'Status', 'Attempts']}>
                {result.nodes.map((n) => (
                  <tr key={n.key} class={n.key === selected ? 'selected' : ''}>
                    <td>
                      <SelectButton selected={n.key === selected} onSelect={() => setSelected(n.key)}>
                        {n.key}
                      </SelectButton>
                    </td>
                    <td>{n.type}</td>
                    <td>
                      <Status status={n.status} />
                    </td>
                    <td>{n.attempts}</td>
                  </tr>
                ))}
              </Table>
            </>
          )}
        </div>
      </div>
      {result && graph.data && (
        <GraphView
          {...drawableFromRecord(graph.data)}
          status={status}
          selected={selected}
          onSelect={setSelected}
          label="test result"
        />
      )}
      {node && (
        <section class="split" aria-label={`test node ${node.key}`}>
          <div>
            <NodeData node={node} />
            <h2>Context</h2>
            <Json value={node.context} label="node context" />
          </div>
          <Playground data={node.context ?? {}} paths={node.available_paths} />
        </section>
      )}
    </Panel>
  );
}
