import type { AuthSettings } from '../../config/config.js';
import { auditInsert, auditUpdate, softDeleted } from '../../db/audit.js';
import type { Store } from '../../db/store.js';
import type { Principal } from '../../http/access.js';
import { AppError, validationError } from '../../http/errors.js';
import type { Page } from '../../http/list.js';
import { sha256Hex } from '../../lib/hash.js';
import { newId } from '../../lib/ids.js';
import type { IdentityService } from '../identity/service.js';
import * as devices from './device-store.js';
import type { Limiter } from './limiter.js';
import { newToken, PATTERN, PREFIX } from './secrets.js';
import type { RequestMeta, SignIn, TokenResponse } from './sign-in.js';

const deviceNotFound = () => new AppError('DEVICE.NOT_FOUND', 'Device not found');
const tokenInvalid = () =>
  new AppError('AUTH.DEVICE_TOKEN_INVALID', 'The registration token is invalid, expired or already used');

/**
 * Devices: registered by a manager for a user (a one-time registration token), then signed in once
 * with it; consent by the device's user; deleting a device ends its sign-ins (docs/auth.md).
 */
export function createDevices(deps: {
  store: Store;
  identity: Pick<IdentityService, 'getUser'>;
  settings: AuthSettings;
  signIn: SignIn;
  limiter: Limiter;
}) {
  const { store, signIn, limiter } = deps;

  async function registerDevice(
    actor: string,
    input: {
      user_id: string;
      name: string;
      access_token_ttl_seconds?: number | null;
      refresh_token_ttl_seconds?: number | null;
    },
  ): Promise<{ device_id: string; registration_token: string; expires_at: string }> {
    await deps.identity.getUser(input.user_id);
    const token = newToken(PREFIX.device);
    const id = newId();
    const expiresAt = signIn.later(deps.settings.deviceRegistrationTtlSeconds);
    await store.transaction((tx) =>
      devices.insertDevice(tx, {
        id,
        user_id: input.user_id,
        name: input.name,
        registration_token_hash: sha256Hex(token),
        registration_expires_at: expiresAt,
        registered_at: null,
        registered_by: actor,
        consent_given: 0,
        consent_at: null,
        last_login_at: null,
        access_token_ttl_seconds: input.access_token_ttl_seconds ?? null,
        refresh_token_ttl_seconds: input.refresh_token_ttl_seconds ?? null,
        ...auditInsert(signIn.now(), actor),
      }),
    );
    return { device_id: id, registration_token: token, expires_at: expiresAt };
  }

  async function deviceLogin(
    registrationToken: string,
    meta: RequestMeta,
  ): Promise<TokenResponse & { device_id: string }> {
    const find = (hash: string) => devices.deviceByRegistrationToken(store.db, hash);
    const row = await limiter.presented(registrationToken, PATTERN.device, meta.ip, find, tokenInvalid);
    if (
      row.registered_at !== null ||
      row.deleted_at !== null ||
      row.registration_expires_at <= signIn.now()
    ) {
      throw tokenInvalid();
    }
    if (!(await signIn.accountOf(store.db, row.user_id))) throw tokenInvalid();
    const issued = await signIn.startSignIn(
      { userId: row.user_id, authPath: 'device', deviceId: row.id, meta },
      async (tx) => {
        // The one-time exchange: a concurrent second login with the same token rolls back here.
        if (!(await devices.registerDevice(tx, row.id, signIn.now()))) throw tokenInvalid();
      },
    );
    return { ...issued, device_id: row.id };
  }

  async function ownDevice(principal: Principal, id: string): Promise<devices.DeviceRecord> {
    const device = await devices.findDevice(store.db, id);
    if (!device || device.user_id !== principal.userId)
      throw new AppError('AUTH.DEVICE_NOT_FOUND', 'Device not found');
    return device;
  }

  async function getDevice(id: string): Promise<devices.DeviceRecord> {
    return (await devices.findDevice(store.db, id)) ?? Promise.reject(deviceNotFound());
  }

  async function recordConsent(
    principal: Principal,
    input: { device_id?: string; consent_given: boolean },
  ): Promise<devices.DeviceRecord> {
    const id = input.device_id ?? principal.deviceId;
    if (!id) {
      throw validationError('device_id is required unless the caller is signed in on a device', {
        field: 'device_id',
        in: 'body',
      });
    }
    await ownDevice(principal, id);
    return store.transaction(async (tx) => {
      const t = signIn.now();
      const changes = {
        consent_given: input.consent_given ? 1 : 0,
        consent_at: t,
        ...auditUpdate(t, principal.userId),
      };
      if (!(await devices.updateDevice(tx, id, changes))) throw deviceNotFound();
      return (await devices.findDevice(tx.db, id))!;
    });
  }

  async function removeDevice(actor: string, id: string): Promise<devices.DeviceRecord> {
    return store.transaction(async (tx) => {
      if (!(await devices.updateDevice(tx, id, softDeleted(signIn.now(), actor)))) throw deviceNotFound();
      // Its sign-ins end with it: sessions, refresh tokens and so its access tokens.
      await signIn.endSignIns(tx, 'device_deleted', { deviceId: id });
      return (await devices.findDevice(tx.db, id, true))!;
    });
  }

  async function updateDevice(
    actor: string,
    id: string,
    patch: {
      name?: string;
      access_token_ttl_seconds?: number | null;
      refresh_token_ttl_seconds?: number | null;
    },
  ): Promise<devices.DeviceRecord> {
    await getDevice(id);
    return store.transaction(async (tx) => {
      if (!(await devices.updateDevice(tx, id, { ...patch, ...auditUpdate(signIn.now(), actor) })))
        throw deviceNotFound();
      return (await devices.findDevice(tx.db, id))!;
    });
  }

  return {
    registerDevice,
    deviceLogin,
    recordConsent,
    /** DELETE /auth/device/{id}: the device's own user removes it. */
    removeOwnDevice: async (principal: Principal, id: string) => {
      await ownDevice(principal, id);
      return removeDevice(principal.userId, id);
    },
    listDevices: (page: Page, f: devices.DeviceFilters) => devices.listDevices(store.db, page, f),
    getDevice,
    updateDevice,
    /** DELETE /device/{id} (device:delete). */
    deleteDevice: async (actor: string, id: string) => {
      await getDevice(id);
      return removeDevice(actor, id);
    },
  };
}
