import type { Selectable } from 'kysely';
import { findActive as findActiveRow, listActive, updateActive } from '../../db/audit.js';
import type { Db } from '../../db/store.js';
import type { ListResult, Page } from '../../http/list.js';
import type { VaultEntryTable, VaultKind } from './tables.js';

/** SQL of the vault area only. Rows keep the stored value; the service decides what leaves. */
export type VaultRow = Selectable<VaultEntryTable>;

export interface VaultListFilters {
  kind?: VaultKind;
  key?: string;
  enabled?: boolean;
  search?: string;
}

export async function insertEntry(db: Db, row: VaultRow): Promise<void> {
  await db.insertInto('vault_entry').values(row).execute();
}

export async function findActive(db: Db, id: string): Promise<VaultRow | undefined> {
  return findActiveRow(db, 'vault_entry', id);
}

/** Is `key` held by an active entry other than `exceptId`? */
export async function keyTaken(db: Db, key: string, exceptId?: string): Promise<boolean> {
  let q = db.selectFrom('vault_entry').select('id').where('key', '=', key).where('deleted_at', 'is', null);
  if (exceptId) q = q.where('id', '!=', exceptId);
  return (await q.executeTakeFirst()) !== undefined;
}

/** Changes an active entry; false when it is gone (deleted meanwhile by a concurrent request). */
export const updateEntry = (db: Db, id: string, changes: Partial<Omit<VaultRow, 'id' | 'created_at'>>) =>
  updateActive(db, 'vault_entry', id, changes);

export function listEntries(db: Db, page: Page, f: VaultListFilters): Promise<ListResult<VaultRow>> {
  const filters = {
    equals: { kind: f.kind, enabled: f.enabled },
    contains: { key: f.key },
    // Search covers key and description only: values (even VAR ones) are not searchable.
    search: { value: f.search, in: ['key', 'description'] },
  };
  return listActive(db, 'vault_entry', page, filters, (row) => row);
}

/** The active entries holding these keys, in one query per 500 keys (the resolver's only read). */
export async function findActiveByKeys(
  db: Db,
  keys: readonly string[],
): Promise<Pick<VaultRow, 'key' | 'kind' | 'value' | 'enabled'>[]> {
  const rows: Pick<VaultRow, 'key' | 'kind' | 'value' | 'enabled'>[] = [];
  for (let i = 0; i < keys.length; i += 500) {
    const chunk = keys.slice(i, i + 500);
    rows.push(
      ...(await db
        .selectFrom('vault_entry')
        .select(['key', 'kind', 'value', 'enabled'])
        .where('key', 'in', chunk)
        .where('deleted_at', 'is', null)
        .execute()),
    );
  }
  return rows;
}

/**
 * Every SECRET row, soft-deleted ones included (their tokens must not be left under a retired key).
 * `lock`: take row locks (PostgreSQL) so a concurrent write cannot be lost under the rotation.
 */
export async function allSecrets(
  db: Db,
  lock: boolean,
): Promise<Pick<VaultRow, 'id' | 'key' | 'value' | 'deleted_at'>[]> {
  let q = db
    .selectFrom('vault_entry')
    .select(['id', 'key', 'value', 'deleted_at'])
    .where('kind', '=', 'SECRET')
    .orderBy('id');
  if (lock) q = q.forUpdate();
  return q.execute();
}

export async function setValue(db: Db, id: string, value: string): Promise<void> {
  await db.updateTable('vault_entry').set({ value }).where('id', '=', id).execute();
}
