import { useState } from 'preact/hooks';
import { useCan } from '../access';
import { api, ok } from '../api/client';
import { href } from '../router';
import { ErrorNote, Json, Panel, Status, when } from '../ui/bits';
import { ShownOnce } from '../ui/copy';
import { RateLimitField, RetentionField, rateLimitOf, retentionSeconds, SelectFilter } from '../ui/fields';
import { Pager, Table } from '../ui/list';
import { useAction } from '../ui/use-action';
import { useAsync } from '../ui/use-async';

const DELIVERY_STATUSES = ['PENDING', 'SUCCESS', 'FAILED'] as const;
type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** How a receiver checks a delivery (docs/webhooks.md), with the Standard Webhooks library. */
export function SignatureSnippet() {
  return (
    <details>
      <summary>Verify a delivery's signature</summary>
      <pre class="json">{`import { Webhook } from 'standardwebhooks'; // or: import { Webhook } from 'svix';

const wh = new Webhook(process.env.SVC_WEBHOOK_SECRET); // the whsec_... secret
// rawBody: the request body exactly as received, before any JSON parsing.
const event = wh.verify(rawBody, req.headers); // throws if forged or stale
// Deduplicate on req.headers['webhook-id']: the same on every attempt of a delivery.`}</pre>
    </details>
  );
}

/** One webhook: rotate its secret, send a test, its deliveries by status with attempts, retry. */
export function WebhookDetail({ id }: { id: string }) {
  const can = useCan();
  const writable = can('POST /api/v1/webhook/{id}/rotate_secret');
  const [status, setStatus] = useState<DeliveryStatus | undefined>(undefined);
  const [offset, setOffset] = useState(0);
  const [open, setOpen] = useState<string | null>(null);
  const [secret, setSecret] = useState<{ hex: string; standard: string } | null>(null);
  const [error, run] = useAction();
  const hook = useAsync(() => ok(api.GET('/api/v1/webhook/{id}', { params: { path: { id } } })), [id]);
  const deliveries = useAsync(
    () =>
      ok(
        api.GET('/api/v1/webhook/{id}/delivery', {
          params: { path: { id }, query: { status, offset, limit: 25 } },
        }),
      ),
    [id, status, offset],
    { everyMs: 2000, keepPolling: (d) => !!d?.deliveries.some((x) => x.status === 'PENDING') },
  );
  const act = (what: () => Promise<unknown>) => run(what).then((done) => done && deliveries.reload());
  const rotate = () =>
    act(async () => {
      const answer = await ok(api.POST('/api/v1/webhook/{id}/rotate_secret', { params: { path: { id } } }));
      setSecret({ hex: answer.secret, standard: answer.standard_webhooks_secret });
      hook.reload();
    });
  const canEdit = can('PATCH /api/v1/webhook/{id}');
  const [kept, setKept] = useState(false);
  const saveSettings = (ev: Event) => {
    ev.preventDefault();
    const form = new FormData(ev.currentTarget as HTMLFormElement);
    setKept(false);
    return run(async () => {
      await ok(
        api.PATCH('/api/v1/webhook/{id}', {
          params: { path: { id } },
          body: {
            retention: { deliveries_seconds: retentionSeconds(form, 'deliveries') },
            rate_limit: rateLimitOf(form, 'rate'),
          },
        }),
      );
      setKept(true);
      hook.reload();
    });
  };
  const sendTest = () =>
    act(() => ok(api.POST('/api/v1/webhook/{id}/test', { params: { path: { id } }, body: {} })));
  const retry = (deliveryId: string) =>
    act(() =>
      ok(
        api.POST('/api/v1/webhook/{id}/delivery/{delivery_id}/retry', {
          params: { path: { id, delivery_id: deliveryId } },
        }),
      ),
    );

  if (hook.error) return <ErrorNote error={hook.error} />;
  const w = hook.data;
  if (!w) return <p class="muted">Loading…</p>;
  return (
    <>
      <p>
        <a href={href('/webhooks')}>Webhooks</a> /
      </p>
      <div class="row" style={{ justifyContent: 'space-between' }}>
        <h1>{w.name}</h1>
        {writable && (
          <div class="row">
            <button type="button" onClick={sendTest}>
              Send test event
            </button>
            <button type="button" onClick={rotate}>
              Rotate secret
            </button>
          </div>
        )}
      </div>
      <ErrorNote error={error} />
      {secret && (
        <Panel title="New secret">
          <ShownOnce label="Signing secret (Standard Webhooks form)" value={secret.standard} />
          <ShownOnce label="Signing secret (hex, for X-Signature)" value={secret.hex} />
          <SignatureSnippet />
        </Panel>
      )}
      <Panel>
        <p>
          <code>{w.url}</code> · {w.event_types.join(', ')} · {w.enabled ? 'enabled' : 'disabled'} · secret{' '}
          <code>{w.secret_hint}</code>
        </p>
        {w.description && <p class="muted">{w.description}</p>}
        {!secret && <SignatureSnippet />}
        <form onSubmit={saveSettings} aria-label="settings" class="row">
          <fieldset disabled={!canEdit} style={{ border: 0, padding: 0, margin: 0 }}>
            <RetentionField
              label="Keep finished deliveries"
              name="deliveries"
              seconds={w.retention.deliveries_seconds}
            />
            <RateLimitField name="rate" value={w.rate_limit} />
            {canEdit && <button type="submit">Save settings</button>}
            {kept && <span class="muted">Saved</span>}
          </fieldset>
        </form>
      </Panel>
      <Panel
        title="Deliveries"
        actions={
          <SelectFilter
            label="Status"
            name="status"
            value={status}
            options={DELIVERY_STATUSES}
            onChange={(next) => {
              setOffset(0);
              setStatus(next);
            }}
          />
        }
      >
        <ErrorNote error={deliveries.error} />
        <Table
          label="deliveries"
          head={['Event', 'Status', 'HTTP', 'Attempts', 'Next attempt', 'Created', '']}
        >
          {deliveries.data?.deliveries.map((d) => [
            <tr key={d.id} data-delivery={d.id}>
              <td>
                <button
                  type="button"
                  aria-expanded={open === d.id}
                  onClick={() => setOpen(open === d.id ? null : d.id)}
                >
                  {d.event_type}
                </button>
              </td>
              <td>
                <Status status={d.status} />
              </td>
              <td>{d.http_status ?? '—'}</td>
              <td>
                {d.attempts} / {d.max_attempts}
              </td>
              <td>{when(d.next_attempt_at)}</td>
              <td>{when(d.created_at)}</td>
              <td>
                {writable && d.status === 'FAILED' && (
                  <button type="button" onClick={() => retry(d.id)}>
                    Retry
                  </button>
                )}
              </td>
            </tr>,
            open === d.id && (
              <tr key={`${d.id}-detail`}>
                <td colSpan={7}>
                  <DeliveryAttempts webhookId={id} deliveryId={d.id} />
                </td>
              </tr>
            ),
          ])}
        </Table>
        <Pager page={deliveries.data} onOffset={setOffset} />
      </Panel>
    </>
  );
}

