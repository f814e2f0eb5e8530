import { useState } from 'preact/hooks';
import { useCan } from '../access';
import { api, ok } from '../api/client';
import { href, navigate } from '../router';
import { ErrorNote, Json, Panel, when } from '../ui/bits';
import { type RateLimit, RateLimitField, rateLimitOf } from '../ui/fields';
import { Table } from '../ui/list';
import { SchemaForm } from '../ui/SchemaForm';
import { useAction } from '../ui/use-action';
import { useAsync } from '../ui/use-async';

/** Plugin definitions (with their actions) and instances. */
export function Plugins() {
  const can = useCan();
  const definitions = useAsync(
    () => ok(api.GET('/api/v1/plugin_definition', { params: { query: { limit: 250 } } })),
    [],
  );
  const instances = useAsync(
    () => ok(api.GET('/api/v1/plugin_instance', { params: { query: { limit: 250 } } })),
    [],
  );
  const names = new Map((definitions.data?.plugin_definitions ?? []).map((d) => [d.id, d.name]));
  return (
    <>
      <h1>Plugins</h1>
      <Panel title="Definitions">
        <ErrorNote error={definitions.error} />
        <Table label="plugin definitions" head={['Name', 'Version', 'Runtime', 'Actions', 'State']}>
          {definitions.data?.plugin_definitions.map((d) => (
            <tr key={d.id}>
              <td>
                <a href={href(`/plugins/definitions/${d.id}`)}>{d.name}</a>
              </td>
              <td>{d.version}</td>
              <td>{d.runtime}</td>
              <td>{d.actions.map((a) => a.name).join(', ')}</td>
              <td>{d.enabled ? 'enabled' : 'disabled'}</td>
            </tr>
          ))}
        </Table>
      </Panel>
      <Panel title="Instances">
        <ErrorNote error={instances.error} />
        <Table label="plugin instances" head={['Name', 'Plugin', 'State', 'Limits', 'Updated']}>
          {instances.data?.plugin_instances.map((i) => (
            <tr key={i.id}>
              <td>
                <a href={href(`/plugins/instances/${i.id}`)}>{i.display_name}</a>
              </td>
              <td>{names.get(i.plugin_definition_id) ?? i.plugin_definition_id}</td>
              <td>{i.enabled ? 'enabled' : 'disabled'}</td>
              <td>{limitsText(i.rate_limit, i.max_concurrency)}</td>
              <td>{when(i.updated_at)}</td>
            </tr>
          ))}
        </Table>
        {can('POST /api/v1/plugin_instance') && (
          <p class="muted">New instances are made from a definition's page.</p>
        )}
      </Panel>
    </>
  );
}

/** An instance's limits in words (docs/plugins.md "Limits"). */
export function limitsText(rate: RateLimit | null, max: number | null): string {
  const parts = [];
  if (rate) parts.push(`${rate.limit} calls per ${rate.period_ms / 1000} s`);
  if (max !== null) parts.push(`at most ${max} at once`);
  return parts.length === 0 ? 'none' : parts.join(', ');
}

/** A definition: its config schema and actions, and a form generated from the schema for a new instance. */
export function PluginDefinition({ id }: { id: string }) {
  const can = useCan();
  const [error, run] = useAction();
  const [name, setName] = useState('');
  const def = useAsync(
    () => ok(api.GET('/api/v1/plugin_definition/{id}', { params: { path: { id } } })),
    [id],
  );
  if (def.error) return <ErrorNote error={def.error} />;
  const d = def.data;
  if (!d) return <p class="muted">Loading…</p>;
  const create = (config: Record<string, unknown>) =>
    run(async () => {
      const made = await ok(
        api.POST('/api/v1/plugin_instance', {
          body: {
            plugin_definition_id: d.id,
            display_name: name.trim() || d.name,
            enabled: true,
            config_json: config,
          },
        }),
      );
      navigate(`/plugins/instances/${made.id}`);
    });
  return (
    <>
      <p>
        <a href={href('/plugins')}>Plugins</a> /
      </p>
      <h1>
        {d.name} <span class="muted">{d.version}</span>
      </h1>
      {d.actions.map((a) => (
        <Panel key={a.name} title={`Action ${a.name}`}>
          <p>
            {a.title} · {a.description} · timeout {a.timeout_seconds} s ·{' '}
            {a.idempotent ? 'idempotent' : 'not idempotent'}
          </p>
          <div class="split">
            <div>
              <h2>Input schema</h2>
              <Json value={a.input_schema} label={`${a.name} input schema`} />
            </div>
            <div>
              <h2>Output schema</h2>
              <Json value={a.output_schema} label={`${a.name} output schema`} />
            </div>
          </div>
        </Panel>
      ))}
      {can('POST /api/v1/plugin_instance') && (
        <Panel title="New instance">
          <label>
            Display name
            <input
              name="display_name"
              maxLength={200}
              value={name}
              onInput={(ev) => setName((ev.currentTarget as HTMLInputElement).value)}
            />
          </label>
          <SchemaForm
            schema={d.instance_config_schema}
            submitLabel="Create instance"
            onSubmit={create}
            label="instance config"
          />
          <ErrorNote error={error} />
        </Panel>
      )}
      <Panel title="Config schema">
        <Json value={d.instance_config_schema} label="instance config schema" />
      </Panel>
    </>
  );
}

