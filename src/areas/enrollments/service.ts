import type { Static } from '@sinclair/typebox';
import { auditInsert, auditUpdate, softDeleted } from '../../db/audit.js';
import { isUniqueViolation } from '../../db/errors.js';
import type { Store, Tx } from '../../db/store.js';
import type { Principal } from '../../http/access.js';
import type { GuardedCollection } from '../../http/collection.js';
import { AppError } from '../../http/errors.js';
import type { ListResult, Page } from '../../http/list.js';
import { type Clock, iso } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import {
  alreadyEnrolled,
  checkQuestionnaires,
  checkWindow,
  invalidTransition,
  recheckQuestionnaires,
} from './checks.js';
import { type QuestionnaireLookup, requireRecordAccess, visibleRecords } from './questionnaire-lookup.js';
import { type EnrolledUser, enrolledUsers, fetchOwn, type OwnEnrollment } from './reads.js';
import type { ConsentBody, CreateEnrollmentBody, UpdateEnrollmentBody } from './schemas.js';
import {
  closeQuestionnaires,
  type Enrollment,
  type EnrollmentFilters,
  findEnrollment,
  insertEnrollment,
  jsonText,
  listEnrollments,
  lockEnrollment,
  openConflicts,
  replaceQuestionnaires,
  updateEnrollment,
} from './store.js';
import type { EnrollmentTable } from './tables.js';
import { canTransition, type EnrollmentStatus, isOpen } from './transitions.js';

/** What enrollments need of identity: the user record (throws USER.NOT_FOUND). */
export interface UserLookup {
  getUser(id: string): Promise<{ id: string; email: string; name: string | null }>;
  getUsers(ids: string[]): Promise<Array<{ id: string; email: string; name: string | null }>>;
}

export interface EnrollmentDeps {
  store: Store;
  clock: Clock;
  identity: UserLookup;
  questionnaires: QuestionnaireLookup;
}

/** The bodies of POST, PATCH /enrollment and POST /enrollment/consent, as their schemas declare them. */
export type CreateEnrollmentInput = Static<typeof CreateEnrollmentBody>;
export type UpdateEnrollmentInput = Static<typeof UpdateEnrollmentBody>;
export type ConsentInput = Static<typeof ConsentBody>;

/** A questionnaire as a responder receives it with their enrollment. */

const norm = (v: string | null | undefined) =>
  v === null || v === undefined ? v : new Date(v).toISOString();

/**
 * Enrollments: a provider enrolls a responder into questionnaires; the responder consents, declines or
 * withdraws; the provider completes or terminates. Every status change goes through TRANSITIONS with a
 * compare-and-set on the current status, so two concurrent changes cannot both apply.
 */

export interface EnrollmentService
  extends GuardedCollection<
    Enrollment,
    CreateEnrollmentInput,
    UpdateEnrollmentInput,
    EnrollmentFilters,
    void
  > {
  /** The responder records (or withdraws) consent on their own enrollment. */
  consent(userId: string, input: ConsentInput): Promise<Enrollment>;
  enrolledUsers(
    principal: Principal,
    page: Page,
    filters: EnrollmentFilters,
  ): Promise<ListResult<EnrolledUser>>;
  fetchOwn(
    userId: string,
    page: Page,
    filters: { status?: EnrollmentStatus },
  ): Promise<ListResult<OwnEnrollment>>;
  /** Inside a submission's transaction: the enrollment is open and covers the questionnaire (else 4xx). */
  assertAcceptsSubmission(
    tx: Tx,
    enrollmentId: string,
    userId: string,
    questionnaireId: string,
  ): Promise<void>;
}

