import { Type } from '@sinclair/typebox';
import { anyScope } from '../../http/access.js';
import type { App } from '../../http/app.js';
import { errorAnswers, Timestamp } from '../../http/schemas.js';
import type { AnalyticsService } from './service.js';

const EmbedQuery = Type.Object(
  {
    bordered: Type.Boolean({ default: true }),
    titled: Type.Boolean({ default: true }),
    theme: Type.Optional(Type.Union([Type.Literal('night'), Type.Literal('transparent')])),
  },
  { additionalProperties: false },
);

const EmbedResponse = Type.Object({
  url: Type.String({ description: 'Signed embed URL for an iframe; valid until expires_at.' }),
  dashboard_id: Type.Union([Type.Integer(), Type.String()]),
  expires_at: Timestamp,
  expires_in: Type.Integer({ description: 'Seconds until the URL stops working.' }),
});

/** Analytics (docs/platform.md#analytics). */
export function registerAnalyticsRoutes(api: App, deps: { analytics: AnalyticsService }): void {
  api.get(
    // `embedded_uuid` is a literal segment (docs/platform.md "Analytics"): "the embedded dashboard configured for this service".
    '/analytics/dashboard/bi/embedded_uuid/embed',
    {
      schema: {
        operationId: 'getDashboardEmbedUrl',
        tags: ['analytics'],
        summary: 'Signed, expiring embed URL of the configured BI dashboard',
        description:
          'Metabase-style signed embedding. 503 ANALYTICS.NOT_CONFIGURED unless SVC_ANALYTICS_SITE_URL, SVC_ANALYTICS_EMBED_SECRET and SVC_ANALYTICS_DASHBOARD_ID are set.',
        querystring: EmbedQuery,
        response: { 200: EmbedResponse, ...errorAnswers(503) },
      },
      config: anyScope('analytics:read'),
    },
    async (req) => deps.analytics.dashboardEmbed(req.query),
  );
}
