import { auditInsert, auditUpdate, softDeleted } from '../../db/audit.js';
import type { Store, Tx } from '../../db/store.js';
import type { Principal } from '../../http/access.js';
import { AppError } from '../../http/errors.js';
import type { ListResult, Page } from '../../http/list.js';
import { type Clock, iso } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import {
  type QuestionnaireLookup,
  type QuestionnaireRecord,
  requireRecordAccess,
  visibleRecords,
} from '../enrollments/questionnaire-lookup.js';
import type { EnrollmentService } from '../enrollments/service.js';
import { EVENT_SOURCES } from '../events/definitions.js';
import type { EventPublisher } from '../events/publish.js';
import { validateAnswers } from '../questionnaires/answers-schema.js';
import {
  findSubmission,
  hasActiveSubmission,
  insertSubmission,
  listSubmissions,
  lockRespondent,
  type Submission,
  type SubmissionFilters,
  toSubmission,
  updateSubmission,
} from './store.js';
import type { QuestionnaireSubmissionTable } from './tables.js';

export interface SubmissionDeps {
  store: Store;
  clock: Clock;
  events: EventPublisher;
  questionnaires: QuestionnaireLookup;
  enrollments: Pick<EnrollmentService, 'assertAcceptsSubmission'>;
  /** The questionnaire's effective config (docs/platform.md "Config"), read inside the write. */
  settings: { effectiveConfig(tx: Tx, q: QuestionnaireRecord): Promise<Record<string, unknown>> };
}

export interface SubmitInput {
  questionnaire_id: string;
  answers: Record<string, unknown>;
  enrollment_id?: string;
  metadata?: Record<string, unknown> | null;
}

export interface AmendInput {
  answers?: Record<string, unknown>;
  metadata?: Record<string, unknown> | null;
}

const SOURCE = EVENT_SOURCES.submission;

/**
 * Submissions of questionnaire answers. A submission needs a PUBLISHED questionnaire and answers that
 * satisfy its `payload.answers_schema` (questionnaires/answers-schema.ts). Every write publishes its event in the same
 * transaction (docs/events.md "Event types and sources"), with `data.answers` enriched by the scoring re-index.
 *
 * A new submission's preconditions (questionnaire PUBLISHED, answers valid against its current
 * revision, enrollment ENROLLED) are checked inside the insert's transaction on rows held until it
 * commits (the questionnaires' and enrollments' services lock them, questionnaire first): a concurrent
 * archive, delete or enrollment termination either committed before and refuses the submission, or
 * waits until the submission has committed. Nothing can slip between the check and the insert.
 */
export interface SubmissionService {
  /** A submission as `principal` may see it (404 when it cannot). */
  get(principal: Principal, id: string): Promise<Submission>;
  /** Submissions `principal` may see, filtered; the total counts those only. */
  list(principal: Principal, page: Page, filters: SubmissionFilters): Promise<ListResult<Submission>>;
  /** A responder's submission under their enrollment. */
  submit(principal: Principal, input: SubmitInput): Promise<Submission>;
  /** A submission without an enrollment, stored without its author. */
  submitAnonymous(principal: Principal, input: Omit<SubmitInput, 'enrollment_id'>): Promise<Submission>;
  amend(principal: Principal, id: string, input: AmendInput): Promise<Submission>;
  remove(principal: Principal, id: string): Promise<void>;
}

