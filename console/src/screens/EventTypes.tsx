import { useState } from 'preact/hooks';
import { useCan } from '../access';
import { api, ok } from '../api/client';
import { href, navigate } from '../router';
import { CreateForm, ErrorNote, Json, Panel, parseJson } from '../ui/bits';
import { SearchForm, TextField } from '../ui/fields';
import { Pager, Table } from '../ui/list';
import { useAction } from '../ui/use-action';
import { useAsync } from '../ui/use-async';

/** The event definition registry: svc's own types and the custom ones, with schemas and examples. */
export function EventTypes() {
  const can = useCan();
  const [createError, runCreate] = useAction();
  const create = (ev: Event) => {
    ev.preventDefault();
    const data = new FormData(ev.currentTarget as HTMLFormElement);
    const text = (name: string) => String(data.get(name) ?? '').trim();
    runCreate(async () => {
      const made = await ok(
        api.POST('/api/v1/event_definition', {
          body: {
            event_type: text('event_type'),
            description: text('description') || undefined,
            data_schema: parseJson(text('data_schema'), 'data schema') as Record<string, unknown> | null,
            examples: (parseJson(text('examples'), 'examples') ?? []) as Record<string, unknown>[],
          },
        }),
      );
      navigate(`/event-types/${encodeURIComponent(made.event_type)}`);
    });
  };
  const [offset, setOffset] = useState(0);
  const [search, setSearch] = useState<string | undefined>(undefined);
  const list = useAsync(
    () => ok(api.GET('/api/v1/event_definition', { params: { query: { offset, limit: 50, search } } })),
    [offset, search],
  );
  return (
    <>
      <h1>Event types</h1>
      <Panel>
        <SearchForm
          label="Type contains"
          formLabel="search event types"
          onSearch={(text) => {
            setOffset(0);
            setSearch(text);
          }}
        />
        <ErrorNote error={list.error} />
        <Table label="event types" head={['Type', 'Description', 'Version', 'Kind']}>
          {list.data?.event_definitions.map((d) => (
            <tr key={d.event_type}>
              <td>
                <a href={href(`/event-types/${encodeURIComponent(d.event_type)}`)}>{d.event_type}</a>
              </td>
              <td>{d.description}</td>
              <td>{d.schema_version}</td>
              <td>
                {d.builtin ? 'svc' : 'custom'}
                {d.deprecated ? ', deprecated' : ''}
              </td>
            </tr>
          ))}
        </Table>
        <Pager page={list.data} onOffset={setOffset} />
      </Panel>
      {can('POST /api/v1/event_definition') && (
        <CreateForm
          title="New custom type"
          label="new event type"
          submit="Register type"
          onSubmit={create}
          error={createError}
        >
          <div>
            <TextField
              label="Type (reverse DNS, e.g. com.example.order.created)"
              name="event_type"
              required
              maxLength={200}
              pattern="[A-Za-z0-9][A-Za-z0-9._:-]*"
            />
            <TextField label="Description" name="description" maxLength={2000} />
            <label>
              Data schema (JSON Schema; empty: any data)
              <textarea name="data_schema" rows={6} spellcheck={false} />
            </label>
          </div>
          <div>
            <label>
              Examples (a JSON list of complete CloudEvents; the test bench starts from the first)
              <textarea name="examples" rows={10} spellcheck={false} defaultValue="[]" />
            </label>
          </div>
        </CreateForm>
      )}
    </>
  );
}

export function EventType({ type }: { type: string }) {
  const def = useAsync(
    () => ok(api.GET('/api/v1/event_definition/{event_type}', { params: { path: { event_type: type } } })),
    [type],
  );
  if (def.error) return <ErrorNote error={def.error} />;
  const d = def.data;
  if (!d) return <p class="muted">Loading…</p>;
  return (
    <>
      <p>
        <a href={href('/event-types')}>Event types</a> /
      </p>
      <h1>
        <code>{d.event_type}</code>
      </h1>
      <Panel>
        <p>
          {d.description} · schema version {d.schema_version} · source <code>{d.source ?? 'any'}</code>
          {d.subject_template && (
            <>
              {' '}
              · subject <code>{d.subject_template}</code>
            </>
          )}
          {d.deprecated && ' · deprecated'}
        </p>
      </Panel>
      <div class="split">
        <Panel title="Data schema">
          <Json value={d.data_schema} label="data schema" />
        </Panel>
        <Panel title="Examples">
          {d.examples.length === 0 ? (
            <p class="muted">None</p>
          ) : (
            d.examples.map((e, i) => <Json key={String(i)} value={e} label={`example ${i + 1}`} />)
          )}
        </Panel>
      </div>
    </>
  );
}
