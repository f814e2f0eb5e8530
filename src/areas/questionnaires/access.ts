import { auditInsert } from '../../db/audit.js';
import type { Store, Tx } from '../../db/store.js';
import type { Principal } from '../../http/access.js';
import { AppError, type ErrorCode } from '../../http/errors.js';
import type { Causation } from '../../lib/causation.js';
import { newId } from '../../lib/ids.js';
import * as folderStore from './folder-store.js';
import * as permissionStore from './permission-store.js';
import type { PermissionLevel } from './tables.js';
import { type Grantees, type QuestionnaireFilter, questionnaireFilter } from './visibility.js';

/**
 * The object-level access rules of docs/platform.md "Permissions". Scopes say what kind of action a
 * caller may take; folder and questionnaire grants narrow which objects a restricted caller may take
 * it on. Unrestricted callers (a role in UNRESTRICTED_ROLE_KEYS) are not narrowed.
 */

export const PERMISSION_LEVELS: readonly PermissionLevel[] = ['VIEW', 'EDIT', 'MANAGE'];
const RANK: Record<PermissionLevel, number> = { VIEW: 1, EDIT: 2, MANAGE: 3 };

/** Holders of these built-in roles see and change every folder and questionnaire. */
export const UNRESTRICTED_ROLE_KEYS: readonly string[] = ['admin', 'integration'];

/** What this area needs of identity (structural, so identity's service satisfies it). */
export interface RoleLookup {
  getRolesOfUser(userId: string): Promise<Array<{ id: string; key: string }>>;
}

/** The caller as the access rules see it. */
export interface Viewer {
  userId: string;
  unrestricted: boolean;
  grantees: Grantees;
  /** The request's causation (a workflow run's call): events of its changes carry it. */
  causation?: Causation;
}

/**
 * What a caller may see and change of the catalogue, for areas whose records hang off questionnaires
 * (enrollments, submissions). Built once per request: one role lookup, then no query until used.
 */
export interface CatalogueAccess {
  /** Holds `admin` or `integration`: sees and changes everything. */
  unrestricted: boolean;
  /**
   * 'all' for an unrestricted caller; otherwise a filter for another table's list query that keeps the
   * rows whose questionnaire id column names a questionnaire (deleted or not) the caller can see:
   * `q.where(filter('questionnaire_submission.questionnaire_id'))`. Pure SQL: no query until used.
   */
  questionnaireFilter: 'all' | QuestionnaireFilter;
  /** The caller's level on each id (null: it cannot see it): one query for any number of ids. */
  levels(ids: readonly string[]): Promise<Map<string, PermissionLevel | null>>;
}

export function atLeast(level: PermissionLevel | null, required: PermissionLevel): boolean {
  return level !== null && RANK[level] >= RANK[required];
}

function highest(levels: readonly PermissionLevel[]): PermissionLevel | null {
  let best: PermissionLevel | null = null;
  for (const l of levels) if (best === null || RANK[l] > RANK[best]) best = l;
  return best;
}

