import type { TraceContext } from './tracing.js';

/**
 * What caused an event or a call. Its depth is the loop guard's measure (docs/workflows.md "Loop
 * safety"): how many workflow runs led to it. An event made by a person or a schedule has depth 0;
 * an event that a run's HTTP call to the API caused carries the run's depth + 1. Events carry it as
 * the CloudEvents extension attributes `svcdepth` and `causationid`, requests as the headers below.
 * With tracing on, it also carries the span it happened under (docs/observability.md): events as
 * `traceparent`/`tracestate` attributes, requests as the W3C headers of the same names.
 */
export interface Causation {
  /** Runs in the chain that led here. */
  depth: number;
  /** The run whose call caused this, when one did. */
  id: string | null;
  /** The span this happened under, when tracing is on. */
  trace?: TraceContext;
}

/** Request headers the `http` action sends and the API reads. */
export const DEPTH_HEADER = 'svc-depth';
export const CAUSATION_HEADER = 'svc-causation-id';

/** Larger depths are refused as headers: no chain of runs is anywhere near as long. */
const MAX_HEADER_DEPTH = 1000;

/**
 * The headers an outbound request carries for what caused it: a run's depth and id (none at depth
 * 0), and the W3C trace context of the span it is made under.
 */
export function causationHeaders(causation: Causation | undefined): Record<string, string> {
  if (!causation) return {};
  const headers: Record<string, string> = {};
  if (causation.depth > 0) {
    headers[DEPTH_HEADER] = String(causation.depth);
    if (causation.id) headers[CAUSATION_HEADER] = causation.id;
  }
  if (causation.trace) {
    headers.traceparent = causation.trace.traceparent;
    if (causation.trace.tracestate) headers.tracestate = causation.trace.tracestate;
  }
  return headers;
}

/** `causation` with the span it happens under (none: as it is). */
export function withTrace(
  causation: Causation | undefined,
  trace: TraceContext | undefined,
): Causation | undefined {
  if (!trace) return causation;
  return { depth: causation?.depth ?? 0, id: causation?.id ?? null, trace };
}

/** An event's tracing attributes (CloudEvents Distributed Tracing) for the span it is made under. */
export function traceAttributes(trace: TraceContext | undefined): {
  traceparent?: string;
  tracestate?: string;
} {
  if (!trace) return {};
  return trace.tracestate
    ? { traceparent: trace.traceparent, tracestate: trace.tracestate }
    : { traceparent: trace.traceparent };
}

/** The causation a request carries (an `http` action calling the API), or undefined. */
export function causationFromHeaders(
  headers: Record<string, string | string[] | undefined>,
): Causation | undefined {
  const raw = headers[DEPTH_HEADER];
  if (typeof raw !== 'string' || !/^\d{1,4}$/.test(raw.trim())) return undefined;
  const depth = Math.min(Number(raw.trim()), MAX_HEADER_DEPTH);
  const id = headers[CAUSATION_HEADER];
  return { depth, id: typeof id === 'string' && id.length > 0 && id.length <= 200 ? id : null };
}

/**
 * The depth an event carries in its `svcdepth` extension attribute (0 when it carries none or
 * something unusable: a producer's event may spell it as a string, CloudEvents' HTTP binding does).
 */
export function depthOf(event: { svcdepth?: unknown }): number {
  const d = event.svcdepth;
  const n = typeof d === 'number' ? d : typeof d === 'string' ? Number(d) : 0;
  return Number.isInteger(n) && n > 0 ? n : 0;
}
