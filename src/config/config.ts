import dns from 'node:dns';
/**
 * Configuration from the environment (README "Configuration"), decoded against the one declaration
 * of every variable (schema.ts) once at start. A bad value throws ConfigError naming the variable;
 * the CLI prints that one line and exits.
 */

import type { TSchema } from '@sinclair/typebox';
import { isEmailAddress, MIN_PASSWORD_LENGTH } from '../lib/email.js';
import { configVariables, type DecodedEnv } from './schema.js';
import { type TracingConfig, traceUrlTemplate, tracingConfig } from './tracing.js';
import { ConfigError, list, url } from './values.js';

export type { TracingConfig } from './tracing.js';

export { ConfigError } from './values.js';

/** The server's retention of finished records, in seconds; 0 keeps them for ever. */
export interface RetentionDefaults {
  completedRunsSeconds: number;
  failedRunsSeconds: number;
  deliveriesSeconds: number;
  outboxSeconds: number;
}

/** Tracing with OpenTelemetry (docs/observability.md): null when no OTLP endpoint is set. */
export interface Config {
  /** Tracing (OTEL_*), null when off. */
  tracing: TracingConfig | null;
  /** SVC_TRACE_URL_TEMPLATE: a trace's link in the user's tracing tool, `{trace_id}` replaced. */
  traceUrlTemplate: string | undefined;
  nodeEnv: string;
  production: boolean;
  port: number;
  host: string;
  databaseUrl: string;
  /** The spec's `vault.encryption_key`. Filled from the data directory outside production when unset. */
  vaultEncryptionKey: string | undefined;
  /** `SVC_VAULT_PREVIOUS_KEYS` (comma-separated): older vault keys that still decrypt, never encrypt. */
  vaultPreviousKeys: string[];
  jwtSecret: string | undefined;
  bootstrapAdminEmail: string | undefined;
  bootstrapAdminPassword: string | undefined;
  outboxDrainIntervalMs: number;
  /** How long an outbox claim is exclusive before another worker may take the task over (renewed while handlers run). */
  outboxLeaseMs: number;
  /** How long a workflow worker's claim on a run lasts (renewed while an ACTION runs); a crashed worker's runs resume after it. */
  workflowLeaseMs: number;
  /** How often the workflows job looks for due runs (timers, retries, expired leases) written by other processes. */
  workflowPollIntervalMs: number;
  /** ACTIONs of one workflow run in flight at once (independent branches overlap up to this). */
  workflowRunParallelism: number;
  /** ACTIONs in flight in one worker process, every run together. */
  workflowWorkerParallelism: number;
  /** Events caused by this many nested workflow runs start no run (the loop guard). */
  workflowMaxDepth: number;
  /** Runs caused by runs a subscription may start per minute before the rate guard pauses it (its own limit, on every run, wins); 0: none. */
  workflowMaxRunsPerMinute: number;
  /** How often the schedules job looks for schedules another process created (its own wake it at once). */
  schedulePollIntervalMs: number;
  /** Seconds each kind of finished record is kept (0: for ever); docs/reliability.md "Retention". */
  retention: RetentionDefaults;
  /** Period of the prune job. */
  pruneIntervalMs: number;
  webhookRetryIntervalMs: number;
  webhookBackoffBaseSeconds: number;
  webhookTimeoutMs: number;
  allowPrivateNetworks: boolean;
  /** SVC_DNS_SERVERS: resolve outbound targets through these servers only (empty: the system's resolver). */
  dnsServers: string[];
  /**
   * SVC_WORKER: where `svc serve` runs the background worker: `auto` (the default: `thread` on a
   * SQLite file when the machine has two cores or more, else `main`; see workerPlacement), `main`
   * (the API's own thread), `thread` (a worker thread: the API and the worker each get a core, for
   * a second isolate's memory), `off` (none; a `svc worker` does it).
   */
  worker: WorkerSetting;
  /**
   * SVC_HEAP_GROWING_PERCENT: how far each V8 heap of `svc serve` and `svc worker` may grow past its
   * live size before its next full collection (src/app/heap.ts); 0 leaves V8 its own choice.
   */
  heapGrowingPercent: number;
  smtpUrl: string | undefined;
  mailFrom: string;
  oidcIssuer: string | undefined;
  oidcAudience: string | undefined;
  oidcJwksUrl: string | undefined;
  logLevel: string;
  /** log2 of scrypt's N for password hashes. */
  passwordHashCost: number;
  /** Lifetime of access tokens (JWT) in seconds. */
  accessTokenTtlSeconds: number;
  /** Largest accepted request body in bytes; larger bodies get 413. */
  bodyLimitBytes: number;
  /** Where generated development secrets and the default SQLite file live. */
  dataDir: string;
  /** SVC_CONSOLE_DIR: the built console served at /console; by default dist/console of this package. */
  consoleDir: string | undefined;
  /** SVC_PLUGIN_DIR: folder of package plugins (docs/plugins.md); none when unset. */
  pluginDir: string | undefined;
  /** SVC_PLUGIN_SERVICES: base URLs of service plugins, comma-separated. */
  pluginServices: string[];
  /** BI dashboard embedding (GET /analytics/.../embed); undefined when not configured (503). */
  analytics: AnalyticsConfig | undefined;
  /** Sign-in flows: lifetimes, brute-force guard, external IdP user creation (docs/auth.md). */
  auth: AuthSettings;
}

