import { useEffect, useState } from 'preact/hooks';
import { api, ok } from '../api/client';
import { ErrorNote, Json, parseJson } from '../ui/bits';

/** JSONLogic tried against a node's context on `/workflow/evaluate`; its paths are one click away. */
export function Playground({ data, paths }: { data: unknown; paths: readonly string[] }) {
  const [expression, setExpression] = useState('{"var": "event.type"}');
  const [dataText, setDataText] = useState(() => JSON.stringify(data, null, 2));
  const [result, setResult] = useState<{ value: unknown } | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => setDataText(JSON.stringify(data, null, 2)), [data]);
  const evaluate = async () => {
    setError(null);
    setResult(null);
    try {
      const answer = await ok(
        api.POST('/api/v1/workflow/evaluate', {
          body: {
            expression: parseJson(expression, 'expression') as Record<string, unknown>,
            data: (parseJson(dataText, 'data') ?? {}) as Record<string, unknown>,
          },
        }),
      );
      // Scalar results come wrapped under `value` (SPEC): show the value itself.
      const result = answer.result as Record<string, unknown>;
      const keys = Object.keys(result);
      setResult({ value: keys.length === 1 && keys[0] === 'value' ? result.value : result });
    } catch (err) {
      setError(err);
    }
  };
  return (
    <section aria-label="expression playground">
      <h2>Expression playground</h2>
      <label>
        Expression (JSONLogic)
        <textarea
          name="expression"
          rows={4}
          spellcheck={false}
          value={expression}
          onInput={(ev) => setExpression((ev.currentTarget as HTMLTextAreaElement).value)}
        />
      </label>
      {paths.length > 0 && (
        <section class="chips" aria-label="available paths">
          {paths.map((p) => (
            <button
              type="button"
              key={p}
              title={`use {"var": "${p}"}`}
              onClick={() => setExpression(JSON.stringify({ var: p }))}
            >
              {p}
            </button>
          ))}
        </section>
      )}
      <label>
        Data
        <textarea
          name="data"
          rows={6}
          spellcheck={false}
          value={dataText}
          onInput={(ev) => setDataText((ev.currentTarget as HTMLTextAreaElement).value)}
        />
      </label>
      <button type="button" onClick={evaluate}>
        Evaluate
      </button>
      <ErrorNote error={error} />
      {result && <Json value={result.value} label="expression result" />}
    </section>
  );
}
