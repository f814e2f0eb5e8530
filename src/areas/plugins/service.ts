import type { Logger } from 'pino';
import { auditInsert, auditUpdate, softDeleted } from '../../db/audit.js';
import { type CallLimits, hasLimits } from '../../db/call-limits.js';
import type { Store } from '../../db/store.js';
import { AppError } from '../../http/errors.js';
import type { ListResult, Page } from '../../http/list.js';
import { type Causation, withTrace } from '../../lib/causation.js';
import { type Clock, iso } from '../../lib/clock.js';
import { coalescing } from '../../lib/coalesce.js';
import { newId } from '../../lib/ids.js';
import type { GuardOptions } from '../../lib/net-guard.js';
import { contextOf, NO_TRACING, type Tracer } from '../../lib/tracing.js';
import { maskSecrets, secretValues } from '../vault/references.js';
import { corePlugin } from './builtins/core.js';
import { emailPlugin } from './builtins/email.js';
import { httpCallAttributes, httpPlugin } from './builtins/http.js';
import { configHash } from './config-hash.js';
import { discoverPlugins, type LoadedPlugin } from './discovery.js';
import { runWithTimeout, toPluginError } from './invocation.js';
import { checkConfig, describeErrors, inputChecker, validate } from './json-schema.js';
import { type CallPermit, createCallLimiter, type LimitAnswer, rateLimited } from './limits.js';
import { type ActionDescription, actionNotFound, describeAction, type PluginAction } from './manifest.js';
import type { PluginMetrics } from './metrics.js';
import type { CreateInstance, UpdateInstance } from './schemas.js';
import type { PluginDefinition, PluginInstance } from './store.js';
import * as db from './store.js';

export interface InvokeRequest {
  instanceId: string;
  action: string;
  /**
   * The action's input; absent means `{}`. Whole-string `$secret:`/`$var:` references in it are
   * resolved first (as in the config), then it is validated against the action's input_schema.
   */
  payload?: unknown;
  idempotencyKey?: string;
  /** Bounds this invocation further than the action's timeout_seconds. */
  timeoutMs?: number;
  /** The caller giving up aborts the invocation. */
  signal?: AbortSignal;
  /** A workflow run's depth + 1 and its id, for requests the action makes back to the API. */
  causation?: Causation;
  /**
   * The call was admitted under the instance's limits (`PreparedAction.admit`). Without it, an
   * instance with limits admits the call itself and refuses it with 429 PLUGIN.RATE_LIMITED.
   */
  permit?: CallPermit;
}

export interface DiscoveryReport {
  /** Names of the definitions loaded in this process (enabled). */
  loaded: string[];
  /** Names marked enabled=false because this start-up did not find them. */
  disabled: string[];
}

export interface PluginService {
  /** Start-up: finds every plugin, loads it into this process and upserts its definition by name. */
  discover(): Promise<DiscoveryReport>;
  listDefinitions(page: Page, filters: db.DefinitionFilters): Promise<ListResult<PluginDefinition>>;
  getDefinition(id: string): Promise<PluginDefinition>;
  createInstance(by: string, input: CreateInstance): Promise<PluginInstance>;
  listInstances(page: Page, filters: db.InstanceFilters): Promise<ListResult<PluginInstance>>;
  getInstance(id: string): Promise<PluginInstance>;
  updateInstance(by: string, id: string, input: UpdateInstance): Promise<PluginInstance>;
  deleteInstance(by: string, id: string): Promise<void>;
  /**
   * Invokes an action of an instance and answers its output; the one path of the invoke endpoint and
   * of workflow ACTION nodes. Throws AppError PLUGIN.* (and VAULT.* when a reference fails).
   */
  invoke(req: InvokeRequest): Promise<unknown>;
  /** The retry-relevant facts of an instance's action (PLUGIN.INSTANCE_NOT_FOUND, PLUGIN.ACTION_NOT_FOUND). */
  describeAction(instanceId: string, action: string): Promise<ActionDescription>;
  /**
   * describeAction, and an invoke of that action bound to the instance as read then (a workflow
   * ACTION describes, persists its attempt, then calls: one read of the instance for both).
   */
  prepareAction(instanceId: string, action: string): Promise<PreparedAction>;
  /** The input_schema check of an invocation, for a simulation (json-schema.ts inputChecker). */
  inputCheck(instanceId: string, action: string): Promise<(input: unknown) => string | undefined>;
  /**
   * Who is told the holders (`PreparedAction.admit`) a freed concurrency slot is for: the workflows
   * area wakes their runs.
   */
  onSlotFreed(listener: (holders: string[]) => void): void;
}

