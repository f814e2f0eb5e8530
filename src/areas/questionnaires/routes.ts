import { anyScope, authenticated } from '../../http/access.js';
import type { App } from '../../http/app.js';
import { AppError } from '../../http/errors.js';
import { envelope } from '../../http/list.js';
import { ListQuery, ListResponse } from '../../http/schemas.js';
import type { QuestionnaireArea } from './area.js';
import {
  AppConfig,
  CreateFolderBody,
  CreateFolderPermissionBody,
  CreateQuestionnaireBody,
  CreateQuestionnairePermissionBody,
  EffectiveFolderConfig,
  EffectiveQuestionnaireConfig,
  Folder,
  FolderPermission,
  ForkBody,
  folderFilters,
  Params,
  permissionFilters,
  Questionnaire,
  QuestionnairePermission,
  questionnaireFilters,
  Revision,
  RevisionParams,
  revisionFilters,
  Snapshot,
  Tree,
  TreeQuery,
  UpdateFolderBody,
  UpdatePermissionBody,
  UpdateQuestionnaireBody,
} from './schemas.js';

/** The catalogue's services its routes call (services.questionnaires, .folders, .permissions, .platformConfig). */
type QuestionnaireRouteDeps = Pick<
  QuestionnaireArea,
  'questionnaires' | 'folders' | 'permissions' | 'platformConfig'
>;

const QUESTIONNAIRE_SORT = ['name', 'status', 'created_at', 'updated_at', 'published_at'] as const;
const FOLDER_SORT = ['name', 'created_at', 'updated_at'] as const;
const PERMISSION_SORT = ['level', 'created_at', 'updated_at'] as const;