type Env = Record<string, string | undefined>;

/** Where `svc serve` runs its background worker. */
export type WorkerMode = 'thread' | 'main' | 'off';
/** SVC_WORKER as set: a place, or `auto` (chosen at start from the store and the machine). */
export type WorkerSetting = WorkerMode | 'auto';

/** One variable's text as its schema declares it (schema.ts): an integer in bounds, a boolean, one of a list. */
function decodeValue(name: string, schema: TSchema, raw: string): unknown {
  if (schema.type === 'integer') {
    const min = schema.minimum as number;
    if (!/^\d+$/.test(raw) || Number(raw) < min || !Number.isSafeInteger(Number(raw))) {
      throw new ConfigError(`${name} must be an integer >= ${min}, got "${raw}"`);
    }
    if (Number(raw) > (schema.maximum as number)) {
      throw new ConfigError(`${name} must be at most ${schema.maximum}, got "${raw}"`);
    }
    return Number(raw);
  }
  if (schema.type === 'boolean') {
    if (raw === 'true' || raw === '1') return true;
    if (raw === 'false' || raw === '0') return false;
    throw new ConfigError(`${name} must be true or false, got "${raw}"`);
  }
  if (Array.isArray(schema.anyOf)) {
    const values = (schema.anyOf as TSchema[]).map((s) => s.const as string);
    if (!values.includes(raw))
      throw new ConfigError(`${name} must be one of ${values.join(', ')}, got "${raw}"`);
  }
  return raw;
}

/** The environment decoded against the schema: defaults filled, types and bounds checked. An empty value is unset. */
export function decodeEnv(env: Env): DecodedEnv {
  const out: Record<string, unknown> = {};
  for (const [name, schema] of configVariables()) {
    const raw = env[name];
    if (raw === undefined || raw === '') out[name] = schema.default;
    else out[name] = decodeValue(name, schema, raw);
  }
  return out as DecodedEnv;
}

function databaseUrl(raw: string): string {
  if (raw.startsWith('sqlite:') && raw.length > 'sqlite:'.length) return raw;
  if (raw.startsWith('postgres://') || raw.startsWith('postgresql://')) return raw;
  throw new ConfigError(
    `SVC_DATABASE_URL must be sqlite:<path>, sqlite::memory: or postgres://..., got "${raw.replace(/:[^:@/]*@/, ':***@')}"`,
  );
}

/** Settings of the sign-in flows (src/areas/auth); every one is documented in docs/auth.md. */
export interface AuthSettings {
  refreshTokenTtlSeconds: number;
  mfaTokenTtlSeconds: number;
  passwordResetTtlSeconds: number;
  /** Link put in reset mails as `<url>?token=...`; without it the mail carries the token alone. */
  passwordResetUrl: string | undefined;
  deviceRegistrationTtlSeconds: number;
  loginMaxAttempts: number;
  loginIpMaxAttempts: number;
  loginAttemptWindowSeconds: number;
  loginLockSeconds: number;
  loginLockMaxSeconds: number;
  /** Role key given to users created on their first external-IdP sign-in; unset: unknown users are refused. */
  oidcAutoCreateRole: string | undefined;
  refreshTokenCleanupIntervalMs: number;
}

function authSettings(v: DecodedEnv): AuthSettings {
  return {
    refreshTokenTtlSeconds: v.SVC_REFRESH_TOKEN_TTL_SECONDS,
    mfaTokenTtlSeconds: v.SVC_MFA_TOKEN_TTL_SECONDS,
    passwordResetTtlSeconds: v.SVC_PASSWORD_RESET_TTL_SECONDS,
    passwordResetUrl: url('SVC_PASSWORD_RESET_URL', v.SVC_PASSWORD_RESET_URL, ['https:', 'http:']),
    deviceRegistrationTtlSeconds: v.SVC_DEVICE_REGISTRATION_TTL_SECONDS,
    loginMaxAttempts: v.SVC_LOGIN_MAX_ATTEMPTS,
    loginIpMaxAttempts: v.SVC_LOGIN_IP_MAX_ATTEMPTS,
    loginAttemptWindowSeconds: v.SVC_LOGIN_ATTEMPT_WINDOW_SECONDS,
    loginLockSeconds: v.SVC_LOGIN_LOCK_SECONDS,
    loginLockMaxSeconds: v.SVC_LOGIN_LOCK_MAX_SECONDS,
    oidcAutoCreateRole: v.SVC_OIDC_AUTO_CREATE_ROLE,
    refreshTokenCleanupIntervalMs: v.SVC_REFRESH_TOKEN_CLEANUP_INTERVAL_MS,
  };
}

