import { findWhere } from '../../db/audit.js';
import type { Db, Tx } from '../../db/store.js';
import { type ListResult, type Page, paginate, whereEquals } from '../../http/list.js';
import { API_KEY_COLUMNS, type ApiKey, toApiKey } from './records.js';
import type { ApiKeyTable } from './tables.js';

/** SQL of API keys. The token hash is selected only by the credential check (credential-checks.ts). */

export async function insertApiKey(tx: Tx, row: ApiKeyTable): Promise<void> {
  await tx.db.insertInto('api_key').values(row).execute();
}

export async function findApiKeyOfUser(d: Db, id: string, userId: string): Promise<ApiKey | undefined> {
  const r = await findWhere(d, 'api_key', { id, user_id: userId }, API_KEY_COLUMNS);
  return r ? toApiKey(r) : undefined;
}

export async function listApiKeysOfUser(
  d: Db,
  page: Page,
  userId: string,
  f: { is_revoked?: boolean },
): Promise<ListResult<ApiKey>> {
  let q = d.selectFrom('api_key').where('user_id', '=', userId);
  q = whereEquals(q, { is_revoked: f.is_revoked });
  return paginate(q, page, toApiKey, API_KEY_COLUMNS);
}

export async function revokeApiKey(tx: Tx, id: string, now: string): Promise<void> {
  await tx.db
    .updateTable('api_key')
    .set({ is_revoked: 1, revoked_at: now })
    .where('id', '=', id)
    .where('is_revoked', '=', 0)
    .execute();
}

/** Batched `last_used_at` writes, off the request path. */
export async function touchApiKeys(d: Db, entries: Array<[id: string, at: string]>): Promise<void> {
  if (entries.length === 0) return;
  for (const [id, at] of entries) {
    await d.updateTable('api_key').set({ last_used_at: at }).where('id', '=', id).execute();
  }
}
