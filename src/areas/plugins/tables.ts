/** Store shapes of the plugins area (migration 0005_plugins). JSON columns are text, booleans 0/1. */
export interface PluginDefinitionTable {
  id: string;
  /** The manifest's name: unique, the key discovery upserts by. */
  name: string;
  version: string;
  /** `package` (in-process, built-ins included) or `service` (external HTTP). */
  runtime: 'package' | 'service';
  /** Where the code lives: `builtin:<name>`, the module file of a package, or a service's base URL. */
  entrypoint: string;
  /** Where discovery found it: `builtin:<name>`, `package:<package or folder name>`, `service:<base URL>`. */
  plugin_key: string;
  /** JSON Schema (text). */
  instance_config_schema: string;
  /** JSON array of actions (text). */
  actions: string;
  dist_name: string | null;
  dist_commit: string | null;
  /** 0/1: 0 once a start-up no longer discovers it. */
  enabled: number;
  created_at: string;
  updated_at: string;
}

export interface PluginInstanceTable {
  id: string;
  plugin_definition_id: string;
  display_name: string;
  /** JSON text or null; keeps vault reference strings as written. */
  config_json: string | null;
  /** Hex SHA-256 of the canonical JSON of config_json (docs/plugins.md). */
  config_hash: string;
  enabled: number;
  /** JSON text `{limit, period_ms}` or null (docs/plugins.md "Limits"). */
  rate_limit: string | null;
  max_concurrency: number | null;
  created_at: string;
  updated_at: string;
  updated_by: string | null;
  deleted_at: string | null;
}

export interface PluginTables {
  plugin_definition: PluginDefinitionTable;
  plugin_instance: PluginInstanceTable;
}
