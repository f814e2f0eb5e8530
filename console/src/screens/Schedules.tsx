import { useState } from 'preact/hooks';
import { useCan } from '../access';
import { api, ok, type Schemas } from '../api/client';
import { CreateForm, ErrorNote, Panel, parseJson, when } from '../ui/bits';
import { TextField } from '../ui/fields';
import { Pager, Table } from '../ui/list';
import { useAction } from '../ui/use-action';
import { useAsync } from '../ui/use-async';

type Schedule = Schemas['Schedule'];
const CATCH_UP = ['last', 'none', 'all'] as const;

/** Cron schedules that publish an event of a custom type at each fire time (docs/schedules.md). */
export function Schedules() {
  const can = useCan();
  const [offset, setOffset] = useState(0);
  const [error, run] = useAction();
  const [createError, runCreate] = useAction();
  const list = useAsync(
    () => ok(api.GET('/api/v1/schedule', { params: { query: { offset, limit: 25 } } })),
    [offset],
  );
  const writable = can('PATCH /api/v1/schedule/{id}');
  const create = (ev: Event) => {
    ev.preventDefault();
    const form = ev.currentTarget as HTMLFormElement;
    const data = new FormData(form);
    const text = (name: string) => String(data.get(name) ?? '').trim();
    runCreate(async () => {
      await ok(
        api.POST('/api/v1/schedule', {
          body: {
            name: text('name'),
            cron: text('cron'),
            timezone: text('timezone') || undefined,
            event_type: text('event_type'),
            data: (parseJson(text('data'), 'data') ?? {}) as Record<string, unknown>,
            catch_up: text('catch_up') as Schedule['catch_up'],
            enabled: data.get('enabled') === 'on',
          },
        }),
      );
      form.reset();
      list.reload();
    });
  };
  const setEnabled = (s: Schedule, enabled: boolean) =>
    run(async () => {
      await ok(api.PATCH('/api/v1/schedule/{id}', { params: { path: { id: s.id } }, body: { enabled } }));
      list.reload();
    });
  const remove = (s: Schedule) =>
    run(async () => {
      await ok(api.DELETE('/api/v1/schedule/{id}', { params: { path: { id: s.id } } }));
      list.reload();
    });
  return (
    <>
      <h1>Schedules</h1>
      <ErrorNote error={error} />
      <Panel>
        <ErrorNote error={list.error} />
        <Table
          label="schedules"
          head={['Name', 'Cron', 'Event type', 'Next fire times', 'Last fired', 'State', '']}
        >
          {list.data?.schedules.map((s) => (
            <tr key={s.id}>
              <td>{s.name}</td>
              <td>
                <code>{s.cron}</code> <span class="muted">{s.timezone}</span>
              </td>
              <td>
                <code>{s.event_type}</code>
              </td>
              <td>{s.enabled ? s.next_fire_times.slice(0, 3).map(when).join(', ') : '—'}</td>
              <td>
                {when(s.last_fired_at)}
                {s.last_error && <div class="error">{s.last_error}</div>}
              </td>
              <td>{s.enabled ? 'enabled' : 'disabled'}</td>
              <td>
                {writable && (
                  <div class="row">
                    <button type="button" onClick={() => setEnabled(s, !s.enabled)}>
                      {s.enabled ? 'Disable' : 'Enable'}
                    </button>
                    <button type="button" class="danger" onClick={() => remove(s)}>
                      Delete
                    </button>
                  </div>
                )}
              </td>
            </tr>
          ))}
        </Table>
        <Pager page={list.data} onOffset={setOffset} />
      </Panel>
      {can('POST /api/v1/schedule') && (
        <CreateForm
          title="New schedule"
          label="new schedule"
          submit="Create schedule"
          onSubmit={create}
          error={createError}
        >
          <div>
            <TextField label="Name" name="name" required maxLength={200} />
            <TextField
              label="Cron (5 or 6 fields, or @daily, @hourly, …)"
              name="cron"
              required
              maxLength={200}
              placeholder="*/5 * * * *"
            />
            <TextField
              label="Time zone (IANA; UTC when empty)"
              name="timezone"
              maxLength={100}
              placeholder="Europe/Berlin"
            />
            <label class="inline">
              <input type="checkbox" name="enabled" defaultChecked /> Enabled
            </label>
          </div>
          <div>
            <TextField label="Event type (a custom type)" name="event_type" required maxLength={200} />
            <label>
              Event data (JSON)
              <textarea name="data" rows={4} spellcheck={false} defaultValue="{}" />
            </label>
            <label>
              Missed fire times
              <select name="catch_up">
                {CATCH_UP.map((c) => (
                  <option key={c} value={c}>
                    {c}
                  </option>
                ))}
              </select>
            </label>
          </div>
        </CreateForm>
      )}
    </>
  );
}
