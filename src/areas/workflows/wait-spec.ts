import { createHash } from 'node:crypto';
import type { CloudEvent } from '../events/cloudevent.js';
import { describeThrown } from './jsonlogic.js';
import { eventContext } from './run-state.js';

/**
 * What a WAIT_EVENT waits on (docs/workflows.md "WAIT_EVENT"), as the run side and the event side
 * both compute it: a spec (event type + the event-side expression, the same digest in every graph
 * and process) and a key, so that a waiting node and an event meet on one indexed string,
 * `<spec id>:<key as JSON>`. Keys are compared as JSON: 42 and "42" differ.
 */
export interface WaitSpec {
  id: string;
  eventType: string;
  /** correlation.event as JSON text; null: no correlation, the next event of the type. */
  expression: string | null;
}

export function waitSpecOf(config: Record<string, unknown> | null): WaitSpec {
  const eventType = String(config?.event_type ?? '');
  const correlation = config?.correlation as { event?: unknown } | undefined;
  const expression = correlation ? JSON.stringify(correlation.event) : null;
  const id = createHash('sha256')
    .update(JSON.stringify([eventType, expression]))
    .digest('base64url')
    .slice(0, 22);
  return { id, eventType, expression };
}

/** Why a correlation value cannot be a key (undefined: it can): a string, a finite number or a boolean. */
export function keyProblem(value: unknown): string | undefined {
  if (typeof value === 'string' || typeof value === 'boolean') return undefined;
  if (typeof value === 'number' && Number.isFinite(value)) return undefined;
  const got = value === undefined || value === null ? 'null (the value is missing)' : JSON.stringify(value);
  return `a correlation key must be a string, a number or a boolean, not ${got}`;
}

/** The key a waiting node is found by; `value` undefined: a wait without correlation. */
export function waitKey(specId: string, value?: unknown): string {
  return `${specId}:${value === undefined ? '' : JSON.stringify(value)}`;
}

/**
 * The key an event brings for a spec, or undefined when it brings none: its expression failed or
 * gave no usable key (`problem` says why, for the log).
 */
export function eventWaitKey(
  spec: WaitSpec,
  evaluate: ((context: unknown) => unknown) | null,
  event: CloudEvent,
): { key?: string; problem?: string } {
  if (event.type !== spec.eventType) return {};
  if (evaluate === null) return { key: waitKey(spec.id) };
  let value: unknown;
  try {
    value = evaluate({ event: eventContext(event), nodes: {} });
  } catch (err) {
    return { problem: `correlation.event failed: ${describeThrown(err)}` };
  }
  const problem = keyProblem(value);
  return problem ? { problem: `correlation.event: ${problem}` } : { key: waitKey(spec.id, value) };
}
