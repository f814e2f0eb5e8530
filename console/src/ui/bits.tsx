import type { ComponentChildren } from 'preact';
import type { ApiFailure } from '../api/client';

/** The contract's error body as the user should read it: code, message, and where (details.field). */
export function ErrorNote({ error }: { error: unknown }) {
  if (!error) return null;
  const e = error as Partial<ApiFailure>;
  const field = typeof e.details?.field === 'string' ? e.details.field : undefined;
  return (
    <div class="error" role="alert">
      <strong>{e.code ?? 'Error'}</strong>: {e.message ?? String(error)}
      {field && (
        <div>
          at <code>{field}</code>
        </div>
      )}
    </div>
  );
}

export function Json({ value, label }: { value: unknown; label?: string }) {
  return (
    <section aria-label={label}>
      <pre class="json">{value === undefined ? '—' : JSON.stringify(value, null, 2)}</pre>
    </section>
  );
}

export function Status({ status }: { status: string }) {
  return <span class={`status status-${status.toLowerCase()}`}>{status}</span>;
}

export function Panel({
  title,
  children,
  actions,
}: {
  title?: string;
  children: ComponentChildren;
  actions?: ComponentChildren;
}) {
  return (
    <section class="panel" aria-label={title}>
      {(title || actions) && (
        <div class="row" style={{ justifyContent: 'space-between' }}>
          {title && <h2 style={{ margin: 0 }}>{title}</h2>}
          {actions && <div class="row">{actions}</div>}
        </div>
      )}
      {children}
    </section>
  );
}

export function when(iso: string | null | undefined): string {
  if (!iso) return '—';
  return new Date(iso).toLocaleString();
}

/** datetime-local fields hold local time without a zone; the API takes UTC instants. */
export const toInstant = (local: string) => new Date(local).toISOString();
export function toLocalField(iso: string): string {
  const d = new Date(iso);
  return new Date(d.getTime() - d.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
}

/** Parses a JSON text field; the message names the field when it is not JSON. */
export function parseJson(text: string, field: string): unknown {
  if (text.trim() === '') return null;
  try {
    return JSON.parse(text);
  } catch (err) {
    throw Object.assign(new Error(`${field} is not valid JSON: ${(err as Error).message}`), {
      code: 'INVALID_JSON',
    });
  }
}

/** A panel holding one create form: its fields in two columns, then its error and its submit button. */
export function CreateForm({
  title,
  label,
  submit,
  onSubmit,
  error,
  children,
}: {
  title: string;
  label: string;
  submit: string;
  onSubmit: (ev: Event) => void;
  error: unknown;
  children: ComponentChildren;
}) {
  return (
    <Panel title={title}>
      <form onSubmit={onSubmit} aria-label={label} autoComplete="off">
        <div class="split">{children}</div>
        <ErrorNote error={error} />
        <button class="primary" type="submit">
          {submit}
        </button>
      </form>
    </Panel>
  );
}
