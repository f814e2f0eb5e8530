import { Type } from '@sinclair/typebox';
import { ListQuery, ListResponse, TimeRanges } from '../../http/list-schemas.js';
import { AuditFields, Id, JsonObject, Nullable, Timestamp } from '../../http/schemas.js';
import { ENROLLED_USER_SORT } from './store.js';
import { ENROLLMENT_STATUSES } from './transitions.js';

export const EnrollmentStatusSchema = Type.Union(
  ENROLLMENT_STATUSES.map((s) => Type.Literal(s)),
  { description: 'See the transition table in docs/platform.md.' },
);

const QuestionnaireIds = Type.Array(Id, {
  minItems: 1,
  maxItems: 100,
  uniqueItems: true,
  description: 'Questionnaires the responder is enrolled into, in display order.',
});
const ConsentVersion = Type.String({
  minLength: 1,
  maxLength: 200,
  description: 'Version of the consent document; the responder must consent to exactly this version.',
});
const Reason = Type.String({ minLength: 1, maxLength: 2000 });

export const Enrollment = Type.Object(
  {
    id: Type.String(),
    user_id: Type.String({ description: 'The enrolled responder.' }),
    questionnaire_ids: Type.Array(Type.String()),
    status: EnrollmentStatusSchema,
    consent_required: Type.Boolean({
      description: 'false: consent was recorded outside the app and the enrollment started ENROLLED.',
    }),
    consent_version: Nullable(Type.String()),
    consented_at: Nullable(Timestamp),
    starts_at: Nullable(Timestamp),
    ends_at: Nullable(Timestamp),
    schedule: Nullable(JsonObject),
    metadata: Nullable(JsonObject),
    status_reason: Nullable(Type.String()),
    status_changed_at: Timestamp,
    created_by: Type.String(),
    ...AuditFields,
  },
  { $id: 'Enrollment' },
);

export const CreateEnrollmentBody = Type.Object(
  {
    user_id: Id,
    questionnaire_ids: QuestionnaireIds,
    consent_required: Type.Optional(Type.Boolean({ default: true })),
    consent_version: Type.Optional(Nullable(ConsentVersion)),
    starts_at: Type.Optional(Nullable(Timestamp)),
    ends_at: Type.Optional(Nullable(Timestamp)),
    schedule: Type.Optional(Nullable(JsonObject)),
    metadata: Type.Optional(Nullable(JsonObject)),
  },
  {
    examples: [
      {
        user_id: '019a6f3e-8c1d-7b2a-9f4e-2d5c8b7a1e03',
        questionnaire_ids: ['019a6f40-1b7e-7d35-a0c2-7e1f9d4b3c58'],
        consent_required: true,
        consent_version: '2026-01',
        starts_at: '2026-12-01T00:00:00Z',
      },
    ],
    additionalProperties: false,
  },
);

export const UpdateEnrollmentBody = Type.Object(
  {
    status: Type.Optional(EnrollmentStatusSchema),
    status_reason: Type.Optional(Nullable(Reason)),
    questionnaire_ids: Type.Optional(QuestionnaireIds),
    consent_version: Type.Optional(Nullable(ConsentVersion)),
    starts_at: Type.Optional(Nullable(Timestamp)),
    ends_at: Type.Optional(Nullable(Timestamp)),
    schedule: Type.Optional(Nullable(JsonObject)),
    metadata: Type.Optional(Nullable(JsonObject)),
  },
  {
    examples: [{ status: 'COMPLETED', status_reason: 'All questionnaires answered' }],
    additionalProperties: false,
    minProperties: 1,
  },
);

const EnrollmentFilters = {
  user_id: Type.Optional(Id),
  status: Type.Optional(EnrollmentStatusSchema),
  questionnaire_id: Type.Optional(Id),
  ...TimeRanges('created_at'),
};

export const EnrollmentListQuery = ListQuery(
  ['created_at', 'updated_at', 'status', 'status_changed_at', 'starts_at', 'ends_at', 'user_id'],
  EnrollmentFilters,
);
export const EnrollmentList = ListResponse('enrollments', Enrollment);

const StatusCounts = Type.Object(Object.fromEntries(ENROLLMENT_STATUSES.map((s) => [s, Type.Integer()])), {
  additionalProperties: false,
});

export const EnrolledUser = Type.Object({
  user_id: Type.String(),
  email: Nullable(Type.String({ description: 'null when the user has been deleted' })),
  name: Nullable(Type.String()),
  enrollment_count: Type.Integer(),
  open_enrollment_count: Type.Integer({ description: 'PENDING_CONSENT or ENROLLED' }),
  status_counts: StatusCounts,
  latest_enrollment_id: Type.String(),
  latest_status: EnrollmentStatusSchema,
  last_enrolled_at: Timestamp,
});

export const EnrolledUserListQuery = ListQuery(ENROLLED_USER_SORT, EnrollmentFilters, {
  sortBy: 'last_enrolled_at',
});
export const EnrolledUserList = ListResponse('enrollment_users', EnrolledUser);

export const ConsentBody = Type.Object(
  {
    enrollment_id: Id,
    consent: Type.Boolean({
      description:
        'true consents (PENDING_CONSENT -> ENROLLED); false declines or withdraws (-> TERMINATED_BY_PATIENT).',
    }),
    consent_version: Type.Optional(ConsentVersion),
    reason: Type.Optional(Reason),
  },
  {
    examples: [
      { enrollment_id: '019a6f40-1b7e-7d35-a0c2-7e1f9d4b3c58', consent: true, consent_version: '2026-01' },
    ],
    additionalProperties: false,
  },
);

const FetchedQuestionnaire = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: Nullable(Type.String()),
  status: Type.String(),
  payload: Nullable(JsonObject),
  config: Nullable(JsonObject),
  schedule_payload: Nullable(JsonObject),
  updated_at: Type.Optional(Timestamp),
});

/** An enrollment as its responder sees it: no provider-side fields (metadata, who changed it). */
export const OwnEnrollment = Type.Omit(Enrollment, ['created_by', 'updated_by', 'deleted_at', 'metadata']);

export const FetchedEnrollment = Type.Composite([
  OwnEnrollment,
  Type.Object({ questionnaires: Type.Array(FetchedQuestionnaire) }),
]);

export const EnrollmentFetchQuery = ListQuery(['created_at', 'status_changed_at'], {
  status: Type.Optional(EnrollmentStatusSchema),
});
export const EnrollmentFetchList = ListResponse('enrollments', FetchedEnrollment);