export interface PreparedAction {
  description: ActionDescription;
  /** Whether the instance has a rate_limit or max_concurrency. */
  limited: boolean;
  /**
   * Asks the instance's limits for a call by `holder` (an attempt's idempotency key) that takes
   * `callMs` at most. Refused, the holder keeps its place and asks again at `retryAt`.
   */
  admit(holder: string, callMs: number): Promise<LimitAnswer>;
  invoke(req: Omit<InvokeRequest, 'instanceId' | 'action'>): Promise<unknown>;
}

export interface PluginDeps {
  store: Store;
  clock: Clock;
  log: Logger;
  vault: { resolveReferences<T>(value: T): Promise<T> };
  pluginDir?: string;
  pluginServices: readonly string[];
  /** SVC_ALLOW_PRIVATE_NETWORKS and SVC_DNS_SERVERS, for the built-in http and email plugins. */
  network: GuardOptions;
  metrics: PluginMetrics;
  /** A client span per call (docs/observability.md "Spans"). */
  tracer?: Tracer;
}

/** A call's concurrency slot is held at most this long past the call's deadline (a crash frees it then). */
const LEASE_MARGIN_MS = 30_000;

// Long file: the plugins area's operations share one closure over what this process loaded
// (discover) and the instance reads an invocation makes; splitting it would pass that state around.
export function createPluginService(deps: PluginDeps): PluginService {
  const { store, clock, log } = deps;
  const tracer = deps.tracer ?? NO_TRACING;
  let slotFreed: (holders: string[]) => void = () => {};
  /** What this process can run, by definition name; filled by discover(). */
  let loaded = new Map<string, LoadedPlugin>();

  async function activeInstance(id: string) {
    const row = await db.findActiveInstance(store.db, id);
    if (!row) throw new AppError('PLUGIN.INSTANCE_NOT_FOUND', 'Plugin instance not found');
    return row;
  }

  async function definitionRow(id: string) {
    const row = await db.findDefinition(store.db, id);
    if (!row) throw new AppError('PLUGIN.DEFINITION_NOT_FOUND', 'Plugin definition not found');
    return row;
  }

  /**
   * Parsed definition JSON by its stored text: definitions change only at start-up, and the same
   * objects let json-schema.ts find their compiled validators at once. Never mutated.
   */
  const parsed = new Map<string, unknown>();
  function parseDefinitionJson<T>(text: string): T {
    let value = parsed.get(text);
    if (value === undefined) {
      value = JSON.parse(text);
      if (parsed.size >= 500) parsed.clear();
      parsed.set(text, value);
    }
    return value as T;
  }

  /** The instance, its definition and the action, as an invocation or a description needs them. */
  // Every ACTION attempt reads its instance; attempts that start in one turn of the event loop (a
  // step's runs) share one query, which leaves after all of them asked (src/lib/coalesce.ts).
  const invocationTarget = coalescing((ids: string[]) => db.findInvocationTargets(store.db, ids));

  async function target(instanceId: string, actionName: string) {
    // A graph's id is checked when it is saved; anything else must not fail the shared query.
    const row = typeof instanceId === 'string' ? await invocationTarget(instanceId) : undefined;
    if (!row) throw new AppError('PLUGIN.INSTANCE_NOT_FOUND', 'Plugin instance not found');
    const actions = parseDefinitionJson<PluginAction[]>(row.actions);
    const action = actions.find((a) => a.name === actionName);
    const configSchema = parseDefinitionJson<Record<string, unknown>>(row.instance_config_schema);
    return { row, actionName, action, actions, configSchema };
  }

  type Target = Awaited<ReturnType<typeof target>>;

  const limiter = createCallLimiter({ store, clock, log, slotFreed: (holders) => slotFreed(holders) });
  const limitsOf = (row: Target['row']): CallLimits => ({
    rate_limit:
      row.rate_limit === null ? null : (parseDefinitionJson(row.rate_limit) as CallLimits['rate_limit']),
    max_concurrency: row.max_concurrency,
  });
  const admit = (row: Target['row'], holder: string, leaseMs: number, mode: 'wait' | 'ask') =>
    limiter.admit(row.id, limitsOf(row), holder, leaseMs, mode);

  /** An invocation of the action of a target read by `target` (InvokeRequest's ids are the target's). */
  async function invokeTarget(
    { row, actionName, action, actions, configSchema }: Target,
    req: Omit<InvokeRequest, 'instanceId' | 'action'>,
  ): Promise<unknown> {
    const started = performance.now();
    const name = row.definition_name;
    if (!row.enabled) throw new AppError('PLUGIN.INSTANCE_DISABLED', 'Plugin instance is disabled');
    // What this process loaded decides, not the stored flag: a process started with other settings
    // (a one-shot CLI command without SVC_PLUGIN_DIR, say) must not stop the servers running it.
    const plugin = loaded.get(name);
    if (!plugin) {
      throw new AppError(
        'PLUGIN.DEFINITION_DISABLED',
        row.definition_enabled
          ? `Plugin "${name}" is not loaded in this process`
          : `Plugin "${name}" is disabled; it was not found at the last start`,
      );
    }
    if (!action) throw actionNotFound(name, actionName, actions);
    const label = `${name}.${action.name}`;

    // References resolve the same way for every caller (a workflow ACTION, POST .../invoke): the
    // values are scrubbed from the output and from every error, never returned or logged.
    const raw = req.payload === undefined ? {} : req.payload;
    const input = await deps.vault.resolveReferences(raw);
    const stored = row.config_json === null ? {} : (JSON.parse(row.config_json) as Record<string, unknown>);
    // The definition may have changed since the config was saved (a new plugin version).
    checkConfig(configSchema, stored, "the instance's config_json");
    const config = await deps.vault.resolveReferences(stored);
    const secrets = secretValues(stored, config, secretValues(raw, input));
    const inputErrors = validate(action.input_schema, input);
    if (inputErrors.length > 0) {
      throw toPluginError(
        new AppError(
          'PLUGIN.INVALID_INPUT',
          `payload does not match the input_schema of ${label}: ${describeErrors(inputErrors)}`,
          { errors: inputErrors },
        ),
        label,
        secrets,
      );
    }

    const limitMs = Math.max(
      1,
      Math.min(req.timeoutMs ?? Number.POSITIVE_INFINITY, action.timeout_seconds * 1000),
    );
    // A call that was not admitted by its caller (a manual invoke) asks the limits itself.
    let permit = req.permit;
    if (permit === undefined && hasLimits(limitsOf(row))) {
      const answer = await admit(row, `invoke:${newId()}`, limitMs + LEASE_MARGIN_MS, 'ask');
      if (!answer.go) throw rateLimited(label, answer.limit, answer.retryAt, clock.now());
      permit = answer.permit;
    }
    let outcome = 'ok';
    // The call's client span: a child of the ACTION's node span (or of the request, for a manual
    // invoke); what the action sends out carries it (the `http` action's traceparent header).
    const span = tracer.enabled
      ? tracer.start(`plugin ${label}`, {
          kind: 'client',
          parent: req.causation?.trace,
          attributes: {
            'svc.plugin.name': name,
            'svc.plugin.action': action.name,
            'svc.plugin_instance.id': row.id,
          },
        })
      : undefined;
    let output: unknown;
    try {
      const result = await runWithTimeout(plugin, action.name, label, limitMs, {
        config,
        input,
        idempotencyKey: req.idempotencyKey,
        causation: span ? withTrace(req.causation, contextOf(span)) : req.causation,
        signal: req.signal,
      });
      try {
        output = result === undefined ? null : JSON.parse(JSON.stringify(result));
      } catch {
        throw new AppError('PLUGIN.INVALID_OUTPUT', `${label} answered a value that is not JSON`);
      }
      const outputErrors = validate(action.output_schema, output);
      if (outputErrors.length > 0) {
        throw new AppError(
          'PLUGIN.INVALID_OUTPUT',
          `output of ${label} does not match its output_schema: ${describeErrors(outputErrors)}`,
          {
            errors: outputErrors,
          },
        );
      }
      // docs/vault.md "References": resolved values are never returned, also when a handler echoes them.
      return maskSecrets(output, secrets);
    } catch (err) {
      const appError = toPluginError(err, label, secrets);
      outcome = appError.code;
      span?.fail(`${appError.code}: ${appError.message}`);
      throw appError;
    } finally {
      if (span?.recording) {
        span.set({
          'svc.plugin.outcome': outcome,
          ...(name === 'http'
            ? httpCallAttributes(config, input, output, (text) => maskSecrets(text, secrets))
            : {}),
        });
        span.end();
      }
      // Only the permit this invocation took; a caller's own permit is the caller's to release.
      if (permit !== undefined && permit !== req.permit) await permit.release();
      const ms = performance.now() - started;
      deps.metrics.invoked(name, action.name, outcome, ms / 1000);
      // Never the payload, the config or the output: they may carry resolved vault values.
      log.info(
        {
          plugin_instance_id: row.id,
          plugin: name,
          action: action.name,
          outcome,
          duration_ms: Math.round(ms),
        },
        'plugin action invoked',
      );
    }
  }

  return {
    async discover() {
      const plugins = await discoverPlugins({
        builtins: [corePlugin(), httpPlugin(deps.network), emailPlugin(deps.network)],
        pluginDir: deps.pluginDir,
        serviceUrls: deps.pluginServices,
        log,
      });
      loaded = new Map(plugins.map((p) => [p.manifest.name, p]));
      const disabled = await store.transaction((tx) => db.syncDefinitions(tx.db, plugins, iso(clock.now())));
      const report = { loaded: [...loaded.keys()], disabled };
      log.info({ plugins: report.loaded, disabled_plugins: disabled }, 'plugins discovered');
      return report;
    },

    listDefinitions: (page, filters) => db.listDefinitions(store.db, page, filters),

    async getDefinition(id) {
      return db.toDefinition(await definitionRow(id));
    },

    async createInstance(by, input) {
      const definition = await definitionRow(input.plugin_definition_id);
      if (!definition.enabled) {
        throw new AppError(
          'PLUGIN.DEFINITION_DISABLED',
          `Plugin "${definition.name}" is disabled; it was not found at the last start`,
        );
      }
      const config = input.config_json ?? null;
      checkConfig(JSON.parse(definition.instance_config_schema), config, 'config_json');
      const now = iso(clock.now());
      const row: db.InstanceRow = {
        id: newId(),
        plugin_definition_id: definition.id,
        display_name: input.display_name,
        config_json: config === null ? null : JSON.stringify(config),
        config_hash: configHash(config),
        enabled: input.enabled ? 1 : 0,
        rate_limit: input.rate_limit ? JSON.stringify(input.rate_limit) : null,
        max_concurrency: input.max_concurrency ?? null,
        ...auditInsert(now, by),
      };
      await store.transaction((tx) => db.insertInstance(tx.db, row));
      return db.toInstance(row);
    },

    listInstances: (page, filters) => db.listInstances(store.db, page, filters),

    async getInstance(id) {
      return db.toInstance(await activeInstance(id));
    },

    async updateInstance(by, id, input) {
      const current = await activeInstance(id);
      const changes: Partial<db.InstanceRow> = auditUpdate(iso(clock.now()), by);
      if (input.display_name !== undefined) changes.display_name = input.display_name;
      if (input.enabled !== undefined) changes.enabled = input.enabled ? 1 : 0;
      if (input.rate_limit !== undefined)
        changes.rate_limit = input.rate_limit === null ? null : JSON.stringify(input.rate_limit);
      if (input.max_concurrency !== undefined) changes.max_concurrency = input.max_concurrency;
      if (input.config_json !== undefined) {
        const definition = await definitionRow(current.plugin_definition_id);
        checkConfig(JSON.parse(definition.instance_config_schema), input.config_json, 'config_json');
        changes.config_json = input.config_json === null ? null : JSON.stringify(input.config_json);
        changes.config_hash = configHash(input.config_json);
      }
      const updated = await store.transaction((tx) => db.updateInstance(tx.db, id, changes));
      if (!updated) throw new AppError('PLUGIN.INSTANCE_NOT_FOUND', 'Plugin instance not found');
      return db.toInstance({ ...current, ...changes });
    },

    async deleteInstance(by, id) {
      await activeInstance(id);
      const now = iso(clock.now());
      const deleted = await store.transaction((tx) => db.updateInstance(tx.db, id, softDeleted(now, by)));
      if (!deleted) throw new AppError('PLUGIN.INSTANCE_NOT_FOUND', 'Plugin instance not found');
    },

    async describeAction(instanceId, actionName) {
      return describeAction(await target(instanceId, actionName));
    },

    async prepareAction(instanceId, actionName) {
      const found = await target(instanceId, actionName);
      return {
        description: describeAction(found),
        limited: hasLimits(limitsOf(found.row)),
        admit: (holder, callMs) => admit(found.row, holder, callMs + LEASE_MARGIN_MS, 'wait'),
        invoke: (req) => invokeTarget(found, req),
      };
    },

    onSlotFreed(listener) {
      slotFreed = listener;
    },

    invoke: async (req) => invokeTarget(await target(req.instanceId, req.action), req),

    async inputCheck(instanceId, actionName) {
      const found = await target(instanceId, actionName);
      return inputChecker(`${found.row.definition_name}.${actionName}`, describeAction(found).input_schema);
    },
  };
}
