import type { Selectable } from 'kysely';
import { findActive, listActive, updateActive } from '../../db/audit.js';
import { prepared } from '../../db/prepared.js';
import type { Db } from '../../db/store.js';
import type { ListResult, Page } from '../../http/list.js';
import type { Webhook } from './schemas.js';
import type { WebhookTable } from './tables.js';

/** The `webhook` table: endpoints, their event types and their (sealed) signing keys. */
export type WebhookRow = Selectable<WebhookTable>;
export type PublicWebhookRow = Omit<WebhookRow, 'secret'>;

/** Every column but the secret: lists and reads can never leak it by accident. */
const PUBLIC_COLUMNS = [
  'id',
  'name',
  'url',
  'event_types',
  'description',
  'enabled',
  'secret_hint',
  'retention_deliveries_seconds',
  'rate_limit',
  'created_at',
  'updated_at',
  'updated_by',
  'deleted_at',
] as const;

export async function insertWebhook(db: Db, row: WebhookRow): Promise<void> {
  await db.insertInto('webhook').values(row).execute();
}

export const findActiveWebhook = (db: Db, id: string): Promise<PublicWebhookRow | undefined> =>
  findActive(db, 'webhook', id, { columns: PUBLIC_COLUMNS });

/** Changes an active webhook; false when it is gone (deleted meanwhile by a concurrent request). */
export const updateWebhook = (db: Db, id: string, changes: Partial<Omit<WebhookRow, 'id' | 'created_at'>>) =>
  updateActive(db, 'webhook', id, changes);

export interface WebhookFilters {
  enabled?: boolean;
  name?: string;
  url?: string;
  search?: string;
}

export function listWebhooks(db: Db, page: Page, f: WebhookFilters): Promise<ListResult<PublicWebhookRow>> {
  const filters = {
    equals: { enabled: f.enabled },
    contains: { name: f.name, url: f.url },
    search: { value: f.search, in: ['name', 'url', 'description'] },
  };
  return listActive(db, 'webhook', page, filters, (row) => row as PublicWebhookRow, PUBLIC_COLUMNS);
}

/** The dispatcher's read: enabled, active webhooks and the types they want. */
const subscribedStatement = prepared((db) =>
  db
    .selectFrom('webhook')
    .select(['id', 'event_types'])
    .where('enabled', '=', 1)
    .where('deleted_at', 'is', null),
);

export async function subscribedWebhooks(db: Db): Promise<Pick<WebhookRow, 'id' | 'event_types'>[]> {
  return (await subscribedStatement.execute(db)).rows;
}

/**
 * The sender's read: url and secret of webhooks, soft-deleted ones included (their queue drains).
 * Made when attempts start, not when deliveries are claimed, so a rotated secret or changed url
 * applies at once.
 */
export async function webhooksForSending(db: Db, ids: readonly string[]): Promise<SendingTarget[]> {
  if (ids.length === 0) return [];
  return db
    .selectFrom('webhook')
    .select(['id', 'url', 'secret', 'rate_limit'])
    .where('id', 'in', ids)
    .execute();
}

/**
 * Whether a stored `secret` is sealed (a Fernet token under the vault key) rather than the 64-hex
 * plaintext earlier versions stored. A token is base64url starting with `gAAAAA`; never 64 hex.
 */
export function isSealedSecret(stored: string): boolean {
  return !/^[0-9a-f]{64}$/.test(stored);
}

/** Every webhook's stored secret, deleted ones included (key rotation, sealing at start-up). */
export async function allSecrets(db: Db): Promise<Array<{ id: string; secret: string }>> {
  return db.selectFrom('webhook').select(['id', 'secret']).execute();
}

export async function setSecret(db: Db, id: string, secret: string): Promise<void> {
  await db.updateTable('webhook').set({ secret }).where('id', '=', id).execute();
}

/** What an attempt needs of its webhook, read when attempts start (see webhooksForSending). */
export type SendingTarget = Pick<WebhookRow, 'id' | 'url' | 'secret' | 'rate_limit'>;

export function toWebhook(row: PublicWebhookRow): Webhook {
  return {
    id: row.id,
    name: row.name,
    url: row.url,
    event_types: JSON.parse(row.event_types) as string[],
    description: row.description,
    enabled: row.enabled === 1,
    secret_hint: row.secret_hint,
    retention: { deliveries_seconds: row.retention_deliveries_seconds },
    rate_limit: row.rate_limit === null ? null : JSON.parse(row.rate_limit),
    created_at: row.created_at,
    updated_at: row.updated_at,
    updated_by: row.updated_by,
    deleted_at: row.deleted_at,
  };
}

/** Every webhook's retention setting, deleted ones too: their deliveries stay until retention removes them. */
export function retentionSettings(db: Db) {
  return db.selectFrom('webhook').select(['id', 'retention_deliveries_seconds']).execute();
}
