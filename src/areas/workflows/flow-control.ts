import { type Static, Type } from '@sinclair/typebox';
import { JsonObject } from '../../http/schemas.js';
import type { CloudEvent } from '../events/cloudevent.js';
import { type CompiledCache, describeThrown } from './jsonlogic.js';
import { eventContext } from './run-state.js';

/**
 * A subscription's flow control (docs/workflows.md "Flow control"): how its runs are shaped. The
 * shapes are declared here, where the engine applies them; the subscriptions area carries them.
 */

const DAY_MS = 86_400_000;
/** No throttle or rate limit period is longer: window entries older than this count for nothing. */
export const FLOW_WINDOW_KEPT_MS = DAY_MS;

const Key = Type.Optional(
  Type.Union([JsonObject, Type.Null()], {
    description:
      'JSONLogic on the trigger event (the condition context: `event.*`); runs whose values are equal share the limit. Without it the whole subscription shares one.',
  }),
);
const Limit = Type.Integer({ minimum: 1, maximum: 100_000 });
const Period = Type.Integer({ minimum: 1, maximum: DAY_MS, description: 'Milliseconds, at most one day.' });

export const FlowControl = Type.Object(
  {
    concurrency: Type.Optional(
      Type.Object(
        { limit: Limit, key: Key },
        {
          additionalProperties: false,
          description:
            'At most `limit` runs with the same key are running at once; the others wait in order.',
        },
      ),
    ),
    throttle: Type.Optional(
      Type.Object(
        { limit: Limit, period_ms: Period, key: Key },
        {
          additionalProperties: false,
          description:
            'At most `limit` runs with the same key start in any `period_ms` (a sliding window); the others wait their turn.',
        },
      ),
    ),
    rate_limit: Type.Optional(
      Type.Object(
        { limit: Limit, period_ms: Period, key: Key },
        {
          additionalProperties: false,
          description:
            'At most `limit` runs with the same key per `period_ms`; an event over it leaves a `skipped` run saying so.',
        },
      ),
    ),
    debounce: Type.Optional(
      Type.Object(
        {
          period_ms: Period,
          key: Key,
          max_wait_ms: Type.Optional(
            Type.Integer({
              minimum: 1,
              maximum: 7 * DAY_MS,
              description: 'The longest a run waits under a steady stream, from the first event folded in.',
            }),
          ),
        },
        {
          additionalProperties: false,
          description:
            'Events with the same key less than `period_ms` apart make one run, on the last of them, `period_ms` after it.',
        },
      ),
    ),
    priority: Type.Optional(
      Type.Union([JsonObject, Type.Integer({ minimum: -100, maximum: 100 })], {
        description:
          'JSONLogic on the trigger event (or a constant) giving an integer -100..100 (default 0): among waiting runs, higher starts first.',
      }),
    ),
  },
  { additionalProperties: false },
);
export type FlowControl = Static<typeof FlowControl>;

export type FlowPart = 'concurrency' | 'throttle' | 'rate_limit' | 'debounce';
export const FLOW_PARTS: readonly FlowPart[] = ['concurrency', 'throttle', 'rate_limit', 'debounce'];

/** Why a run waits (its `pending_reason`). */
export type PendingReason = 'concurrency' | 'throttle' | 'debounce';

/** The key every run shares when a part has no `key`, and the text a key value is stored as. */
export const SHARED_KEY = '';

/** A key value as stored: scalars by their JSON text, so 1 and "1" stay apart. */
function keyText(value: unknown): string {
  if (value === undefined) return 'null';
  return JSON.stringify(value);
}

/** A key that cannot be evaluated or is not a scalar: the run does not start (docs: "Flow control"). */
export class FlowKeyError extends Error {}

/**
 * The value of `part`'s key for `event`: SHARED_KEY without one, else the JSON text of a scalar
 * (null included). Throws FlowKeyError when it fails or yields an object or array.
 */
export function flowKey(cache: CompiledCache, flow: FlowControl, part: FlowPart, event: CloudEvent): string {
  const key = flow[part]?.key;
  if (key === undefined || key === null) return SHARED_KEY;
  let value: unknown;
  try {
    value = cache.get(key, `flow_control.${part}.key`)({ event: eventContext(event), nodes: {} });
  } catch (err) {
    throw new FlowKeyError(`flow_control.${part}.key failed: ${describeThrown(err)}`);
  }
  if (value !== null && typeof value === 'object')
    throw new FlowKeyError(
      `flow_control.${part}.key gave ${Array.isArray(value) ? 'an array' : 'an object'}; a key must be a string, number, boolean or null`,
    );
  return keyText(value);
}

/**
 * The run's priority: the expression's value as an integer clamped to -100..100; 0 without one or
 * when it fails or is not a number (the caller logs `problem`).
 */
export function flowPriority(
  cache: CompiledCache,
  flow: FlowControl,
  event: CloudEvent,
): { priority: number; problem?: string } {
  const p = flow.priority;
  if (p === undefined) return { priority: 0 };
  if (typeof p === 'number') return { priority: p };
  let value: unknown;
  try {
    value = cache.get(p, 'flow_control.priority')({ event: eventContext(event), nodes: {} });
  } catch (err) {
    return { priority: 0, problem: `flow_control.priority failed: ${describeThrown(err)}` };
  }
  const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isFinite(n))
    return { priority: 0, problem: `flow_control.priority gave ${JSON.stringify(value)}, not a number` };
  return { priority: Math.max(-100, Math.min(100, Math.round(n))) };
}

/** Whether a flow control holds anything back (an empty object does not). */
export const shapesRuns = (flow: FlowControl | null | undefined): flow is FlowControl =>
  flow !== null &&
  flow !== undefined &&
  (flow.concurrency !== undefined ||
    flow.throttle !== undefined ||
    flow.rate_limit !== undefined ||
    flow.debounce !== undefined);

/** A run's flow-control fields when nothing holds it back (every run of a subscription without one). */
export const NO_FLOW = {
  pending_reason: null,
  flow_key: null,
  concurrency_key: null,
  flow_deadline: null,
  debounced_events: null,
  priority: 0,
} as const;
