import { useState } from 'preact/hooks';
import { api, ok } from '../api/client';
import { href } from '../router';
import { ErrorNote, Json, Panel } from '../ui/bits';
import { SearchForm } from '../ui/fields';
import { Pager, Table } from '../ui/list';
import { useAsync } from '../ui/use-async';

/** The event definition registry: svc's own types and the custom ones, with schemas and examples. */
export function EventTypes() {
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
