import { auditInsert, auditUpdate, softDeleted } from '../../db/audit.js';
import { isUniqueViolation } from '../../db/errors.js';
import type { Store } from '../../db/store.js';
import type { Principal } from '../../http/access.js';
import type { GuardedCollection } from '../../http/collection.js';
import { AppError } from '../../http/errors.js';
import type { ListResult, Page } from '../../http/list.js';
import { type Clock, iso } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import { type Access, atLeast, type Viewer } from './access.js';
import * as folderStore from './folder-store.js';
import type { PermissionFilters } from './permission-store.js';
import * as permissionStore from './permission-store.js';
import * as questionnaireStore from './questionnaire-store.js';
import type { FolderPermission, QuestionnairePermission } from './records.js';
import type { GranteeType, PermissionLevel } from './tables.js';

/** What this area needs of identity to check a grantee exists (throws USER.NOT_FOUND / ROLE.NOT_FOUND). */
export interface GranteeLookup {
  getUser(id: string): Promise<unknown>;
  getRole(id: string): Promise<unknown>;
}

export interface PermissionServiceDeps {
  store: Store;
  clock: Clock;
  access: Access;
  identity: GranteeLookup;
}

export interface GrantInput {
  user_id?: string;
  role_id?: string;
  level: PermissionLevel;
}

type ObjectKind = 'folder' | 'questionnaire';
type PermissionOf<K extends ObjectKind> = K extends 'folder' ? FolderPermission : QuestionnairePermission;

/**
 * Grants on folders and questionnaires. Managing the grants of an object takes MANAGE on it (an
 * unrestricted caller always has it); a restricted caller lists only grants of objects it can see.
 */
/** The grants of one kind of object (folders or questionnaires). A grant is created on its object. */
export interface GrantService<P>
  extends Omit<GuardedCollection<P, GrantInput, { level: PermissionLevel }, PermissionFilters, P>, 'create'> {
  create(principal: Principal, objectId: string, input: GrantInput): Promise<P>;
}

/** Folder and questionnaire grants (docs/platform.md#permissions). */
export interface PermissionService {
  folder: GrantService<FolderPermission>;
  questionnaire: GrantService<QuestionnairePermission>;
}

