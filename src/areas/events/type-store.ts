import { findWhere, softDeleted, updateActive } from '../../db/audit.js';
import type { Db } from '../../db/store.js';
import type { EventTypeDefinitionTable } from './tables.js';

/** SQL of custom event type definitions (the built-in ones live in code, definitions.ts). */

export async function insertDefinition(db: Db, row: EventTypeDefinitionTable): Promise<void> {
  await db.insertInto('event_type_definition').values(row).execute();
}

/** Every active custom definition (a few hundred at most: read whole, cached by the service). */
export async function activeDefinitions(db: Db): Promise<EventTypeDefinitionTable[]> {
  return db.selectFrom('event_type_definition').selectAll().where('deleted_at', 'is', null).execute();
}

export const findActive = (db: Db, eventType: string): Promise<EventTypeDefinitionTable | undefined> =>
  findWhere(db, 'event_type_definition', { event_type: eventType, deleted_at: null });

export type DefinitionPatch = Partial<
  Pick<EventTypeDefinitionTable, 'description' | 'data_schema' | 'examples' | 'schema_version' | 'deprecated'>
> & { updated_at: string; updated_by: string | null };

export async function updateDefinition(db: Db, id: string, patch: DefinitionPatch): Promise<boolean> {
  return updateActive(db, 'event_type_definition', id, patch);
}

export async function softDeleteDefinition(db: Db, id: string, at: string, by: string): Promise<boolean> {
  return updateActive(db, 'event_type_definition', id, softDeleted(at, by));
}
