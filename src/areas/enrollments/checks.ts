import type { Tx } from '../../db/store.js';
import { AppError, validationError } from '../../http/errors.js';
import { atLeast } from '../questionnaires/access.js';
import {
  loadQuestionnaires,
  type QuestionnaireLookup,
  type QuestionnaireRecord,
  type RecordAccess,
} from './questionnaire-lookup.js';
import { allowedTargets } from './transitions.js';

/** The checks an enrollment write makes before and inside its transaction, and the errors they raise. */

export function checkWindow(startsAt: string | null | undefined, endsAt: string | null | undefined) {
  if (startsAt && endsAt && endsAt <= startsAt) {
    throw validationError('ends_at must be after starts_at', { field: 'ends_at', in: 'body' });
  }
}

const questionnairesMissing = (ids: string[]) =>
  new AppError('QUESTIONNAIRE.NOT_FOUND', `Questionnaire not found: ${ids.join(', ')}`, {
    questionnaire_ids: ids,
  });

/** Refuses the ids among `ids` naming an archived questionnaire of `found`. */
function refuseArchived(ids: string[], found: Map<string, QuestionnaireRecord>): void {
  const archived = ids.filter((id) => found.get(id)?.status === 'ARCHIVED');
  if (archived.length > 0) {
    throw new AppError('QUESTIONNAIRE.INVALID_STATE', 'Cannot enroll into an archived questionnaire', {
      questionnaire_ids: archived,
    });
  }
}

/**
 * Every id must name an active questionnaire the provider may see (one they cannot see is reported
 * like a missing one), on which it holds EDIT, and that is not archived. Two queries for any number
 * of ids (the questionnaires, then the caller's levels on them). Runs before the write, so a bad
 * request takes no write lock; the state part is checked again inside the write (`recheckQuestionnaires`).
 */
export async function checkQuestionnaires(
  questionnaires: QuestionnaireLookup,
  ids: string[],
  access: RecordAccess,
): Promise<void> {
  const [found, levels] = await Promise.all([loadQuestionnaires(questionnaires, ids), access.levels(ids)]);
  const missing = ids.filter((id) => !found.has(id) || levels.get(id) === null);
  if (missing.length > 0) throw questionnairesMissing(missing);
  const short = ids.filter((id) => !atLeast(levels.get(id) ?? null, 'EDIT'));
  if (short.length > 0) {
    throw new AppError('PERMISSION.DENIED', 'Enrolling into a questionnaire needs EDIT permission on it', {
      questionnaire_ids: short,
      required_level: 'EDIT',
      level: 'VIEW',
    });
  }
  refuseArchived(ids, found);
}

/**
 * The questionnaires' state checked again inside the write transaction, on rows held until it
 * commits (`lockActive`): an archive or delete that committed after `checkQuestionnaires` is refused
 * here instead of being enrolled into, and one still in flight waits for this write. Called before
 * the enrollment row is written, so locks are always taken questionnaires first, then the enrollment
 * (as submissions do).
 */
export async function recheckQuestionnaires(
  questionnaires: QuestionnaireLookup,
  tx: Tx,
  ids: string[],
): Promise<void> {
  const found = new Map((await questionnaires.lockActive(tx, ids)).map((q) => [q.id, q]));
  const missing = ids.filter((id) => !found.has(id));
  if (missing.length > 0) throw questionnairesMissing(missing);
  refuseArchived(ids, found);
}

export function alreadyEnrolled(
  conflicts: Array<{ questionnaire_id: string; enrollment_id: string }>,
): AppError {
  return new AppError(
    'ENROLLMENT.ALREADY_ENROLLED',
    'The user already has an open enrollment for these questionnaires',
    { conflicts },
  );
}

export function invalidTransition(from: string, to: string, actor: 'provider' | 'responder'): AppError {
  return new AppError('ENROLLMENT.INVALID_TRANSITION', `Cannot change an enrollment from ${from} to ${to}`, {
    from,
    to,
    allowed: allowedTargets(from, actor),
  });
}
