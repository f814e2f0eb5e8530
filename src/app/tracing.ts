import type { Logger } from 'pino';
import type { TracingConfig } from '../config/config.js';
import { NO_TRACING, type Tracer } from '../lib/tracing.js';

/**
 * The process's tracer (docs/observability.md "Tracing"): the OpenTelemetry SDK when an OTLP
 * endpoint is configured, loaded then and only then; otherwise NO_TRACING, and no module of the SDK
 * is ever imported.
 */
export async function createTracer(config: TracingConfig | null, log: Logger): Promise<Tracer> {
  if (config === null) return NO_TRACING;
  const { createOtelTracer } = await import('./otel-tracer.js');
  log.info(
    {
      endpoint: config.url.replace(/\/\/[^/@]*@/, '//***@'),
      protocol: config.protocol,
      sampler: config.sampler,
    },
    'tracing on',
  );
  return createOtelTracer(config, log);
}
