import type { ComponentChildren } from 'preact';

/** A filter choice: "any" (undefined) or one of `options`. */
export function SelectFilter<T extends string>({
  label,
  name,
  value,
  options,
  onChange,
}: {
  label: string;
  name: string;
  value: T | undefined;
  options: readonly T[];
  onChange: (value: T | undefined) => void;
}) {
  return (
    <label class="inline">
      {label}{' '}
      <select
        name={name}
        value={value ?? ''}
        onChange={(ev) =>
          onChange(((ev.currentTarget as HTMLSelectElement).value || undefined) as T | undefined)
        }
      >
        <option value="">any</option>
        {options.map((o) => (
          <option key={o} value={o}>
            {o}
          </option>
        ))}
      </select>
    </label>
  );
}

/** A one-field search: the trimmed text, or undefined for an empty one (the API refuses empty searches). */
export function SearchForm({
  label,
  formLabel,
  maxLength = 200,
  onSearch,
}: {
  label: string;
  formLabel: string;
  maxLength?: number;
  onSearch: (text: string | undefined) => void;
}) {
  return (
    <form
      class="row"
      aria-label={formLabel}
      onSubmit={(ev) => {
        ev.preventDefault();
        const text = String(new FormData(ev.currentTarget as HTMLFormElement).get('search') ?? '').trim();
        onSearch(text || undefined);
      }}
    >
      <label>
        {label}
        <input name="search" maxLength={maxLength} />
      </label>
      <button type="submit">Search</button>
    </form>
  );
}

/** A monospace text area for JSON, bound to a string. */
export function CodeArea({
  label,
  name,
  rows,
  value,
  onChange,
  readOnly,
}: {
  label: ComponentChildren;
  name: string;
  rows: number;
  value: string;
  onChange: (text: string) => void;
  readOnly?: boolean;
}) {
  return (
    <label>
      {label}
      <textarea
        name={name}
        rows={rows}
        spellcheck={false}
        readOnly={readOnly}
        value={value}
        onInput={(ev) => onChange((ev.currentTarget as HTMLTextAreaElement).value)}
      />
    </label>
  );
}

/** The button that selects a row (a node of a run or a test): pressed while selected. */
export function SelectButton({
  selected,
  onSelect,
  children,
}: {
  selected: boolean;
  onSelect: () => void;
  children: ComponentChildren;
}) {
  return (
    <button type="button" onClick={onSelect} aria-pressed={selected}>
      {children}
    </button>
  );
}

/** A labelled text input of a form read with FormData (`name` is the field). */
export function TextField({
  label,
  name,
  required,
  maxLength,
  type = 'text',
  placeholder,
  pattern,
}: {
  label: string;
  name: string;
  required?: boolean;
  maxLength: number;
  type?: 'text' | 'url';
  placeholder?: string;
  pattern?: string;
}) {
  const common = { name, required, maxLength, placeholder, pattern };
  return (
    // biome-ignore lint/a11y/noLabelWithoutControl: the input is one of the two below
    <label>
      {label}
      {type === 'url' ? <input type="url" {...common} /> : <input {...common} />}
    </label>
  );
}

const DAY_S = 86_400;

/**
 * How long finished records are kept (a `retention` field of the API, in seconds), typed in days:
 * empty for the server's default, 0 for ever. Read back with `retentionSeconds`.
 */
export function RetentionField({
  label,
  name,
  seconds,
}: {
  label: string;
  name: string;
  seconds: number | null;
}) {
  return (
    <label>
      {label} (days; empty: the server's default; 0: for ever)
      <input
        name={name}
        type="number"
        min={0}
        step="any"
        defaultValue={seconds === null ? '' : String(Number((seconds / DAY_S).toFixed(4)))}
      />
    </label>
  );
}

/** A RetentionField's value in seconds: null when left empty (the server's default). */
export function retentionSeconds(form: FormData, name: string): number | null {
  const text = String(form.get(name) ?? '').trim();
  return text === '' ? null : Math.round(Number(text) * DAY_S);
}

/** A `rate_limit` of the API (a plugin instance's, a webhook's): `limit` calls per `period_ms`. */
export interface RateLimit {
  limit: number;
  period_ms: number;
}

/**
 * A `rate_limit` typed as "calls per seconds": both empty for no limit. Read back with
 * `rateLimitOf`.
 */
export function RateLimitField({ name, value }: { name: string; value: RateLimit | null }) {
  return (
    <fieldset class="row" style={{ border: 0, padding: 0, margin: 0 }}>
      <label>
        Rate limit: calls (empty: no limit)
        <input
          name={`${name}_limit`}
          type="number"
          min={1}
          step={1}
          defaultValue={value ? String(value.limit) : ''}
        />
      </label>
      <label>
        per seconds
        <input
          name={`${name}_period`}
          type="number"
          min={0.001}
          step="any"
          defaultValue={value ? String(value.period_ms / 1000) : ''}
        />
      </label>
    </fieldset>
  );
}

/** A RateLimitField's value: null when both are empty; one without the other is an error. */
export function rateLimitOf(form: FormData, name: string): RateLimit | null {
  const limit = String(form.get(`${name}_limit`) ?? '').trim();
  const period = String(form.get(`${name}_period`) ?? '').trim();
  if (limit === '' && period === '') return null;
  if (limit === '' || period === '')
    throw new Error('a rate limit needs both its number of calls and its period');
  return { limit: Number(limit), period_ms: Math.round(Number(period) * 1000) };
}
