import { useState } from 'preact/hooks';
import { useCan } from '../access';
import { api, ok } from '../api/client';
import { href, navigate } from '../router';
import { ErrorNote, Panel, Status, toInstant, toLocalField, when } from '../ui/bits';
import { SelectFilter } from '../ui/fields';
import { Pager, Table } from '../ui/list';
import { useAction } from '../ui/use-action';
import { useAsync } from '../ui/use-async';

const STATUSES = ['pending', 'running', 'completed', 'failed', 'skipped', 'cancelled'] as const;
type RunStatus = (typeof STATUSES)[number];

/** Runs with the API's filters (status, subscription, start time range), refreshed live. */
export function Runs({ query }: { query: URLSearchParams }) {
  const can = useCan();
  const [error, run] = useAction();
  const [cancelled, setCancelled] = useState<string | null>(null);
  const [offset, setOffset] = useState(0);
  const [live, setLive] = useState(true);
  const filters = {
    status: (query.get('status') || undefined) as RunStatus | undefined,
    event_subscription_id: query.get('event_subscription_id') || undefined,
    started_at_gte: query.get('started_at_gte') || undefined,
    started_at_lte: query.get('started_at_lte') || undefined,
    parent_run_id: query.get('parent_run_id') || undefined,
  };
  const list = useAsync(
    () => ok(api.GET('/api/v1/workflow_run', { params: { query: { ...filters, offset, limit: 25 } } })),
    [query.toString(), offset],
    { everyMs: 2000, keepPolling: () => live },
  );
  const apply = (ev: Event) => {
    ev.preventDefault();
    const form = new FormData(ev.currentTarget as HTMLFormElement);
    const next = new URLSearchParams();
    if (filters.status) next.set('status', filters.status);
    if (filters.parent_run_id) next.set('parent_run_id', filters.parent_run_id);
    const subscription = String(form.get('event_subscription_id') ?? '').trim();
    if (subscription) next.set('event_subscription_id', subscription);
    for (const name of ['started_at_gte', 'started_at_lte']) {
      const v = String(form.get(name) ?? '');
      if (v) next.set(name, toInstant(v));
    }
    setOffset(0);
    navigate(`/runs${next.size ? `?${next}` : ''}`, true);
  };
  const local = (iso: string | undefined) => (iso ? toLocalField(iso) : '');

  const subscription = filters.event_subscription_id;
  const cancelAll = () =>
    run(async () => {
      const answer = await ok(
        api.POST('/api/v1/workflow_run/cancel', { body: { event_subscription_id: subscription } }),
      );
      setCancelled(
        `${answer.cancelled.length} run${answer.cancelled.length === 1 ? '' : 's'} cancelled${answer.has_more ? '; more remain: cancel again' : ''}`,
      );
      list.reload();
    });
  return (
    <>
      <div class="row" style={{ justifyContent: 'space-between' }}>
        <h1>Runs</h1>
        {subscription && can('POST /api/v1/workflow_run/cancel') && (
          <button type="button" class="danger" onClick={cancelAll}>
            Cancel every pending and running run of this subscription
          </button>
        )}
      </div>
      <ErrorNote error={error} />
      {cancelled && <p role="status">{cancelled}</p>}
      {filters.parent_run_id && (
        <p data-parent-filter={filters.parent_run_id}>
          The child runs of{' '}
          <a href={href(`/runs/${filters.parent_run_id}`)}>run {filters.parent_run_id.slice(0, 13)}…</a> ·{' '}
          <a href={href('/runs')}>all runs</a>
        </p>
      )}
      <Panel>
        {/* The fields are the user's while typed in (the list polls and re-renders every 2 s); a new
            query (a filter applied, a link followed) gives them its values. */}
        <form class="row" onSubmit={apply} aria-label="filter runs" key={query.toString()}>
          <SelectFilter
            label="Status"
            name="status"
            value={filters.status}
            options={STATUSES}
            onChange={(status) => {
              const next = new URLSearchParams(query);
              if (status) next.set('status', status);
              else next.delete('status');
              setOffset(0);
              navigate(`/runs${next.size ? `?${next}` : ''}`, true);
            }}
          />
          <label>
            Subscription id
            <input name="event_subscription_id" defaultValue={filters.event_subscription_id ?? ''} />
          </label>
          <label>
            Started from
            <input name="started_at_gte" type="datetime-local" defaultValue={local(filters.started_at_gte)} />
          </label>
          <label>
            Started until
            <input name="started_at_lte" type="datetime-local" defaultValue={local(filters.started_at_lte)} />
          </label>
          <button type="submit">Filter</button>
          <label class="inline">
            <input
              type="checkbox"
              checked={live}
              onChange={(ev) => setLive((ev.currentTarget as HTMLInputElement).checked)}
            />{' '}
            Live
          </label>
        </form>
        <ErrorNote error={list.error} />
        <Table label="runs" head={['Run', 'Status', 'Event type', 'Started', 'Completed', 'Error']}>
          {list.data?.runs.map((r) => (
            <tr key={r.id}>
              <td>
                <a href={href(`/runs/${r.id}`)}>{r.id.slice(0, 13)}…</a>
                {r.parent_run_id && (
                  <span class="muted">
                    {' '}
                    child of <a href={href(`/runs/${r.parent_run_id}`)}>{r.parent_run_id.slice(0, 8)}…</a>
                  </span>
                )}
              </td>
              <td>
                <Status status={r.status} />
                {r.status === 'pending' && r.pending_reason && (
                  <span class="muted">
                    {' '}
                    waiting: {r.pending_reason}
                    {r.flow_key ? ` (key ${r.flow_key})` : ''}
                  </span>
                )}
              </td>
              <td>
                <code>{r.event_type}</code>
              </td>
              <td>{when(r.started_at)}</td>
              <td>{when(r.completed_at)}</td>
              <td class="muted">{r.error ?? ''}</td>
            </tr>
          ))}
        </Table>
        <Pager page={list.data} onOffset={setOffset} />
      </Panel>
    </>
  );
}