/** Questionnaires, revisions, folders, folder tree, permissions and config (docs/platform.md). */
export function registerQuestionnaireRoutes(api: App, deps: QuestionnaireRouteDeps): void {
  const { questionnaires, folders, permissions, platformConfig } = deps;
  const tags = ['questionnaires'];

  // ---- questionnaires
  api.get(
    '/questionnaire',
    {
      schema: {
        operationId: 'listQuestionnaires',
        summary: 'List questionnaires you can see',
        tags,
        querystring: ListQuery(QUESTIONNAIRE_SORT, questionnaireFilters, { sortBy: 'created_at' }),
        response: { 200: ListResponse('questionnaires', Questionnaire) },
      },
      config: anyScope('questionnaire:read'),
    },
    async (req) => {
      const { limit, offset, sort_by, sort_dir, ...filters } = req.query;
      const page = { limit, offset, sort_by, sort_dir };
      return envelope('questionnaires', await questionnaires.list(req.principal, page, filters), page);
    },
  );
  api.get(
    '/questionnaire/deleted',
    {
      schema: {
        operationId: 'listDeletedQuestionnaires',
        summary: 'List deleted questionnaires',
        tags,
        description: 'Soft-deleted questionnaires (restore them with POST /questionnaire/{id}/restore).',
        querystring: ListQuery([...QUESTIONNAIRE_SORT, 'deleted_at'], questionnaireFilters, {
          sortBy: 'deleted_at',
        }),
        response: { 200: ListResponse('questionnaires', Questionnaire) },
      },
      config: anyScope('questionnaire:read'),
    },
    async (req) => {
      const { limit, offset, sort_by, sort_dir, ...filters } = req.query;
      const page = { limit, offset, sort_by, sort_dir };
      return envelope('questionnaires', await questionnaires.list(req.principal, page, filters, true), page);
    },
  );
  api.post(
    '/questionnaire',
    {
      schema: {
        operationId: 'createQuestionnaire',
        summary: 'Create a questionnaire (a draft)',
        tags,
        body: CreateQuestionnaireBody,
        response: { 200: Questionnaire },
      },
      config: anyScope('questionnaire:write'),
    },
    async (req) => questionnaires.create(req.principal, req.body),
  );
  api.get(
    '/questionnaire/:id',
    {
      schema: {
        operationId: 'getQuestionnaire',
        summary: 'Get a questionnaire',
        tags,
        params: Params,
        response: { 200: Questionnaire },
      },
      config: anyScope('questionnaire:read'),
    },
    async (req) => questionnaires.getFor(req.principal, req.params.id),
  );
  api.patch(
    '/questionnaire/:id',
    {
      schema: {
        operationId: 'updateQuestionnaire',
        summary: 'Update a questionnaire draft',
        tags,
        description:
          'Edits a questionnaire. Content (payload, config, schedule_payload) changes only in DRAFT; name, description, folder_id and metadata in any status.',
        params: Params,
        body: UpdateQuestionnaireBody,
        response: { 200: Questionnaire },
      },
      config: anyScope('questionnaire:write'),
    },
    async (req) => questionnaires.update(req.principal, req.params.id, req.body),
  );
  api.delete(
    '/questionnaire/:id',
    {
      schema: {
        operationId: 'deleteQuestionnaire',
        summary: 'Delete a questionnaire (soft)',
        tags,
        description: 'Soft delete (a DELETE revision).',
        params: Params,
        response: { 200: Questionnaire },
      },
      config: anyScope('questionnaire:delete'),
    },
    async (req) => questionnaires.remove(req.principal, req.params.id),
  );
  api.post(
    '/questionnaire/:id/restore',
    {
      schema: {
        operationId: 'restoreQuestionnaire',
        summary: 'Restore a deleted questionnaire',
        tags,
        description:
          'Restores a soft-deleted questionnaire (a RESTORE revision); into the root if its folder is gone.',
        params: Params,
        response: { 200: Questionnaire },
      },
      config: anyScope('questionnaire:write'),
    },
    async (req) => questionnaires.restore(req.principal, req.params.id),
  );
  api.post(
    '/questionnaire/:id/publish',
    {
      schema: {
        operationId: 'publishQuestionnaire',
        summary: 'Publish a questionnaire (a new revision)',
        tags,
        description: 'DRAFT or ARCHIVED → PUBLISHED.',
        params: Params,
        response: { 200: Questionnaire },
      },
      config: anyScope('questionnaire:manage'),
    },
    async (req) => questionnaires.publish(req.principal, req.params.id),
  );
  api.post(
    '/questionnaire/:id/archive',
    {
      schema: {
        operationId: 'archiveQuestionnaire',
        summary: 'Archive a questionnaire',
        tags,
        description: 'DRAFT or PUBLISHED → ARCHIVED.',
        params: Params,
        response: { 200: Questionnaire },
      },
      config: anyScope('questionnaire:manage'),
    },
    async (req) => questionnaires.archive(req.principal, req.params.id),
  );
  api.post(
    '/questionnaire/:id/fork',
    {
      schema: {
        operationId: 'forkQuestionnaire',
        summary: 'Copy a questionnaire into a new draft',
        tags,
        description:
          'Creates a new DRAFT from this questionnaire (or from its state at revision_id), in the same lineage (a FORK revision).',
        params: Params,
        body: ForkBody,
        response: { 200: Questionnaire },
      },
      config: anyScope('questionnaire:write'),
      // The body is optional: no body forks with the defaults.
      preValidation: async (req) => {
        req.body ??= {};
      },
    },
    async (req) => questionnaires.fork(req.principal, req.params.id, req.body),
  );

  // ---- revisions
  api.get(
    '/questionnaire/:id/revision',
    {
      schema: {
        operationId: 'listQuestionnaireRevisions',
        summary: "List a questionnaire's revisions",
        tags,
        params: Params,
        querystring: ListQuery(['sequence', 'created_at'], revisionFilters, { sortBy: 'sequence' }),
        response: { 200: ListResponse('revisions', Revision) },
      },
      config: anyScope('questionnaire:read'),
    },
    async (req) => {
      const { limit, offset, sort_by, sort_dir, ...filters } = req.query;
      const page = { limit, offset, sort_by, sort_dir };
      return envelope(
        'revisions',
        await questionnaires.listRevisions(req.principal, req.params.id, page, filters),
        page,
      );
    },
  );
  api.get(
    '/questionnaire/:id/revision/:revision_id',
    {
      schema: {
        operationId: 'getQuestionnaireRevision',
        summary: 'Get a questionnaire revision (its JSON Patch)',
        tags,
        params: RevisionParams,
        response: { 200: Revision },
      },
      config: anyScope('questionnaire:read'),
    },
    async (req) => questionnaires.getRevision(req.principal, req.params.id, req.params.revision_id),
  );
  api.get(
    '/questionnaire/:id/revision/:revision_id/snapshot',
    {
      schema: {
        operationId: 'getQuestionnaireRevisionSnapshot',
        summary: 'The questionnaire as it was at a revision',
        tags,
        description:
          'The full questionnaire state right after this revision, rebuilt by applying revisions 1..n.',
        params: RevisionParams,
        response: { 200: Snapshot },
      },
      config: anyScope('questionnaire:read'),
    },
    async (req) => questionnaires.snapshot(req.principal, req.params.id, req.params.revision_id),
  );

  // ---- folders
  const folderTags = ['folders'];
  api.get(
    '/folder',
    {
      schema: {
        operationId: 'listFolders',
        summary: 'List folders',
        tags: folderTags,
        querystring: ListQuery(FOLDER_SORT, folderFilters, { sortBy: 'name', sortDir: 'asc' }),
        response: { 200: ListResponse('folders', Folder) },
      },
      config: anyScope('folder:read'),
    },
    async (req) => {
      const { limit, offset, sort_by, sort_dir, ...filters } = req.query;
      const page = { limit, offset, sort_by, sort_dir };
      return envelope('folders', await folders.list(req.principal, page, filters), page);
    },
  );
  for (const [url, operationId, alias] of [
    ['/folder/tree', 'getFolderTree', ''],
    ['/folder_tree', 'getFolderTreeAlias', ' (alias)'],
  ]) {
    api.get(
      url,
      {
        schema: {
          operationId,
          summary: `The folder tree${alias}`,
          tags: folderTags,
          description:
            'The folder tree. include_questionnaires (needs questionnaire:read too) adds questionnaire nodes without payload, schedule_payload and config; by default ARCHIVED ones are left out (include_archived, or questionnaire_status_id to pick one status).',
          querystring: TreeQuery,
          response: { 200: Tree },
        },
        config: anyScope('folder:read'),
      },
      async (req) => {
        if (req.query.include_questionnaires && !req.principal.scopes.has('questionnaire:read')) {
          throw new AppError('AUTH.FORBIDDEN', 'include_questionnaires requires questionnaire:read', {
            required_scopes: ['questionnaire:read'],
            mode: 'any',
          });
        }
        return folders.tree(req.principal, req.query);
      },
    );
  }
  api.post(
    '/folder',
    {
      schema: {
        operationId: 'createFolder',
        summary: 'Create a folder',
        tags: folderTags,
        body: CreateFolderBody,
        response: { 200: Folder },
      },
      config: anyScope('folder:write'),
    },
    async (req) => folders.create(req.principal, req.body),
  );
  api.get(
    '/folder/:id',
    {
      schema: {
        operationId: 'getFolder',
        summary: 'Get a folder',
        tags: folderTags,
        params: Params,
        response: { 200: Folder },
      },
      config: anyScope('folder:read'),
    },
    async (req) => folders.get(req.principal, req.params.id),
  );
  api.patch(
    '/folder/:id',
    {
      schema: {
        operationId: 'updateFolder',
        summary: 'Update or move a folder',
        tags: folderTags,
        description:
          'Renames, moves (parent_id; never under itself or a descendant: FOLDER.CYCLE) or reconfigures a folder.',
        params: Params,
        body: UpdateFolderBody,
        response: { 200: Folder },
      },
      config: anyScope('folder:write'),
    },
    async (req) => folders.update(req.principal, req.params.id, req.body),
  );
  api.delete(
    '/folder/:id',
    {
      schema: {
        operationId: 'deleteFolder',
        summary: 'Delete a folder (soft)',
        tags: folderTags,
        description: 'Soft-deletes an empty folder (else 409 FOLDER.NOT_EMPTY).',
        params: Params,
        response: { 200: Folder },
      },
      config: anyScope('folder:delete'),
    },
    async (req) => folders.remove(req.principal, req.params.id),
  );

  // ---- permissions
  const kinds = [
    {
      path: '/folder_permission',
      object: 'Folder',
      key: 'folder_permissions',
      field: 'folder_id',
      service: permissions.folder,
      item: FolderPermission,
      body: CreateFolderPermissionBody,
    },
    {
      path: '/questionnaire_permission',
      object: 'Questionnaire',
      key: 'questionnaire_permissions',
      field: 'questionnaire_id',
      service: permissions.questionnaire,
      item: QuestionnairePermission,
      body: CreateQuestionnairePermissionBody,
    },
  ] as const;
  for (const k of kinds) {
    const permTags = ['permissions'];
    api.get(
      k.path,
      {
        schema: {
          operationId: `list${k.object}Permissions`,
          summary: `List ${k.object.toLowerCase()} permissions`,
          tags: permTags,
          querystring: ListQuery(PERMISSION_SORT, permissionFilters(k.field), { sortBy: 'created_at' }),
          response: { 200: ListResponse(k.key, k.item) },
        },
        config: anyScope('permission:read'),
      },
      async (req) => {
        const { limit, offset, sort_by, sort_dir, ...rest } = req.query as Record<string, never>;
        const page = { limit, offset, sort_by, sort_dir };
        const { [k.field]: objectId, ...filters } = rest as Record<string, string | undefined>;
        const result = await k.service.list(req.principal, page, { ...filters, object_id: objectId });
        return envelope(k.key, result as { items: unknown[]; total: number }, page);
      },
    );
    api.post(
      k.path,
      {
        schema: {
          operationId: `create${k.object}Permission`,
          summary: `Grant a permission on a ${k.object.toLowerCase()}`,
          tags: permTags,
          description:
            'Grants a user or a role a level on the object; needs MANAGE on it. 409 PERMISSION.EXISTS for a second active grant.',
          body: k.body,
          response: { 200: k.item },
        },
        config: anyScope('permission:write'),
      },
      async (req) => {
        const { [k.field]: objectId, ...grant } = req.body as Record<string, string>;
        return k.service.create(req.principal, objectId!, grant as never);
      },
    );
    api.get(
      `${k.path}/:id`,
      {
        schema: {
          operationId: `get${k.object}Permission`,
          summary: `Get a ${k.object.toLowerCase()} permission`,
          tags: permTags,
          params: Params,
          response: { 200: k.item },
        },
        config: anyScope('permission:read'),
      },
      async (req) => k.service.get(req.principal, req.params.id),
    );
    api.patch(
      `${k.path}/:id`,
      {
        schema: {
          operationId: `update${k.object}Permission`,
          summary: `Change a ${k.object.toLowerCase()} permission's level`,
          tags: permTags,
          params: Params,
          body: UpdatePermissionBody,
          response: { 200: k.item },
        },
        config: anyScope('permission:write'),
      },
      async (req) => k.service.update(req.principal, req.params.id, req.body),
    );
    api.delete(
      `${k.path}/:id`,
      {
        schema: {
          operationId: `delete${k.object}Permission`,
          summary: `Revoke a ${k.object.toLowerCase()} permission`,
          tags: permTags,
          params: Params,
          response: { 200: k.item },
        },
        config: anyScope('permission:delete'),
      },
      async (req) => k.service.remove(req.principal, req.params.id),
    );
  }

  // ---- config
  const configTags = ['config'];
  api.get(
    '/config',
    {
      schema: {
        operationId: 'getConfig',
        summary: "The platform's default questionnaire configuration",
        tags: configTags,
        description: 'Public app config (no secrets).',
        response: { 200: AppConfig },
      },
      config: authenticated(),
    },
    async () => platformConfig.app(),
  );
  api.get(
    '/config/questionnaire/:id',
    {
      schema: {
        operationId: 'getQuestionnaireConfig',
        summary: "A questionnaire's effective configuration",
        tags: configTags,
        description:
          'Effective config: defaults, then each folder from the root down, then the questionnaire (JSON Merge Patch). Callers without questionnaire:read see PUBLISHED questionnaires only.',
        params: Params,
        response: { 200: EffectiveQuestionnaireConfig },
      },
      config: authenticated(),
    },
    async (req) => platformConfig.forQuestionnaire(req.principal, req.params.id),
  );
  api.get(
    '/config/folder/:id',
    {
      schema: {
        operationId: 'getFolderConfig',
        summary: "A folder's effective configuration",
        tags: configTags,
        description:
          'Effective config of a folder: defaults, then each folder from the root down to this one.',
        params: Params,
        response: { 200: EffectiveFolderConfig },
      },
      config: anyScope('config:read'),
    },
    async (req) => platformConfig.forFolder(req.principal, req.params.id),
  );
}
