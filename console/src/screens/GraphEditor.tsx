import { useMemo, useState } from 'preact/hooks';
import { useCan } from '../access';
import { type ApiFailure, api, ok, type Schemas } from '../api/client';
import { GraphView } from '../graph/GraphView';
import { drawableFromInput, inputFromRecord, nodesOfGraphError, warningsByNode } from '../graph/model';
import { ErrorNote, Panel } from '../ui/bits';
import { useAction } from '../ui/use-action';
import { useAsync } from '../ui/use-async';

/**
 * The subscription's graph drawn as a DAG and editable as JSON: the drawing follows the draft as it
 * is typed, and a 400 from the server marks the nodes it names.
 */
export function GraphEditor({ subscription }: { subscription: Schemas['EventSubscription'] }) {
  const can = useCan();
  const editable = can('PUT /api/v1/event_subscription/{id}/graph');
  const graph = useAsync(
    () => ok(api.GET('/api/v1/event_subscription/{id}/graph', { params: { path: { id: subscription.id } } })),
    [subscription.id],
  );
  const [draft, setDraft] = useState<string | null>(null);
  // The graph as last saved here (the PUT's answer), so the drawing never falls back to the old one.
  const [saved, setSavedGraph] = useState<Schemas['WorkflowGraph'] | null>(null);
  const [error, run] = useAction();
  const [invalid, setInvalid] = useState<string[]>([]);
  const [justSaved, setJustSaved] = useState(false);
  const [warnings, setWarnings] = useState<Array<{ key: string | null; text: string }>>([]);

  const current = saved ?? graph.data;
  const text = draft ?? (current ? JSON.stringify(inputFromRecord(current), null, 2) : '');
  const parsed = useMemo(() => {
    try {
      return { value: JSON.parse(text) as unknown, problem: null };
    } catch (err) {
      return { value: null, problem: (err as Error).message };
    }
  }, [text]);
  const drawable = useMemo(() => drawableFromInput(parsed.value), [parsed.value]);

  const save = () => {
    setInvalid([]);
    setWarnings([]);
    setJustSaved(false);
    return run(async () => {
      if (parsed.problem) {
        throw { code: 'INVALID_JSON', message: `The graph is not valid JSON: ${parsed.problem}` };
      }
      try {
        const answer = await ok(
          api.PUT('/api/v1/event_subscription/{id}/graph', {
            params: { path: { id: subscription.id } },
            body: parsed.value as never,
          }),
        );
        setSavedGraph(answer);
        setWarnings(warningsByNode(answer.warnings));
        setDraft(null);
        setJustSaved(true);
      } catch (err) {
        setInvalid(nodesOfGraphError((err as ApiFailure).details, parsed.value));
        throw err;
      }
    });
  };

  return (
    <Panel
      title="Graph"
      actions={
        editable && (
          <>
            {justSaved && <span class="muted">Saved</span>}
            <button class="primary" type="button" onClick={save} disabled={draft === null}>
              Save graph
            </button>
          </>
        )
      }
    >
      <ErrorNote error={graph.error} />
      <div class="split">
        <div>
          {drawable.nodes.length === 0 ? (
            <p class="muted">No nodes yet: write them in the JSON.</p>
          ) : (
            <GraphView
              nodes={drawable.nodes}
              edges={drawable.edges}
              invalid={invalid}
              warned={warnings.flatMap((w) => (w.key ? [w.key] : []))}
              label="subscription graph"
            />
          )}
        </div>
        <div>
          <label>
            Graph JSON (nodes by key; edges from_node_id / to_node_id name node keys)
            <textarea
              name="graph"
              rows={22}
              spellcheck={false}
              readOnly={!editable}
              value={text}
              onInput={(ev) => {
                setDraft((ev.currentTarget as HTMLTextAreaElement).value);
                setJustSaved(false);
              }}
            />
          </label>
          {parsed.problem && <p class="muted">Not JSON yet: {parsed.problem}</p>}
          <ErrorNote error={error} />
          {warnings.length > 0 && (
            <div role="status" class="warnings">
              <p>Saved, with something to check:</p>
              <ul>
                {warnings.map((w) => (
                  <li key={w.text} data-node={w.key ?? undefined}>
                    {w.key && <code>{w.key}</code>} {w.text}
                  </li>
                ))}
              </ul>
            </div>
          )}
          {invalid.length > 0 && (
            <p>
              Marked in the drawing: <code>{invalid.join(', ')}</code>
            </p>
          )}
        </div>
      </div>
    </Panel>
  );
}
