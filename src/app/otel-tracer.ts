import {
  type Context,
  createTraceState,
  type Link,
  type Attributes as OtelAttributes,
  ROOT_CONTEXT,
  type SpanContext,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';
import { setGlobalErrorHandler } from '@opentelemetry/core';
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BasicTracerProvider,
  BatchSpanProcessor,
  ParentBasedSampler,
  RandomIdGenerator,
  type Sampler,
  SamplingDecision,
  TraceIdRatioBasedSampler,
} from '@opentelemetry/sdk-trace-base';
import type { Logger } from 'pino';
import type { TracingConfig } from '../config/config.js';
import {
  fixedIds,
  NO_SPAN,
  type Span,
  type SpanKind as SvcSpanKind,
  type TraceContext,
  type Tracer,
} from '../lib/tracing.js';
import { VERSION } from '../version.js';

/**
 * The OpenTelemetry SDK behind svc's Tracer (docs/observability.md "Tracing"): a tracer provider of
 * its own (no global registration, no context manager: parents are passed explicitly), the batch
 * span processor, and the OTLP/HTTP exporter of the configured protocol. Loaded by tracing.ts only
 * when tracing is on.
 */

const KINDS: Record<SvcSpanKind, SpanKind> = {
  server: SpanKind.SERVER,
  client: SpanKind.CLIENT,
  internal: SpanKind.INTERNAL,
  producer: SpanKind.PRODUCER,
  consumer: SpanKind.CONSUMER,
};

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** A W3C trace context as a remote span context, or undefined when it is not a valid one. */
function spanContextOf(given: TraceContext | null | undefined): SpanContext | undefined {
  const m = given ? TRACEPARENT.exec(given.traceparent) : null;
  if (!m || m[1] === 'ff' || /^0+$/.test(m[2]) || /^0+$/.test(m[3])) return undefined;
  let traceState: SpanContext['traceState'];
  try {
    traceState = given?.tracestate ? createTraceState(given.tracestate) : undefined;
  } catch {
    traceState = undefined;
  }
  return {
    traceId: m[2],
    spanId: m[3],
    traceFlags: Number.parseInt(m[4], 16) & 1,
    isRemote: true,
    traceState,
  };
}

function samplerOf(config: TracingConfig): Sampler {
  const ratio = new TraceIdRatioBasedSampler(config.ratio);
  switch (config.sampler) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return ratio;
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: ratio });
    default:
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

/**
 * Random ids, except for the next span when `preset` is set: a span recorded with ids fixed earlier
 * (Tracer.fixed). The SDK asks for ids synchronously inside startSpan, so setting and clearing
 * around that call is exact.
 */
class PresetIds {
  preset: { traceId: string; spanId: string } | null = null;
  private readonly random = new RandomIdGenerator();

  generateTraceId(): string {
    return this.preset?.traceId ?? this.random.generateTraceId();
  }

  generateSpanId(): string {
    return this.preset?.spanId ?? this.random.generateSpanId();
  }
}

