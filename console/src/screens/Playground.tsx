import { useEffect, useState } from 'preact/hooks';
import { api, ok } from '../api/client';
import { ErrorNote, Json, parseJson } from '../ui/bits';
import { CodeArea } from '../ui/fields';
import { useAction } from '../ui/use-action';

/** JSONLogic tried against a node's context on `/workflow/evaluate`; its paths are one click away. */
export function Playground({ data, paths }: { data: unknown; paths: readonly string[] }) {
  const [expression, setExpression] = useState('{"var": "event.type"}');
  const [dataText, setDataText] = useState(() => JSON.stringify(data, null, 2));
  const [result, setResult] = useState<{ value: unknown } | null>(null);
  const [error, run] = useAction();
  useEffect(() => setDataText(JSON.stringify(data, null, 2)), [data]);
  const evaluate = () => {
    setResult(null);
    return run(async () => {
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
    });
  };
  return (
    <section aria-label="expression playground">
      <h2>Expression playground</h2>
      <CodeArea
        label="Expression (JSONLogic)"
        name="expression"
        rows={4}
        value={expression}
        onChange={setExpression}
      />
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
      <CodeArea label="Data" name="data" rows={6} value={dataText} onChange={setDataText} />
      <button type="button" onClick={evaluate}>
        Evaluate
      </button>
      <ErrorNote error={error} />
      {result && <Json value={result.value} label="expression result" />}
    </section>
  );
}
