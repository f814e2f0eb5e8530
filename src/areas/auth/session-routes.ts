import { anyScope } from '../../http/access.js';
import type { App } from '../../http/app.js';
import { envelope, splitListQuery } from '../../http/list.js';
import { IdParams } from '../../http/schemas.js';
import {
  RefreshTokenList,
  RefreshTokenListQuery,
  RefreshTokenRecord,
  UserAuthSettings,
  UserAuthSettingsPatch,
} from './schemas.js';
import type { AuthService } from './service.js';

const tags = ['auth'];

/** Refresh-token records and per-user sign-in settings (auth:manage). */
export function registerSessionRoutes(api: App, { auth }: { auth: AuthService }): void {
  // ---- refresh token records
  api.get(
    '/refresh_token',
    {
      schema: {
        operationId: 'listRefreshTokens',
        summary: 'List your refresh tokens (sessions)',
        tags,
        querystring: RefreshTokenListQuery,
        response: { 200: RefreshTokenList },
      },
      config: anyScope('auth:manage'),
    },
    async (req) => {
      const { page, filters } = splitListQuery(req.query);
      return envelope('refresh_tokens', await auth.listRefreshTokens(page, filters), req.query);
    },
  );
  api.get(
    '/refresh_token/:id',
    {
      schema: {
        operationId: 'getRefreshToken',
        summary: 'Get a refresh token record',
        tags,
        params: IdParams,
        response: { 200: RefreshTokenRecord },
      },
      config: anyScope('auth:manage'),
    },
    async (req) => auth.getRefreshToken(req.params.id),
  );
  api.delete(
    '/refresh_token/:id',
    {
      schema: {
        operationId: 'revokeRefreshToken',
        summary: 'Revoke a refresh token',
        tags,
        description: 'Revokes the token and its whole family (the sign-in session), then soft-deletes it.',
        params: IdParams,
        response: { 200: RefreshTokenRecord },
      },
      config: anyScope('auth:manage'),
    },
    async (req) => auth.deleteRefreshToken(req.params.id),
  );

  // ---- per-user settings
  api.get(
    '/auth/user/:id/settings',
    {
      schema: {
        operationId: 'getUserAuthSettings',
        summary: "A user's sign-in settings",
        tags,
        params: IdParams,
        response: { 200: UserAuthSettings },
      },
      config: anyScope('auth:manage'),
    },
    async (req) => auth.getUserSettings(req.params.id),
  );
  api.patch(
    '/auth/user/:id/settings',
    {
      schema: {
        operationId: 'updateUserAuthSettings',
        summary: "Change a user's sign-in settings",
        tags,
        description: 'Token lifetimes of the user, and whether the password must be reset before signing in.',
        params: IdParams,
        body: UserAuthSettingsPatch,
        response: { 200: UserAuthSettings },
      },
      config: anyScope('auth:manage'),
    },
    async (req) => auth.updateUserSettings(req.principal.userId, req.params.id, req.body),
  );
}
