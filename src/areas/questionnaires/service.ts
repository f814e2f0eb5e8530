import type { Static } from '@sinclair/typebox';
import type { Store, Tx } from '../../db/store.js';
import type { Principal } from '../../http/access.js';
import { AppError } from '../../http/errors.js';
import type { ListResult, Page } from '../../http/list.js';
import { type Clock, iso } from '../../lib/clock.js';
import type { EventPublisher } from '../events/publish.js';
import type { Access, CatalogueAccess, Viewer } from './access.js';
import { answersSchemaProblem } from './answers-schema.js';
import { createChangeWriter, questionnaireNotFound as notFound } from './changes.js';
import * as folderStore from './folder-store.js';
import { createHeldQuestionnaires, type Held } from './held.js';
import type { QuestionnaireFilters, RevisionFilters } from './questionnaire-store.js';
import * as questionnaireStore from './questionnaire-store.js';
import type { JsonObject, Questionnaire, QuestionnaireRevision } from './records.js';
import { changesContent, diffStates, type QuestionnaireState, replay, stateOf } from './revisions.js';
import type { Snapshot as SnapshotSchema } from './schemas.js';
import type { QuestionnaireStatus } from './tables.js';

export interface QuestionnaireServiceDeps {
  store: Store;
  clock: Clock;
  events: EventPublisher;
  access: Access;
}

export interface CreateQuestionnaireInput {
  name: string;
  description?: string | null;
  folder_id?: string | null;
  payload?: JsonObject;
  config?: JsonObject;
  schedule_payload?: JsonObject;
  metadata?: JsonObject;
}

export interface UpdateQuestionnaireInput extends Partial<CreateQuestionnaireInput> {
  /** Optimistic concurrency: the change applies only if the latest revision still has this sequence. */
  base_sequence?: number;
}

export interface ForkInput {
  name?: string;
  description?: string | null;
  /** Where the fork goes; default: the source's folder. null: the root. */
  folder_id?: string | null;
  /** Fork the state at this revision of the source instead of its current state. */
  revision_id?: string;
}

export type Snapshot = Static<typeof SnapshotSchema>;

/**
 * Lifecycle (docs/platform.md "States"): which status each action may start from, and
 * where it leads. Content (payload, config, schedule_payload) changes only in DRAFT: a published
 * questionnaire is what responders answer, so changing it means forking a new DRAFT.
 */
export const TRANSITIONS: Record<
  'publish' | 'archive',
  { from: QuestionnaireStatus[]; to: QuestionnaireStatus }
> = {
  publish: { from: ['DRAFT', 'ARCHIVED'], to: 'PUBLISHED' },
  archive: { from: ['DRAFT', 'PUBLISHED'], to: 'ARCHIVED' },
};

/** Questionnaires, their lifecycle and revisions (docs/platform.md), under the catalogue's permissions. */
export interface QuestionnaireService {
  /** The active questionnaire, for other areas (no permission narrowing); QUESTIONNAIRE.NOT_FOUND otherwise. */
  get(id: string): Promise<Questionnaire>;
  /** The active questionnaires among `ids`, in their order; missing or deleted ones left out. */
  getMany(ids: readonly string[]): Promise<Questionnaire[]>;
  /** For another area's write: the active questionnaires among `ids`, held until `tx` commits. */
  lockActive(tx: Tx, ids: readonly string[]): Promise<Questionnaire[]>;
  /** One active questionnaire held for another area's write, from memory when it can be (held.ts). */
  holdActive(tx: Tx, id: string, opts: { fresh: boolean }): Promise<Held>;
  /** Whether a transaction failed because a questionnaire `holdActive` remembered had changed. */
  changedWhileHeld(err: unknown): boolean;
  /** An active questionnaire as `principal` may see it. */
  getFor(principal: Principal, id: string): Promise<Questionnaire>;
  /** The permission rules as other areas apply them to records of questionnaires. */
  accessOf(principal: Pick<Principal, 'userId'>): Promise<CatalogueAccess>;
  list(
    principal: Principal,
    page: Page,
    filters: QuestionnaireFilters,
    deleted?: boolean,
  ): Promise<ListResult<Questionnaire>>;
  create(principal: Principal, input: CreateQuestionnaireInput): Promise<Questionnaire>;
  update(principal: Principal, id: string, input: UpdateQuestionnaireInput): Promise<Questionnaire>;
  publish(principal: Principal, id: string): Promise<Questionnaire>;
  archive(principal: Principal, id: string): Promise<Questionnaire>;
  remove(principal: Principal, id: string): Promise<Questionnaire>;
  restore(principal: Principal, id: string): Promise<Questionnaire>;
  fork(principal: Principal, id: string, input: ForkInput): Promise<Questionnaire>;
  listRevisions(
    principal: Principal,
    id: string,
    page: Page,
    filters: RevisionFilters,
  ): Promise<ListResult<QuestionnaireRevision>>;
  getRevision(principal: Principal, id: string, revisionId: string): Promise<QuestionnaireRevision>;
  /** The questionnaire's state as of a revision, replayed from its diffs. */
  snapshot(principal: Principal, id: string, revisionId: string): Promise<Snapshot>;
}

