/**
 * What the submissions area adds to its events' data before anyone sees them, given to the events
 * area as its enricher (src/app/services.ts). Two callers, one function: the publisher (every event
 * written to the outbox, so runs and webhooks get it) and the workflow simulation (an event a user
 * pastes into POST /event_subscription/{id}/test), so a graph sees the same paths in both. Only the
 * submission events are enriched; it is idempotent (indices are rebuilt, not merged).
 */
import { isPlainObject } from '../../lib/objects.js';
export function enrichEventData<T>(type: string, data: T): T {
  return ENRICHED_TYPES.has(type) && isPlainObject(data) ? (enrichSubmissionData(data) as T) : data;
}

const ENRICHED_TYPES = new Set([
  'svc.submission.created',
  'svc.submission.anonymous_created',
  'svc.submission.updated',
]);

/**
 * Submission scoring enrichment (docs/events.md "Event types and sources"): when `data.answers.scoring` is an object,
 * add `variables_by_name` (from `scoring.variables`) and `functions_by_name` (from `scoring.functions`),
 * each keyed by the entries' `name`; the original structures stay as they are. Data without a scoring
 * block is returned unchanged. Pure: returns a new object and never mutates its input.
 *
 * `variables` / `functions` may be a list of entries or an object of entries (keyed by anything);
 * entries without a string `name` are left out of the index; with a repeated name the last one wins.
 */
export function enrichSubmissionData<T extends Record<string, unknown>>(data: T): T {
  const answers = data.answers;
  if (!isPlainObject(answers)) return data;
  const scoring = answers.scoring;
  if (!isPlainObject(scoring)) return data;
  return {
    ...data,
    answers: {
      ...answers,
      scoring: {
        ...scoring,
        variables_by_name: indexByName(scoring.variables),
        functions_by_name: indexByName(scoring.functions),
      },
    },
  };
}

function indexByName(entries: unknown): Record<string, unknown> {
  const list = Array.isArray(entries) ? entries : isPlainObject(entries) ? Object.values(entries) : [];
  const index = new Map<string, unknown>();
  for (const entry of list) {
    if (isPlainObject(entry) && typeof entry.name === 'string') index.set(entry.name, entry);
  }
  // fromEntries defines own properties, so a name like "__proto__" is a key, not a prototype.
  return Object.fromEntries(index);
}
