import { createHash } from 'node:crypto';

/**
 * Tracing as svc's code sees it (docs/observability.md "Tracing"): spans started with an explicit
 * parent, and W3C trace contexts carried by requests, events and runs. The OpenTelemetry SDK behind
 * it (src/app/tracing.ts) is loaded only when an OTLP endpoint is set; otherwise every span is
 * `NO_SPAN` and nothing else of tracing runs.
 *
 * Contexts are passed by hand, never through AsyncLocalStorage: on Node 20 its first use turns on
 * promise hooks for the whole process, a cost on every hot path (src/db/transactions.ts).
 */

/** A span's place in a trace, in W3C form: what events, runs and outbound requests carry. */
export interface TraceContext {
  /** `00-<trace id>-<span id>-<flags>` */
  traceparent: string;
  tracestate?: string;
}

export type SpanKind = 'server' | 'client' | 'internal' | 'producer' | 'consumer';

/** Span attributes; an undefined value is left out. Never a secret (docs/observability.md). */
export type Attributes = Record<string, string | number | boolean | undefined>;

export interface SpanOptions {
  kind?: SpanKind;
  /** The parent (a request's, an event's, a run's); none, or one that does not parse, starts a trace. */
  parent?: TraceContext | null;
  /** Spans this one follows from without being their child. */
  links?: ReadonlyArray<TraceContext | null | undefined>;
  attributes?: Attributes;
  /** When it started (ms since the epoch), for a span recorded after the fact. */
  startTime?: number;
  /** The span's own ids, from `Tracer.fixed` (a span whose children were recorded before it). */
  id?: TraceContext;
}

export interface Span {
  /** This span's own context: its children's parent, and what an outbound request carries. */
  readonly context: TraceContext;
  readonly traceId: string;
  readonly spanId: string;
  /** Whether it is recorded (sampled): callers skip describing a span that is not. */
  readonly recording: boolean;
  set(attributes: Attributes): void;
  /** Marks the span failed; `message` is what the API answers for the failure, never a secret. */
  fail(message: string): void;
  /** Ends it (at `endTime`, ms since the epoch, for a span recorded after the fact). */
  end(endTime?: number): void;
}

export interface Tracer {
  /** Whether spans are recorded at all: when false, callers skip the work of describing them. */
  readonly enabled: boolean;
  start(name: string, options?: SpanOptions): Span;
  /**
   * The context of a span named by `seed` (a run's, a node's) under `parent`: the same in every
   * process and at every time, so a span recorded when a run ends is the parent of the spans its
   * segments and nodes recorded before, wherever they ran. Undefined when tracing is off.
   */
  fixed(seed: string, parent: TraceContext | null): TraceContext | undefined;
  /** Exports what is still queued, then stops. */
  shutdown(): Promise<void>;
}

const NO_CONTEXT: TraceContext = { traceparent: '' };

/** The span of a process that does not trace: it records nothing and carries no context. */
export const NO_SPAN: Span = {
  context: NO_CONTEXT,
  traceId: '',
  spanId: '',
  recording: false,
  set() {},
  fail() {},
  end() {},
};

export const NO_TRACING: Tracer = {
  enabled: false,
  start: () => NO_SPAN,
  fixed: () => undefined,
  shutdown: async () => {},
};

const TRACEPARENT = /^[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$/;

/**
 * Ids fixed by a seed: a span id, and the trace id of a trace that `seed` starts. Hashed, so they are
 * as unguessable and as evenly spread as the seed (run and event ids are random).
 */
export function fixedIds(seed: string): { traceId: string; spanId: string } {
  const hex = createHash('sha256').update(seed).digest('hex');
  return { spanId: hex.slice(0, 16), traceId: hex.slice(16, 48) };
}

/** The trace id of a W3C traceparent, or null when it is not one. */
export function traceIdOf(traceparent: string | null | undefined): string | null {
  if (!traceparent) return null;
  const m = TRACEPARENT.exec(traceparent);
  return m && !/^0+$/.test(m[1]) ? m[1] : null;
}

/** The context a span carries onward, or undefined for the span of a process that does not trace. */
export function contextOf(span: Span): TraceContext | undefined {
  return span.context.traceparent === '' ? undefined : span.context;
}

/**
 * The trace context an event carries in its CloudEvents Distributed Tracing attributes, or null
 * (none, or not text).
 */
export function eventTrace(event: { traceparent?: unknown; tracestate?: unknown }): TraceContext | null {
  if (typeof event.traceparent !== 'string' || event.traceparent === '') return null;
  return typeof event.tracestate === 'string' && event.tracestate !== ''
    ? { traceparent: event.traceparent, tracestate: event.tracestate }
    : { traceparent: event.traceparent };
}

/** A log line's fields for the span it was written under (none for a span not recorded). */
export function logFields(span: Span): { trace_id?: string; span_id?: string } {
  return span.recording ? { trace_id: span.traceId, span_id: span.spanId } : {};
}

/**
 * A URL as spans record it: scheme, host, port and path; never userinfo, query or fragment, which
 * may carry credentials. Answers undefined for what is not a URL.
 */
export function safeUrl(raw: string): string | undefined {
  try {
    const u = new URL(raw);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return undefined;
  }
}
