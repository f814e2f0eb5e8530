// Long file: the declaration of every setting, one entry each, read as one list.
import { type Static, type TSchema, Type } from '@sinclair/typebox';

/**
 * Every environment variable svc reads, declared once: its type, default, bounds and description.
 * `loadConfig` (config.ts) decodes the environment against it, and the README's configuration
 * table is generated from it (`npm run docs:config`; test/config-table.test.ts fails on drift).
 * `defaultText` says what an unset variable means when there is no literal default.
 */

/** Past 2^31-1 ms Node fires a timer at once (a busy loop, not a long wait). */
export const MAX_TIMER_MS = 2_147_483_647;
const DAY_MS = 86_400_000;
const YEAR_S = 31_536_000;
const TEN_YEARS_S = 10 * YEAR_S;

interface Extra {
  defaultText?: string;
}

const int = (dflt: number, minimum: number, maximum: number, description: string) =>
  Type.Integer({ default: dflt, minimum, maximum, description });
const str = (description: string, extra: Extra & { default?: string } = {}) =>
  Type.Optional(Type.String({ description, ...extra }));
const oneOf = <T extends string>(values: readonly T[], dflt: T, description: string) =>
  Type.Union(
    values.map((v) => Type.Literal(v)),
    { default: dflt, description },
  );