function DeliveryAttempts({ webhookId, deliveryId }: { webhookId: string; deliveryId: string }) {
  const detail = useAsync(
    () =>
      ok(
        api.GET('/api/v1/webhook/{id}/delivery/{delivery_id}', {
          params: { path: { id: webhookId, delivery_id: deliveryId } },
        }),
      ),
    [webhookId, deliveryId],
  );
  if (detail.error) return <ErrorNote error={detail.error} />;
  if (!detail.data) return <p class="muted">Loading…</p>;
  const d = detail.data;
  return (
    <section aria-label={`delivery ${deliveryId}`}>
      {d.error && <p class="error">{d.error}</p>}
      <Table label="attempts" head={['#', 'Outcome', 'HTTP', 'Duration', 'Started', 'Error or response']}>
        {d.attempts_log.map((a) => (
          <tr key={a.id}>
            <td>{a.sequence}</td>
            <td>
              <Status status={a.outcome} />
            </td>
            <td>{a.http_status ?? '—'}</td>
            <td>{a.duration_ms} ms</td>
            <td>{when(a.started_at)}</td>
            <td class="muted">{a.error ?? a.response_body ?? ''}</td>
          </tr>
        ))}
      </Table>
      <h2>Payload</h2>
      <Json value={d.payload} label="delivery payload" />
    </section>
  );
}
