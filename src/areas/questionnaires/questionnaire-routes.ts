import { anyScope } from '../../http/access.js';
import type { App } from '../../http/app.js';
import { envelope, splitListQuery } from '../../http/list.js';
import { ListQuery, ListResponse } from '../../http/list-schemas.js';
import type { QuestionnaireRouteDeps } from './routes.js';
import {
  CreateQuestionnaireBody,
  ForkBody,
  Params,
  Questionnaire,
  questionnaireFilters,
  Revision,
  RevisionParams,
  revisionFilters,
  Snapshot,
  UpdateQuestionnaireBody,
} from './schemas.js';

const QUESTIONNAIRE_SORT = ['name', 'status', 'created_at', 'updated_at', 'published_at'] as const;

/** Questionnaires and their revisions (docs/platform.md "Questionnaires"). */
export function registerCatalogueRoutes(api: App, deps: QuestionnaireRouteDeps): void {
  const { questionnaires } = deps;
  const tags = ['questionnaires'];

  // ---- questionnaires
  api.get(
    '/questionnaire',
    {
      schema: {
        operationId: 'listQuestionnaires',
        summary: 'List questionnaires you can see',
        tags,
        querystring: ListQuery(QUESTIONNAIRE_SORT, questionnaireFilters),
        response: { 200: ListResponse('questionnaires', Questionnaire) },
      },
      config: anyScope('questionnaire:read'),
    },
    async (req) => {
      const { page, filters } = splitListQuery(req.query);
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
      const { page, filters } = splitListQuery(req.query);
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
      const { page, filters } = splitListQuery(req.query);
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
}
