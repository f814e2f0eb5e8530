import { registerAnalyticsRoutes } from '../areas/analytics/routes.js';
import { authRoutes } from '../areas/auth/routes.js';
import { registerEnrollmentRoutes } from '../areas/enrollments/routes.js';
import { registerEventRoutes } from '../areas/events/routes.js';
import { identityRoutes } from '../areas/identity/routes.js';
import { registerPluginRoutes } from '../areas/plugins/routes.js';
import { registerQuestionnaireRoutes } from '../areas/questionnaires/routes.js';
import { registerSubmissionRoutes } from '../areas/submissions/routes.js';
import { subscriptionRoutes } from '../areas/subscriptions/routes.js';
import { registerVaultRoutes } from '../areas/vault/routes.js';
import { registerWebhookRoutes } from '../areas/webhooks/routes.js';
import { workflowRoutes } from '../areas/workflows/routes.js';
import type { App, AppContext } from './types.js';

/** Registers every area's routes under /api/v1. Each area adds one line here. */
export function registerAreaRoutes(api: App, ctx: AppContext): void {
  identityRoutes(api, ctx.services.identity);
  authRoutes(api, ctx.services.auth);
  registerVaultRoutes(api, ctx);
  registerPluginRoutes(api, ctx);
  registerWebhookRoutes(api, ctx);
  registerQuestionnaireRoutes(api, ctx);
  registerEnrollmentRoutes(api, ctx);
  registerSubmissionRoutes(api, ctx);
  registerAnalyticsRoutes(api, ctx);
  registerEventRoutes(api, ctx);
  subscriptionRoutes(api, ctx.services.subscriptions);
  workflowRoutes(api, ctx.services.workflows);
}