export const CONFIG_SCHEMA = Type.Object({
  PORT: int(8080, 0, 65535, 'the port to listen on'),
  HOST: Type.String({ default: '127.0.0.1', description: 'the address to listen on' }),
  SVC_DATABASE_URL: Type.String({
    default: 'sqlite:./data/svc.db',
    description: '`sqlite:<path>`, `sqlite::memory:` or `postgres://user@host:5432/db`',
  }),
  NODE_ENV: Type.String({
    default: 'development',
    description: '`production` makes `SVC_VAULT_ENCRYPTION_KEY` and `SVC_JWT_SECRET` mandatory',
  }),
  SVC_VAULT_ENCRYPTION_KEY: str('the key vault secrets are encrypted under (any string; docs/vault.md)', {
    defaultText: 'generated into `./data/` outside production',
  }),
  SVC_VAULT_PREVIOUS_KEYS: str(
    'comma-separated older vault keys that still decrypt (never encrypt), for rolling the key without downtime (docs/vault.md)',
  ),
  SVC_JWT_SECRET: str('signing key of access tokens, at least 32 characters', {
    defaultText: 'generated into `./data/` outside production',
  }),
  SVC_DATA_DIR: Type.String({
    default: './data',
    description: 'where generated development secrets are kept',
  }),
  SVC_BOOTSTRAP_ADMIN_EMAIL: str(
    'at start, create this admin if no user has that email; set with `SVC_BOOTSTRAP_ADMIN_PASSWORD`',
  ),
  SVC_BOOTSTRAP_ADMIN_PASSWORD: str("the bootstrap admin's password, at least 8 characters"),
  SVC_ACCESS_TOKEN_TTL_SECONDS: int(900, 60, YEAR_S, 'lifetime of access tokens'),
  SVC_PASSWORD_HASH_COST: int(15, 10, 20, "log2 of scrypt's N for password hashes"),
  SVC_OUTBOX_DRAIN_INTERVAL_MS: int(
    30_000,
    10,
    MAX_TIMER_MS,
    'safety-net period of the outbox drain (events are processed at once after publish)',
  ),
  SVC_OUTBOX_LEASE_MS: int(
    30_000,
    100,
    DAY_MS,
    "how long a worker's claim on outbox tasks lasts (renewed while handlers run); a crashed worker's events are retried after it (docs/events.md)",
  ),
  SVC_WEBHOOK_RETRY_INTERVAL_MS: int(30_000, 10, MAX_TIMER_MS, 'webhook retry job period'),
  SVC_WEBHOOK_BACKOFF_BASE_SECONDS: int(
    30,
    0,
    86_400,
    'the 30 in the `30 x 2^n` webhook backoff (docs/reliability.md "Retry policies")',
  ),
  SVC_WEBHOOK_TIMEOUT_MS: int(10_000, 1, 600_000, 'per-attempt webhook HTTP timeout'),
  SVC_WORKFLOW_LEASE_MS: int(
    30_000,
    300,
    DAY_MS,
    "how long a worker's claim on a workflow run lasts (renewed while an ACTION runs); runs of a crashed worker resume after it (docs/workflows.md)",
  ),
  SVC_WORKFLOW_POLL_INTERVAL_MS: int(
    1_000,
    10,
    MAX_TIMER_MS,
    'how often the workflows job looks for due runs (DELAY timers, retries, expired leases) written by other processes',
  ),
  SVC_WORKFLOW_RUN_PARALLELISM: int(
    8,
    1,
    64,
    'ACTIONs of one run in flight at once: independent branches overlap up to this (docs/workflows.md)',
  ),
  SVC_WORKFLOW_WORKER_PARALLELISM: int(
    128,
    1,
    10_000,
    'ACTIONs in flight in one worker process, all runs together',
  ),
  SVC_WORKFLOW_MAX_DEPTH: int(
    8,
    1,
    100,
    'the loop guard: an event caused by this many nested workflow runs starts no run (docs/workflows.md "Loop safety")',
  ),
  SVC_WORKFLOW_MAX_RUNS_PER_MINUTE: int(
    6_000,
    0,
    1_000_000,
    'the rate guard: a subscription starting more runs a minute that runs caused (depth 1 or more) is paused; user traffic is never counted; a subscription\'s own `max_runs_per_minute` counts every run and wins (docs/workflows.md "Loop safety"); 0 turns it off',
  ),
  SVC_SCHEDULE_POLL_INTERVAL_MS: int(
    1_000,
    10,
    MAX_TIMER_MS,
    'how often the schedules job looks for schedules another process created; its own fire on time by a timer (docs/schedules.md)',
  ),
  SVC_RETENTION_COMPLETED_RUNS_SECONDS: int(
    14 * 86_400,
    0,
    TEN_YEARS_S,
    'how long completed, skipped and cancelled workflow runs are kept after they finish, with their nodes; a subscription\'s `retention` wins; 0 keeps them for ever (docs/reliability.md "Retention")',
  ),
  SVC_RETENTION_FAILED_RUNS_SECONDS: int(
    30 * 86_400,
    0,
    TEN_YEARS_S,
    "how long failed workflow runs are kept after they finish; a subscription's `retention` wins; 0 keeps them for ever",
  ),
  SVC_RETENTION_DELIVERIES_SECONDS: int(
    30 * 86_400,
    0,
    TEN_YEARS_S,
    "how long webhook deliveries in SUCCESS or FAILED are kept after they finish, with their attempts; a webhook's `retention` wins; 0 keeps them for ever",
  ),
  SVC_RETENTION_OUTBOX_SECONDS: int(
    7 * 86_400,
    0,
    TEN_YEARS_S,
    'how long DONE and FAILED outbox tasks are kept: the window of `POST /event` deduplication and of replays (docs/events.md); 0 keeps them for ever',
  ),
  SVC_PRUNE_INTERVAL_MS: int(
    60_000,
    10,
    MAX_TIMER_MS,
    'period of the prune job that removes what retention no longer keeps (docs/reliability.md "Retention")',
  ),
  SVC_ALLOW_PRIVATE_NETWORKS: Type.Boolean({
    default: false,
    description:
      'let webhooks and the `http` and `email` plugins reach `http://` and private/loopback addresses (development, tests)',
  }),
  SVC_DNS_SERVERS: str(
    'comma-separated `ip`, `ip:port` or `[ipv6]:port`: resolve the hosts of webhooks and the `http` and `email` plugins through these DNS servers only (no hosts file), for the SSRF checks and the connections alike',
    { defaultText: "the system's resolver" },
  ),
  SVC_CONSOLE_DIR: str('the built console served at `/console` (docs/console.md)', {
    defaultText: '`dist/console` of the package',
  }),
  SVC_PLUGIN_DIR: str('folder of package plugins loaded in-process at start (docs/plugins.md)'),
  SVC_PLUGIN_SERVICES: str('comma-separated `http(s)://` base URLs of service plugins (docs/plugins.md)'),
  SVC_WORKER: oneOf(
    ['auto', 'main', 'thread', 'off'] as const,
    'auto',
    'where `svc serve` runs the background worker: `auto` (`thread` on a SQLite file when the machine has two cores or more, else `main`), `main` (the API\'s thread), `thread` (a worker thread: the API and the worker each get a core, for more executions/s on SQLite and some more resident memory; docs/performance.md), `off` (none; a `svc worker` does the work; docs/events.md "Scale-out")',
  ),
  SVC_HEAP_GROWING_PERCENT: int(
    100,
    0,
    300,
    "how far each V8 heap of `svc serve` and `svc worker` may grow past its live size before its next full collection, in per cent: lower saves memory under load for more CPU (docs/performance.md); `0` leaves V8 its own choice; node's own `--heap-growing-percent` on its command line (`NODE_OPTIONS` refuses it) takes precedence",
  ),
  SVC_SMTP_URL: str(
    'outgoing mail (`smtp://` or `smtps://`, for password reset); without it mail goes to the log',
  ),
  SVC_MAIL_FROM: Type.String({
    default: 'svc <no-reply@localhost>',
    description: 'the sender of outgoing mail',
  }),
  SVC_OIDC_ISSUER: str(
    'external identity provider for `POST /auth/login/external_idp`; set with `SVC_OIDC_AUDIENCE` and `SVC_OIDC_JWKS_URL`, or none of them',
  ),
  SVC_OIDC_AUDIENCE: str("the external identity provider's audience"),
  SVC_OIDC_JWKS_URL: str("the external identity provider's JWKS URL"),
  SVC_OIDC_AUTO_CREATE_ROLE: str(
    'role key given to users created on their first external-IdP sign-in; unset, unknown users are refused (docs/auth.md)',
  ),
  SVC_REFRESH_TOKEN_TTL_SECONDS: int(
    2_592_000,
    60,
    TEN_YEARS_S,
    'refresh token lifetime; per-user and per-device overrides in docs/auth.md',
  ),
  SVC_MFA_TOKEN_TTL_SECONDS: int(300, 30, 3600, 'lifetime of the MFA login token'),
  SVC_PASSWORD_RESET_TTL_SECONDS: int(3600, 60, 604_800, 'lifetime of password reset tokens'),
  SVC_PASSWORD_RESET_URL: str('link base put in reset mails (`<url>?token=...`)'),
  SVC_DEVICE_REGISTRATION_TTL_SECONDS: int(86_400, 60, YEAR_S, 'lifetime of device registration tokens'),
  SVC_LOGIN_MAX_ATTEMPTS: int(5, 1, 1_000_000, 'failed sign-ins that lock an account (docs/auth.md)'),
  SVC_LOGIN_IP_MAX_ATTEMPTS: int(
    50,
    1,
    1_000_000,
    'failed sign-ins that lock a client address (docs/auth.md)',
  ),
  SVC_LOGIN_ATTEMPT_WINDOW_SECONDS: int(900, 1, YEAR_S, 'quiet time that resets a count of failed sign-ins'),
  SVC_LOGIN_LOCK_SECONDS: int(60, 1, YEAR_S, 'the first lock, doubling per further lock'),
  SVC_LOGIN_LOCK_MAX_SECONDS: int(3600, 1, YEAR_S, 'the longest lock'),
  SVC_REFRESH_TOKEN_CLEANUP_INTERVAL_MS: int(
    86_400_000,
    1000,
    MAX_TIMER_MS,
    'period of the job that soft-deletes expired refresh tokens',
  ),
  SVC_ANALYTICS_SITE_URL: str(
    'BI dashboard embedding (Metabase signed embeds), set with `SVC_ANALYTICS_EMBED_SECRET` and `SVC_ANALYTICS_DASHBOARD_ID`; unset, the embed endpoint answers 503 (docs/platform.md)',
  ),
  SVC_ANALYTICS_EMBED_SECRET: str("the BI tool's embedding secret, at least 32 characters"),
  SVC_ANALYTICS_DASHBOARD_ID: str('the dashboard to embed (letters, digits, `_` or `-`)'),
  SVC_ANALYTICS_EMBED_TTL_SECONDS: int(600, 60, 86_400, 'lifetime of a signed embed URL'),
  SVC_BODY_LIMIT_BYTES: int(1_048_576, 1024, 1_073_741_824, 'largest request body; larger ones get 413'),
  OTEL_EXPORTER_OTLP_ENDPOINT: str(
    'OTLP/HTTP collector base URL (`/v1/traces` is added); set, or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, tracing is on (docs/observability.md)',
    { defaultText: 'unset: tracing off, the SDK not loaded' },
  ),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: str(
    'the full URL spans are posted to; wins over `OTEL_EXPORTER_OTLP_ENDPOINT`',
  ),
  OTEL_EXPORTER_OTLP_PROTOCOL: oneOf(
    ['http/protobuf', 'http/json'] as const,
    'http/protobuf',
    'how spans are sent: `http/protobuf` or `http/json`',
  ),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: Type.Optional(
    Type.Union([Type.Literal('http/protobuf'), Type.Literal('http/json')], {
      description: 'the same for traces alone; wins over `OTEL_EXPORTER_OTLP_PROTOCOL`',
    }),
  ),
  OTEL_EXPORTER_OTLP_HEADERS: str(
    "headers of every export, `key=value,key2=value2` (a collector's API key: never logged)",
  ),
  OTEL_EXPORTER_OTLP_TRACES_HEADERS: str('the same for traces alone, added to `OTEL_EXPORTER_OTLP_HEADERS`'),
  OTEL_EXPORTER_OTLP_TIMEOUT: int(10_000, 1, 600_000, 'how long one export may take, ms'),
  OTEL_SERVICE_NAME: Type.String({ default: 'svc', description: 'the `service.name` of every span' }),
  OTEL_RESOURCE_ATTRIBUTES: str('more resource attributes, `key=value,key2=value2` (percent-encoded values)'),
  OTEL_TRACES_SAMPLER: oneOf(
    [
      'parentbased_always_on',
      'parentbased_always_off',
      'parentbased_traceidratio',
      'always_on',
      'always_off',
      'traceidratio',
    ] as const,
    'parentbased_always_on',
    "which traces are recorded: `always_on`, `always_off`, `traceidratio`, or `parentbased_` one of them (follow the caller's choice)",
  ),
  OTEL_TRACES_SAMPLER_ARG: str('the ratio of `traceidratio` samplers, 0 to 1', { defaultText: '1' }),
  OTEL_BSP_SCHEDULE_DELAY: int(5000, 0, MAX_TIMER_MS, 'ms between two exports of the batch span processor'),
  OTEL_BSP_EXPORT_TIMEOUT: int(30_000, 1, MAX_TIMER_MS, 'ms an export of the batch span processor may take'),
  OTEL_BSP_MAX_QUEUE_SIZE: int(2048, 1, 1_000_000, 'spans queued for export; more are dropped (counted)'),
  OTEL_BSP_MAX_EXPORT_BATCH_SIZE: int(512, 1, 1_000_000, 'spans per export, at most the queue size'),
  OTEL_SDK_DISABLED: Type.Boolean({
    default: false,
    description: '`true` turns tracing off whatever else is set',
  }),
  SVC_TRACE_URL_TEMPLATE: str(
    "a link to a trace in your tracing tool, `{trace_id}` replaced (e.g. `https://tracing.example/trace/{trace_id}`); the console's run view shows it",
  ),
  SVC_LOG_LEVEL: oneOf(
    ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const,
    'info',
    'pino log level: `fatal`, `error`, `warn`, `info`, `debug`, `trace` or `silent`',
  ),
});

export type DecodedEnv = Static<typeof CONFIG_SCHEMA>;
export type ConfigVariable = keyof DecodedEnv;

/** The declared variables in order, with their schemas. */
export function configVariables(): Array<[ConfigVariable, TSchema & Extra]> {
  return Object.entries(CONFIG_SCHEMA.properties) as Array<[ConfigVariable, TSchema & Extra]>;
}
