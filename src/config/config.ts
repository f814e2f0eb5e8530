import dns from 'node:dns';
/**
 * Configuration from the environment (CONTRACTS §1), parsed and validated once at start.
 * A bad value throws ConfigError naming the variable; the CLI prints that one line and exits.
 */

import { isEmailAddress, MIN_PASSWORD_LENGTH } from '../lib/email.js';

export class ConfigError extends Error {}

export interface Config {
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
   * about 30 MiB more), `off` (none; a `svc worker` does it).
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

function str(env: Env, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v === '' ? undefined : v;
}

function int(env: Env, name: string, fallback: number, min = 0): number {
  const raw = str(env, name);
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min || !Number.isSafeInteger(Number(raw))) {
    throw new ConfigError(`${name} must be an integer >= ${min}, got "${raw}"`);
  }
  return Number(raw);
}

/**
 * Upper bounds. A timer period past 2^31-1 ms makes Node fire the timer at once (a busy loop, not a
 * long wait); a lifetime past the bound would overflow the dates it is added to.
 */
const MAX_TIMER_MS = 2_147_483_647;
const DAY_MS = 86_400_000;
const YEAR_S = 31_536_000;
const TEN_YEARS_S = 10 * YEAR_S;
/** SVC_HEAP_GROWING_PERCENT's default: docs/performance.md "Memory", "The growing factor's value". */
const HEAP_GROWING_PERCENT = 100;

function boundedInt(env: Env, name: string, fallback: number, min: number, max: number): number {
  const v = int(env, name, fallback, min);
  if (v > max) throw new ConfigError(`${name} must be at most ${max}, got "${v}"`);
  return v;
}

function bool(env: Env, name: string, fallback: boolean): boolean {
  const raw = str(env, name);
  if (raw === undefined) return fallback;
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  throw new ConfigError(`${name} must be true or false, got "${raw}"`);
}

/** Where `svc serve` runs its background worker. */
export type WorkerMode = 'thread' | 'main' | 'off';
/** SVC_WORKER as set: a place, or `auto` (chosen at start from the store and the machine). */
export type WorkerSetting = WorkerMode | 'auto';

/** SVC_WORKER: `auto` (the default), `main` (`true` too), `thread`, or `off` (`false`). */
function workerSetting(env: Env): WorkerSetting {
  const raw = str(env, 'SVC_WORKER');
  if (raw === undefined || raw === 'auto') return 'auto';
  if (raw === 'main' || raw === 'true' || raw === '1') return 'main';
  if (raw === 'thread') return 'thread';
  if (raw === 'off' || raw === 'false' || raw === '0') return 'off';
  throw new ConfigError(`SVC_WORKER must be auto, main, thread or off (true or false), got "${raw}"`);
}

function url(env: Env, name: string, protocols: string[]): string | undefined {
  const raw = str(env, name);
  if (raw === undefined) return undefined;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    // The value may carry credentials (smtp://user:password@host): never echo them.
    throw new ConfigError(`${name} must be a URL, got "${raw.replace(/\/\/[^/@]*@/, '//***@')}"`);
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(`${name} must use ${protocols.join(' or ')}, got "${parsed.protocol}"`);
  }
  return raw;
}

