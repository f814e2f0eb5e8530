import { anyScope, authenticated, publicAccess } from '../../http/access.js';
import type { App } from '../../http/app.js';
import { envelope, splitListQuery } from '../../http/list.js';
import { IdParams } from '../../http/schemas.js';
import { requestMeta } from './request-meta.js';
import {
  Device,
  DeviceConsentBody,
  DeviceList,
  DeviceListQuery,
  DeviceLoginBody,
  DeviceLoginResponse,
  DevicePatchBody,
  DeviceRegisterBody,
  DeviceRegistration,
} from './schemas.js';
import type { AuthService } from './service.js';

const tags = ['auth'];
const deviceTags = ['devices'];

/** Devices: registration, device login, consent, and device records (docs/auth.md). */
export function registerDeviceRoutes(api: App, { auth }: { auth: AuthService }): void {
  // ---- devices
  api.post(
    '/auth/device/register',
    {
      schema: {
        operationId: 'registerDevice',
        summary: 'Start registering a device: a registration token',
        tags,
        body: DeviceRegisterBody,
        response: { 200: DeviceRegistration },
      },
      config: anyScope('auth:manage'),
    },
    async (req) => auth.registerDevice(req.principal.userId, req.body),
  );
  api.post(
    '/auth/device/login',
    {
      schema: {
        operationId: 'loginWithDevice',
        summary: 'Sign in as a registered device',
        tags,
        description: 'Exchanges a registration token (once) for tokens bound to the device.',
        body: DeviceLoginBody,
        response: { 200: DeviceLoginResponse },
      },
      config: publicAccess(),
    },
    async (req) => auth.deviceLogin(req.body.registration_token, requestMeta(req)),
  );
  api.post(
    '/auth/device/consent',
    {
      schema: {
        operationId: 'consentToDevice',
        summary: 'Approve or refuse a device registration',
        tags,
        body: DeviceConsentBody,
        response: { 200: Device },
      },
      config: authenticated(),
    },
    async (req) => auth.recordConsent(req.principal, req.body),
  );
  api.delete(
    '/auth/device/:id',
    {
      schema: {
        operationId: 'revokeDevice',
        summary: 'Revoke a device',
        tags,
        description: "The device's own user removes it; its sessions end.",
        params: IdParams,
        response: { 200: Device },
      },
      config: authenticated(),
    },
    async (req) => auth.removeOwnDevice(req.principal, req.params.id),
  );
  api.get(
    '/device',
    {
      schema: {
        operationId: 'listDevices',
        summary: 'List devices',
        tags: deviceTags,
        querystring: DeviceListQuery,
        response: { 200: DeviceList },
      },
      config: anyScope('device:read'),
    },
    async (req) => {
      const { page, filters } = splitListQuery(req.query);
      return envelope('devices', await auth.listDevices(page, filters), req.query);
    },
  );
  api.get(
    '/device/:id',
    {
      schema: {
        operationId: 'getDevice',
        summary: 'Get a device',
        tags: deviceTags,
        params: IdParams,
        response: { 200: Device },
      },
      config: anyScope('device:read'),
    },
    async (req) => auth.getDevice(req.params.id),
  );
  api.patch(
    '/device/:id',
    {
      schema: {
        operationId: 'updateDevice',
        summary: 'Update a device',
        tags: deviceTags,
        params: IdParams,
        body: DevicePatchBody,
        response: { 200: Device },
      },
      config: anyScope('device:write'),
    },
    async (req) => auth.updateDevice(req.principal.userId, req.params.id, req.body),
  );
  api.delete(
    '/device/:id',
    {
      schema: {
        operationId: 'deleteDevice',
        summary: 'Delete a device (soft)',
        tags: deviceTags,
        params: IdParams,
        response: { 200: Device },
      },
      config: anyScope('device:delete'),
    },
    async (req) => auth.deleteDevice(req.principal.userId, req.params.id),
  );
}