export interface AnalyticsConfig {
  /** Base URL of the BI tool (Metabase), without a trailing slash. */
  siteUrl: string;
  /** The BI tool's embedding secret: signs embed tokens (HS256); never logged or returned. */
  embedSecret: string;
  /** The dashboard to embed: a number for Metabase's numeric ids, else the string as given. */
  dashboardId: number | string;
  /** Lifetime of a signed embed URL in seconds. */
  embedTtlSeconds: number;
}

/** SVC_ANALYTICS_SITE_URL, _EMBED_SECRET and _DASHBOARD_ID are set together or not at all. */
function analyticsConfig(v: DecodedEnv): AnalyticsConfig | undefined {
  const given = {
    SVC_ANALYTICS_SITE_URL: v.SVC_ANALYTICS_SITE_URL,
    SVC_ANALYTICS_EMBED_SECRET: v.SVC_ANALYTICS_EMBED_SECRET,
    SVC_ANALYTICS_DASHBOARD_ID: v.SVC_ANALYTICS_DASHBOARD_ID,
  };
  togetherOrNone(given);
  if (v.SVC_ANALYTICS_SITE_URL === undefined) return undefined;
  const siteUrl = url('SVC_ANALYTICS_SITE_URL', v.SVC_ANALYTICS_SITE_URL, ['https:', 'http:'])!.replace(
    /\/+$/,
    '',
  );
  const embedSecret = v.SVC_ANALYTICS_EMBED_SECRET!;
  if (embedSecret.length < 32) {
    throw new ConfigError('SVC_ANALYTICS_EMBED_SECRET must be at least 32 characters');
  }
  const rawId = v.SVC_ANALYTICS_DASHBOARD_ID!;
  if (!/^[A-Za-z0-9_-]{1,100}$/.test(rawId)) {
    throw new ConfigError(
      `SVC_ANALYTICS_DASHBOARD_ID must be a dashboard id (letters, digits, _ or -), got "${rawId}"`,
    );
  }
  const dashboardId = /^[1-9]\d{0,14}$/.test(rawId) ? Number(rawId) : rawId;
  return { siteUrl, embedSecret, dashboardId, embedTtlSeconds: v.SVC_ANALYTICS_EMBED_TTL_SECONDS };
}

/** Variables that only mean something together: all set, or none. */
function togetherOrNone(given: Record<string, string | undefined>): void {
  const names = Object.keys(given);
  const set = names.filter((n) => given[n] !== undefined);
  if (set.length > 0 && set.length < names.length) {
    const missing = names.filter((n) => !set.includes(n)).join(', ');
    throw new ConfigError(`${names.join(', ')} must be set together (missing: ${missing})`);
  }
}

/**
 * The configuration: the environment decoded against the schema (schema.ts), then the rules that
 * span several variables or need more than a type (URLs, addresses, production's secrets).
 */
