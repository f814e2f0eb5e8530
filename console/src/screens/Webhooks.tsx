import { useState } from 'preact/hooks';
import { useCan } from '../access';
import { api, ok, type Schemas } from '../api/client';
import { href } from '../router';
import { CreateForm, ErrorNote, Panel, when } from '../ui/bits';
import { ShownOnce } from '../ui/copy';
import {
  RateLimitField,
  RetentionField,
  rateLimitOf,
  retentionSeconds,
  SearchForm,
  TextField,
} from '../ui/fields';
import { Pager, Table } from '../ui/list';
import { useAction } from '../ui/use-action';
import { useAsync } from '../ui/use-async';
import { SignatureSnippet } from './WebhookDetail';

const splitTypes = (text: string) =>
  text
    .split(/[\s,]+/)
    .map((t) => t.trim())
    .filter(Boolean);

/** Webhooks: the list, and a form to create one (its secret shown once, with how to verify it). */
export function Webhooks() {
  const can = useCan();
  const [offset, setOffset] = useState(0);
  const [search, setSearch] = useState<string | undefined>(undefined);
  const [created, setCreated] = useState<Schemas['WebhookWithSecret'] | null>(null);
  const [error, run] = useAction();
  const list = useAsync(
    () => ok(api.GET('/api/v1/webhook', { params: { query: { offset, limit: 25, search } } })),
    [offset, search],
  );
  const create = (ev: Event) => {
    ev.preventDefault();
    const form = ev.currentTarget as HTMLFormElement;
    const data = new FormData(form);
    run(async () => {
      const answer = await ok(
        api.POST('/api/v1/webhook', {
          body: {
            name: String(data.get('name')).trim(),
            url: String(data.get('url')).trim(),
            event_types: splitTypes(String(data.get('event_types'))),
            description: String(data.get('description') ?? '').trim() || null,
            enabled: data.get('enabled') === 'on',
            retention: { deliveries_seconds: retentionSeconds(data, 'deliveries') },
            rate_limit: rateLimitOf(data, 'rate'),
          },
        }),
      );
      setCreated(answer);
      form.reset();
      list.reload();
    });
  };
  return (
    <>
      <h1>Webhooks</h1>
      {created && (
        <Panel title={`Created ${created.name}`}>
          <ShownOnce
            label="Signing secret (Standard Webhooks form)"
            value={created.standard_webhooks_secret}
          />
          <ShownOnce label="Signing secret (hex, for X-Signature)" value={created.secret} />
          <SignatureSnippet />
          <p>
            <a href={href(`/webhooks/${created.id}`)}>Open {created.name}</a>
          </p>
        </Panel>
      )}
      <Panel>
        <SearchForm
          label="Name or URL contains"
          formLabel="search webhooks"
          maxLength={2048}
          onSearch={(text) => {
            setOffset(0);
            setSearch(text);
          }}
        />
        <ErrorNote error={list.error} />
        <Table label="webhooks" head={['Name', 'URL', 'Event types', 'State', 'Secret', 'Updated']}>
          {list.data?.webhooks.map((w) => (
            <tr key={w.id}>
              <td>
                <a href={href(`/webhooks/${w.id}`)}>{w.name}</a>
              </td>
              <td>
                <code>{w.url}</code>
              </td>
              <td>{w.event_types.join(', ')}</td>
              <td>{w.enabled ? 'enabled' : 'disabled'}</td>
              <td>
                <code>{w.secret_hint}</code>
              </td>
              <td>{when(w.updated_at)}</td>
            </tr>
          ))}
        </Table>
        <Pager page={list.data} onOffset={setOffset} />
      </Panel>
      {can('POST /api/v1/webhook') && (
        <CreateForm
          title="New webhook"
          label="new webhook"
          submit="Create webhook"
          onSubmit={create}
          error={error}
        >
          <div>
            <TextField label="Name" name="name" required maxLength={200} />
            <TextField
              label="URL"
              name="url"
              type="url"
              required
              maxLength={2048}
              placeholder="https://example.com/hooks/svc"
            />
          </div>
          <div>
            <TextField
              label="Event types (comma or space separated; * for all)"
              name="event_types"
              required
              maxLength={4000}
              placeholder="svc.submission.created"
            />
            <TextField label="Description" name="description" maxLength={2000} />
            <label class="inline">
              <input type="checkbox" name="enabled" defaultChecked /> Enabled
            </label>
            <RetentionField label="Keep finished deliveries" name="deliveries" seconds={null} />
            <RateLimitField name="rate" value={null} />
          </div>
        </CreateForm>
      )}
    </>
  );
}
