import { anyScope } from '../../http/access.js';
import type { App } from '../../http/app.js';
import { AppError } from '../../http/errors.js';
import { envelope, splitListQuery } from '../../http/list.js';
import { ListQuery, ListResponse } from '../../http/list-schemas.js';
import type { QuestionnaireRouteDeps } from './routes.js';
import {
  CreateFolderBody,
  Folder,
  folderFilters,
  Params,
  Tree,
  TreeQuery,
  UpdateFolderBody,
} from './schemas.js';

const FOLDER_SORT = ['name', 'created_at', 'updated_at'] as const;

/** Folders and the folder tree (docs/platform.md "Folders"). */
export function registerFolderRoutes(api: App, deps: QuestionnaireRouteDeps): void {
  const { folders } = deps;

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
      const { page, filters } = splitListQuery(req.query);
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
}