export function createSubmissionService(deps: SubmissionDeps): SubmissionService {
  const { store, clock, events } = deps;
  const now = () => iso(clock.now());

  /**
   * The questionnaire to answer, held inside the submission's transaction; PUBLISHED only. From the
   * questionnaires area's memory unless `fresh` (its `holdActive`): `onRemembered` is told so.
   */
  async function publishedQuestionnaire(
    tx: Tx,
    id: string,
    fresh: boolean,
    onRemembered: () => void,
  ): Promise<QuestionnaireRecord> {
    const { questionnaire: q, remembered } = await deps.questionnaires.holdActive(tx, id, { fresh });
    if (remembered) onRemembered();
    if (!q)
      throw new AppError('QUESTIONNAIRE.NOT_FOUND', 'Questionnaire not found', { questionnaire_id: id });
    if (q.status !== 'PUBLISHED') {
      throw new AppError(
        'QUESTIONNAIRE.INVALID_STATE',
        `Questionnaire is ${q.status}; only PUBLISHED ones take submissions`,
        {
          questionnaire_id: id,
          status: q.status,
        },
      );
    }
    return q;
  }

  const notFound = () => new AppError('SUBMISSION.NOT_FOUND', 'Submission not found');

  async function require(id: string): Promise<Submission> {
    const s = await findSubmission(store.db, id);
    if (!s) throw notFound();
    return s;
  }

  /**
   * A submission as the caller may see (VIEW on its questionnaire) or change (EDIT on it). Hidden is
   * 404 like a missing one; visible at too low a level, 403. docs/platform.md "Submissions".
   */
  async function requireFor(principal: Principal, id: string, need: 'VIEW' | 'EDIT'): Promise<Submission> {
    const [access, s] = await Promise.all([
      deps.questionnaires.accessOf(principal),
      findSubmission(store.db, id),
    ]);
    if (!s) throw notFound();
    await requireRecordAccess(access, [s.questionnaire_id], need, {
      what: 'submission',
      details: { submission_id: id },
      notFound,
    });
    return s;
  }

  async function insert(
    tx: Tx,
    principal: Principal,
    row: QuestionnaireSubmissionTable,
    type: string,
    data: Record<string, unknown>,
  ) {
    await insertSubmission(tx.db, row);
    await events.publish(tx, {
      type,
      source: SOURCE,
      subject: row.id,
      data,
      causation: principal.causation,
    });
  }

  /** `allow_multiple_submissions: false` (the default): one active submission per respondent. */
  async function assertMaySubmitAgain(tx: Tx, q: QuestionnaireRecord, userId: string): Promise<void> {
    const config = await deps.settings.effectiveConfig(tx, q);
    if (config.allow_multiple_submissions === true) return;
    await lockRespondent(tx, q.id, userId);
    if (await hasActiveSubmission(tx.db, q.id, userId)) {
      throw new AppError(
        'SUBMISSION.ALREADY_SUBMITTED',
        'You have already submitted this questionnaire; its config does not allow multiple submissions',
        { questionnaire_id: q.id, setting: 'allow_multiple_submissions' },
      );
    }
  }

  /** The row of a new submission; an anonymous one records no respondent and no enrollment. */
  function newRow(
    id: string,
    q: QuestionnaireRecord,
    principal: Principal,
    input: Omit<SubmitInput, 'enrollment_id'> & { enrollment_id?: string },
    { anonymous }: { anonymous: boolean },
  ): QuestionnaireSubmissionTable {
    return {
      id,
      questionnaire_id: q.id,
      questionnaire_revision: q.revision_sequence ?? null,
      user_id: anonymous ? null : principal.userId,
      enrollment_id: anonymous ? null : (input.enrollment_id ?? null),
      is_anonymous: anonymous ? 1 : 0,
      answers: JSON.stringify(input.answers),
      metadata: input.metadata ? JSON.stringify(input.metadata) : null,
      api_key_id: principal.apiKeyId ?? null,
      created_by: principal.userId,
      ...auditInsert(now(), principal.userId),
    };
  }

  /** A signed-in user's submission (an API key counts as its creator, docs/identity.md "API keys"). */
  const submit = (principal: Principal, input: SubmitInput) => create(principal, input, false);
  /** An anonymous submission through an API key: no respondent recorded, the key and its creator are. */
  const submitAnonymous = (principal: Principal, input: Omit<SubmitInput, 'enrollment_id'>) =>
    create(principal, input, true);

  /**
   * A new submission and its event, in one transaction. When the questionnaire came from memory, a
   * refusal made on it (it may be out of date) or the hold finding it changed is not the answer: the
   * transaction runs once more on the row as it is now, with the same id.
   */
  async function create(principal: Principal, input: SubmitInput, anonymous: boolean): Promise<Submission> {
    const id = newId();
    let remembered = false;
    const once = (fresh: boolean) =>
      createOnce(principal, input, anonymous, id, fresh, () => {
        remembered = true;
      });
    try {
      return await once(false);
    } catch (err) {
      const onMemory = deps.questionnaires.changedWhileHeld(err) || (remembered && err instanceof AppError);
      if (!onMemory) throw err;
      return once(true);
    }
  }

  async function createOnce(
    principal: Principal,
    input: SubmitInput,
    anonymous: boolean,
    id: string,
    fresh: boolean,
    onRemembered: () => void,
  ): Promise<Submission> {
    const row = await store.transaction(async (tx) => {
      const q = await publishedQuestionnaire(tx, input.questionnaire_id, fresh, onRemembered);
      validateAnswers(q, input.answers);
      if (!anonymous) {
        if (input.enrollment_id !== undefined) {
          await deps.enrollments.assertAcceptsSubmission(tx, input.enrollment_id, principal.userId, q.id);
        }
        await assertMaySubmitAgain(tx, q, principal.userId);
      }
      const row = newRow(id, q, principal, input, { anonymous });
      const about = {
        submission_id: id,
        questionnaire_id: q.id,
        questionnaire_revision: row.questionnaire_revision,
      };
      // An anonymous submission's event names the key; a user's names the user and the enrollment.
      const [type, data] = anonymous
        ? [
            'svc.submission.anonymous_created',
            { ...about, api_key_id: row.api_key_id, answers: input.answers },
          ]
        : [
            'svc.submission.created',
            { ...about, user_id: principal.userId, enrollment_id: row.enrollment_id, answers: input.answers },
          ];
      await insert(tx, principal, row, type, data);
      return row;
    });
    // The row as written: every column is stored as given, so there is nothing to read back.
    return toSubmission(row);
  }

  /**
   * A correction by staff (questionnaire:write). New answers are validated against the
   * questionnaire as it is now (any status; a deleted questionnaire no longer constrains them), and
   * questionnaire_revision moves to the revision they were checked against.
   */
  async function amend(principal: Principal, id: string, input: AmendInput): Promise<Submission> {
    const actorId = principal.userId;
    const current = await requireFor(principal, id, 'EDIT');
    const at = now();
    const changes: Partial<QuestionnaireSubmissionTable> = auditUpdate(at, actorId);
    const changed: string[] = [];
    if (input.answers !== undefined) {
      const q = await deps.questionnaires.get(current.questionnaire_id).catch((err) => {
        if (err instanceof AppError && err.code === 'QUESTIONNAIRE.NOT_FOUND') return null;
        throw err;
      });
      if (q) {
        validateAnswers(q, input.answers);
        changes.questionnaire_revision = q.revision_sequence ?? current.questionnaire_revision;
      }
      changes.answers = JSON.stringify(input.answers);
      changed.push('answers');
    }
    if (input.metadata !== undefined) {
      changes.metadata = input.metadata === null ? null : JSON.stringify(input.metadata);
      changed.push('metadata');
    }
    await changeAndPublish(principal, current, changes, 'svc.submission.updated', {
      changed_fields: changed,
      answers: input.answers ?? current.answers,
    });
    return require(id);
  }

  async function remove(principal: Principal, id: string): Promise<void> {
    const actorId = principal.userId;
    const current = await requireFor(principal, id, 'EDIT');
    const at = now();
    await changeAndPublish(principal, current, softDeleted(at, actorId), 'svc.submission.deleted', {
      deleted_at: at,
    });
  }

  /**
   * Writes `changes` to a submission that is still there (404 when it went meanwhile) and publishes
   * `type` with the submission's identity and `extra`, in one transaction.
   */
  async function changeAndPublish(
    principal: Principal,
    current: Submission,
    changes: Parameters<typeof updateSubmission>[2],
    type: 'svc.submission.updated' | 'svc.submission.deleted',
    extra: Record<string, unknown>,
  ): Promise<void> {
    const id = current.id;
    await store.transaction(async (tx) => {
      if (!(await updateSubmission(tx.db, id, changes))) {
        throw new AppError('SUBMISSION.NOT_FOUND', 'Submission not found');
      }
      await events.publish(tx, {
        type,
        source: SOURCE,
        subject: id,
        data: {
          submission_id: id,
          questionnaire_id: current.questionnaire_id,
          user_id: current.user_id,
          enrollment_id: current.enrollment_id,
          is_anonymous: current.is_anonymous,
          ...extra,
        },
        causation: principal.causation,
      });
    });
  }

  const get = (principal: Principal, id: string) => requireFor(principal, id, 'VIEW');
  const list = async (principal: Principal, page: Page, filters: SubmissionFilters) =>
    listSubmissions(store.db, page, filters, await visibleRecords(deps.questionnaires, principal));
  return { get, list, submit, submitAnonymous, amend, remove };
}
