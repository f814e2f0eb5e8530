import { useState } from 'preact/hooks';
import { useCan } from '../access';
import { api, ok } from '../api/client';
import { ErrorNote, Json, Panel, Status, when } from '../ui/bits';
import { SelectFilter } from '../ui/fields';
import { Pager, Table } from '../ui/list';
import { useAction } from '../ui/use-action';
import { useAsync } from '../ui/use-async';

const STATUSES = ['PENDING', 'IN_PROGRESS', 'DONE', 'FAILED'] as const;
type TaskStatus = (typeof STATUSES)[number];

/** The outbox's delivery tasks (one per event): where every event is, and a retry for the failed. */
export function Outbox() {
  const can = useCan();
  const [status, setStatus] = useState<TaskStatus | undefined>(undefined);
  const [offset, setOffset] = useState(0);
  const [open, setOpen] = useState<string | null>(null);
  const [error, run] = useAction();
  const list = useAsync(
    () => ok(api.GET('/api/v1/event_delivery_task', { params: { query: { status, offset, limit: 25 } } })),
    [status, offset],
  );
  const retry = (id: string) =>
    run(() => ok(api.POST('/api/v1/event_delivery_task/{id}/retry', { params: { path: { id } } }))).then(
      (done) => done && list.reload(),
    );
  return (
    <>
      <h1>Outbox tasks</h1>
      <ErrorNote error={error} />
      <Panel
        actions={
          <SelectFilter
            label="Status"
            name="status"
            value={status}
            options={STATUSES}
            onChange={(next) => {
              setOffset(0);
              setStatus(next);
            }}
          />
        }
      >
        <ErrorNote error={list.error} />
        <Table
          label="outbox tasks"
          head={['Event type', 'Status', 'Attempts', 'Next attempt', 'Done', 'Error', '']}
        >
          {list.data?.tasks.map((t) => [
            <tr key={t.id}>
              <td>
                <button
                  type="button"
                  aria-expanded={open === t.id}
                  onClick={() => setOpen(open === t.id ? null : t.id)}
                >
                  {t.event_type}
                </button>
              </td>
              <td>
                <Status status={t.status} />
              </td>
              <td>
                {t.attempts} / {t.max_attempts}
              </td>
              <td>{when(t.next_attempt_at)}</td>
              <td>{when(t.done_at)}</td>
              <td class="muted">{t.error ?? ''}</td>
              <td>
                {t.status === 'FAILED' && can('POST /api/v1/event_delivery_task/{id}/retry') && (
                  <button type="button" onClick={() => retry(t.id)}>
                    Retry
                  </button>
                )}
              </td>
            </tr>,
            open === t.id && (
              <tr key={`${t.id}-event`}>
                <td colSpan={7}>
                  <Json value={t.cloudevent} label="cloudevent" />
                </td>
              </tr>
            ),
          ])}
        </Table>
        <Pager page={list.data} onOffset={setOffset} />
      </Panel>
    </>
  );
}