function databaseUrl(env: Env): string {
  const raw = str(env, 'SVC_DATABASE_URL') ?? 'sqlite:./data/svc.db';
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

function authSettings(env: Env): AuthSettings {
  return {
    refreshTokenTtlSeconds: boundedInt(env, 'SVC_REFRESH_TOKEN_TTL_SECONDS', 2_592_000, 60, TEN_YEARS_S),
    mfaTokenTtlSeconds: boundedInt(env, 'SVC_MFA_TOKEN_TTL_SECONDS', 300, 30, 3600),
    passwordResetTtlSeconds: boundedInt(env, 'SVC_PASSWORD_RESET_TTL_SECONDS', 3600, 60, 604_800),
    passwordResetUrl: url(env, 'SVC_PASSWORD_RESET_URL', ['https:', 'http:']),
    deviceRegistrationTtlSeconds: boundedInt(env, 'SVC_DEVICE_REGISTRATION_TTL_SECONDS', 86_400, 60, YEAR_S),
    loginMaxAttempts: boundedInt(env, 'SVC_LOGIN_MAX_ATTEMPTS', 5, 1, 1_000_000),
    loginIpMaxAttempts: boundedInt(env, 'SVC_LOGIN_IP_MAX_ATTEMPTS', 50, 1, 1_000_000),
    loginAttemptWindowSeconds: boundedInt(env, 'SVC_LOGIN_ATTEMPT_WINDOW_SECONDS', 900, 1, YEAR_S),
    loginLockSeconds: boundedInt(env, 'SVC_LOGIN_LOCK_SECONDS', 60, 1, YEAR_S),
    loginLockMaxSeconds: boundedInt(env, 'SVC_LOGIN_LOCK_MAX_SECONDS', 3600, 1, YEAR_S),
    oidcAutoCreateRole: str(env, 'SVC_OIDC_AUTO_CREATE_ROLE'),
    refreshTokenCleanupIntervalMs: boundedInt(
      env,
      'SVC_REFRESH_TOKEN_CLEANUP_INTERVAL_MS',
      86_400_000,
      1000,
      MAX_TIMER_MS,
    ),
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
function analyticsConfig(env: Env): AnalyticsConfig | undefined {
  const names = ['SVC_ANALYTICS_SITE_URL', 'SVC_ANALYTICS_EMBED_SECRET', 'SVC_ANALYTICS_DASHBOARD_ID'];
  const set = names.filter((n) => str(env, n) !== undefined);
  const ttl = boundedInt(env, 'SVC_ANALYTICS_EMBED_TTL_SECONDS', 600, 60, 86_400);
  if (set.length === 0) return undefined;
  if (set.length < names.length) {
    const missing = names.filter((n) => !set.includes(n)).join(', ');
    throw new ConfigError(`${names.join(', ')} must be set together (missing: ${missing})`);
  }
  const siteUrl = url(env, 'SVC_ANALYTICS_SITE_URL', ['https:', 'http:'])!.replace(/\/+$/, '');
  const embedSecret = str(env, 'SVC_ANALYTICS_EMBED_SECRET')!;
  if (embedSecret.length < 32) {
    throw new ConfigError('SVC_ANALYTICS_EMBED_SECRET must be at least 32 characters');
  }
  const rawId = str(env, 'SVC_ANALYTICS_DASHBOARD_ID')!;
  if (!/^[A-Za-z0-9_-]{1,100}$/.test(rawId)) {
    throw new ConfigError(
      `SVC_ANALYTICS_DASHBOARD_ID must be a dashboard id (letters, digits, _ or -), got "${rawId}"`,
    );
  }
  const dashboardId = /^[1-9]\d{0,14}$/.test(rawId) ? Number(rawId) : rawId;
  return { siteUrl, embedSecret, dashboardId, embedTtlSeconds: ttl };
}

/** SVC_PLUGIN_SERVICES: comma-separated http(s) base URLs of service plugins (docs/plugins.md). */
function pluginServiceUrls(env: Env): string[] {
  const items = (str(env, 'SVC_PLUGIN_SERVICES') ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  return items.map((item) => url({ SVC_PLUGIN_SERVICES: item }, 'SVC_PLUGIN_SERVICES', ['https:', 'http:'])!);
}

export function loadConfig(env: Env = process.env): Config {
  const nodeEnv = str(env, 'NODE_ENV') ?? 'development';
  const production = nodeEnv === 'production';
  // A key of blanks is no key: it must not satisfy the production rule.
  const vaultEncryptionKey = str(env, 'SVC_VAULT_ENCRYPTION_KEY')?.trim() || undefined;
  const jwtSecret = str(env, 'SVC_JWT_SECRET');
  if (production && !vaultEncryptionKey) {
    throw new ConfigError('SVC_VAULT_ENCRYPTION_KEY is required when NODE_ENV=production');
  }
  if (production && !jwtSecret) throw new ConfigError('SVC_JWT_SECRET is required when NODE_ENV=production');
  if (jwtSecret && jwtSecret.length < 32) {
    throw new ConfigError('SVC_JWT_SECRET must be at least 32 characters');
  }
  const bootstrapAdminEmail = str(env, 'SVC_BOOTSTRAP_ADMIN_EMAIL');
  const bootstrapAdminPassword = str(env, 'SVC_BOOTSTRAP_ADMIN_PASSWORD');
  if (Boolean(bootstrapAdminEmail) !== Boolean(bootstrapAdminPassword)) {
    throw new ConfigError('SVC_BOOTSTRAP_ADMIN_EMAIL and SVC_BOOTSTRAP_ADMIN_PASSWORD must be set together');
  }
  // The rules POST /user applies: the bootstrap admin is no exception.
  if (bootstrapAdminEmail && !isEmailAddress(bootstrapAdminEmail)) {
    throw new ConfigError(`SVC_BOOTSTRAP_ADMIN_EMAIL must be an email address, got "${bootstrapAdminEmail}"`);
  }
  if (bootstrapAdminPassword && bootstrapAdminPassword.length < MIN_PASSWORD_LENGTH) {
    throw new ConfigError(`SVC_BOOTSTRAP_ADMIN_PASSWORD must be at least ${MIN_PASSWORD_LENGTH} characters`);
  }
  const oidc = ['SVC_OIDC_ISSUER', 'SVC_OIDC_AUDIENCE', 'SVC_OIDC_JWKS_URL'];
  const oidcSet = oidc.filter((name) => str(env, name) !== undefined);
  if (oidcSet.length > 0 && oidcSet.length < oidc.length) {
    throw new ConfigError(
      `${oidc.join(', ')} must be set together (missing: ${oidc.filter((n) => !oidcSet.includes(n)).join(', ')})`,
    );
  }
  const logLevel = str(env, 'SVC_LOG_LEVEL') ?? 'info';
  if (!['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].includes(logLevel)) {
    throw new ConfigError(
      `SVC_LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "${logLevel}"`,
    );
  }
  const port = int(env, 'PORT', 8080);
  if (port > 65535) throw new ConfigError(`PORT must be at most 65535, got "${port}"`);
  return {
    nodeEnv,
    production,
    port,
    host: str(env, 'HOST') ?? '127.0.0.1',
    databaseUrl: databaseUrl(env),
    vaultEncryptionKey,
    vaultPreviousKeys: (str(env, 'SVC_VAULT_PREVIOUS_KEYS') ?? '')
      .split(',')
      .map((k) => k.trim())
      .filter(Boolean),
    jwtSecret,
    bootstrapAdminEmail,
    bootstrapAdminPassword,
    outboxDrainIntervalMs: boundedInt(env, 'SVC_OUTBOX_DRAIN_INTERVAL_MS', 30_000, 10, MAX_TIMER_MS),
    outboxLeaseMs: boundedInt(env, 'SVC_OUTBOX_LEASE_MS', 30_000, 100, DAY_MS),
    workflowLeaseMs: boundedInt(env, 'SVC_WORKFLOW_LEASE_MS', 30_000, 300, DAY_MS),
    workflowPollIntervalMs: boundedInt(env, 'SVC_WORKFLOW_POLL_INTERVAL_MS', 1_000, 10, MAX_TIMER_MS),
    workflowRunParallelism: boundedInt(env, 'SVC_WORKFLOW_RUN_PARALLELISM', 8, 1, 64),
    workflowWorkerParallelism: boundedInt(env, 'SVC_WORKFLOW_WORKER_PARALLELISM', 128, 1, 10_000),
    workflowMaxDepth: boundedInt(env, 'SVC_WORKFLOW_MAX_DEPTH', 8, 1, 100),
    workflowMaxRunsPerMinute: boundedInt(env, 'SVC_WORKFLOW_MAX_RUNS_PER_MINUTE', 6_000, 0, 1_000_000),
    schedulePollIntervalMs: boundedInt(env, 'SVC_SCHEDULE_POLL_INTERVAL_MS', 1_000, 10, MAX_TIMER_MS),
    webhookRetryIntervalMs: boundedInt(env, 'SVC_WEBHOOK_RETRY_INTERVAL_MS', 30_000, 10, MAX_TIMER_MS),
    webhookBackoffBaseSeconds: boundedInt(env, 'SVC_WEBHOOK_BACKOFF_BASE_SECONDS', 30, 0, 86_400),
    webhookTimeoutMs: boundedInt(env, 'SVC_WEBHOOK_TIMEOUT_MS', 10_000, 1, 600_000),
    allowPrivateNetworks: bool(env, 'SVC_ALLOW_PRIVATE_NETWORKS', false),
    dnsServers: dnsServers(env),
    worker: workerSetting(env),
    heapGrowingPercent: boundedInt(env, 'SVC_HEAP_GROWING_PERCENT', HEAP_GROWING_PERCENT, 0, 300),
    smtpUrl: url(env, 'SVC_SMTP_URL', ['smtp:', 'smtps:']),
    mailFrom: str(env, 'SVC_MAIL_FROM') ?? 'svc <no-reply@localhost>',
    oidcIssuer: str(env, 'SVC_OIDC_ISSUER'),
    oidcAudience: str(env, 'SVC_OIDC_AUDIENCE'),
    oidcJwksUrl: url(env, 'SVC_OIDC_JWKS_URL', ['https:', 'http:']),
    logLevel,
    passwordHashCost: boundedInt(env, 'SVC_PASSWORD_HASH_COST', 15, 10, 20),
    accessTokenTtlSeconds: boundedInt(env, 'SVC_ACCESS_TOKEN_TTL_SECONDS', 900, 60, YEAR_S),
    bodyLimitBytes: boundedInt(env, 'SVC_BODY_LIMIT_BYTES', 1_048_576, 1024, 1_073_741_824),
    dataDir: str(env, 'SVC_DATA_DIR') ?? './data',
    consoleDir: str(env, 'SVC_CONSOLE_DIR'),
    pluginDir: str(env, 'SVC_PLUGIN_DIR'),
    pluginServices: pluginServiceUrls(env),
    analytics: analyticsConfig(env),
    auth: authSettings(env),
  };
}

/** SVC_DNS_SERVERS: a comma-separated list of `ip`, `ip:port` or `[ipv6]:port`, as Node's resolver takes them. */
function dnsServers(env: Env): string[] {
  const list = (str(env, 'SVC_DNS_SERVERS') ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  try {
    new dns.Resolver().setServers(list);
  } catch {
    throw new ConfigError(
      `SVC_DNS_SERVERS must be IP addresses (ip, ip:port or [ipv6]:port), got "${list.join(',')}"`,
    );
  }
  return list;
}
