import { anyScope, apiKeyOnly, authenticated } from '../../http/access.js';
import type { App } from '../../http/app.js';
import { envelope, splitListQuery } from '../../http/list.js';
import { errorAnswers, IdParams, MessageBody } from '../../http/schemas.js';
import {
  AmendBody,
  AnonymousSubmitBody,
  Submission,
  SubmissionList,
  SubmissionListQuery,
  SubmitBody,
} from './schemas.js';
import type { SubmissionService } from './service.js';

const tags = ['submissions'];

/** Error answers a route can give besides the 400/401/403 every guarded route declares (OpenAPI). */

/** Questionnaire submissions (docs/platform.md#submissions). */
export function registerSubmissionRoutes(
  api: App,
  { submissions }: { submissions: SubmissionService },
): void {
  api.post(
    '/questionnaire_submission',
    {
      schema: {
        operationId: 'createSubmission',
        tags,
        summary: 'Submit answers to a published questionnaire',
        description:
          'Any signed-in user (an API key acts as its creator). With enrollment_id the submission is filed under that enrollment of the caller, which must be ENROLLED and within its dates.',
        body: SubmitBody,
        response: { 200: Submission, ...errorAnswers(404, 409, 422) },
      },
      config: authenticated(),
    },
    async (req) => submissions.submit(req.principal, req.body),
  );

  api.post(
    '/questionnaire_submission/anonymous',
    {
      schema: {
        operationId: 'createAnonymousSubmission',
        tags,
        summary: 'Submit answers anonymously (API keys only)',
        body: AnonymousSubmitBody,
        response: { 200: Submission, ...errorAnswers(404, 409, 422) },
      },
      config: apiKeyOnly(),
    },
    async (req) => submissions.submitAnonymous(req.principal, req.body),
  );

  api.get(
    '/questionnaire_submission',
    {
      schema: {
        operationId: 'listSubmissions',
        tags,
        summary: 'List submissions',
        description:
          'A restricted caller (not admin or integration) sees only submissions of questionnaires it can see; the total counts those only.',
        querystring: SubmissionListQuery,
        response: { 200: SubmissionList },
      },
      config: anyScope('questionnaire_submission:read'),
    },
    async (req) => {
      const { page, filters } = splitListQuery(req.query);
      return envelope('submissions', await submissions.list(req.principal, page, filters), req.query);
    },
  );

  api.get(
    '/questionnaire_submission/:id',
    {
      schema: {
        operationId: 'getSubmission',
        tags,
        summary: 'Get a submission',
        description: 'A submission of a questionnaire the caller cannot see is 404, like a missing one.',
        params: IdParams,
        response: { 200: Submission, ...errorAnswers(404) },
      },
      config: anyScope('questionnaire_submission:read'),
    },
    async (req) => submissions.get(req.principal, req.params.id),
  );

  api.patch(
    '/questionnaire_submission/:id',
    {
      schema: {
        operationId: 'correctSubmission',
        tags,
        summary: 'Correct a submission (staff)',
        description:
          "Replaces answers and/or metadata. New answers are validated against the questionnaire's current answers_schema. A restricted caller needs EDIT on the questionnaire. Emits submissions.submission.updated.",
        params: IdParams,
        body: AmendBody,
        response: { 200: Submission, ...errorAnswers(404, 422) },
      },
      // questionnaire_submission:write is a reserved scope (enforced by no endpoint; docs/identity.md "Scopes"): correcting the
      // answers given to a questionnaire is editing that questionnaire's records.
      config: anyScope('questionnaire:write'),
    },
    async (req) => submissions.amend(req.principal, req.params.id, req.body),
  );

  api.delete(
    '/questionnaire_submission/:id',
    {
      schema: {
        operationId: 'deleteSubmission',
        tags,
        summary: 'Delete a submission (soft)',
        description:
          'A restricted caller needs EDIT on the questionnaire. Emits submissions.submission.deleted.',
        params: IdParams,
        response: { 200: MessageBody, ...errorAnswers(404) },
      },
      // questionnaire_submission:delete is a reserved scope, like :write above (docs/identity.md "Scopes").
      config: anyScope('questionnaire:delete'),
    },
    async (req) => {
      await submissions.remove(req.principal, req.params.id);
      return { message: 'Submission deleted' };
    },
  );
}