export function createQuestionnaireService(deps: QuestionnaireServiceDeps): QuestionnaireService {
  const { access, store } = deps;
  const now = () => iso(deps.clock.now());

  const { insertNew, change, requireTargetFolder } = createChangeWriter(deps);
  const held = createHeldQuestionnaires();

  /** An active questionnaire the viewer can see at `level` (else its 404, or 403 for a lower level). */
  async function visible(v: Viewer, id: string, level: 'VIEW' | 'EDIT' | 'MANAGE'): Promise<Questionnaire> {
    const q = await questionnaireStore.findQuestionnaire(store.db, id);
    if (!q) throw notFound(id);
    await access.requireQuestionnaire(v, q, level);
    return q;
  }

  async function transition(principal: Principal, id: string, action: 'publish' | 'archive') {
    const v = await access.viewer(principal);
    await visible(v, id, 'MANAGE');
    const rule = TRANSITIONS[action];
    return change(v, id, { deleted: false }, async (current) => {
      if (!rule.from.includes(current.status)) {
        throw new AppError(
          'QUESTIONNAIRE.INVALID_STATE',
          `Cannot ${action} a ${current.status} questionnaire (allowed from ${rule.from.join(', ')})`,
          { questionnaire_id: id, status: current.status, allowed_from: rule.from },
        );
      }
      const problem = action === 'publish' ? answersSchemaProblem(current.payload) : null;
      if (problem) {
        // Content is frozen once published: a schema that cannot validate would refuse every submission.
        throw new AppError(
          'QUESTIONNAIRE.ANSWERS_SCHEMA_INVALID',
          `Cannot publish: payload.answers_schema cannot validate answers (${problem})`,
          { questionnaire_id: id },
        );
      }
      const at = now();
      return {
        operation: action === 'publish' ? 'PUBLISH' : 'ARCHIVE',
        state: { ...stateOf(current), status: rule.to },
        columns:
          action === 'publish'
            ? { published_at: at, published_by: v.userId, archived_at: null }
            : { archived_at: at },
      };
    });
  }

  return {
    /**
     * The active questionnaire (for other areas: enrollments, submissions). No permission narrowing:
     * callers apply their own rules. Throws QUESTIONNAIRE.NOT_FOUND for a missing or deleted one.
     */
    async get(id: string): Promise<Questionnaire> {
      const q = await questionnaireStore.findQuestionnaire(store.db, id);
      if (!q) throw notFound(id);
      return q;
    },

    /** The active questionnaires among `ids`, in the order of `ids` (missing or deleted ones left out). */
    async getMany(ids: readonly string[]): Promise<Questionnaire[]> {
      const found = new Map(
        (await questionnaireStore.findQuestionnaires(store.db, ids)).map((q) => [q.id, q]),
      );
      const seen = new Set<string>();
      const out: Questionnaire[] = [];
      for (const id of ids) {
        const q = found.get(id);
        if (q && !seen.has(id)) {
          seen.add(id);
          out.push(q);
        }
      }
      return out;
    },

    /**
     * For another area's write (a submission, an enrollment): the active questionnaires among `ids`
     * read inside its transaction `tx` and held until it commits (PostgreSQL FOR SHARE; SQLite
     * serialises write transactions), so a check made on their status still holds when the write
     * commits: a concurrent publish, archive or delete either committed before (and is seen) or waits.
     * No permission narrowing. Missing or deleted ones are left out.
     */
    async lockActive(tx: Tx, ids: readonly string[]): Promise<Questionnaire[]> {
      return questionnaireStore.lockActiveQuestionnaires(tx, ids);
    },

    holdActive: held.holdActive,
    changedWhileHeld: held.changedWhileHeld,

    /** An active questionnaire as `principal` may see it (permission rules applied). */
    async getFor(principal: Principal, id: string): Promise<Questionnaire> {
      return visible(await access.viewer(principal), id, 'VIEW');
    },

    /**
     * The permission rules as other areas apply them to records of questionnaires (enrollments,
     * submissions): a filter narrowing their lists in SQL, and levels for their checks, without N+1 queries.
     */
    async accessOf(principal: Pick<Principal, 'userId'>): Promise<CatalogueAccess> {
      const v = await access.viewer(principal);
      return {
        unrestricted: v.unrestricted,
        questionnaireFilter: access.questionnaireFilter(v),
        levels: (ids) => access.questionnaireLevels(v, ids),
      };
    },

    async list(principal: Principal, page: Page, filters: QuestionnaireFilters, deleted = false) {
      const v = await access.viewer(principal);
      return questionnaireStore.listQuestionnaires(store.db, page, filters, {
        deleted,
        visibleTo: access.visibleTo(v),
      });
    },

    async create(principal: Principal, input: CreateQuestionnaireInput): Promise<Questionnaire> {
      const v = await access.viewer(principal);
      const folderId = input.folder_id ?? null;
      if (folderId) await access.requireFolder(v, folderId, 'EDIT');
      return insertNew(
        v,
        {
          name: input.name,
          description: input.description ?? null,
          folder_id: folderId,
          payload: input.payload ?? {},
          config: input.config ?? {},
          schedule_payload: input.schedule_payload ?? {},
          metadata: input.metadata ?? {},
        },
        { forked_from_id: null, forked_from_sequence: null },
      );
    },

    async update(principal: Principal, id: string, input: UpdateQuestionnaireInput): Promise<Questionnaire> {
      const v = await access.viewer(principal);
      const existing = await visible(v, id, 'EDIT');
      // Moving takes MANAGE (it can change who inherits access) and EDIT on the destination folder.
      if (input.folder_id !== undefined && input.folder_id !== existing.folder_id) {
        await access.requireQuestionnaire(v, existing, 'MANAGE');
        if (input.folder_id) await access.requireFolder(v, input.folder_id, 'EDIT');
      }
      return change(v, id, { deleted: false }, async (current, tx) => {
        if (input.base_sequence !== undefined && input.base_sequence !== current.revision_sequence) {
          throw new AppError(
            'QUESTIONNAIRE.SEQUENCE_CONFLICT',
            `The questionnaire changed since revision ${input.base_sequence} (latest is ${current.revision_sequence})`,
            {
              questionnaire_id: id,
              base_sequence: input.base_sequence,
              revision_sequence: current.revision_sequence,
            },
          );
        }
        const before = stateOf(current);
        const state: QuestionnaireState = {
          ...before,
          name: input.name ?? before.name,
          description: input.description !== undefined ? input.description : before.description,
          folder_id: input.folder_id !== undefined ? input.folder_id : before.folder_id,
          payload: input.payload ?? before.payload,
          config: input.config ?? before.config,
          schedule_payload: input.schedule_payload ?? before.schedule_payload,
          metadata: input.metadata ?? before.metadata,
        };
        const diffs = diffStates(before, state);
        if (changesContent(diffs) && current.status !== 'DRAFT') {
          throw new AppError(
            'QUESTIONNAIRE.INVALID_STATE',
            `The content of a ${current.status} questionnaire cannot change; fork it to make a new DRAFT`,
            { questionnaire_id: id, status: current.status },
          );
        }
        if (state.folder_id && state.folder_id !== before.folder_id)
          await requireTargetFolder(tx, state.folder_id);
        return { operation: (d) => (changesContent(d) ? 'EDIT' : 'METADATA_EDIT'), state };
      });
    },

    publish: (principal: Principal, id: string) => transition(principal, id, 'publish'),
    archive: (principal: Principal, id: string) => transition(principal, id, 'archive'),

    async remove(principal: Principal, id: string): Promise<Questionnaire> {
      const v = await access.viewer(principal);
      await visible(v, id, 'MANAGE');
      return change(v, id, { deleted: false }, async (current) => ({
        operation: 'DELETE',
        state: { ...stateOf(current), deleted_at: now() },
      }));
    },

    /** Restores a deleted questionnaire into its folder, or into the root when that folder is gone. */
    async restore(principal: Principal, id: string): Promise<Questionnaire> {
      const v = await access.viewer(principal);
      const q = await questionnaireStore.findAnyQuestionnaire(store.db, id);
      if (!q) throw notFound(id);
      if (q.deleted_at === null) {
        throw new AppError('QUESTIONNAIRE.INVALID_STATE', 'The questionnaire is not deleted', {
          questionnaire_id: id,
        });
      }
      await access.requireQuestionnaire(v, q, 'MANAGE');
      return change(v, id, { deleted: true }, async (current, tx) => {
        const folderAlive = current.folder_id
          ? await folderStore.lockFolder(tx, current.folder_id, 'share')
          : undefined;
        return {
          operation: 'RESTORE',
          state: { ...stateOf(current), deleted_at: null, folder_id: folderAlive ? current.folder_id : null },
        };
      });
    },

    async fork(principal: Principal, id: string, input: ForkInput): Promise<Questionnaire> {
      const v = await access.viewer(principal);
      const source = await visible(v, id, 'VIEW');
      let from: QuestionnaireState = stateOf(source);
      let sequence = source.revision_sequence;
      if (input.revision_id) {
        const snap = await snapshotOf(source, input.revision_id);
        from = snap.state;
        sequence = snap.sequence;
      }
      const folderId = input.folder_id !== undefined ? input.folder_id : source.folder_id;
      if (folderId) await access.requireFolder(v, folderId, 'EDIT');
      return insertNew(
        v,
        {
          name: input.name ?? from.name,
          description: input.description !== undefined ? input.description : from.description,
          folder_id: folderId,
          payload: from.payload,
          config: from.config,
          schedule_payload: from.schedule_payload,
          metadata: from.metadata,
        },
        {
          lineage_root_id: source.lineage_root_id,
          forked_from_id: source.id,
          forked_from_sequence: sequence,
        },
      );
    },

    async listRevisions(principal: Principal, id: string, page: Page, filters: RevisionFilters) {
      await visible(await access.viewer(principal), id, 'VIEW');
      return questionnaireStore.listRevisions(store.db, id, page, filters);
    },

    async getRevision(principal: Principal, id: string, revisionId: string): Promise<QuestionnaireRevision> {
      await visible(await access.viewer(principal), id, 'VIEW');
      return requireRevision(id, revisionId);
    },

    async snapshot(principal: Principal, id: string, revisionId: string): Promise<Snapshot> {
      const q = await visible(await access.viewer(principal), id, 'VIEW');
      return snapshotOf(q, revisionId);
    },
  };

  async function requireRevision(
    questionnaireId: string,
    revisionId: string,
  ): Promise<QuestionnaireRevision> {
    const r = await questionnaireStore.findRevision(store.db, questionnaireId, revisionId);
    if (!r) {
      throw new AppError('QUESTIONNAIRE_REVISION_NOT_FOUND', 'Questionnaire revision not found', {
        questionnaire_id: questionnaireId,
        revision_id: revisionId,
      });
    }
    return r;
  }

  async function snapshotOf(q: Questionnaire, revisionId: string): Promise<Snapshot> {
    const r = await requireRevision(q.id, revisionId);
    const state = replay(await questionnaireStore.revisionsUpTo(store.db, q.id, r.sequence));
    return {
      questionnaire_id: q.id,
      revision_id: r.id,
      sequence: r.sequence,
      operation: r.operation,
      lineage_root_id: r.lineage_root_id,
      created_at: r.created_at,
      created_by: r.created_by,
      state,
    };
  }
}
