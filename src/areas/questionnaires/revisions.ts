import { applyPatch, diff } from './json-patch.js';
import {
  DIFFED_DOCUMENTS,
  type JsonObject,
  type QuestionnaireRevision,
  type RevisionDiffs,
  SNAPSHOT_ATTRIBUTES,
} from './records.js';
import type { QuestionnaireStatus } from './tables.js';

/**
 * What a revision records and a snapshot rebuilds: the scalar attributes and the four documents.
 * Every revision holds RFC 6902 patches from the state before the change to the state after it; the
 * state before the first revision is empty (`{}` everywhere), so replaying revisions 1..n in order
 * gives the state after the n-th change.
 */
export interface QuestionnaireState {
  name: string;
  description: string | null;
  folder_id: string | null;
  status: QuestionnaireStatus;
  deleted_at: string | null;
  payload: JsonObject;
  config: JsonObject;
  schedule_payload: JsonObject;
  metadata: JsonObject;
}

export function stateOf(q: QuestionnaireState): QuestionnaireState {
  return {
    name: q.name,
    description: q.description,
    folder_id: q.folder_id,
    status: q.status,
    deleted_at: q.deleted_at,
    payload: q.payload,
    config: q.config,
    schedule_payload: q.schedule_payload,
    metadata: q.metadata,
  };
}

function attributes(s: QuestionnaireState | undefined): JsonObject {
  if (!s) return {};
  return Object.fromEntries(SNAPSHOT_ATTRIBUTES.map((k) => [k, s[k]]));
}

/** The patches from `before` (undefined: nothing yet) to `after`. */
export function diffStates(before: QuestionnaireState | undefined, after: QuestionnaireState): RevisionDiffs {
  const out = { attributes: diff(attributes(before), attributes(after)) } as RevisionDiffs;
  for (const doc of DIFFED_DOCUMENTS) out[doc] = diff(before ? before[doc] : {}, after[doc]);
  return out;
}

export const isEmptyDiff = (d: RevisionDiffs): boolean => Object.values(d).every((ops) => ops.length === 0);

/** True when the change touches the questionnaire's content (payload, config or schedule), not only its description. */
export const changesContent = (d: RevisionDiffs): boolean =>
  d.payload.length > 0 || d.config.length > 0 || d.schedule_payload.length > 0;

/**
 * Replays revisions (ordered by sequence, starting at 1, without gaps) onto the empty state. Throws
 * when the history is not contiguous: a snapshot from a broken chain would be wrong, not partial.
 */
export function replay(revisions: readonly QuestionnaireRevision[]): QuestionnaireState {
  let attrs: JsonObject = {};
  const docs: Record<string, JsonObject> = Object.fromEntries(DIFFED_DOCUMENTS.map((d) => [d, {}]));
  // The state is built here and thrown away on failure, so patches apply in place (no copy per step).
  revisions.forEach((r, i) => {
    if (r.sequence !== i + 1) throw new Error(`revision history has a gap before sequence ${r.sequence}`);
    attrs = applyPatch(attrs, r.diffs.attributes, true);
    for (const doc of DIFFED_DOCUMENTS) docs[doc] = applyPatch(docs[doc]!, r.diffs[doc], true);
  });
  return { ...(attrs as unknown as QuestionnaireState), ...docs } as QuestionnaireState;
}
