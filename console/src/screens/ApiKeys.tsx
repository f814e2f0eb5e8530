import { useState } from 'preact/hooks';
import { useCan } from '../access';
import { api, ok, type Schemas } from '../api/client';
import { CreateForm, ErrorNote, Panel, when } from '../ui/bits';
import { ShownOnce } from '../ui/copy';
import { TextField } from '../ui/fields';
import { Pager, Table } from '../ui/list';
import { useAction } from '../ui/use-action';
import { useAsync } from '../ui/use-async';

const LIFETIMES = [
  ['1 day', 86_400],
  ['30 days', 2_592_000],
  ['90 days', 7_776_000],
  ['1 year', 31_536_000],
] as const;

/** API keys: create one with scopes picked from the user's own (never more), token shown once, revoke. */
export function ApiKeys({ scopes }: { scopes: readonly string[] }) {
  const can = useCan();
  const [offset, setOffset] = useState(0);
  const [created, setCreated] = useState<Schemas['CreatedApiKey'] | null>(null);
  const [error, run] = useAction();
  const [createError, runCreate] = useAction();
  const list = useAsync(
    () => ok(api.GET('/api/v1/api_key', { params: { query: { offset, limit: 25 } } })),
    [offset],
  );
  const create = (ev: Event) => {
    ev.preventDefault();
    const form = ev.currentTarget as HTMLFormElement;
    const data = new FormData(form);
    runCreate(async () => {
      const answer = await ok(
        api.POST('/api/v1/api_key', {
          body: {
            name: String(data.get('name')).trim(),
            description: String(data.get('description') ?? '').trim() || null,
            scope_keys: data.getAll('scope').map(String),
            expires_in: Number(data.get('expires_in')),
          },
        }),
      );
      setCreated(answer);
      form.reset();
      list.reload();
    });
  };
  const revoke = (id: string) =>
    run(async () => {
      await ok(api.DELETE('/api/v1/api_key/{id}', { params: { path: { id } } }));
      list.reload();
    });
  return (
    <>
      <h1>API keys</h1>
      {created && (
        <Panel title={`Created ${created.name}`}>
          <ShownOnce label="API key token" value={created.token} />
          <p class="muted">
            Send it as <code>Authorization: Bearer …</code> or <code>X-API-KEY</code>.
          </p>
        </Panel>
      )}
      <ErrorNote error={error} />
      <Panel>
        <ErrorNote error={list.error} />
        <Table label="api keys" head={['Name', 'Token', 'Scopes', 'Expires', 'Last used', 'State', '']}>
          {list.data?.api_keys.map((k) => (
            <tr key={k.id}>
              <td>{k.name}</td>
              <td>
                <code>{k.token_hint}</code>
              </td>
              <td>{k.scope_keys.join(', ')}</td>
              <td>{when(k.expires_at)}</td>
              <td>{when(k.last_used_at)}</td>
              <td>{k.is_revoked ? `revoked ${when(k.revoked_at)}` : 'active'}</td>
              <td>
                {!k.is_revoked && can('DELETE /api/v1/api_key/{id}') && (
                  <button type="button" class="danger" onClick={() => revoke(k.id)}>
                    Revoke
                  </button>
                )}
              </td>
            </tr>
          ))}
        </Table>
        <Pager page={list.data} onOffset={setOffset} />
      </Panel>
      {can('POST /api/v1/api_key') && (
        <CreateForm
          title="New API key"
          label="new api key"
          submit="Create key"
          onSubmit={create}
          error={createError}
        >
          <div>
            <TextField label="Name" name="name" required maxLength={200} />
            <TextField label="Description" name="description" maxLength={2000} />
            <label>
              Expires in
              <select name="expires_in">
                {LIFETIMES.map(([label, seconds]) => (
                  <option key={seconds} value={seconds}>
                    {label}
                  </option>
                ))}
              </select>
            </label>
          </div>
          <fieldset>
            <legend>Scopes (from your own: a key never holds more than its creator)</legend>
            <div class="chips">
              {scopes.map((s) => (
                <label key={s} class="inline">
                  <input type="checkbox" name="scope" value={s} /> {s}
                </label>
              ))}
            </div>
          </fieldset>
        </CreateForm>
      )}
    </>
  );
}
