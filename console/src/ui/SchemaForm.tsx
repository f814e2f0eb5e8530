import { useMemo, useState } from 'preact/hooks';
import { type Field, fieldsOf, readFields } from './schema-form';

/**
 * A form generated from a JSON Schema (see schema-form.ts); a schema it cannot model is one JSON
 * field for the whole value. `onSubmit` gets the value; its errors are the caller's to show.
 */
export function SchemaForm({
  schema,
  initial,
  submitLabel,
  onSubmit,
  label,
  disabled,
}: {
  schema: unknown;
  initial?: Record<string, unknown> | null;
  submitLabel: string;
  onSubmit: (value: Record<string, unknown>) => void;
  label: string;
  disabled?: boolean;
}) {
  const fields = useMemo(() => fieldsOf(schema, initial ?? null), [schema, initial]);
  const [problems, setProblems] = useState<string[]>([]);
  const submit = (ev: Event) => {
    ev.preventDefault();
    const form = ev.currentTarget as HTMLFormElement;
    const data = new FormData(form);
    if (!fields) {
      try {
        setProblems([]);
        onSubmit(JSON.parse(String(data.get('__json') || '{}')));
      } catch {
        setProblems(['the value is not valid JSON']);
      }
      return;
    }
    const read = readFields(fields, (name) => {
      const field = fields.find((f) => f.name === name);
      return field?.kind === 'boolean' ? data.get(name) === 'on' : String(data.get(name) ?? '');
    });
    setProblems(read.problems);
    if (read.problems.length === 0) onSubmit(read.value);
  };
  return (
    <form onSubmit={submit} aria-label={label} autoComplete="off">
      <fieldset disabled={disabled} style={{ border: 0, padding: 0, margin: 0 }}>
        {fields ? (
          fields.map((f) => <FieldInput key={f.name} field={f} />)
        ) : (
          <label>
            Value (JSON)
            <textarea
              name="__json"
              rows={6}
              spellcheck={false}
              defaultValue={JSON.stringify(initial ?? {}, null, 2)}
            />
          </label>
        )}
        {problems.length > 0 && (
          <div class="error" role="alert">
            {problems.join('; ')}
          </div>
        )}
        <button class="primary" type="submit">
          {submitLabel}
        </button>
      </fieldset>
    </form>
  );
}

function FieldInput({ field: f }: { field: Field }) {
  const text = typeof f.initial === 'string' ? f.initial : '';
  const title = `${f.label}${f.required ? ' (required)' : ''}`;
  const hint = f.description && <span class="muted">{f.description}</span>;
  if (f.kind === 'boolean') {
    return (
      <label class="inline">
        <input type="checkbox" name={f.name} defaultChecked={f.initial === true} /> {title} {hint}
      </label>
    );
  }
  let input = <input name={f.name} required={f.required} defaultValue={text} />;
  if (f.kind === 'enum') {
    input = (
      <select name={f.name} required={f.required}>
        {!f.required && <option value="">—</option>}
        {f.options?.map((o) => (
          <option key={o} value={o} selected={o === text}>
            {o}
          </option>
        ))}
      </select>
    );
  } else if (f.kind === 'secret') {
    // A vault reference ($secret:key) keeps the secret out of the config; a literal is sent as typed.
    input = (
      <input
        name={f.name}
        type="password"
        autoComplete="new-password"
        required={f.required}
        defaultValue={text}
        placeholder="$secret:key"
      />
    );
  } else if (f.kind === 'number' || f.kind === 'integer') {
    input = <input name={f.name} inputMode="decimal" required={f.required} defaultValue={text} />;
  } else if (f.kind === 'json') {
    input = <textarea name={f.name} rows={4} spellcheck={false} required={f.required} defaultValue={text} />;
  }
  return (
    // biome-ignore lint/a11y/noLabelWithoutControl: `input` is the field's control, chosen above
    <label>
      {title}
      {input}
      {hint}
    </label>
  );
}