export function createEnrollmentService(deps: EnrollmentDeps): EnrollmentService {
  const { store, clock } = deps;
  const now = () => iso(clock.now());

  const notFound = () => new AppError('ENROLLMENT.NOT_FOUND', 'Enrollment not found');

  async function require(id: string): Promise<Enrollment> {
    const e = await findEnrollment(store.db, id);
    if (!e) throw notFound();
    return e;
  }

  /**
   * An enrollment as the caller may see (VIEW: at least one of its questionnaires visible) or change
   * (EDIT on every one of them). Hidden is 404 like a missing one; visible at too low a level, 403.
   * docs/platform.md "Enrollments".
   */
  async function requireFor(principal: Principal, id: string, need: 'VIEW' | 'EDIT') {
    const [access, e] = await Promise.all([
      deps.questionnaires.accessOf(principal),
      findEnrollment(store.db, id),
    ]);
    if (!e) throw notFound();
    await requireRecordAccess(access, e.questionnaire_ids, need, {
      what: 'enrollment',
      details: { enrollment_id: id },
      notFound,
    });
    return { access, enrollment: e };
  }

  /** Runs a write; a unique violation on the open-enrollment index becomes ALREADY_ENROLLED. */
  async function writeGuarded<T>(userId: string, ids: string[], fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      if (!isUniqueViolation(err)) throw err;
      throw alreadyEnrolled(await openConflicts(store.db, userId, ids));
    }
  }

  async function create(principal: Principal, input: CreateEnrollmentInput): Promise<Enrollment> {
    const actorId = principal.userId;
    const startsAt = norm(input.starts_at) ?? null;
    const endsAt = norm(input.ends_at) ?? null;
    checkWindow(startsAt, endsAt);
    await deps.identity.getUser(input.user_id);
    await checkQuestionnaires(
      deps.questionnaires,
      input.questionnaire_ids,
      await deps.questionnaires.accessOf(principal),
    );
    const conflicts = await openConflicts(store.db, input.user_id, input.questionnaire_ids);
    if (conflicts.length > 0) throw alreadyEnrolled(conflicts);
    const consentRequired = input.consent_required ?? true;
    const at = now();
    const row: EnrollmentTable = {
      id: newId(),
      user_id: input.user_id,
      status: consentRequired ? 'PENDING_CONSENT' : 'ENROLLED',
      consent_required: consentRequired ? 1 : 0,
      consent_version: input.consent_version ?? null,
      consented_at: null,
      starts_at: startsAt,
      ends_at: endsAt,
      schedule: jsonText(input.schedule),
      metadata: jsonText(input.metadata),
      status_reason: null,
      status_changed_at: at,
      created_by: actorId,
      ...auditInsert(at, actorId),
    };
    await writeGuarded(input.user_id, input.questionnaire_ids, () =>
      store.transaction(async (tx) => {
        await recheckQuestionnaires(deps.questionnaires, tx, input.questionnaire_ids);
        await insertEnrollment(tx.db, row, input.questionnaire_ids, true);
      }),
    );
    return require(row.id);
  }

  async function update(principal: Principal, id: string, input: UpdateEnrollmentInput): Promise<Enrollment> {
    const actorId = principal.userId;
    const { access, enrollment: current } = await requireFor(principal, id, 'EDIT');
    const from = current.status;
    const to = input.status ?? from;
    const statusChanges = to !== from;
    if (statusChanges && !canTransition(from, to, 'provider')) throw invalidTransition(from, to, 'provider');
    const { status: _s, status_reason: _r, ...other } = input;
    if (!statusChanges && Object.keys(other).length === 0 && input.status_reason === undefined)
      return current;
    if (!isOpen(from) && (Object.keys(other).length > 0 || input.status_reason !== undefined)) {
      throw new AppError('ENROLLMENT.CLOSED', `The enrollment is ${from} and can no longer be changed`, {
        status: from,
      });
    }
    const reconsent = statusChanges && to === 'PENDING_CONSENT';
    if (input.consent_version !== undefined && to !== 'PENDING_CONSENT') {
      throw new AppError(
        'ENROLLMENT.INVALID_TRANSITION',
        'consent_version can change only while consent is pending; set status PENDING_CONSENT to ask for consent again',
        { from, to, field: 'consent_version' },
      );
    }
    const startsAt = input.starts_at === undefined ? current.starts_at : (norm(input.starts_at) ?? null);
    const endsAt = input.ends_at === undefined ? current.ends_at : (norm(input.ends_at) ?? null);
    checkWindow(startsAt, endsAt);
    const ids = input.questionnaire_ids;
    if (ids) {
      await checkQuestionnaires(deps.questionnaires, ids, access);
      const conflicts = await openConflicts(store.db, current.user_id, ids, id);
      if (conflicts.length > 0) throw alreadyEnrolled(conflicts);
    }
    const at = now();
    const changes: Partial<EnrollmentTable> = auditUpdate(at, actorId);
    if (input.starts_at !== undefined) changes.starts_at = startsAt;
    if (input.ends_at !== undefined) changes.ends_at = endsAt;
    if (input.schedule !== undefined) changes.schedule = jsonText(input.schedule);
    if (input.metadata !== undefined) changes.metadata = jsonText(input.metadata);
    if (input.consent_version !== undefined) changes.consent_version = input.consent_version;
    if (input.status_reason !== undefined) changes.status_reason = input.status_reason;
    if (statusChanges) {
      changes.status = to;
      changes.status_changed_at = at;
      if (input.status_reason === undefined) changes.status_reason = null;
      if (reconsent) {
        changes.consent_required = 1;
        changes.consented_at = null;
      }
    }
    await writeGuarded(current.user_id, ids ?? [], () =>
      store.transaction(async (tx) => {
        if (ids) await recheckQuestionnaires(deps.questionnaires, tx, ids);
        // Compare-and-set on the status read above: a concurrent change makes this one fail cleanly.
        const applied = await updateEnrollment(tx.db, id, changes, from);
        if (!applied) throw await staleError(tx.db, id, from, to);
        if (ids) await replaceQuestionnaires(tx.db, current, ids, isOpen(to));
        else if (!isOpen(to)) await closeQuestionnaires(tx.db, id);
      }),
    );
    return require(id);
  }

  /** Why a compare-and-set found nothing: deleted meanwhile (404) or moved on (409 from its new status). */
  async function staleError(db: Tx['db'], id: string, from: string, to: string): Promise<AppError> {
    const latest = await findEnrollment(db, id);
    if (!latest) return new AppError('ENROLLMENT.NOT_FOUND', 'Enrollment not found');
    return new AppError(
      'ENROLLMENT.INVALID_TRANSITION',
      `The enrollment changed from ${from} to ${latest.status} meanwhile; cannot move it to ${to}`,
      { from: latest.status, to },
    );
  }

  async function remove(principal: Principal, id: string): Promise<void> {
    const actorId = principal.userId;
    await requireFor(principal, id, 'EDIT');
    const at = now();
    await store.transaction(async (tx) => {
      const applied = await updateEnrollment(tx.db, id, softDeleted(at, actorId));
      if (!applied) throw notFound();
      await closeQuestionnaires(tx.db, id);
    });
  }

  /**
   * The responder's answer to their own enrollment. consent true: PENDING_CONSENT -> ENROLLED (the
   * consent_version must match when the enrollment names one). consent false: declines a pending
   * enrollment or withdraws from an active one (-> TERMINATED_BY_PATIENT). Repeating the answer that
   * produced the current status returns the enrollment unchanged (safe client retries).
   */
  async function consent(userId: string, input: ConsentInput): Promise<Enrollment> {
    const current = await findEnrollment(store.db, input.enrollment_id);
    // Another user's enrollment gets the same 404 as a missing one.
    if (!current || current.user_id !== userId)
      throw new AppError('ENROLLMENT.NOT_FOUND', 'Enrollment not found');
    const from = current.status;
    const to: EnrollmentStatus = input.consent ? 'ENROLLED' : 'TERMINATED_BY_PATIENT';
    if (from === to) return current;
    if (!canTransition(from, to, 'responder')) throw invalidTransition(from, to, 'responder');
    const at = now();
    const changes: Partial<EnrollmentTable> = {
      status: to,
      status_changed_at: at,
      status_reason: input.reason ?? null,
      ...auditUpdate(at, userId),
    };
    if (input.consent) {
      if (current.consent_version !== null && input.consent_version !== current.consent_version) {
        throw new AppError(
          'ENROLLMENT.CONSENT_VERSION_MISMATCH',
          'Consent must be given to the current consent document version',
          { expected: current.consent_version, given: input.consent_version ?? null },
        );
      }
      if (current.ends_at !== null && current.ends_at <= at) {
        throw new AppError('ENROLLMENT.NOT_ACTIVE', 'The enrollment period has ended', {
          ends_at: current.ends_at,
        });
      }
      changes.consented_at = at;
    }
    await store.transaction(async (tx) => {
      const applied = await updateEnrollment(tx.db, current.id, changes, from);
      if (!applied) throw await staleError(tx.db, current.id, from, to);
      if (!isOpen(to)) await closeQuestionnaires(tx.db, current.id);
    });
    return require(current.id);
  }

  /**
   * For submissions, inside the submission's write transaction `tx`: the enrollment must be the
   * user's, ENROLLED, within its window, and include the questionnaire. The enrollment is read with its
   * row held until `tx` ends (PostgreSQL FOR SHARE), so a termination, a change of its questionnaires or
   * a delete either committed before (and refuses the submission) or waits until it has committed.
   * Returns nothing; throws ENROLLMENT.NOT_FOUND or ENROLLMENT.NOT_ACTIVE.
   */
  async function assertAcceptsSubmission(
    tx: Tx,
    enrollmentId: string,
    userId: string,
    questionnaireId: string,
  ) {
    const e = await lockEnrollment(tx, enrollmentId);
    if (!e || e.user_id !== userId) throw new AppError('ENROLLMENT.NOT_FOUND', 'Enrollment not found');
    const at = now();
    const reason =
      e.status !== 'ENROLLED'
        ? `the enrollment is ${e.status}`
        : !e.questionnaire_ids.includes(questionnaireId)
          ? 'the questionnaire is not part of the enrollment'
          : e.starts_at !== null && at < e.starts_at
            ? 'the enrollment period has not started'
            : e.ends_at !== null && at >= e.ends_at
              ? 'the enrollment period has ended'
              : null;
    if (reason) {
      throw new AppError('ENROLLMENT.NOT_ACTIVE', `Cannot submit under this enrollment: ${reason}`, {
        enrollment_id: e.id,
        status: e.status,
      });
    }
  }

  return {
    get: async (principal, id) => (await requireFor(principal, id, 'VIEW')).enrollment,
    list: async (principal, page, filters) =>
      listEnrollments(store.db, page, filters, await visibleRecords(deps.questionnaires, principal)),
    create,
    update,
    remove,
    consent,
    enrolledUsers: (principal, page, filters) => enrolledUsers(deps, principal, page, filters),
    fetchOwn: (userId, page, filters) => fetchOwn(deps, userId, page, filters),
    assertAcceptsSubmission,
  };
}
