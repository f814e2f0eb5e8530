import type { Static } from '@sinclair/typebox';
import type { Selectable } from 'kysely';
import { findActive, findWhere, listActive, updateActive } from '../../db/audit.js';
import { type Db, type Tx, updatedAny } from '../../db/store.js';
import type { ListResult, Page } from '../../http/list.js';
import type { Device as DeviceSchema } from './schemas.js';
import type { AuthDeviceTable } from './tables.js';

/** SQL of devices: a registration (a one-time token) and, once exchanged, a device that signs in. */

export type DeviceRecord = Static<typeof DeviceSchema>;

const DEVICE_COLUMNS = [
  'id',
  'user_id',
  'name',
  'registration_expires_at',
  'registered_at',
  'registered_by',
  'consent_given',
  'consent_at',
  'last_login_at',
  'access_token_ttl_seconds',
  'refresh_token_ttl_seconds',
  'created_at',
  'updated_at',
  'updated_by',
  'deleted_at',
] as const;

type DeviceRow = Pick<Selectable<AuthDeviceTable>, (typeof DEVICE_COLUMNS)[number]>;
const toDevice = (r: DeviceRow): DeviceRecord => ({
  id: r.id,
  user_id: r.user_id,
  name: r.name,
  status: r.registered_at ? 'REGISTERED' : 'PENDING',
  registration_expires_at: r.registration_expires_at,
  registered_at: r.registered_at,
  registered_by: r.registered_by,
  consent_given: Boolean(r.consent_given),
  consent_at: r.consent_at,
  last_login_at: r.last_login_at,
  access_token_ttl_seconds: r.access_token_ttl_seconds === null ? null : Number(r.access_token_ttl_seconds),
  refresh_token_ttl_seconds:
    r.refresh_token_ttl_seconds === null ? null : Number(r.refresh_token_ttl_seconds),
  created_at: r.created_at,
  updated_at: r.updated_at,
  updated_by: r.updated_by,
  deleted_at: r.deleted_at,
});

export interface DeviceFilters {
  user_id?: string;
  search?: string;
}

export async function insertDevice(tx: Tx, row: AuthDeviceTable) {
  await tx.db.insertInto('auth_device').values(row).execute();
}

export async function findDevice(d: Db, id: string, orDeleted = false): Promise<DeviceRecord | undefined> {
  const row = await findActive(d, 'auth_device', id, { columns: DEVICE_COLUMNS, orDeleted });
  return row && toDevice(row);
}

const REGISTRATION_COLUMNS = [
  'id',
  'user_id',
  'registration_expires_at',
  'registered_at',
  'deleted_at',
] as const;

export const deviceByRegistrationToken = (d: Db, tokenHash: string) =>
  findWhere(d, 'auth_device', { registration_token_hash: tokenHash }, REGISTRATION_COLUMNS);

/** Spends a registration token: false if it was used, expired or the device deleted meanwhile. */
export async function registerDevice(tx: Tx, id: string, now: string): Promise<boolean> {
  const r = await tx.db
    .updateTable('auth_device')
    .set({ registered_at: now, last_login_at: now, updated_at: now })
    .where('id', '=', id)
    .where('registered_at', 'is', null)
    .where('deleted_at', 'is', null)
    .where('registration_expires_at', '>', now)
    .executeTakeFirst();
  return updatedAny(r);
}

/** Changes an active device; false when it is gone (deleted meanwhile by a concurrent request). */
export const updateDevice = (tx: Tx, id: string, patch: Partial<AuthDeviceTable>) =>
  updateActive(tx.db, 'auth_device', id, patch);

export function listDevices(d: Db, page: Page, f: DeviceFilters): Promise<ListResult<DeviceRecord>> {
  const filters = { equals: { user_id: f.user_id }, search: { value: f.search, in: ['name'] } };
  return listActive(d, 'auth_device', page, filters, toDevice, DEVICE_COLUMNS);
}
