import { type Static, Type } from '@sinclair/typebox';
import { ListQuery, ListResponse, QueryBoolean, Search } from '../../http/list-schemas.js';
import {
  AuditFields,
  CallRateLimit,
  Id,
  JsonObject,
  Nullable,
  patchBody,
  Timestamp,
} from '../../http/schemas.js';

const Runtime = Type.Union([Type.Literal('package'), Type.Literal('service')]);

export const PluginActionSchema = Type.Object(
  {
    name: Type.String(),
    title: Type.String(),
    description: Type.String(),
    input_schema: JsonObject,
    output_schema: JsonObject,
    idempotent: Type.Boolean({ description: 'Safe to retry' }),
    timeout_seconds: Type.Integer(),
  },
  { additionalProperties: false },
);

export const PluginDefinitionSchema = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    version: Type.String(),
    runtime: Runtime,
    entrypoint: Type.String(),
    plugin_key: Type.String({
      description:
        'Where discovery found it: `builtin:<name>`, `package:<package name>` or `service:<base URL>`',
    }),
    instance_config_schema: JsonObject,
    actions: Type.Array(PluginActionSchema),
    dist_name: Nullable(Type.String()),
    dist_commit: Nullable(Type.String()),
    enabled: Type.Boolean(),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'PluginDefinition', additionalProperties: false },
);

export const DefinitionListQuery = ListQuery(
  ['name', 'version', 'runtime', 'plugin_key', 'enabled', 'created_at', 'updated_at'] as const,
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'exact name' })),
    search: Type.Optional(Search('name')),
    plugin_key: Type.Optional(
      Type.String({ minLength: 1, maxLength: 2000, description: 'exact plugin_key' }),
    ),
    runtime: Type.Optional(Runtime),
    enabled: Type.Optional(QueryBoolean),
  },
  { sortBy: 'name', sortDir: 'asc' },
);
export const DefinitionListResponse = ListResponse('plugin_definitions', PluginDefinitionSchema);

const DisplayName = Type.String({ minLength: 1, maxLength: 200 });
const ConfigJson = Nullable(
  Type.Object(
    {},
    {
      additionalProperties: true,
      description:
        "Must match the definition's instance_config_schema; a `$secret:<key>`/`$var:<key>` string is accepted wherever a string is expected",
    },
  ),
);

/** docs/plugins.md "Limits": shared by every ACTION and invoke of the instance, in every process. */
const MaxConcurrency = Nullable(
  Type.Integer({
    minimum: 1,
    maximum: 10_000,
    description: 'At most this many calls of the instance in flight at once; null: no limit.',
  }),
);

export const PluginInstanceSchema = Type.Object(
  {
    id: Type.String(),
    plugin_definition_id: Type.String(),
    display_name: Type.String(),
    config_json: Nullable(JsonObject),
    config_hash: Type.String({ description: 'Hex SHA-256 of config_json serialised with sorted keys' }),
    enabled: Type.Boolean(),
    rate_limit: CallRateLimit,
    max_concurrency: MaxConcurrency,
    ...AuditFields,
  },
  { $id: 'PluginInstance', additionalProperties: false },
);

export const CreateInstance = Type.Object(
  {
    plugin_definition_id: Id,
    display_name: DisplayName,
    enabled: Type.Boolean(),
    config_json: Type.Optional(ConfigJson),
    rate_limit: Type.Optional(CallRateLimit),
    max_concurrency: Type.Optional(MaxConcurrency),
  },
  {
    examples: [
      {
        plugin_definition_id: '019a6f3e-9a44-7c10-8e21-5b0d3f6c2a17',
        display_name: 'Orders API',
        enabled: true,
        config_json: {},
      },
    ],
    additionalProperties: false,
  },
);
export type CreateInstance = Static<typeof CreateInstance>;

export const UpdateInstance = patchBody(CreateInstance, [{ enabled: false }], ['plugin_definition_id']);
export type UpdateInstance = Static<typeof UpdateInstance>;

export const InstanceListQuery = ListQuery(
  ['display_name', 'enabled', 'plugin_definition_id', 'created_at', 'updated_at'] as const,
  {
    plugin_definition_id: Type.Optional(Id),
    display_name: Type.Optional(
      Type.String({ minLength: 1, maxLength: 200, description: 'exact display name' }),
    ),
    enabled: Type.Optional(QueryBoolean),
    search: Type.Optional(Search('display_name')),
  },
);
export const InstanceListResponse = ListResponse('plugin_instances', PluginInstanceSchema);

export const InvokeBody = Type.Object(
  {
    action: Type.String({ minLength: 1, maxLength: 100 }),
    payload: Type.Optional(
      Type.Unknown({ description: "Validated against the action's input_schema; default {}" }),
    ),
  },
  {
    examples: [
      {
        action: 'request',
        payload: {
          method: 'GET',
          url: 'https://api.example.com/orders/42',
          headers: { Authorization: 'Bearer $secret:ORDERS_API_TOKEN' },
        },
      },
    ],
    additionalProperties: false,
  },
);
export type InvokeBody = Static<typeof InvokeBody>;

export const InvokeHeaders = Type.Object(
  {
    'idempotency-key': Type.Optional(
      Type.String({ minLength: 1, maxLength: 255, description: 'Passed to the plugin as idempotencyKey' }),
    ),
  },
  { additionalProperties: true },
);

export const InvokeResponse = Type.Object(
  { output: Type.Unknown({ description: "The action's output, valid against its output_schema" }) },
  { additionalProperties: false },
);