export function createOtelTracer(config: TracingConfig, log: Logger): Tracer {
  const options = { url: config.url, headers: config.headers, timeoutMillis: config.timeoutMs };
  const exporter =
    config.protocol === 'http/json' ? new JsonExporter(options) : new ProtobufExporter(options);
  // An export that fails (the collector down, a bad key) drops its spans: said once a minute, never
  // with the headers (they may hold the collector's key).
  let lastWarned = 0;
  setGlobalErrorHandler((err) => {
    const now = Date.now();
    if (now - lastWarned < 60_000) return;
    lastWarned = now;
    const message = err instanceof Error ? err.message : String(err);
    log.warn({ reason: message.slice(0, 300) }, 'tracing: spans could not be exported');
  });
  const ids = new PresetIds();
  const sampler = samplerOf(config);
  const provider = new BasicTracerProvider({
    idGenerator: ids,
    resource: resourceFromAttributes({
      ...config.resourceAttributes,
      'service.name': config.serviceName,
      'service.version': VERSION,
    }),
    sampler,
    spanProcessors: [new BatchSpanProcessor(exporter, config.batch)],
  });
  const tracer = provider.getTracer('svc', VERSION);
  // A parent-based sampler records no span under a parent that was not sampled. Such a span is not
  // started at all: it passes its parent's context on unchanged (the trace id, the caller's decision),
  // which is all anyone downstream can see of it.
  const followsParent = config.sampler.startsWith('parentbased_');
  const passedOn = (given: TraceContext, parent: SpanContext): TraceContext | undefined =>
    followsParent && (parent.traceFlags & 1) === 0
      ? parent.traceState
        ? { traceparent: given.traceparent, tracestate: given.tracestate }
        : { traceparent: given.traceparent }
      : undefined;

  return {
    enabled: true,
    start(name, opts = {}) {
      const parent = spanContextOf(opts.parent);
      const unsampled = parent && !opts.id ? passedOn(opts.parent as TraceContext, parent) : undefined;
      if (parent && unsampled)
        return { ...NO_SPAN, context: unsampled, traceId: parent.traceId, spanId: parent.spanId };
      const ctx: Context = parent ? trace.setSpanContext(ROOT_CONTEXT, parent) : ROOT_CONTEXT;
      const links: Link[] = [];
      for (const l of opts.links ?? []) {
        const context = spanContextOf(l);
        if (context) links.push({ context });
      }
      const own = spanContextOf(opts.id);
      ids.preset = own ? { traceId: own.traceId, spanId: own.spanId } : null;
      let span: ReturnType<typeof tracer.startSpan>;
      try {
        span = tracer.startSpan(
          name,
          {
            kind: KINDS[opts.kind ?? 'internal'],
            links,
            startTime: opts.startTime,
            root: parent === undefined,
          },
          ctx,
        );
      } finally {
        ids.preset = null;
      }
      const sc = span.spanContext();
      const traceparent = `00-${sc.traceId}-${sc.spanId}-${(sc.traceFlags & 1).toString(16).padStart(2, '0')}`;
      const tracestate = sc.traceState?.serialize();
      const context = tracestate ? { traceparent, tracestate } : { traceparent };
      // Not sampled: its context still travels (a caller's decision is kept downstream), nothing else.
      if (!span.isRecording()) return { ...NO_SPAN, context, traceId: sc.traceId, spanId: sc.spanId };
      // An undefined value is left out by the SDK itself.
      if (opts.attributes) span.setAttributes(opts.attributes as OtelAttributes);
      const made: Span = {
        context,
        traceId: sc.traceId,
        spanId: sc.spanId,
        recording: true,
        set(attributes) {
          span.setAttributes(attributes as OtelAttributes);
        },
        fail(message) {
          span.setStatus({ code: SpanStatusCode.ERROR, message });
        },
        end(endTime) {
          span.end(endTime);
        },
      };
      return made;
    },
    fixed(seed, given) {
      const parent = spanContextOf(given);
      const unsampled = parent ? passedOn(given as TraceContext, parent) : undefined;
      if (unsampled) return unsampled;
      const { traceId: rootTrace, spanId } = fixedIds(seed);
      const traceId = parent?.traceId ?? rootTrace;
      // The sampler's answer now is the one it gives when the span is recorded: the same parent, the
      // same trace id (every sampler svc offers decides on those alone).
      const ctx = parent ? trace.setSpanContext(ROOT_CONTEXT, parent) : ROOT_CONTEXT;
      const sampled =
        sampler.shouldSample(ctx, traceId, 'fixed', SpanKind.INTERNAL, {}, []).decision ===
        SamplingDecision.RECORD_AND_SAMPLED;
      const traceparent = `00-${traceId}-${spanId}-${sampled ? '01' : '00'}`;
      return given?.tracestate && parent ? { traceparent, tracestate: given.tracestate } : { traceparent };
    },
    async shutdown() {
      await provider.shutdown();
    },
  };
}
