import { useState } from 'preact/hooks';
import { useCan } from '../access';
import { api, ok, type Schemas } from '../api/client';
import { href, navigate } from '../router';
import { ErrorNote, Panel, parseJson, when } from '../ui/bits';
import { RetentionField, retentionSeconds } from '../ui/fields';
import { useAction } from '../ui/use-action';
import { useAsync } from '../ui/use-async';
import { GraphEditor } from './GraphEditor';
import { ReplayPanel } from './Replay';
import { TestPanel } from './TestPanel';

type Subscription = Schemas['EventSubscription'];

/** One subscription: its metadata, its graph (drawn and editable), a test bench and an expression playground. */
export function SubscriptionScreen({ id }: { id: string | null }) {
  const can = useCan();
  const sub = useAsync(
    () =>
      id
        ? ok(api.GET('/api/v1/event_subscription/{id}', { params: { path: { id } } }))
        : Promise.resolve(null),
    [id],
  );
  if (id && sub.error) return <ErrorNote error={sub.error} />;
  if (id && !sub.data) return <p class="muted">Loading…</p>;
  const record = sub.data ?? null;
  return (
    <>
      <p>
        <a href={href('/subscriptions')}>Subscriptions</a> /
      </p>
      <h1>{record ? record.name : 'New subscription'}</h1>
      {/* Keyed by record: its fields are the user's once typed in, and must not carry over to another. */}
      <MetadataForm
        key={record?.id ?? 'new'}
        record={record}
        editable={can(record ? 'PATCH /api/v1/event_subscription/{id}' : 'POST /api/v1/event_subscription')}
        onSaved={(saved) => (record ? sub.reload() : navigate(`/subscriptions/${saved.id}`))}
      />
      {record && can('GET /api/v1/event_subscription/{id}/graph') && (
        <GraphEditor key={record.id} subscription={record} />
      )}
      {record && can('POST /api/v1/event_subscription/{id}/test') && (
        <TestPanel key={record.id} subscription={record} />
      )}
      {record && can('POST /api/v1/event_subscription/{id}/replay') && (
        <ReplayPanel key={record.id} subscriptionId={record.id} />
      )}
      {record && can('GET /api/v1/workflow_run') && (
        <p>
          <a href={href(`/runs?event_subscription_id=${encodeURIComponent(record.id)}`)}>
            Runs of this subscription
          </a>
        </p>
      )}
    </>
  );
}

function MetadataForm({
  record,
  editable,
  onSaved,
}: {
  record: Subscription | null;
  editable: boolean;
  onSaved: (saved: Subscription) => void;
}) {
  const [error, run] = useAction();
  const [saved, setSaved] = useState(false);
  const submit = (ev: Event) => {
    ev.preventDefault();
    const form = new FormData(ev.currentTarget as HTMLFormElement);
    const text = (name: string) => String(form.get(name) ?? '').trim();
    const orNull = (name: string) => text(name) || null;
    setSaved(false);
    return run(async () => {
      const body = {
        name: text('name'),
        event_type: text('event_type'),
        description: orNull('description'),
        enabled: form.get('enabled') === 'on',
        source_filter: orNull('source_filter'),
        subject_filter: orNull('subject_filter'),
        condition_jsonlogic: parseJson(text('condition_jsonlogic'), 'condition') as Record<
          string,
          unknown
        > | null,
        flow_control: parseJson(text('flow_control'), 'flow control') as Subscription['flow_control'],
        retention: {
          completed_runs_seconds: retentionSeconds(form, 'completed_runs'),
          failed_runs_seconds: retentionSeconds(form, 'failed_runs'),
        },
      };
      const result = record
        ? await ok(
            api.PATCH('/api/v1/event_subscription/{id}', { params: { path: { id: record.id } }, body }),
          )
        : await ok(api.POST('/api/v1/event_subscription', { body }));
      setSaved(true);
      onSaved(result);
    });
  };
  return (
    <Panel title="Subscription">
      <form onSubmit={submit} aria-label="subscription">
        <fieldset disabled={!editable} style={{ border: 0, padding: 0, margin: 0 }}>
          <div class="split">
            <div>
              <label>
                Name
                <input name="name" required maxLength={200} defaultValue={record?.name ?? ''} />
              </label>
              <label>
                Event type
                <input name="event_type" required maxLength={200} defaultValue={record?.event_type ?? ''} />
              </label>
              <label>
                Description
                <input name="description" maxLength={2000} defaultValue={record?.description ?? ''} />
              </label>
              <label class="inline">
                <input type="checkbox" name="enabled" defaultChecked={record?.enabled ?? true} /> Enabled
              </label>
              <RetentionField
                label="Keep completed, skipped and cancelled runs"
                name="completed_runs"
                seconds={record?.retention.completed_runs_seconds ?? null}
              />
              <RetentionField
                label="Keep failed runs"
                name="failed_runs"
                seconds={record?.retention.failed_runs_seconds ?? null}
              />
            </div>
            <div>
              <label>
                Source filter
                <input name="source_filter" maxLength={500} defaultValue={record?.source_filter ?? ''} />
              </label>
              <label>
                Subject filter
                <input name="subject_filter" maxLength={500} defaultValue={record?.subject_filter ?? ''} />
              </label>
              <label>
                Condition (JSONLogic on the event)
                <textarea
                  name="condition_jsonlogic"
                  rows={4}
                  defaultValue={
                    record?.condition_jsonlogic ? JSON.stringify(record.condition_jsonlogic, null, 2) : ''
                  }
                />
              </label>
              <label>
                Flow control (concurrency, throttle, rate_limit, debounce, priority; JSON)
                <textarea
                  name="flow_control"
                  rows={4}
                  placeholder='{"concurrency": {"limit": 5, "key": {"var": "event.data.customer_id"}}}'
                  defaultValue={record?.flow_control ? JSON.stringify(record.flow_control, null, 2) : ''}
                />
              </label>
            </div>
          </div>
          {record?.paused_at && (
            <p class="error">
              Paused {when(record.paused_at)}: {record.paused_reason}
            </p>
          )}
          <ErrorNote error={error} />
          {editable && (
            <div class="row">
              <button class="primary" type="submit">
                {record ? 'Save' : 'Create'}
              </button>
              {saved && <span class="muted">Saved</span>}
            </div>
          )}
        </fieldset>
      </form>
    </Panel>
  );
}
