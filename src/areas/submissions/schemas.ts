import { Type } from '@sinclair/typebox';
import { ListQuery, ListResponse, QueryBoolean, TimeRanges } from '../../http/list-schemas.js';
import { AuditFields, Id, JsonObject, Nullable } from '../../http/schemas.js';
import { SUBMISSION_SORT } from './store.js';

const Answers = JsonObject;

export const Submission = Type.Object(
  {
    id: Type.String(),
    questionnaire_id: Type.String(),
    questionnaire_revision: Nullable(
      Type.Integer({
        description: "The questionnaire's revision sequence the answers were validated against.",
      }),
    ),
    user_id: Nullable(Type.String({ description: 'The respondent; null for anonymous submissions.' })),
    enrollment_id: Nullable(Type.String()),
    is_anonymous: Type.Boolean(),
    answers: Answers,
    metadata: Nullable(JsonObject),
    api_key_id: Nullable(Type.String({ description: 'The API key the submission came through, if any.' })),
    created_by: Type.String({ description: 'Who made the request (an API key counts as its creator).' }),
    ...AuditFields,
  },
  { $id: 'Submission' },
);

export const SubmitBody = Type.Object(
  {
    questionnaire_id: Id,
    answers: Type.Object(
      {},
      {
        additionalProperties: true,
        description: "Validated against the questionnaire's payload.answers_schema.",
      },
    ),
    enrollment_id: Type.Optional(Id),
    metadata: Type.Optional(Nullable(JsonObject)),
  },
  {
    examples: [
      { questionnaire_id: '019a6f40-1b7e-7d35-a0c2-7e1f9d4b3c58', answers: { score: 7, comment: 'fine' } },
    ],
    additionalProperties: false,
  },
);

export const AnonymousSubmitBody = Type.Omit(SubmitBody, ['enrollment_id'], {
  examples: [{ questionnaire_id: '019a6f40-1b7e-7d35-a0c2-7e1f9d4b3c58', answers: { score: 7 } }],
  additionalProperties: false,
});

export const AmendBody = Type.Object(
  {
    answers: Type.Optional(JsonObject),
    metadata: Type.Optional(Nullable(JsonObject)),
  },
  {
    examples: [{ answers: { score: 6 }, metadata: { reason: 'typo corrected by staff' } }],
    additionalProperties: false,
    minProperties: 1,
  },
);

export const SubmissionListQuery = ListQuery(SUBMISSION_SORT, {
  questionnaire_id: Type.Optional(Id),
  user_id: Type.Optional(Id),
  enrollment_id: Type.Optional(Id),
  is_anonymous: Type.Optional(QueryBoolean),
  ...TimeRanges('created_at', 'updated_at'),
});

export const SubmissionList = ListResponse('submissions', Submission);
