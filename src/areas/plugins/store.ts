import type { Static } from '@sinclair/typebox';
import type { Selectable } from 'kysely';
import { findActive, listActive, updateActive } from '../../db/audit.js';
import { prepared } from '../../db/prepared.js';
import type { Db } from '../../db/store.js';
import { type ListResult, type Page, paginate, whereFilters } from '../../http/list.js';
import { newId } from '../../lib/ids.js';
import type { LoadedPlugin } from './discovery.js';
import type { PluginDefinitionSchema, PluginInstanceSchema } from './schemas.js';
import type { PluginDefinitionTable, PluginInstanceTable } from './tables.js';

/** SQL of the plugins area only; rows are mapped to the API's shapes here. */

export type PluginDefinition = Static<typeof PluginDefinitionSchema>;

export type PluginInstance = Static<typeof PluginInstanceSchema>;

export type DefinitionRow = Selectable<PluginDefinitionTable>;
export type InstanceRow = Selectable<PluginInstanceTable>;

export const toDefinition = (r: DefinitionRow): PluginDefinition => ({
  ...r,
  instance_config_schema: JSON.parse(r.instance_config_schema),
  actions: JSON.parse(r.actions),
  enabled: Boolean(r.enabled),
});

export const toInstance = (r: InstanceRow): PluginInstance => ({
  ...r,
  config_json: r.config_json === null ? null : JSON.parse(r.config_json),
  enabled: Boolean(r.enabled),
  rate_limit: r.rate_limit === null ? null : JSON.parse(r.rate_limit),
});

export interface DefinitionFilters {
  name?: string;
  search?: string;
  plugin_key?: string;
  runtime?: 'package' | 'service';
  enabled?: boolean;
}

export interface InstanceFilters {
  plugin_definition_id?: string;
  display_name?: string;
  enabled?: boolean;
  search?: string;
}

export async function allDefinitions(db: Db): Promise<DefinitionRow[]> {
  return db.selectFrom('plugin_definition').selectAll().execute();
}

/**
 * Inserts a definition; when another process inserted the same name first (two starts racing), the
 * conflict turns into the same update instead of a failure.
 */
export async function insertDefinition(db: Db, row: DefinitionRow): Promise<void> {
  const { id: _id, created_at: _created, ...changes } = row;
  await db
    .insertInto('plugin_definition')
    .values(row)
    .onConflict((oc) => oc.column('name').doUpdateSet(changes))
    .execute();
}

export async function updateDefinition(
  db: Db,
  id: string,
  changes: Partial<Omit<DefinitionRow, 'id' | 'created_at' | 'name'>>,
): Promise<void> {
  await db.updateTable('plugin_definition').set(changes).where('id', '=', id).execute();
}

export async function findDefinition(db: Db, id: string): Promise<DefinitionRow | undefined> {
  return db.selectFrom('plugin_definition').selectAll().where('id', '=', id).executeTakeFirst();
}

/** Plugin definitions are never deleted (they are replaced on load), so every row is listed. */
export function listDefinitions(
  db: Db,
  page: Page,
  f: DefinitionFilters,
): Promise<ListResult<PluginDefinition>> {
  const q = whereFilters(db.selectFrom('plugin_definition'), {
    equals: { name: f.name, plugin_key: f.plugin_key, runtime: f.runtime, enabled: f.enabled },
    search: { value: f.search, in: ['name'] },
  });
  return paginate(q, page, toDefinition);
}

export async function insertInstance(db: Db, row: InstanceRow): Promise<void> {
  await db.insertInto('plugin_instance').values(row).execute();
}

export async function findActiveInstance(db: Db, id: string): Promise<InstanceRow | undefined> {
  return findActive(db, 'plugin_instance', id);
}

const invocationTargetsStatement = prepared((db, _dialect, ids: string[]) =>
  db
    .selectFrom('plugin_instance as i')
    .innerJoin('plugin_definition as d', 'd.id', 'i.plugin_definition_id')
    .select([
      'i.id',
      'i.config_json',
      'i.enabled',
      'i.rate_limit',
      'i.max_concurrency',
      'd.name as definition_name',
      'd.enabled as definition_enabled',
      'd.instance_config_schema',
      'd.actions',
    ])
    .where('i.id', 'in', ids)
    .where('i.deleted_at', 'is', null),
);

/** The active instances with the name and state of their definition, by id: the one read of an invocation. */
export async function findInvocationTargets(db: Db, ids: string[]) {
  const { rows } = await invocationTargetsStatement.execute(db, ids);
  return new Map(rows.map((r) => [r.id, r]));
}

export async function updateInstance(
  db: Db,
  id: string,
  changes: Partial<Omit<InstanceRow, 'id' | 'created_at' | 'plugin_definition_id'>>,
): Promise<boolean> {
  return updateActive(db, 'plugin_instance', id, changes);
}

export function listInstances(db: Db, page: Page, f: InstanceFilters): Promise<ListResult<PluginInstance>> {
  const filters = {
    equals: {
      plugin_definition_id: f.plugin_definition_id,
      display_name: f.display_name,
      enabled: f.enabled,
    },
    search: { value: f.search, in: ['display_name'] },
  };
  return listActive(db, 'plugin_instance', page, filters, toInstance);
}

/**
 * Start-up: upserts the definition of every plugin this process loaded (by name) and marks enabled
 * definitions it did not find disabled. Answers the names it disabled.
 */
export async function syncDefinitions(
  db: Db,
  plugins: readonly LoadedPlugin[],
  now: string,
): Promise<string[]> {
  const existing = new Map((await allDefinitions(db)).map((r) => [r.name, r]));
  const loaded = new Set(plugins.map((p) => p.manifest.name));
  for (const p of plugins) {
    const m = p.manifest;
    const fields = {
      version: m.version,
      runtime: p.runtime,
      entrypoint: p.entrypoint,
      plugin_key: p.plugin_key,
      instance_config_schema: JSON.stringify(m.instance_config_schema),
      actions: JSON.stringify(m.actions),
      dist_name: m.dist_name,
      dist_commit: m.dist_commit,
      enabled: 1,
    };
    const row = existing.get(m.name);
    if (!row) {
      await insertDefinition(db, { id: newId(), name: m.name, ...fields, created_at: now, updated_at: now });
    } else if (Object.entries(fields).some(([k, v]) => row[k as keyof typeof row] !== v)) {
      await updateDefinition(db, row.id, { ...fields, updated_at: now });
    }
  }
  const disabled: string[] = [];
  for (const row of existing.values()) {
    if (loaded.has(row.name) || !row.enabled) continue;
    await updateDefinition(db, row.id, { enabled: 0, updated_at: now });
    disabled.push(row.name);
  }
  return disabled;
}
