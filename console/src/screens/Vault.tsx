import { useState } from 'preact/hooks';
import { useCan } from '../access';
import { api, ok, type Schemas } from '../api/client';
import { CreateForm, ErrorNote, Panel, when } from '../ui/bits';
import { TextField } from '../ui/fields';
import { Pager, Table } from '../ui/list';
import { useAction } from '../ui/use-action';
import { useAsync } from '../ui/use-async';

type Entry = Schemas['VaultEntry'];

/**
 * The vault. A SECRET's value is write-only here as in the API (which answers `******`): the console
 * shows that it is set, never a value, and clears every value field once it was sent.
 */
export function Vault() {
  const can = useCan();
  const [offset, setOffset] = useState(0);
  const [error, act] = useAction();
  const [createError, actCreate] = useAction();
  const [editing, setEditing] = useState<string | null>(null);
  const list = useAsync(
    () => ok(api.GET('/api/v1/vault_entry', { params: { query: { offset, limit: 25 } } })),
    [offset],
  );
  const run = (what: () => Promise<unknown>, form?: HTMLFormElement) =>
    act(async () => {
      await what();
      form?.reset();
      setEditing(null);
      list.reload();
    });
  const create = (ev: Event) => {
    ev.preventDefault();
    const form = ev.currentTarget as HTMLFormElement;
    const data = new FormData(form);
    actCreate(async () => {
      await ok(
        api.POST('/api/v1/vault_entry', {
          body: {
            key: String(data.get('key')).trim(),
            kind: String(data.get('kind')) as Entry['kind'],
            value: String(data.get('value')),
            description: String(data.get('description') ?? '').trim() || null,
          },
        }),
      );
      form.reset();
      list.reload();
    });
  };
  const replace = (entry: Entry) => (ev: Event) => {
    ev.preventDefault();
    const form = ev.currentTarget as HTMLFormElement;
    const value = String(new FormData(form).get('value'));
    run(
      () =>
        ok(api.PATCH('/api/v1/vault_entry/{id}', { params: { path: { id: entry.id } }, body: { value } })),
      form,
    );
  };
  const remove = (entry: Entry) =>
    run(() => ok(api.DELETE('/api/v1/vault_entry/{id}', { params: { path: { id: entry.id } } })));
  const writable = can('PATCH /api/v1/vault_entry/{id}');
  return (
    <>
      <h1>Vault</h1>
      <p class="muted">
        Graphs and plugin configs refer to entries as <code>$secret:key</code> and <code>$var:key</code>.
      </p>
      <ErrorNote error={error} />
      <Panel>
        <ErrorNote error={list.error} />
        <Table label="vault entries" head={['Key', 'Kind', 'Value', 'Description', 'Updated', '']}>
          {list.data?.vault_entries.map((e) => (
            <tr key={e.id}>
              <td>
                <code>{e.key}</code>
              </td>
              <td>{e.kind}</td>
              <td>
                {e.kind === 'SECRET' ? <span class="muted">set (never shown)</span> : <code>{e.value}</code>}
              </td>
              <td>{e.description ?? ''}</td>
              <td>{when(e.updated_at)}</td>
              <td>
                {writable && editing !== e.id && (
                  <button type="button" onClick={() => setEditing(e.id)}>
                    Replace value
                  </button>
                )}
                {writable && editing === e.id && (
                  <form class="row" onSubmit={replace(e)} aria-label={`replace ${e.key}`}>
                    {/* biome-ignore lint/a11y/noLabelWithoutControl: the input is one of the two below */}
                    <label class="inline">
                      New value{' '}
                      {e.kind === 'SECRET' ? (
                        <input name="value" type="password" autoComplete="new-password" required />
                      ) : (
                        <input name="value" type="text" autoComplete="off" required />
                      )}
                    </label>
                    <button type="submit">Save</button>
                    <button type="button" onClick={() => setEditing(null)}>
                      Cancel
                    </button>
                  </form>
                )}
                {can('DELETE /api/v1/vault_entry/{id}') && (
                  <button type="button" class="danger" onClick={() => remove(e)}>
                    Delete
                  </button>
                )}
              </td>
            </tr>
          ))}
        </Table>
        <Pager page={list.data} onOffset={setOffset} />
      </Panel>
      {can('POST /api/v1/vault_entry') && (
        <CreateForm
          title="New entry"
          label="new vault entry"
          submit="Create entry"
          onSubmit={create}
          error={createError}
        >
          <div>
            <TextField label="Key" name="key" required maxLength={200} pattern="[A-Za-z0-9_]+" />
            <label>
              Kind
              <select name="kind">
                <option value="SECRET">SECRET (encrypted, write-only)</option>
                <option value="VAR">VAR (plain text)</option>
              </select>
            </label>
          </div>
          <div>
            <label>
              Value
              <input name="value" type="password" required maxLength={65536} autoComplete="new-password" />
            </label>
            <TextField label="Description" name="description" maxLength={2000} />
          </div>
        </CreateForm>
      )}
    </>
  );
}
