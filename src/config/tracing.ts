import type { DecodedEnv } from './schema.js';
import { ConfigError, list, url } from './values.js';

/** Tracing's settings (docs/observability.md "Tracing"), decoded from the standard OTEL_* variables. */
export interface TracingConfig {
  /** Where spans are posted (OTLP/HTTP), the traces path included. */
  url: string;
  protocol: 'http/protobuf' | 'http/json';
  /** Headers of every export (a collector's API key): never logged. */
  headers: Record<string, string>;
  timeoutMs: number;
  serviceName: string;
  resourceAttributes: Record<string, string>;
  sampler: DecodedEnv['OTEL_TRACES_SAMPLER'];
  /** The ratio of a `traceidratio` sampler. */
  ratio: number;
  batch: {
    scheduledDelayMillis: number;
    exportTimeoutMillis: number;
    maxQueueSize: number;
    maxExportBatchSize: number;
  };
}

/** `key=value,key2=value2` with percent-encoded values (the OTEL_* list format), or a ConfigError. */
function keyValues(name: string, raw: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of list(raw)) {
    const at = item.indexOf('=');
    if (at <= 0) throw new ConfigError(`${name} must be key=value pairs separated by commas`);
    let value: string;
    try {
      value = decodeURIComponent(item.slice(at + 1).trim());
    } catch {
      // The value may be a secret (an API key): never echo it.
      throw new ConfigError(
        `${name}: the value of "${item.slice(0, at).trim()}" is not percent-encoded text`,
      );
    }
    out[item.slice(0, at).trim()] = value;
  }
  return out;
}

/** Tracing from the standard OTEL_* variables: on when an OTLP endpoint is set and the SDK not disabled. */
export function tracingConfig(v: DecodedEnv): TracingConfig | null {
  const base = v.OTEL_EXPORTER_OTLP_ENDPOINT;
  const traces = v.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  if (v.OTEL_SDK_DISABLED || (base === undefined && traces === undefined)) return null;
  const target =
    traces !== undefined
      ? url('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', traces, ['https:', 'http:'])!
      : `${url('OTEL_EXPORTER_OTLP_ENDPOINT', base, ['https:', 'http:'])!.replace(/\/+$/, '')}/v1/traces`;
  const ratio = v.OTEL_TRACES_SAMPLER_ARG === undefined ? 1 : Number(v.OTEL_TRACES_SAMPLER_ARG);
  if (!Number.isFinite(ratio) || ratio < 0 || ratio > 1) {
    throw new ConfigError(
      `OTEL_TRACES_SAMPLER_ARG must be a ratio from 0 to 1, got "${v.OTEL_TRACES_SAMPLER_ARG}"`,
    );
  }
  if (v.OTEL_BSP_MAX_EXPORT_BATCH_SIZE > v.OTEL_BSP_MAX_QUEUE_SIZE) {
    throw new ConfigError('OTEL_BSP_MAX_EXPORT_BATCH_SIZE must not exceed OTEL_BSP_MAX_QUEUE_SIZE');
  }
  return {
    url: target,
    protocol: v.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? v.OTEL_EXPORTER_OTLP_PROTOCOL,
    headers: {
      ...keyValues('OTEL_EXPORTER_OTLP_HEADERS', v.OTEL_EXPORTER_OTLP_HEADERS),
      ...keyValues('OTEL_EXPORTER_OTLP_TRACES_HEADERS', v.OTEL_EXPORTER_OTLP_TRACES_HEADERS),
    },
    timeoutMs: v.OTEL_EXPORTER_OTLP_TIMEOUT,
    serviceName: v.OTEL_SERVICE_NAME,
    resourceAttributes: keyValues('OTEL_RESOURCE_ATTRIBUTES', v.OTEL_RESOURCE_ATTRIBUTES),
    sampler: v.OTEL_TRACES_SAMPLER,
    ratio,
    batch: {
      scheduledDelayMillis: v.OTEL_BSP_SCHEDULE_DELAY,
      exportTimeoutMillis: v.OTEL_BSP_EXPORT_TIMEOUT,
      maxQueueSize: v.OTEL_BSP_MAX_QUEUE_SIZE,
      maxExportBatchSize: v.OTEL_BSP_MAX_EXPORT_BATCH_SIZE,
    },
  };
}

/** SVC_TRACE_URL_TEMPLATE: an http(s) URL naming `{trace_id}`. */
export function traceUrlTemplate(raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  url('SVC_TRACE_URL_TEMPLATE', raw.replaceAll('{trace_id}', '0'), ['https:', 'http:']);
  if (!raw.includes('{trace_id}')) throw new ConfigError('SVC_TRACE_URL_TEMPLATE must contain {trace_id}');
  return raw;
}
