import { registerAnalyticsRoutes } from '../areas/analytics/routes.js';
import { registerAuthRoutes } from '../areas/auth/routes.js';
import { registerEnrollmentRoutes } from '../areas/enrollments/routes.js';
import { registerEventRoutes } from '../areas/events/routes.js';
import { registerIdentityRoutes } from '../areas/identity/routes.js';
import { registerPluginRoutes } from '../areas/plugins/routes.js';
import { registerQuestionnaireRoutes } from '../areas/questionnaires/routes.js';
import { registerScheduleRoutes } from '../areas/schedules/routes.js';
import { registerSubmissionRoutes } from '../areas/submissions/routes.js';
import { registerSubscriptionRoutes } from '../areas/subscriptions/routes.js';
import { registerVaultRoutes } from '../areas/vault/routes.js';
import { registerWebhookRoutes } from '../areas/webhooks/routes.js';
import { registerWorkflowRoutes } from '../areas/workflows/routes.js';
import type { App } from '../http/app.js';
import type { Services } from './services.js';

/**
 * Registers every area's routes under /api/v1. Each area adds one line here: `registerXRoutes(api,
 * deps)` with exactly the services its routes call.
 */
export function registerAreaRoutes(api: App, services: Services): void {
  registerIdentityRoutes(api, services);
  registerAuthRoutes(api, services);
  registerVaultRoutes(api, services);
  registerPluginRoutes(api, services);
  registerWebhookRoutes(api, services);
  registerQuestionnaireRoutes(api, services);
  registerEnrollmentRoutes(api, services);
  registerSubmissionRoutes(api, services);
  registerAnalyticsRoutes(api, services);
  registerEventRoutes(api, services);
  registerSubscriptionRoutes(api, services);
  registerScheduleRoutes(api, services);
  registerWorkflowRoutes(api, services);
}
