import type { Static } from '@sinclair/typebox';
import { auditInsert, auditUpdate, softDeleted } from '../../db/audit.js';
import type { Store, Tx } from '../../db/store.js';
import type { Principal } from '../../http/access.js';
import type { GuardedCollection } from '../../http/collection.js';
import { AppError } from '../../http/errors.js';
import type { Page } from '../../http/list.js';
import { type Clock, iso } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import { EVENT_SOURCES } from '../events/definitions.js';
import type { EventPublisher } from '../events/publish.js';
import type { Access, Viewer } from './access.js';
import type { FolderFilters } from './folder-store.js';
import * as folderStore from './folder-store.js';
import * as questionnaireStore from './questionnaire-store.js';
import { type Folder, type JsonObject, toFolder } from './records.js';
import type { TreeQuery as TreeQuerySchema } from './schemas.js';
import type { FolderTable, QuestionnaireStatus, QuestionnaireTable } from './tables.js';
import { MAX_FOLDER_DEPTH } from './visibility.js';

export interface FolderServiceDeps {
  store: Store;
  clock: Clock;
  events: EventPublisher;
  access: Access;
}

export interface CreateFolderInput {
  name: string;
  description?: string | null;
  parent_id?: string | null;
  config?: JsonObject;
}

export type UpdateFolderInput = Partial<CreateFolderInput>;

export type TreeQuery = Static<typeof TreeQuerySchema>;

/** A questionnaire as a tree node: without payload, schedule_payload and config (docs/platform.md "Folders"). */
export type TreeQuestionnaire = Omit<
  QuestionnaireTable,
  'payload' | 'config' | 'schedule_payload' | 'metadata'
> & {
  metadata: JsonObject;
};

export interface TreeNode extends Folder {
  children: TreeNode[];
  questionnaires?: TreeQuestionnaire[];
}

const notFound = (id: string) => new AppError('FOLDER.NOT_FOUND', 'Folder not found', { folder_id: id });

/** Keeps every tree at most MAX_FOLDER_DEPTH levels deep (walks up the tree rely on reaching a root). */
function assertDepth(deepestLevel: number): void {
  if (deepestLevel > MAX_FOLDER_DEPTH) {
    throw new AppError('FOLDER.TOO_DEEP', `Folders nest at most ${MAX_FOLDER_DEPTH} levels deep`, {
      max_depth: MAX_FOLDER_DEPTH,
      depth: deepestLevel,
    });
  }
}

/** Folders and the folder tree (docs/platform.md#folders). */
export interface FolderService
  extends GuardedCollection<Folder, CreateFolderInput, UpdateFolderInput, FolderFilters, Folder> {
  /** The folders the caller sees as a tree, optionally with their questionnaires. */
  tree(
    principal: Principal,
    q: TreeQuery,
  ): Promise<{ folders: TreeNode[]; questionnaires?: TreeQuestionnaire[] }>;
}