export function loadConfig(env: Env = process.env): Config {
  const v = decodeEnv(env);
  const production = v.NODE_ENV === 'production';
  // A key of blanks is no key: it must not satisfy the production rule.
  const vaultEncryptionKey = v.SVC_VAULT_ENCRYPTION_KEY?.trim() || undefined;
  const jwtSecret = v.SVC_JWT_SECRET;
  if (production && !vaultEncryptionKey) {
    throw new ConfigError('SVC_VAULT_ENCRYPTION_KEY is required when NODE_ENV=production');
  }
  if (production && !jwtSecret) throw new ConfigError('SVC_JWT_SECRET is required when NODE_ENV=production');
  if (jwtSecret && jwtSecret.length < 32) {
    throw new ConfigError('SVC_JWT_SECRET must be at least 32 characters');
  }
  const email = v.SVC_BOOTSTRAP_ADMIN_EMAIL;
  const password = v.SVC_BOOTSTRAP_ADMIN_PASSWORD;
  if (Boolean(email) !== Boolean(password)) {
    throw new ConfigError('SVC_BOOTSTRAP_ADMIN_EMAIL and SVC_BOOTSTRAP_ADMIN_PASSWORD must be set together');
  }
  // The rules POST /user applies: the bootstrap admin is no exception.
  if (email && !isEmailAddress(email)) {
    throw new ConfigError(`SVC_BOOTSTRAP_ADMIN_EMAIL must be an email address, got "${email}"`);
  }
  if (password && password.length < MIN_PASSWORD_LENGTH) {
    throw new ConfigError(`SVC_BOOTSTRAP_ADMIN_PASSWORD must be at least ${MIN_PASSWORD_LENGTH} characters`);
  }
  togetherOrNone({
    SVC_OIDC_ISSUER: v.SVC_OIDC_ISSUER,
    SVC_OIDC_AUDIENCE: v.SVC_OIDC_AUDIENCE,
    SVC_OIDC_JWKS_URL: v.SVC_OIDC_JWKS_URL,
  });
  return {
    tracing: tracingConfig(v),
    traceUrlTemplate: traceUrlTemplate(v.SVC_TRACE_URL_TEMPLATE),
    nodeEnv: v.NODE_ENV,
    production,
    port: v.PORT,
    host: v.HOST,
    databaseUrl: databaseUrl(v.SVC_DATABASE_URL),
    vaultEncryptionKey,
    vaultPreviousKeys: list(v.SVC_VAULT_PREVIOUS_KEYS),
    jwtSecret,
    bootstrapAdminEmail: email,
    bootstrapAdminPassword: password,
    outboxDrainIntervalMs: v.SVC_OUTBOX_DRAIN_INTERVAL_MS,
    outboxLeaseMs: v.SVC_OUTBOX_LEASE_MS,
    workflowLeaseMs: v.SVC_WORKFLOW_LEASE_MS,
    workflowPollIntervalMs: v.SVC_WORKFLOW_POLL_INTERVAL_MS,
    workflowRunParallelism: v.SVC_WORKFLOW_RUN_PARALLELISM,
    workflowWorkerParallelism: v.SVC_WORKFLOW_WORKER_PARALLELISM,
    workflowMaxDepth: v.SVC_WORKFLOW_MAX_DEPTH,
    workflowMaxRunsPerMinute: v.SVC_WORKFLOW_MAX_RUNS_PER_MINUTE,
    schedulePollIntervalMs: v.SVC_SCHEDULE_POLL_INTERVAL_MS,
    retention: {
      completedRunsSeconds: v.SVC_RETENTION_COMPLETED_RUNS_SECONDS,
      failedRunsSeconds: v.SVC_RETENTION_FAILED_RUNS_SECONDS,
      deliveriesSeconds: v.SVC_RETENTION_DELIVERIES_SECONDS,
      outboxSeconds: v.SVC_RETENTION_OUTBOX_SECONDS,
    },
    pruneIntervalMs: v.SVC_PRUNE_INTERVAL_MS,
    webhookRetryIntervalMs: v.SVC_WEBHOOK_RETRY_INTERVAL_MS,
    webhookBackoffBaseSeconds: v.SVC_WEBHOOK_BACKOFF_BASE_SECONDS,
    webhookTimeoutMs: v.SVC_WEBHOOK_TIMEOUT_MS,
    allowPrivateNetworks: v.SVC_ALLOW_PRIVATE_NETWORKS,
    dnsServers: dnsServers(list(v.SVC_DNS_SERVERS)),
    worker: v.SVC_WORKER,
    heapGrowingPercent: v.SVC_HEAP_GROWING_PERCENT,
    smtpUrl: url('SVC_SMTP_URL', v.SVC_SMTP_URL, ['smtp:', 'smtps:']),
    mailFrom: v.SVC_MAIL_FROM,
    oidcIssuer: v.SVC_OIDC_ISSUER,
    oidcAudience: v.SVC_OIDC_AUDIENCE,
    oidcJwksUrl: url('SVC_OIDC_JWKS_URL', v.SVC_OIDC_JWKS_URL, ['https:', 'http:']),
    logLevel: v.SVC_LOG_LEVEL,
    passwordHashCost: v.SVC_PASSWORD_HASH_COST,
    accessTokenTtlSeconds: v.SVC_ACCESS_TOKEN_TTL_SECONDS,
    bodyLimitBytes: v.SVC_BODY_LIMIT_BYTES,
    dataDir: v.SVC_DATA_DIR,
    consoleDir: v.SVC_CONSOLE_DIR,
    pluginDir: v.SVC_PLUGIN_DIR,
    pluginServices: list(v.SVC_PLUGIN_SERVICES).map(
      (item) => url('SVC_PLUGIN_SERVICES', item, ['https:', 'http:'])!,
    ),
    analytics: analyticsConfig(v),
    auth: authSettings(v),
  };
}

/** SVC_DNS_SERVERS: `ip`, `ip:port` or `[ipv6]:port`, as Node's resolver takes them. */
function dnsServers(servers: string[]): string[] {
  try {
    new dns.Resolver().setServers(servers);
  } catch {
    throw new ConfigError(
      `SVC_DNS_SERVERS must be IP addresses (ip, ip:port or [ipv6]:port), got "${servers.join(',')}"`,
    );
  }
  return servers;
}
