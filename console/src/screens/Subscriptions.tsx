import { useState } from 'preact/hooks';
import { api, ok } from '../api/client';
import { href } from '../router';
import { ErrorNote, Panel, when } from '../ui/bits';
import { Pager, Table } from '../ui/list';
import { useAsync } from '../ui/use-async';

/** Subscriptions with the API's filters: event type, enabled, and a name search. */
export function Subscriptions({ canCreate }: { canCreate: boolean }) {
  const [filters, setFilters] = useState<{ event_type?: string; enabled?: boolean; search?: string }>({});
  const [offset, setOffset] = useState(0);
  const list = useAsync(
    () => ok(api.GET('/api/v1/event_subscription', { params: { query: { ...filters, offset, limit: 25 } } })),
    [JSON.stringify(filters), offset],
  );
  const applyFilters = (ev: Event) => {
    ev.preventDefault();
    const form = new FormData(ev.currentTarget as HTMLFormElement);
    const text = (name: string) => String(form.get(name) ?? '').trim() || undefined;
    const enabled = form.get('enabled');
    setOffset(0);
    setFilters({
      event_type: text('event_type'),
      search: text('search'),
      enabled: enabled === 'true' ? true : enabled === 'false' ? false : undefined,
    });
  };
  return (
    <>
      <div class="row" style={{ justifyContent: 'space-between' }}>
        <h1>Subscriptions</h1>
        {canCreate && (
          <a class="button" href={href('/subscriptions/new')}>
            New subscription
          </a>
        )}
      </div>
      <Panel>
        <form class="row" onSubmit={applyFilters} aria-label="filter subscriptions">
          <label>
            Name contains
            <input name="search" maxLength={200} />
          </label>
          <label>
            Event type
            <input name="event_type" placeholder="svc.submission.created" />
          </label>
          <label>
            Enabled
            <select name="enabled">
              <option value="">any</option>
              <option value="true">enabled</option>
              <option value="false">disabled</option>
            </select>
          </label>
          <button type="submit">Filter</button>
        </form>
        <ErrorNote error={list.error} />
        <Table label="subscriptions" head={['Name', 'Event type', 'State', 'Updated']}>
          {list.data?.event_subscriptions.map((s) => (
            <tr key={s.id}>
              <td>
                <a href={href(`/subscriptions/${s.id}`)}>{s.name}</a>
              </td>
              <td>
                <code>{s.event_type}</code>
              </td>
              <td>
                <span class={`status status-${s.paused_at ? 'failed' : s.enabled ? 'completed' : 'skipped'}`}>
                  {s.paused_at ? `paused: ${s.paused_reason}` : s.enabled ? 'enabled' : 'disabled'}
                </span>
              </td>
              <td>{when(s.updated_at)}</td>
            </tr>
          ))}
        </Table>
        <Pager page={list.data} onOffset={setOffset} />
      </Panel>
    </>
  );
}
