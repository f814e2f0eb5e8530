import { type Static, Type } from '@sinclair/typebox';
import { Ajv } from 'ajv';
import { AppError } from '../../http/errors.js';
import type { Causation } from '../../lib/causation.js';
import { assertValidSchema } from './json-schema.js';

/**
 * The plugin manifest: what a package plugin exports and a service plugin serves at GET /manifest
 * (docs/plugins.md). The same shape, with defaults filled in, is stored as the plugin definition.
 */
const SchemaObject = Type.Object({}, { additionalProperties: true });

export const ActionManifest = Type.Object(
  {
    name: Type.String({ pattern: '^[A-Za-z][A-Za-z0-9_.-]{0,99}$' }),
    title: Type.Optional(Type.String({ maxLength: 200 })),
    description: Type.Optional(Type.String({ maxLength: 5000 })),
    input_schema: SchemaObject,
    output_schema: SchemaObject,
    idempotent: Type.Boolean(),
    timeout_seconds: Type.Integer({ minimum: 1, maximum: 3600 }),
  },
  { additionalProperties: true },
);

export const PluginManifest = Type.Object(
  {
    name: Type.String({ pattern: '^[a-z0-9][a-z0-9_.-]{0,99}$' }),
    version: Type.String({ minLength: 1, maxLength: 100 }),
    instance_config_schema: Type.Optional(SchemaObject),
    actions: Type.Array(ActionManifest, { minItems: 1, maxItems: 200 }),
    dist_name: Type.Optional(Type.String({ maxLength: 300 })),
    dist_commit: Type.Optional(Type.String({ maxLength: 100 })),
  },
  { additionalProperties: true },
);

export type PluginManifestInput = Static<typeof PluginManifest>;

export interface PluginAction {
  name: string;
  title: string;
  description: string;
  input_schema: Record<string, unknown>;
  output_schema: Record<string, unknown>;
  idempotent: boolean;
  timeout_seconds: number;
}

/** A manifest with defaults filled in, as stored. */
export interface NormalisedManifest {
  name: string;
  version: string;
  instance_config_schema: Record<string, unknown>;
  actions: PluginAction[];
  dist_name: string | null;
  dist_commit: string | null;
}

/** What a handler receives (docs/plugins.md "Package plugins"). */
export interface ActionContext {
  /** The instance's config_json with vault references resolved (an empty object when it is null). */
  config: Record<string, unknown>;
  /** The payload, already valid against the action's input_schema. */
  input: unknown;
  idempotencyKey?: string;
  /** Aborted when the invocation times out or its caller gives up. */
  signal: AbortSignal;
  /**
   * Set when a workflow run invokes the action: the depth and run a request this action makes to the
   * svc API must carry (the `http` action sends them as `svc-depth` / `svc-causation-id`).
   */
  causation?: Causation;
}

export type ActionHandler = (ctx: ActionContext) => unknown;

const manifestAjv = new Ajv({ strict: false, allErrors: false });
const checkManifest = manifestAjv.compile(PluginManifest);

export class InvalidManifestError extends Error {}

/** Validates a manifest (shape, unique action names, usable JSON Schemas) and fills in defaults. */
export function normaliseManifest(raw: unknown): NormalisedManifest {
  if (!checkManifest(raw)) {
    const e = checkManifest.errors?.[0];
    throw new InvalidManifestError(`manifest ${e?.instancePath || '(root)'} ${e?.message ?? 'is invalid'}`);
  }
  const m = raw as PluginManifestInput;
  const configSchema = m.instance_config_schema ?? { type: 'object' };
  checkSchema(configSchema, 'instance_config_schema');
  const names = new Set<string>();
  const actions = m.actions.map((a): PluginAction => {
    if (names.has(a.name)) throw new InvalidManifestError(`action "${a.name}" is declared twice`);
    names.add(a.name);
    checkSchema(a.input_schema, `actions.${a.name}.input_schema`);
    checkSchema(a.output_schema, `actions.${a.name}.output_schema`);
    return {
      name: a.name,
      title: a.title ?? a.name,
      description: a.description ?? '',
      input_schema: a.input_schema,
      output_schema: a.output_schema,
      idempotent: a.idempotent,
      timeout_seconds: a.timeout_seconds,
    };
  });
  return {
    name: m.name,
    version: m.version,
    instance_config_schema: configSchema,
    actions,
    dist_name: m.dist_name ?? null,
    dist_commit: m.dist_commit ?? null,
  };
}

function checkSchema(schema: unknown, where: string): void {
  try {
    assertValidSchema(schema);
  } catch (err) {
    throw new InvalidManifestError(`${where} is not a valid JSON Schema: ${(err as Error).message}`);
  }
}

/** What a package plugin's module exports (and what a built-in is): the manifest and one handler per action. */
export interface PluginModule {
  manifest: unknown;
  handlers: Record<string, ActionHandler>;
}

/** An action as its callers see it: how it is retried and timed, and what it takes and answers. */
export interface ActionDescription {
  idempotent: boolean;
  timeout_seconds: number;
  input_schema: Readonly<Record<string, unknown>>;
  output_schema: Readonly<Record<string, unknown>>;
}

/** The description of `action`, the action `actionName` of a plugin; a 404 when it has none. */
export function describeAction({
  row,
  actionName,
  action,
  actions,
}: {
  row: { definition_name: string };
  actionName: string;
  action: PluginAction | undefined;
  actions: PluginAction[];
}): ActionDescription {
  if (!action) throw actionNotFound(row.definition_name, actionName, actions);
  // The schemas are the parsed definition's own, shared by every caller (hence read-only).
  return {
    idempotent: action.idempotent,
    timeout_seconds: action.timeout_seconds,
    input_schema: action.input_schema,
    output_schema: action.output_schema,
  };
}

export function actionNotFound(plugin: string, action: string, actions: PluginAction[]): AppError {
  const available = actions.map((a) => a.name);
  return new AppError(
    'PLUGIN.ACTION_NOT_FOUND',
    `Plugin "${plugin}" has no action "${action}"; it has: ${available.join(', ')}`,
    {
      field: 'action',
      allowed_values: available,
    },
  );
}
