import { anyScope, authenticated } from '../../http/access.js';
import type { App } from '../../http/app.js';
import { envelope, splitListQuery } from '../../http/list.js';
import { errorAnswers, IdParams, MessageBody } from '../../http/schemas.js';
import {
  ConsentBody,
  CreateEnrollmentBody,
  EnrolledUserList,
  EnrolledUserListQuery,
  Enrollment,
  EnrollmentFetchList,
  EnrollmentFetchQuery,
  EnrollmentList,
  EnrollmentListQuery,
  OwnEnrollment,
  UpdateEnrollmentBody,
} from './schemas.js';
import type { EnrollmentService } from './service.js';

const tags = ['enrollments'];

/** Error answers a route can give besides the 400/401/403 every guarded route declares (OpenAPI). */

/** Enrollments (docs/platform.md#enrollments). Provider endpoints are scoped; consent and fetch are the responder's own. */
export function registerEnrollmentRoutes(
  api: App,
  { enrollments }: { enrollments: EnrollmentService },
): void {
  api.get(
    '/enrollment',
    {
      schema: {
        operationId: 'listEnrollments',
        tags,
        summary: 'List enrollments',
        description:
          'A restricted caller (not admin or integration) sees only enrollments with at least one questionnaire it can see; the total counts those only.',
        querystring: EnrollmentListQuery,
        response: { 200: EnrollmentList },
      },
      config: anyScope('enrollment:read'),
    },
    async (req) => {
      const { page, filters } = splitListQuery(req.query);
      return envelope('enrollments', await enrollments.list(req.principal, page, filters), req.query);
    },
  );

  api.post(
    '/enrollment',
    {
      schema: {
        operationId: 'createEnrollments',
        tags,
        summary: 'Enroll a responder into questionnaires',
        description:
          'Starts PENDING_CONSENT (the responder consents through POST /enrollment_consent), or ENROLLED when consent_required is false. A restricted caller needs EDIT on every questionnaire named.',
        body: CreateEnrollmentBody,
        response: { 200: Enrollment, ...errorAnswers(404, 409) },
      },
      config: anyScope('enrollment:write'),
    },
    async (req) => enrollments.create(req.principal, req.body),
  );

  api.get(
    '/enrollment/:id',
    {
      schema: {
        operationId: 'getEnrollment',
        tags,
        summary: 'Get an enrollment',
        description:
          'An enrollment the caller cannot see (none of its questionnaires visible) is 404, like a missing one.',
        params: IdParams,
        response: { 200: Enrollment, ...errorAnswers(404) },
      },
      config: anyScope('enrollment:read'),
    },
    async (req) => enrollments.get(req.principal, req.params.id),
  );

  api.patch(
    '/enrollment/:id',
    {
      schema: {
        operationId: 'updateEnrollment',
        tags,
        summary: 'Update an enrollment or change its status',
        description:
          'Status changes follow the transition table; a refused change is 409 ENROLLMENT.INVALID_TRANSITION. A restricted caller needs EDIT on every questionnaire of the enrollment (and on every one it is given).',
        params: IdParams,
        body: UpdateEnrollmentBody,
        response: { 200: Enrollment, ...errorAnswers(404, 409) },
      },
      config: anyScope('enrollment:write'),
    },
    async (req) => enrollments.update(req.principal, req.params.id, req.body),
  );

  api.delete(
    '/enrollment/:id',
    {
      schema: {
        operationId: 'deleteEnrollment',
        tags,
        summary: 'Delete an enrollment (soft)',
        description:
          'DELETE needs enrollment:write; enrollment:delete is accepted too. A restricted caller needs EDIT on every questionnaire of the enrollment.',
        params: IdParams,
        response: { 200: MessageBody, ...errorAnswers(404) },
      },
      config: anyScope('enrollment:write', 'enrollment:delete'),
    },
    async (req) => {
      await enrollments.remove(req.principal, req.params.id);
      return { message: 'Enrollment deleted' };
    },
  );

  api.get(
    '/enrollment_user',
    {
      schema: {
        operationId: 'listEnrollmentUsers',
        tags,
        summary: 'Users with enrollments',
        description:
          'One entry per user having enrollments that match the filters, with counts by status and the latest enrollment. A restricted caller counts only the enrollments it can see.',
        querystring: EnrolledUserListQuery,
        response: { 200: EnrolledUserList },
      },
      config: anyScope('enrollment:read'),
    },
    async (req) => {
      const { page, filters } = splitListQuery(req.query);
      return envelope(
        'enrollment_users',
        await enrollments.enrolledUsers(req.principal, page, filters),
        req.query,
      );
    },
  );

  api.post(
    '/enrollment_consent',
    {
      schema: {
        operationId: 'consentToEnrollment',
        tags,
        summary: 'Consent to, decline or withdraw from your own enrollment',
        body: ConsentBody,
        response: { 200: OwnEnrollment, ...errorAnswers(404, 409) },
      },
      config: authenticated(),
    },
    async (req) => enrollments.consent(req.principal.userId, req.body),
  );

  api.get(
    '/enrollment_fetch',
    {
      schema: {
        operationId: 'fetchOwnEnrollments',
        tags,
        summary: 'Your own enrollments with their questionnaires',
        querystring: EnrollmentFetchQuery,
        response: { 200: EnrollmentFetchList },
      },
      config: authenticated(),
    },
    async (req) => {
      const { page, filters } = splitListQuery(req.query);
      return envelope(
        'enrollments',
        await enrollments.fetchOwn(req.principal.userId, page, filters),
        req.query,
      );
    },
  );
}
