import { describe, expect, it } from 'vitest';
import { workerPlacement } from '../src/app/worker-thread.js';
import { ConfigError, loadConfig } from '../src/config/config.js';

/** CONTRACTS §1: settings are validated at start; a bad value names its variable in one line. */
describe('configuration', () => {
  const load = (env: Record<string, string>) => loadConfig({ NODE_ENV: 'test', ...env });

  it('defaults hold without any variable', () => {
    const c = load({});
    expect(c.webhookTimeoutMs).toBe(10_000);
    expect(c.webhookBackoffBaseSeconds).toBe(30);
    expect(c.outboxDrainIntervalMs).toBe(30_000);
    expect(c.worker).toBe('auto');
    expect(c.heapGrowingPercent).toBe(100);
  });

  it('tracing: off without an endpoint; the OTEL_* variables as the specification reads them', () => {
    expect(load({}).tracing).toBe(null);
    const on = load({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/',
      OTEL_EXPORTER_OTLP_HEADERS: 'x-key=a%20b,other=2',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=prod',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.25',
    }).tracing;
    expect(on).toMatchObject({
      url: 'http://collector:4318/v1/traces',
      protocol: 'http/protobuf',
      headers: { 'x-key': 'a b', other: '2' },
      serviceName: 'svc',
      resourceAttributes: { 'deployment.environment': 'prod' },
      sampler: 'parentbased_traceidratio',
      ratio: 0.25,
    });
    // The traces-only variables win; OTEL_SDK_DISABLED turns it all off.
    expect(
      load({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://traces.example/in',
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
      }).tracing,
    ).toMatchObject({ url: 'https://traces.example/in', protocol: 'http/json' });
    expect(load({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' }).tracing).toBe(
      null,
    );
    expect(() =>
      load({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_SAMPLER_ARG: '2' }),
    ).toThrow('OTEL_TRACES_SAMPLER_ARG must be a ratio from 0 to 1, got "2"');
    expect(() => load({ OTEL_EXPORTER_OTLP_ENDPOINT: 'ftp://c' })).toThrow(/OTEL_EXPORTER_OTLP_ENDPOINT/);
    expect(() => load({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toThrow(/OTEL_EXPORTER_OTLP_PROTOCOL/);
    expect(load({ SVC_TRACE_URL_TEMPLATE: 'https://t.example/trace/{trace_id}' }).traceUrlTemplate).toBe(
      'https://t.example/trace/{trace_id}',
    );
    expect(() => load({ SVC_TRACE_URL_TEMPLATE: 'https://t.example/trace' })).toThrow(
      'SVC_TRACE_URL_TEMPLATE must contain {trace_id}',
    );
  });

  it('SVC_HEAP_GROWING_PERCENT takes 0 (V8 chooses) to 300 (a factor of 4, the most V8 chooses)', () => {
    expect(load({ SVC_HEAP_GROWING_PERCENT: '0' }).heapGrowingPercent).toBe(0);
    expect(load({ SVC_HEAP_GROWING_PERCENT: '300' }).heapGrowingPercent).toBe(300);
    expect(() => load({ SVC_HEAP_GROWING_PERCENT: '301' })).toThrow(
      'SVC_HEAP_GROWING_PERCENT must be at most 300, got "301"',
    );
    expect(() => load({ SVC_HEAP_GROWING_PERCENT: '1.5' })).toThrow(
      'SVC_HEAP_GROWING_PERCENT must be an integer >= 0, got "1.5"',
    );
  });

  it('SVC_WORKER names where svc serve runs the worker, in one spelling each', () => {
    const where = (value: string) => load({ SVC_WORKER: value }).worker;
    expect(['auto', 'main', 'thread', 'off'].map(where)).toEqual(['auto', 'main', 'thread', 'off']);
    for (const other of ['threads', 'true', 'false', '0', '1'])
      expect(() => where(other)).toThrow(`SVC_WORKER must be one of auto, main, thread, off, got "${other}"`);
  });

  it('SVC_WORKER=auto: a worker thread on a SQLite file with two cores or more, else the API thread', () => {
    const place = (url: string, worker: string | undefined, cores: number) =>
      workerPlacement(load({ SVC_DATABASE_URL: url, ...(worker ? { SVC_WORKER: worker } : {}) }), cores);
    const file = 'sqlite:./data/svc.db';
    const memory = 'sqlite::memory:';
    const pg = 'postgres://svc@db.example.test/svc';
    expect(place(file, undefined, 2)).toBe('thread');
    expect(place(file, 'auto', 8)).toBe('thread');
    expect(place(file, undefined, 1)).toBe('main');
    expect(place(pg, undefined, 8)).toBe('main');
    // Set by hand, a place is kept; but an in-memory database is one connection's own.
    expect(place(pg, 'thread', 8)).toBe('thread');
    expect(place(file, 'main', 8)).toBe('main');
    expect(place(file, 'off', 8)).toBe('off');
    expect(place(memory, 'thread', 8)).toBe('main');
    expect(place(memory, undefined, 8)).toBe('main');
    expect(place(memory, 'off', 8)).toBe('off');
  });

  it.each([
    ['SVC_WEBHOOK_TIMEOUT_MS', '600001', 'SVC_WEBHOOK_TIMEOUT_MS must be at most 600000, got "600001"'],
    ['SVC_WEBHOOK_BACKOFF_BASE_SECONDS', '86401', 'SVC_WEBHOOK_BACKOFF_BASE_SECONDS must be at most 86400'],
    // Past 2^31-1 ms Node fires a timer at once: a long period would become a busy loop.
    ['SVC_OUTBOX_DRAIN_INTERVAL_MS', '2147483648', 'SVC_OUTBOX_DRAIN_INTERVAL_MS must be at most 2147483647'],
    ['SVC_WEBHOOK_RETRY_INTERVAL_MS', '9999999999', 'SVC_WEBHOOK_RETRY_INTERVAL_MS must be at most'],
    ['SVC_WORKFLOW_POLL_INTERVAL_MS', '2147483648', 'SVC_WORKFLOW_POLL_INTERVAL_MS must be at most'],
    ['SVC_REFRESH_TOKEN_CLEANUP_INTERVAL_MS', '2147483648', 'must be at most 2147483647'],
    ['SVC_OUTBOX_LEASE_MS', '86400001', 'SVC_OUTBOX_LEASE_MS must be at most 86400000'],
    ['SVC_ACCESS_TOKEN_TTL_SECONDS', '31536001', 'SVC_ACCESS_TOKEN_TTL_SECONDS must be at most 31536000'],
    ['SVC_REFRESH_TOKEN_TTL_SECONDS', '9007199254740991', 'SVC_REFRESH_TOKEN_TTL_SECONDS must be at most'],
    ['SVC_WEBHOOK_TIMEOUT_MS', '0', 'SVC_WEBHOOK_TIMEOUT_MS must be an integer >= 1, got "0"'],
    ['SVC_WEBHOOK_TIMEOUT_MS', '1e4', 'SVC_WEBHOOK_TIMEOUT_MS must be an integer >= 1, got "1e4"'],
  ])('%s=%s stops the start naming the variable', (name, value, message) => {
    expect(() => load({ [name]: value })).toThrow(ConfigError);
    expect(() => load({ [name]: value })).toThrow(message);
  });

  it.each([
    [
      { SVC_BOOTSTRAP_ADMIN_EMAIL: 'notanemail', SVC_BOOTSTRAP_ADMIN_PASSWORD: 'long-enough' },
      'SVC_BOOTSTRAP_ADMIN_EMAIL must be an email address',
    ],
    [
      { SVC_BOOTSTRAP_ADMIN_EMAIL: 'a@example.test', SVC_BOOTSTRAP_ADMIN_PASSWORD: 'short' },
      'SVC_BOOTSTRAP_ADMIN_PASSWORD must be at least 8 characters',
    ],
    [
      { SVC_OIDC_ISSUER: 'https://idp.test' },
      'must be set together (missing: SVC_OIDC_AUDIENCE, SVC_OIDC_JWKS_URL)',
    ],
    [{ SVC_DNS_SERVERS: '10.0.0.53, dns.example.test' }, 'SVC_DNS_SERVERS must be IP addresses'],
    [
      { NODE_ENV: 'production', SVC_VAULT_ENCRYPTION_KEY: '   ', SVC_JWT_SECRET: 'x'.repeat(32) },
      'SVC_VAULT_ENCRYPTION_KEY is required when NODE_ENV=production',
    ],
  ])('refuses %o', (env, message) => {
    expect(() => load(env as Record<string, string>)).toThrow(message);
  });

  it('SVC_DNS_SERVERS takes IPv4 and IPv6 servers with or without a port', () => {
    expect(load({}).dnsServers).toEqual([]);
    expect(load({ SVC_DNS_SERVERS: '10.0.0.53, 127.0.0.1:5353,[::1]:53' }).dnsServers).toEqual([
      '10.0.0.53',
      '127.0.0.1:5353',
      '[::1]:53',
    ]);
  });

  it('never echoes credentials of a malformed URL', () => {
    let message = '';
    try {
      load({ SVC_SMTP_URL: 'smtp://mailer:hunter2-secret@bad host:25' });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(/^SVC_SMTP_URL must be a URL/);
    expect(message).not.toContain('hunter2');
  });

  it('the bounds themselves are accepted', () => {
    const c = load({
      SVC_WEBHOOK_TIMEOUT_MS: '600000',
      SVC_WEBHOOK_BACKOFF_BASE_SECONDS: '0',
      SVC_OUTBOX_DRAIN_INTERVAL_MS: '2147483647',
    });
    expect([c.webhookTimeoutMs, c.webhookBackoffBaseSeconds, c.outboxDrainIntervalMs]).toEqual([
      600_000, 0, 2_147_483_647,
    ]);
  });
});
