import type { Store } from '../../db/store.js';
import type { Principal } from '../../http/access.js';
import type { ListResult, Page } from '../../http/list.js';
import type { QuestionnaireLookup } from './questionnaire-lookup.js';
import { loadQuestionnaires, type QuestionnaireRecord, visibleRecords } from './questionnaire-lookup.js';
import {
  type EnrolledUserRow,
  type Enrollment,
  type EnrollmentFilters,
  listEnrolledUsers,
  listEnrollments,
} from './store.js';
import type { EnrollmentStatus } from './transitions.js';

/** The enrollment lists that join other areas' records: users with their enrollments, a responder's own. */

export type EnrollmentQuestionnaire = Pick<
  QuestionnaireRecord,
  'id' | 'name' | 'status' | 'description' | 'payload' | 'config' | 'schedule_payload' | 'updated_at'
>;

/** A user with matching enrollments: counts and latest status (store), email and name (identity). */
export type EnrolledUser = EnrolledUserRow & { email: string | null; name: string | null };

/** A responder's own enrollment with its questionnaires (content only once published). */
export type OwnEnrollment = Enrollment & { questionnaires: EnrollmentQuestionnaire[] };

interface ReadDeps {
  store: Store;
  questionnaires: QuestionnaireLookup;
  identity: { getUsers(ids: string[]): Promise<Array<{ id: string; email: string; name: string | null }>> };
}

/** Users with matching enrollments, with their counts and latest status, enriched with email and name. */
export async function enrolledUsers(
  deps: ReadDeps,
  principal: Principal,
  page: Page,
  filters: EnrollmentFilters,
): Promise<ListResult<EnrolledUser>> {
  const visible = await visibleRecords(deps.questionnaires, principal);
  const result = await listEnrolledUsers(deps.store.db, page, filters, visible);
  const users = new Map(
    (await deps.identity.getUsers(result.items.map((r) => r.user_id))).map((u) => [u.id, u]),
  );
  const items = result.items.map((row) => {
    const user = users.get(row.user_id);
    return { ...row, email: user?.email ?? null, name: user?.name ?? null };
  });
  return { items, total: result.total };
}

/** The responder's own enrollments, each with its questionnaires (active ones only). */
export async function fetchOwn(
  deps: Omit<ReadDeps, 'identity'>,
  userId: string,
  page: Page,
  filters: { status?: EnrollmentStatus },
): Promise<ListResult<OwnEnrollment>> {
  // The caller's own enrollments: not narrowed by permissions.
  const result = await listEnrollments(
    deps.store.db,
    page,
    { user_id: userId, status: filters.status },
    'all',
  );
  const found = await loadQuestionnaires(
    deps.questionnaires,
    result.items.flatMap((e) => e.questionnaire_ids),
  );
  const items = result.items.map((e) => ({
    ...e,
    questionnaires: e.questionnaire_ids
      .map((qid) => found.get(qid))
      .filter((q): q is QuestionnaireRecord => q !== undefined)
      .map((q): EnrollmentQuestionnaire => {
        // Content only once published: a responder never sees a draft or an archived form.
        const live = q.status === 'PUBLISHED';
        return {
          id: q.id,
          name: q.name,
          status: q.status,
          description: q.description ?? null,
          payload: live ? (q.payload ?? null) : null,
          config: live ? (q.config ?? null) : null,
          schedule_payload: live ? (q.schedule_payload ?? null) : null,
          updated_at: q.updated_at,
        };
      }),
  }));
  return { items, total: result.total };
}
