import type { App } from '../../http/app.js';
import { registerApiKeyRoutes } from './api-key-routes.js';
import { registerRoleRoutes } from './role-routes.js';
import { registerScopeRoutes } from './scope-routes.js';
import type { IdentityService } from './service.js';
import { registerUserRoutes } from './user-routes.js';

/** Users and the current user, roles and user roles, scopes and role-scope management, API keys. */
export function registerIdentityRoutes(api: App, deps: { identity: IdentityService }): void {
  registerUserRoutes(api, deps);
  registerRoleRoutes(api, deps);
  registerScopeRoutes(api, deps);
  registerApiKeyRoutes(api, deps);
}