export function createFolderService(deps: FolderServiceDeps): FolderService {
  const { access, store, events } = deps;
  const now = () => iso(deps.clock.now());

  async function visible(v: Viewer, id: string, level: 'VIEW' | 'EDIT' | 'MANAGE'): Promise<Folder> {
    const f = await folderStore.findFolder(store.db, id);
    if (!f) throw notFound(id);
    await access.requireFolder(v, id, level);
    return f;
  }

  async function requireParent(tx: Tx, parentId: string): Promise<void> {
    if (!(await folderStore.lockFolder(tx, parentId, 'share'))) notFoundParent(parentId);
  }

  function notFoundParent(parentId: string): never {
    throw new AppError('FOLDER.NOT_FOUND', 'Parent folder not found', { parent_id: parentId });
  }

  async function publish(tx: Tx, v: Viewer, name: string, f: Folder, extra: Record<string, unknown> = {}) {
    await events.publish(tx, {
      type: `svc.folder.${name}`,
      source: EVENT_SOURCES.folder,
      subject: f.id,
      data: { folder_id: f.id, name: f.name, parent_id: f.parent_id, ...extra },
      causation: v.causation,
    });
  }

  return {
    async get(principal: Principal, id: string): Promise<Folder> {
      return visible(await access.viewer(principal), id, 'VIEW');
    },

    async list(principal: Principal, page: Page, filters: FolderFilters) {
      const v = await access.viewer(principal);
      return folderStore.listFolders(store.db, page, filters, access.visibleTo(v));
    },

    async create(principal: Principal, input: CreateFolderInput): Promise<Folder> {
      const v = await access.viewer(principal);
      const parentId = input.parent_id ?? null;
      if (parentId) {
        if (!(await folderStore.findFolder(store.db, parentId))) notFoundParent(parentId);
        await access.requireFolder(v, parentId, 'EDIT');
      }
      return store.transaction(async (tx) => {
        if (parentId) {
          await requireParent(tx, parentId);
          assertDepth((await folderStore.folderChain(tx.db, parentId)).length + 1);
        }
        const at = now();
        const row: FolderTable = {
          id: newId(),
          name: input.name,
          description: input.description ?? null,
          parent_id: parentId,
          config: JSON.stringify(input.config ?? {}),
          created_by: v.userId,
          ...auditInsert(at, v.userId),
        };
        await folderStore.insertFolder(tx, row);
        await access.grantCreator(tx, v, { kind: 'folder', id: row.id }, at);
        const folder = toFolder(row);
        await publish(tx, v, 'created', folder);
        return folder;
      });
    },

    async update(principal: Principal, id: string, input: UpdateFolderInput): Promise<Folder> {
      const v = await access.viewer(principal);
      const existing = await visible(v, id, 'EDIT');
      const moving = input.parent_id !== undefined && input.parent_id !== existing.parent_id;
      if (moving) {
        // A move can change who inherits access below it: MANAGE here, EDIT on the destination.
        await access.requireFolder(v, id, 'MANAGE');
        if (input.parent_id) {
          if (!(await folderStore.findFolder(store.db, input.parent_id))) notFoundParent(input.parent_id);
          await access.requireFolder(v, input.parent_id, 'EDIT');
        }
      }
      return store.transaction(async (tx) => {
        if (moving) await folderStore.serialiseFolderMoves(tx);
        const row = await folderStore.lockFolder(tx, id, 'update');
        if (!row) throw notFound(id);
        const next: FolderTable = {
          ...row,
          name: input.name ?? row.name,
          description: input.description !== undefined ? input.description : row.description,
          parent_id: input.parent_id !== undefined ? input.parent_id : row.parent_id,
          config: input.config !== undefined ? JSON.stringify(input.config) : row.config,
        };
        if (next.parent_id && next.parent_id !== row.parent_id) {
          await requireParent(tx, next.parent_id);
          const above = await folderStore.folderChain(tx.db, next.parent_id);
          if (above.some((f) => f.id === id)) {
            throw new AppError(
              'FOLDER.CYCLE',
              'A folder cannot move under itself or one of its descendants',
              {
                folder_id: id,
                parent_id: next.parent_id,
              },
            );
          }
          // Its deepest descendant lands `height` levels below the new parent.
          assertDepth(above.length + (await folderStore.subtreeHeight(tx.db, id)));
        }
        const changed = (['name', 'description', 'parent_id', 'config'] as const).filter(
          (k) => next[k] !== row[k],
        );
        if (changed.length === 0) return toFolder(row);
        const at = now();
        const changes = {
          ...Object.fromEntries(changed.map((k) => [k, next[k]])),
          ...auditUpdate(at, v.userId),
        };
        if (!(await folderStore.updateFolder(tx, id, changes))) throw notFound(id);
        const folder = toFolder({ ...next, ...auditUpdate(at, v.userId) });
        await publish(tx, v, 'updated', folder, {
          changed_fields: changed,
          ...(changed.includes('parent_id') ? { previous_parent_id: row.parent_id } : {}),
        });
        return folder;
      });
    },

    /** Soft-deletes an empty folder (no active subfolders or questionnaires: FOLDER.NOT_EMPTY). */
    async remove(principal: Principal, id: string): Promise<Folder> {
      const v = await access.viewer(principal);
      await visible(v, id, 'MANAGE');
      return store.transaction(async (tx) => {
        const row = await folderStore.lockFolder(tx, id, 'update');
        if (!row) throw notFound(id);
        const contents = await folderStore.countFolderContents(tx, id);
        if (contents.folders > 0 || contents.questionnaires > 0) {
          throw new AppError(
            'FOLDER.NOT_EMPTY',
            'Only an empty folder can be deleted: move or delete its subfolders and questionnaires first',
            { folder_id: id, ...contents },
          );
        }
        const at = now();
        if (!(await folderStore.updateFolder(tx, id, softDeleted(at, v.userId)))) throw notFound(id);
        const folder = toFolder({ ...row, ...softDeleted(at, v.userId) });
        await publish(tx, v, 'deleted', folder, { deleted_at: at });
        return folder;
      });
    },

    /**
     * The folder tree the caller can see. For a restricted caller, a visible folder whose parent is
     * not visible is a root of the answer (its parent_id still names the real parent).
     */
    async tree(
      principal: Principal,
      q: TreeQuery,
    ): Promise<{ folders: TreeNode[]; questionnaires?: TreeQuestionnaire[] }> {
      const v = await access.viewer(principal);
      const visibleTo = access.visibleTo(v);
      if (q.root_id) await visible(v, q.root_id, 'VIEW');
      const folders = await folderStore.foldersForTree(store.db, visibleTo);
      const nodes = new Map<string, TreeNode>(folders.map((f) => [f.id, { ...f, children: [] }]));
      if (q.include_questionnaires) for (const n of nodes.values()) n.questionnaires = [];
      const roots: TreeNode[] = [];
      for (const n of nodes.values()) {
        const parent = n.parent_id ? nodes.get(n.parent_id) : undefined;
        if (parent) parent.children.push(n);
        else roots.push(n);
      }
      let rootQuestionnaires: TreeQuestionnaire[] | undefined;
      if (q.include_questionnaires) {
        rootQuestionnaires = [];
        const statuses: QuestionnaireStatus[] = q.questionnaire_status_id
          ? [q.questionnaire_status_id]
          : q.include_archived
            ? ['DRAFT', 'PUBLISHED', 'ARCHIVED']
            : ['DRAFT', 'PUBLISHED'];
        for (const row of await questionnaireStore.questionnairesForTree(store.db, { statuses, visibleTo })) {
          const node: TreeQuestionnaire = { ...row, metadata: JSON.parse(row.metadata) };
          const folder = row.folder_id ? nodes.get(row.folder_id) : undefined;
          if (folder) folder.questionnaires!.push(node);
          else rootQuestionnaires.push(node);
        }
      }
      if (q.root_id) {
        const root = nodes.get(q.root_id)!;
        return q.include_questionnaires ? { folders: [root], questionnaires: [] } : { folders: [root] };
      }
      return rootQuestionnaires ? { folders: roots, questionnaires: rootQuestionnaires } : { folders: roots };
    },
  };
}
