import type { App } from '../../http/app.js';
import { registerDeviceRoutes } from './device-routes.js';
import type { AuthService } from './service.js';
import { registerSessionRoutes } from './session-routes.js';
import { registerSignInRoutes } from './sign-in-routes.js';

/** Sign-in flows (docs/auth.md): sign-in, MFA and passwords; refresh tokens and settings; devices. */
export function registerAuthRoutes(api: App, deps: { auth: AuthService }): void {
  registerSignInRoutes(api, deps);
  registerSessionRoutes(api, deps);
  registerDeviceRoutes(api, deps);
}