export function createAccess(deps: { store: Store; identity: RoleLookup }) {
  const { store } = deps;

  async function viewer(principal: Pick<Principal, 'userId' | 'causation'>): Promise<Viewer> {
    const roles = await deps.identity.getRolesOfUser(principal.userId);
    return {
      userId: principal.userId,
      unrestricted: roles.some((r) => UNRESTRICTED_ROLE_KEYS.includes(r.key)),
      grantees: { userId: principal.userId, roleIds: roles.map((r) => r.id) },
      causation: principal.causation,
    };
  }

  /** Highest level on a folder: grants on it or any ancestor (null: none, the folder is invisible). */
  async function folderLevel(v: Viewer, folderId: string): Promise<PermissionLevel | null> {
    if (v.unrestricted) return 'MANAGE';
    const chain = await folderStore.folderChain(store.db, folderId);
    return highest(
      await permissionStore.grantedLevels(store.db, v.grantees, { folderIds: chain.map((c) => c.id) }),
    );
  }

  /** Highest level on a questionnaire: grants on it, on its folder, or on any folder above. */
  async function questionnaireLevel(
    v: Viewer,
    q: { id: string; folder_id: string | null },
  ): Promise<PermissionLevel | null> {
    if (v.unrestricted) return 'MANAGE';
    const chain = q.folder_id ? await folderStore.folderChain(store.db, q.folder_id) : [];
    return highest(
      await permissionStore.grantedLevels(store.db, v.grantees, {
        folderIds: chain.map((c) => c.id),
        questionnaireId: q.id,
      }),
    );
  }

  /**
   * Throws unless `level` reaches `required`. No level at all is the object's own 404 (existence is
   * not revealed to someone who cannot see it); a visible object with too low a level is 403.
   */
  function demand(
    level: PermissionLevel | null,
    required: PermissionLevel,
    notFound: { code: ErrorCode; what: string; id: string; field: string },
  ): void {
    if (level === null) {
      throw new AppError(notFound.code, `${notFound.what} not found`, { [notFound.field]: notFound.id });
    }
    if (!atLeast(level, required)) {
      throw new AppError(
        'PERMISSION.DENIED',
        `This needs ${required} permission on the ${notFound.what.toLowerCase()}; you have ${level}`,
        { [notFound.field]: notFound.id, required_level: required, level },
      );
    }
  }

  return {
    viewer,
    folderLevel,
    questionnaireLevel,

    async requireFolder(v: Viewer, folderId: string, required: PermissionLevel): Promise<void> {
      demand(await folderLevel(v, folderId), required, {
        code: 'FOLDER.NOT_FOUND',
        what: 'Folder',
        id: folderId,
        field: 'folder_id',
      });
    },

    async requireQuestionnaire(
      v: Viewer,
      q: { id: string; folder_id: string | null },
      required: PermissionLevel,
    ): Promise<void> {
      demand(await questionnaireLevel(v, q), required, {
        code: 'QUESTIONNAIRE.NOT_FOUND',
        what: 'Questionnaire',
        id: q.id,
        field: 'questionnaire_id',
      });
    },

    /**
     * A restricted creator receives MANAGE on what it creates, inside the creating transaction, so
     * the new folder or questionnaire does not vanish from its own view. Unrestricted creators need none.
     */
    async grantCreator(
      tx: Tx,
      v: Viewer,
      object: { kind: 'folder' | 'questionnaire'; id: string },
      at: string,
    ) {
      if (v.unrestricted) return;
      const grant = {
        id: newId(),
        grantee_type: 'USER' as const,
        grantee_id: v.userId,
        level: 'MANAGE' as const,
        created_by: v.userId,
        ...auditInsert(at, v.userId),
      };
      if (object.kind === 'folder')
        await permissionStore.insertFolderPermission(tx, { ...grant, folder_id: object.id });
      else await permissionStore.insertQuestionnairePermission(tx, { ...grant, questionnaire_id: object.id });
    },

    /**
     * The viewer's level on each of `ids` (questionnaires deleted or not; null: cannot see it, or no
     * such questionnaire), in one query whatever the number of ids. Unrestricted viewers: MANAGE, no query.
     */
    async questionnaireLevels(
      v: Viewer,
      ids: readonly string[],
    ): Promise<Map<string, PermissionLevel | null>> {
      if (v.unrestricted) return new Map(ids.map((id) => [id, 'MANAGE' as const]));
      const levels = new Map<string, PermissionLevel | null>(ids.map((id) => [id, null]));
      for (const row of await permissionStore.grantedLevelsOnQuestionnaires(store.db, v.grantees, ids)) {
        levels.set(row.questionnaire_id, highest([levels.get(row.questionnaire_id) ?? row.level, row.level]));
      }
      return levels;
    },

    /** For other areas' lists: 'all', or the filter keeping rows of questionnaires the viewer can see. */
    questionnaireFilter(v: Viewer): 'all' | QuestionnaireFilter {
      return v.unrestricted ? 'all' : questionnaireFilter(v.grantees);
    },

    /** The narrowing to apply to lists: undefined for an unrestricted viewer. */
    visibleTo(v: Viewer): Grantees | undefined {
      return v.unrestricted ? undefined : v.grantees;
    },
  };
}

export type Access = ReturnType<typeof createAccess>;