/** An instance: its config (form from the definition's schema) and an invoke form per action. */
export function PluginInstance({ id }: { id: string }) {
  const can = useCan();
  const [error, run] = useAction();
  const [saved, setSaved] = useState(false);
  const [limitsSaved, setLimitsSaved] = useState(false);
  const [action, setAction] = useState<string | null>(null);
  const [output, setOutput] = useState<{ value: unknown } | null>(null);
  const view = useAsync(async () => {
    const instance = await ok(api.GET('/api/v1/plugin_instance/{id}', { params: { path: { id } } }));
    const definition = await ok(
      api.GET('/api/v1/plugin_definition/{id}', { params: { path: { id: instance.plugin_definition_id } } }),
    );
    return { instance, definition };
  }, [id]);
  if (view.error) return <ErrorNote error={view.error} />;
  if (!view.data) return <p class="muted">Loading…</p>;
  const { instance, definition } = view.data;
  const chosen = definition.actions.find((a) => a.name === (action ?? definition.actions[0]?.name));
  const save = (config: Record<string, unknown>) => {
    setSaved(false);
    return run(async () => {
      await ok(
        api.PATCH('/api/v1/plugin_instance/{id}', {
          params: { path: { id } },
          body: { config_json: config },
        }),
      );
      setSaved(true);
      view.reload();
    });
  };
  const saveLimits = (ev: Event) => {
    ev.preventDefault();
    const form = new FormData(ev.currentTarget as HTMLFormElement);
    setLimitsSaved(false);
    return run(async () => {
      const max = String(form.get('max_concurrency') ?? '').trim();
      await ok(
        api.PATCH('/api/v1/plugin_instance/{id}', {
          params: { path: { id } },
          body: { rate_limit: rateLimitOf(form, 'rate'), max_concurrency: max === '' ? null : Number(max) },
        }),
      );
      setLimitsSaved(true);
      view.reload();
    });
  };
  const invoke = (payload: Record<string, unknown>) => {
    setOutput(null);
    return run(async () => {
      const answer = await ok(
        api.POST('/api/v1/plugin_instance/{id}/invoke', {
          params: { path: { id } },
          body: { action: chosen!.name, payload },
        }),
      );
      setOutput({ value: answer.output });
    });
  };
  return (
    <>
      <p>
        <a href={href('/plugins')}>Plugins</a> /{' '}
        <a href={href(`/plugins/definitions/${definition.id}`)}>{definition.name}</a> /
      </p>
      <h1>{instance.display_name}</h1>
      <ErrorNote error={error} />
      <div class="split">
        <Panel title="Config">
          <SchemaForm
            schema={definition.instance_config_schema}
            initial={instance.config_json}
            submitLabel="Save config"
            onSubmit={save}
            label="instance config"
            disabled={!can('PATCH /api/v1/plugin_instance/{id}')}
          />
          {saved && <p class="muted">Saved</p>}
        </Panel>
        <Panel title="Limits">
          <p class="muted">
            Shared by every ACTION and invoke of this instance, in every process: over them an ACTION waits
            its turn and an invoke is refused (429).
          </p>
          <form onSubmit={saveLimits} aria-label="limits">
            <fieldset
              disabled={!can('PATCH /api/v1/plugin_instance/{id}')}
              style={{ border: 0, padding: 0, margin: 0 }}
            >
              <RateLimitField name="rate" value={instance.rate_limit} />
              <label>
                Max concurrency (empty: no limit)
                <input
                  name="max_concurrency"
                  type="number"
                  min={1}
                  step={1}
                  defaultValue={instance.max_concurrency === null ? '' : String(instance.max_concurrency)}
                />
              </label>
              <button type="submit">Save limits</button>
              {limitsSaved && <span class="muted"> Saved</span>}
            </fieldset>
          </form>
        </Panel>
        {can('POST /api/v1/plugin_instance/{id}/invoke') && chosen && (
          <Panel title="Invoke">
            <label>
              Action
              <select
                name="action"
                value={chosen.name}
                onChange={(ev) => setAction((ev.currentTarget as HTMLSelectElement).value)}
              >
                {definition.actions.map((a) => (
                  <option key={a.name} value={a.name}>
                    {a.name}
                  </option>
                ))}
              </select>
            </label>
            <SchemaForm
              key={chosen.name}
              schema={chosen.input_schema}
              submitLabel="Invoke"
              onSubmit={invoke}
              label="invoke payload"
            />
            {output && (
              <>
                <h2>Output</h2>
                <Json value={output.value} label="invoke output" />
              </>
            )}
          </Panel>
        )}
      </div>
    </>
  );
}
