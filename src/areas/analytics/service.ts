import { SignJWT } from 'jose';
import type { AnalyticsConfig } from '../../config/config.js';
import { AppError } from '../../http/errors.js';
import { type Clock, iso } from '../../lib/clock.js';

export interface EmbedOptions {
  bordered: boolean;
  titled: boolean;
  theme?: 'night' | 'transparent';
}

export interface EmbedUrl {
  url: string;
  dashboard_id: number | string;
  expires_at: string;
  expires_in: number;
}

/**
 * Signed ("static") embedding of the configured BI dashboard, the Metabase way: an HS256 JWT over
 * `{resource: {dashboard}, params: {}, exp}` keyed with the BI tool's embedding secret, placed in
 * `<site>/embed/dashboard/<token>`. The BI tool verifies the signature and the expiry; nothing is stored.
 */
export interface AnalyticsService {
  /** A signed, short-lived URL embedding a BI dashboard (docs/platform.md#analytics). */
  dashboardEmbed(options: EmbedOptions): Promise<EmbedUrl>;
}

export function createAnalyticsService(deps: {
  config: AnalyticsConfig | undefined;
  clock: Clock;
}): AnalyticsService {
  const key = deps.config ? new TextEncoder().encode(deps.config.embedSecret) : undefined;

  async function dashboardEmbed(options: EmbedOptions): Promise<EmbedUrl> {
    const cfg = deps.config;
    if (!cfg || !key) {
      throw new AppError(
        'ANALYTICS.NOT_CONFIGURED',
        'Analytics embedding is not configured: set SVC_ANALYTICS_SITE_URL, SVC_ANALYTICS_EMBED_SECRET and SVC_ANALYTICS_DASHBOARD_ID',
      );
    }
    const nowSeconds = Math.floor(deps.clock.now().getTime() / 1000);
    const exp = nowSeconds + cfg.embedTtlSeconds;
    // Exactly the claims Metabase reads; `params` is empty: no locked filters are passed.
    const token = await new SignJWT({ resource: { dashboard: cfg.dashboardId }, params: {}, exp })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .sign(key);
    const hash = new URLSearchParams({ bordered: String(options.bordered), titled: String(options.titled) });
    if (options.theme) hash.set('theme', options.theme);
    return {
      url: `${cfg.siteUrl}/embed/dashboard/${token}#${hash.toString()}`,
      dashboard_id: cfg.dashboardId,
      expires_at: iso(new Date(exp * 1000)),
      expires_in: cfg.embedTtlSeconds,
    };
  }

  return { dashboardEmbed };
}
