import type { CloudEvent } from '../events/cloudevent.js';
import { type CompiledCache, describeThrown, truthy } from './jsonlogic.js';
import { eventContext } from './run-state.js';

/**
 * The routing rules (docs/workflows.md "Routing"), the one place they live: would the router take `event` for
 * `sub`, and if not, every reason why (the router, simulation, replay). `failure` is set when the
 * condition could not be evaluated (the router logs it; retrying would not help).
 */
export function routingOf(
  expressions: CompiledCache,
  sub: {
    source_filter: string | null;
    subject_filter: string | null;
    condition_jsonlogic: unknown;
    event_type: string;
    enabled: boolean;
  },
  event: CloudEvent,
) {
  const reasons: string[] = [];
  let failure: string | undefined;
  if (!sub.enabled) reasons.push('the subscription is disabled');
  if (sub.event_type !== event.type) reasons.push(`event type "${event.type}" is not "${sub.event_type}"`);
  if (sub.source_filter !== null && sub.source_filter !== event.source)
    reasons.push('source_filter does not match');
  if (sub.subject_filter !== null && sub.subject_filter !== (event.subject ?? null))
    reasons.push('subject_filter does not match');
  if (sub.condition_jsonlogic !== null) {
    try {
      const fn = expressions.get(sub.condition_jsonlogic, 'condition_jsonlogic');
      if (!truthy(fn({ event: eventContext(event), nodes: {} })))
        reasons.push('condition_jsonlogic is false');
    } catch (err) {
      failure = describeThrown(err);
      reasons.push(`condition_jsonlogic failed: ${failure}`);
    }
  }
  return { matched: reasons.length === 0, reasons, failure };
}