export function createPermissionService(deps: PermissionServiceDeps): PermissionService {
  const { access, store } = deps;
  const now = () => iso(deps.clock.now());

  const permissionNotFound = (id: string) =>
    new AppError('PERMISSION.NOT_FOUND', 'Permission not found', { permission_id: id });

  /**
   * The caller's level on an active object; undefined when the object does not exist or is deleted.
   * (null: it exists but the caller cannot see it.)
   */
  async function levelOn(
    kind: ObjectKind,
    v: Viewer,
    objectId: string,
  ): Promise<PermissionLevel | null | undefined> {
    if (kind === 'folder')
      return (await folderStore.findFolder(store.db, objectId)) ? access.folderLevel(v, objectId) : undefined;
    const q = await questionnaireStore.findQuestionnaire(store.db, objectId);
    return q ? access.questionnaireLevel(v, q) : undefined;
  }

  /** Managing grants takes MANAGE on their object; an invisible or missing object is its own 404. */
  async function requireManage(kind: ObjectKind, v: Viewer, objectId: string): Promise<void> {
    const level = await levelOn(kind, v, objectId);
    if (level === undefined || level === null) {
      throw kind === 'folder'
        ? new AppError('FOLDER.NOT_FOUND', 'Folder not found', { folder_id: objectId })
        : new AppError('QUESTIONNAIRE.NOT_FOUND', 'Questionnaire not found', { questionnaire_id: objectId });
    }
    if (!atLeast(level, 'MANAGE')) {
      throw new AppError(
        'PERMISSION.DENIED',
        `Managing the grants of this ${kind} needs MANAGE; you have ${level}`,
        {
          [`${kind}_id`]: objectId,
          required_level: 'MANAGE',
          level,
        },
      );
    }
  }

  async function granteeOf(input: {
    user_id?: string;
    role_id?: string;
  }): Promise<{ type: GranteeType; id: string }> {
    if ((input.user_id === undefined) === (input.role_id === undefined)) {
      throw new AppError('VALIDATION_ERROR', 'Give exactly one of user_id and role_id', {
        field: input.user_id === undefined ? 'user_id' : 'role_id',
      });
    }
    if (input.user_id !== undefined) {
      await deps.identity.getUser(input.user_id);
      return { type: 'USER', id: input.user_id };
    }
    await deps.identity.getRole(input.role_id!);
    return { type: 'ROLE', id: input.role_id! };
  }

  async function find<K extends ObjectKind>(kind: K, id: string): Promise<PermissionOf<K>> {
    const p =
      kind === 'folder'
        ? await permissionStore.findFolderPermission(store.db, id)
        : await permissionStore.findQuestionnairePermission(store.db, id);
    if (!p) throw permissionNotFound(id);
    return p as PermissionOf<K>;
  }

  const objectIdOf = (kind: ObjectKind, p: FolderPermission | QuestionnairePermission): string =>
    kind === 'folder' ? (p as FolderPermission).folder_id : (p as QuestionnairePermission).questionnaire_id;

  /** A grant the caller may see: its object is visible to them (else the grant's 404). */
  async function visibleGrant<K extends ObjectKind>(
    kind: K,
    v: Viewer,
    id: string,
  ): Promise<PermissionOf<K>> {
    const p = await find(kind, id);
    const level = await levelOn(kind, v, objectIdOf(kind, p));
    if (level === undefined || level === null) throw permissionNotFound(id);
    return p;
  }

  function forKind<K extends ObjectKind>(kind: K): GrantService<PermissionOf<K>> {
    const field = `${kind}_id` as const;
    return {
      async list(principal: Principal, page: Page, filters: PermissionFilters) {
        const v = await access.viewer(principal);
        const visibleTo = access.visibleTo(v);
        return (
          kind === 'folder'
            ? permissionStore.listFolderPermissions(store.db, page, filters, visibleTo)
            : permissionStore.listQuestionnairePermissions(store.db, page, filters, visibleTo)
        ) as Promise<ListResult<PermissionOf<K>>>;
      },

      get: async (principal: Principal, id: string) => visibleGrant(kind, await access.viewer(principal), id),

      async create(principal: Principal, objectId: string, input: GrantInput): Promise<PermissionOf<K>> {
        await requireManage(kind, await access.viewer(principal), objectId);
        const grantee = await granteeOf(input);
        const at = now();
        const row = {
          id: newId(),
          grantee_type: grantee.type,
          grantee_id: grantee.id,
          level: input.level,
          created_by: principal.userId,
          ...auditInsert(at, principal.userId),
        };
        try {
          await store.transaction(async (tx) => {
            if (kind === 'folder')
              await permissionStore.insertFolderPermission(tx, { ...row, folder_id: objectId });
            else
              await permissionStore.insertQuestionnairePermission(tx, { ...row, questionnaire_id: objectId });
          });
        } catch (e) {
          if (isUniqueViolation(e)) {
            throw new AppError(
              'PERMISSION.EXISTS',
              `This ${grantee.type === 'USER' ? 'user' : 'role'} already has a grant on the ${kind}; change its level instead`,
              {
                [field]: objectId,
                [grantee.type === 'USER' ? 'user_id' : 'role_id']: grantee.id,
              },
            );
          }
          throw e;
        }
        return find(kind, row.id);
      },

      async update(
        principal: Principal,
        id: string,
        input: { level: PermissionLevel },
      ): Promise<PermissionOf<K>> {
        const v = await access.viewer(principal);
        const p = await visibleGrant(kind, v, id);
        await requireManage(kind, v, objectIdOf(kind, p));
        if (p.level !== input.level) {
          const updated = await store.transaction((tx) =>
            permissionStore.updatePermission(tx, kind, id, {
              level: input.level,
              ...auditUpdate(now(), principal.userId),
            }),
          );
          if (!updated) throw permissionNotFound(id);
        }
        return find(kind, id);
      },

      async remove(principal: Principal, id: string): Promise<PermissionOf<K>> {
        const v = await access.viewer(principal);
        const p = await visibleGrant(kind, v, id);
        await requireManage(kind, v, objectIdOf(kind, p));
        const at = now();
        const revoked = await store.transaction((tx) =>
          permissionStore.updatePermission(tx, kind, id, softDeleted(at, principal.userId)),
        );
        if (!revoked) throw permissionNotFound(id);
        return { ...p, ...softDeleted(at, principal.userId) };
      },
    };
  }

  return { folder: forKind('folder'), questionnaire: forKind('questionnaire') };
}
