import { anyScope } from '../../http/access.js';
import type { App } from '../../http/app.js';
import { envelope, type Page, splitListQuery } from '../../http/list.js';
import { ListQuery, ListResponse } from '../../http/list-schemas.js';
import type { QuestionnaireRouteDeps } from './routes.js';
import {
  CreateFolderPermissionBody,
  CreateQuestionnairePermissionBody,
  FolderPermission,
  Params,
  permissionFilters,
  QuestionnairePermission,
  UpdatePermissionBody,
} from './schemas.js';

const PERMISSION_SORT = ['level', 'created_at', 'updated_at'] as const;

/** Folder and questionnaire permissions (docs/platform.md "Permissions"). */
export function registerPermissionRoutes(api: App, deps: QuestionnaireRouteDeps): void {
  const { permissions } = deps;

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
          querystring: ListQuery(PERMISSION_SORT, permissionFilters(k.field)),
          response: { 200: ListResponse(k.key, k.item) },
        },
        config: anyScope('permission:read'),
      },
      async (req) => {
        const { page, filters: rest } = splitListQuery(
          req.query as Page & Record<string, string | undefined>,
        );
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
}
