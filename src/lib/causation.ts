/**
 * Causation depth, the loop guard's measure (docs/workflows.md "Loop safety"): how many workflow runs
 * led to an event. An event made by a person or a schedule has depth 0; an event that a run's HTTP
 * call to the API caused carries the run's depth + 1. Events carry it as the CloudEvents extension
 * attributes `svcdepth` and `causationid`, requests as the headers below.
 */
export interface Causation {
  /** Runs in the chain that led here. */
  depth: number;
  /** The run whose call caused this, when one did. */
  id: string | null;
}

/** Request headers the `http` action sends and the API reads. */
export const DEPTH_HEADER = 'svc-depth';
export const CAUSATION_HEADER = 'svc-causation-id';

/** Larger depths are refused as headers: no chain of runs is anywhere near as long. */
const MAX_HEADER_DEPTH = 1000;

/** The headers a request made for a run carries (none when it was not made for one). */
export function causationHeaders(causation: Causation | undefined): Record<string, string> {
  if (!causation) return {};
  return {
    [DEPTH_HEADER]: String(causation.depth),
    ...(causation.id ? { [CAUSATION_HEADER]: causation.id } : {}),
  };
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
