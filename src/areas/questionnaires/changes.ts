import { auditInsert, auditUpdate } from '../../db/audit.js';
import type { Store, Tx } from '../../db/store.js';
import { AppError } from '../../http/errors.js';
import { type Clock, iso } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import { EVENT_SOURCES } from '../events/definitions.js';
import type { EventPublisher } from '../events/publish.js';
import type { Access, Viewer } from './access.js';
import * as folderStore from './folder-store.js';
import * as questionnaireStore from './questionnaire-store.js';
import { type Questionnaire, type QuestionnaireRevision, toQuestionnaire } from './records.js';
import { diffStates, isEmptyDiff, type QuestionnaireState, stateOf } from './revisions.js';
import type { QuestionnaireTable, RevisionOperation } from './tables.js';

const EVENT_OF: Record<RevisionOperation, string> = {
  EDIT: 'svc.questionnaire.updated',
  METADATA_EDIT: 'svc.questionnaire.updated',
  PUBLISH: 'svc.questionnaire.published',
  ARCHIVE: 'svc.questionnaire.archived',
  DELETE: 'svc.questionnaire.deleted',
  RESTORE: 'svc.questionnaire.restored',
  FORK: 'svc.questionnaire.created',
};

/** The event of a change; the first revision of a questionnaire (EDIT or FORK) is its creation. */
const eventOf = (operation: RevisionOperation, sequence: number): string =>
  sequence === 1 ? 'svc.questionnaire.created' : EVENT_OF[operation];

export const questionnaireNotFound = (id: string) =>
  new AppError('QUESTIONNAIRE.NOT_FOUND', 'Questionnaire not found', { questionnaire_id: id });

/**
 * How every questionnaire change is written: the row, its revision (the diff from the state before)
 * and its event in one transaction, the row locked while the change is computed. The service's
 * operations (create, update, publish, archive, delete, restore, fork) are all one of these two.
 */
export function createChangeWriter(deps: {
  store: Store;
  clock: Clock;
  events: EventPublisher;
  access: Access;
}) {
  const { access, store, events } = deps;
  const now = () => iso(deps.clock.now());

  /** Writes the revision of a change from `before` to `after` and its event, inside `tx`. */
  async function record(
    tx: Tx,
    q: Pick<Questionnaire, 'id' | 'lineage_root_id' | 'forked_from_id'>,
    sequence: number,
    operation: RevisionOperation,
    before: QuestionnaireState | undefined,
    after: QuestionnaireState,
    v: Viewer,
    at: string,
  ): Promise<QuestionnaireRevision> {
    const actor = v.userId;
    const revision: QuestionnaireRevision = {
      id: newId(),
      questionnaire_id: q.id,
      sequence,
      operation,
      lineage_root_id: q.lineage_root_id,
      status: after.status,
      diffs: diffStates(before, after),
      created_at: at,
      created_by: actor,
    };
    await questionnaireStore.insertRevision(tx, { ...revision, diffs: JSON.stringify(revision.diffs) });
    await events.publish(tx, {
      type: eventOf(operation, sequence),
      source: EVENT_SOURCES.questionnaire,
      subject: q.id,
      data: {
        questionnaire_id: q.id,
        name: after.name,
        status: after.status,
        folder_id: after.folder_id,
        revision_id: revision.id,
        sequence,
        operation,
        lineage_root_id: q.lineage_root_id,
        ...(operation === 'FORK' ? { forked_from_id: q.forked_from_id } : {}),
        ...(operation === 'DELETE' ? { deleted_at: after.deleted_at } : {}),
      },
      causation: v.causation,
    });
    return revision;
  }

  async function requireTargetFolder(tx: Tx, folderId: string): Promise<void> {
    if (!(await folderStore.lockFolder(tx, folderId, 'share'))) {
      throw new AppError('FOLDER.NOT_FOUND', 'Folder not found', { folder_id: folderId });
    }
  }

  /** Inserts a new questionnaire with its first revision (EDIT, or FORK for a fork). */
  async function insertNew(
    v: Viewer,
    state: Omit<QuestionnaireState, 'status' | 'deleted_at'>,
    lineage: { lineage_root_id?: string; forked_from_id: string | null; forked_from_sequence: number | null },
  ): Promise<Questionnaire> {
    return store.transaction(async (tx) => {
      if (state.folder_id) await requireTargetFolder(tx, state.folder_id);
      const at = now();
      const id = newId();
      const row: QuestionnaireTable = {
        id,
        name: state.name,
        description: state.description,
        folder_id: state.folder_id,
        status: 'DRAFT',
        payload: JSON.stringify(state.payload),
        config: JSON.stringify(state.config),
        schedule_payload: JSON.stringify(state.schedule_payload),
        metadata: JSON.stringify(state.metadata),
        lineage_root_id: lineage.lineage_root_id ?? id,
        forked_from_id: lineage.forked_from_id,
        forked_from_sequence: lineage.forked_from_sequence,
        revision_sequence: 1,
        published_at: null,
        published_by: null,
        archived_at: null,
        created_by: v.userId,
        ...auditInsert(at, v.userId),
      };
      await questionnaireStore.insertQuestionnaire(tx, row);
      const q = toQuestionnaire(row);
      await record(tx, q, 1, lineage.forked_from_id ? 'FORK' : 'EDIT', undefined, stateOf(q), v, at);
      await access.grantCreator(tx, v, { kind: 'questionnaire', id }, at);
      return q;
    });
  }

  /**
   * One change of an existing questionnaire: lock its row, let `change` compute the new state and
   * the row's other columns (or throw), then write the row, the revision and the event together.
   * A change that alters nothing writes nothing (no revision, no event).
   */
  async function change(
    v: Viewer,
    id: string,
    opts: { deleted: boolean },
    compute: (
      current: Questionnaire,
      tx: Tx,
    ) => Promise<{
      operation: RevisionOperation | ((diffs: ReturnType<typeof diffStates>) => RevisionOperation);
      state: QuestionnaireState;
      columns?: Partial<QuestionnaireTable>;
    }>,
  ): Promise<Questionnaire> {
    return store.transaction(async (tx) => {
      const row = await questionnaireStore.lockQuestionnaire(tx, id);
      if (!row || (row.deleted_at !== null) !== opts.deleted) throw questionnaireNotFound(id);
      const current = toQuestionnaire(row);
      const { operation, state, columns } = await compute(current, tx);
      const before = stateOf(current);
      const diffs = diffStates(before, state);
      if (isEmptyDiff(diffs)) return current;
      const at = now();
      const sequence = current.revision_sequence + 1;
      const op = typeof operation === 'function' ? operation(diffs) : operation;
      const changes: Partial<QuestionnaireTable> = {
        name: state.name,
        description: state.description,
        folder_id: state.folder_id,
        status: state.status,
        deleted_at: state.deleted_at,
        payload: JSON.stringify(state.payload),
        config: JSON.stringify(state.config),
        schedule_payload: JSON.stringify(state.schedule_payload),
        metadata: JSON.stringify(state.metadata),
        revision_sequence: sequence,
        ...auditUpdate(at, v.userId),
        ...columns,
      };
      await questionnaireStore.updateQuestionnaire(tx, id, changes);
      await record(tx, current, sequence, op, before, state, v, at);
      return toQuestionnaire({ ...row, ...changes } as QuestionnaireTable);
    });
  }

  return { insertNew, change, requireTargetFolder };
}
