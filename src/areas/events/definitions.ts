// Long file: the catalogue of every built-in event type, one definition each, read as one list.
/**
 * The event definition registry's contents: every event type the service emits (docs/events.md "Event types and sources"), with
 * the JSON Schema of its `data`, where its subject comes from, and complete example events.
 *
 * `subject_template` names the `data` field that holds the subject (`{user_id}`): docs/events.md "Event types and sources" makes
 * the subject the id of the resource the event is about. `source` is stable per area (docs/events.md).
 * Schemas require what the contracts promise and describe the optional fields areas add; they stay
 * open (`additionalProperties: true`) so adding a field to an event is a compatible change.
 */
/** A built-in event type: every field set (the API's EventDefinition also carries custom types). */
export interface BuiltinEventDefinition {
  event_type: string;
  schema_version: string;
  description: string;
  source: string;
  data_schema: Record<string, unknown>;
  subject_template: string;
  examples: Record<string, unknown>[];
  deprecated: boolean;
}

export const EVENT_SOURCES = {
  user: '/api/v1/user',
  folder: '/api/v1/folder',
  questionnaire: '/api/v1/questionnaire',
  submission: '/api/v1/questionnaire_submission',
  event_subscription: '/api/v1/event_subscription',
  workflow_run: '/api/v1/workflow_run',
  webhook: '/api/v1/webhook',
} as const;

const id = { type: 'string', minLength: 1 };
const nullableString = { type: ['string', 'null'] };
const timestamp = { type: 'string', format: 'date-time' };

function dataSchema(
  title: string,
  required: string[],
  properties: Record<string, unknown>,
): Record<string, unknown> {
  return {
    $schema: 'http://json-schema.org/draft-07/schema#',
    title,
    type: 'object',
    required,
    properties,
    additionalProperties: true,
  };
}

const EXAMPLE_TIME = '2026-01-01T12:00:00.000Z';
let exampleSeq = 0;

function define(
  area: keyof typeof EVENT_SOURCES,
  name: string,
  description: string,
  schema: Record<string, unknown>,
  subjectField: string,
  exampleData: Record<string, unknown>[],
): BuiltinEventDefinition {
  const type = `svc.${name}`;
  return {
    event_type: type,
    schema_version: '1.0',
    description,
    source: EVENT_SOURCES[area],
    data_schema: schema,
    subject_template: `{${subjectField}}`,
    examples: exampleData.map((data) => ({
      specversion: '1.0',
      id: `00000000-0000-4000-8000-${String(++exampleSeq).padStart(12, '0')}`,
      source: EVENT_SOURCES[area],
      type,
      subject: data[subjectField],
      time: EXAMPLE_TIME,
      datacontenttype: 'application/json',
      data,
    })),
    deprecated: false,
  };
}

const USER_ID = '5b0e6c1e-2f7a-4c1b-9d55-0c7f3e1d2a10';
const FOLDER_ID = '9a8b7c6d-1e2f-4a3b-8c4d-5e6f7a8b9c0d';
const PARENT_FOLDER_ID = '1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f';
const QUESTIONNAIRE_ID = '3f1e2d4c-5b6a-4978-8a9b-0c1d2e3f4a5b';
const SUBMISSION_ID = '7e6d5c4b-3a29-4187-9f6e-5d4c3b2a1908';
const API_KEY_ID = '2a3b4c5d-6e7f-4a8b-9c0d-1e2f3a4b5c6d';

const userProperties = {
  user_id: id,
  email: { type: 'string', minLength: 1 },
  name: nullableString,
};
const folderProperties = { folder_id: id, name: { type: 'string' }, parent_id: nullableString };
const REVISION_ID = '4d5e6f7a-8b9c-4d0e-9f1a-2b3c4d5e6f7a';
const SOURCE_QUESTIONNAIRE_ID = '6c7d8e9f-0a1b-4c2d-8e3f-4a5b6c7d8e9f';

const questionnaireProperties = {
  questionnaire_id: id,
  name: { type: 'string' },
  status: { enum: ['DRAFT', 'PUBLISHED', 'ARCHIVED'] },
  folder_id: nullableString,
  revision_id: nullableString,
  sequence: { type: 'integer', minimum: 1 },
  operation: {
    enum: ['EDIT', 'METADATA_EDIT', 'PUBLISH', 'FORK', 'DELETE', 'RESTORE', 'ARCHIVE'],
    description: 'The revision operation of the change.',
  },
  lineage_root_id: { ...id, description: 'The first questionnaire of its fork family.' },
};
const answers = {
  type: 'object',
  description:
    'The raw answers. When answers.scoring exists it also carries variables_by_name and functions_by_name (docs/events.md "Event types and sources").',
};
const ENROLLMENT_ID = '3e4f5a6b-7c8d-4e9f-8a0b-1c2d3e4f5a6b';
const submissionProperties = {
  submission_id: id,
  questionnaire_id: id,
  questionnaire_revision: {
    type: ['integer', 'null'],
    description: 'The sequence of the questionnaire revision the answers were given to.',
  },
  user_id: { ...nullableString, description: 'The respondent; null for an anonymous submission.' },
  enrollment_id: nullableString,
};
const scoredAnswers = {
  q1: 'yes',
  scoring: {
    variables: [{ name: 'total', value: 7 }],
    functions: [{ name: 'sum', expression: { '+': [{ var: 'q1_score' }, 4] } }],
    variables_by_name: { total: { name: 'total', value: 7 } },
    functions_by_name: { sum: { name: 'sum', expression: { '+': [{ var: 'q1_score' }, 4] } } },
  },
};

const userEvent = (name: string, description: string, extra: Record<string, unknown> = {}) =>
  define(
    'user',
    `user.${name}`,
    description,
    dataSchema(`svc.user.${name} data`, ['user_id', 'email'], { ...userProperties, ...extra }),
    'user_id',
    [{ user_id: USER_ID, email: 'ada@example.com', name: 'Ada Lovelace' }],
  );

const folderExample = { folder_id: FOLDER_ID, name: 'Cardiology', parent_id: PARENT_FOLDER_ID };

const folderEvent = (
  name: string,
  description: string,
  extra: Record<string, unknown> = {},
  examples: Record<string, unknown>[] = [folderExample],
) =>
  define(
    'folder',
    `folder.${name}`,
    description,
    dataSchema(`svc.folder.${name} data`, ['folder_id'], { ...folderProperties, ...extra }),
    'folder_id',
    examples,
  );

const questionnaireExample = (status: string, operation: string, sequence: number) => ({
  questionnaire_id: QUESTIONNAIRE_ID,
  name: 'Intake',
  status,
  folder_id: FOLDER_ID,
  revision_id: REVISION_ID,
  sequence,
  operation,
  lineage_root_id: QUESTIONNAIRE_ID,
});

const questionnaireEvent = (
  name: string,
  description: string,
  operations: string[],
  examples: Record<string, unknown>[],
  extra: Record<string, unknown> = {},
) =>
  define(
    'questionnaire',
    `questionnaire.${name}`,
    description,
    dataSchema(`svc.questionnaire.${name} data`, ['questionnaire_id'], {
      ...questionnaireProperties,
      operation: { ...questionnaireProperties.operation, enum: operations },
      ...extra,
    }),
    'questionnaire_id',
    examples,
  );

/** The events of one submission: always its id and questionnaire, plus what `required` adds. */
const submissionEvent = (
  name: string,
  description: string,
  required: string[],
  properties: Record<string, unknown>,
  examples: Record<string, unknown>[],
) =>
  define(
    'submission',
    `submission.${name}`,
    description,
    dataSchema(`svc.submission.${name} data`, ['submission_id', 'questionnaire_id', ...required], properties),
    'submission_id',
    examples,
  );
/** An update or deletion also says whether the submission was anonymous. */
const changedSubmissionProperties = { ...submissionProperties, is_anonymous: { type: 'boolean' } };
const submissionExample = {
  submission_id: SUBMISSION_ID,
  questionnaire_id: QUESTIONNAIRE_ID,
  user_id: USER_ID,
  enrollment_id: ENROLLMENT_ID,
};

const RUN_ID = '0199a3b1-2d3e-7f4a-9b5c-6d7e8f9a0b1c';
const runEvent = (status: 'completed' | 'failed' | 'cancelled', description: string) =>
  define(
    'workflow_run',
    `workflow_run.${status}`,
    description,
    dataSchema(`svc.workflow_run.${status} data`, ['workflow_run_id', 'event_subscription_id', 'status'], {
      workflow_run_id: id,
      event_subscription_id: id,
      status: { type: 'string', enum: [status] },
      error: nullableString,
      event_id: { type: 'string' },
      event_type: { type: 'string' },
      graph_version: { type: 'integer' },
      started_at: { type: ['string', 'null'] },
      completed_at: { type: ['string', 'null'] },
      rerun_of: nullableString,
    }),
    'workflow_run_id',
    [
      {
        workflow_run_id: RUN_ID,
        event_subscription_id: '0199a3b1-1c2d-7e3f-8a4b-5c6d7e8f9a0b',
        status,
        error: status === 'failed' ? 'node "notify" (ACTION) failed: HTTP 503' : null,
        event_id: '0199a3b0-fa0b-7c1d-8e2f-3a4b5c6d7e8f',
        event_type: 'svc.user.created',
        graph_version: 1,
        started_at: EXAMPLE_TIME,
        completed_at: EXAMPLE_TIME,
        rerun_of: null,
      },
    ],
  );

export const EVENT_DEFINITIONS: readonly BuiltinEventDefinition[] = [
  userEvent('created', 'A user was created.'),
  userEvent('updated', 'A user was changed.', {
    changed_fields: { type: 'array', items: { type: 'string' } },
  }),
  userEvent('deleted', 'A user was soft-deleted.', { deleted_at: timestamp }),
  userEvent('password.changed', 'A user changed or reset their password (the password is never included).', {
    changed_by: {
      ...nullableString,
      description: 'The id of whoever set the password: the user themself, or an administrator.',
    },
  }),
  folderEvent('created', 'A folder was created.'),
  folderEvent(
    'updated',
    'A folder was changed (renamed or moved). A move also carries previous_parent_id.',
    {
      changed_fields: { type: 'array', items: { type: 'string' } },
      previous_parent_id: {
        ...nullableString,
        description: 'Where the folder was before a move; present only when parent_id changed.',
      },
    },
    [
      { ...folderExample, name: 'Cardiology (adult)', changed_fields: ['name'] },
      { ...folderExample, changed_fields: ['parent_id'], previous_parent_id: null },
    ],
  ),
  folderEvent('deleted', 'A folder was soft-deleted.', { deleted_at: timestamp }),
  questionnaireEvent(
    'created',
    'A questionnaire was created: by POST /questionnaire (its first revision, operation EDIT) or by forking ' +
      'another one (operation FORK, with forked_from_id naming the source; lineage_root_id is the ' +
      "source's lineage root).",
    ['EDIT', 'FORK'],
    [
      questionnaireExample('DRAFT', 'EDIT', 1),
      {
        ...questionnaireExample('DRAFT', 'FORK', 1),
        name: 'Intake (v2)',
        lineage_root_id: SOURCE_QUESTIONNAIRE_ID,
        forked_from_id: SOURCE_QUESTIONNAIRE_ID,
      },
    ],
    {
      forked_from_id: {
        ...id,
        description: 'Only when operation is FORK: the questionnaire this one was forked from.',
      },
    },
  ),
  questionnaireEvent(
    'updated',
    'A questionnaire was edited (EDIT or METADATA_EDIT revision).',
    ['EDIT', 'METADATA_EDIT'],
    [questionnaireExample('DRAFT', 'EDIT', 2)],
  ),
  questionnaireEvent(
    'published',
    'A questionnaire was published (PUBLISH revision).',
    ['PUBLISH'],
    [questionnaireExample('PUBLISHED', 'PUBLISH', 2)],
  ),
  questionnaireEvent(
    'deleted',
    'A questionnaire was soft-deleted (DELETE revision).',
    ['DELETE'],
    [{ ...questionnaireExample('DRAFT', 'DELETE', 2), deleted_at: EXAMPLE_TIME }],
    { deleted_at: timestamp },
  ),
  questionnaireEvent(
    'restored',
    'A deleted questionnaire was restored (RESTORE revision).',
    ['RESTORE'],
    [questionnaireExample('DRAFT', 'RESTORE', 3)],
  ),
  questionnaireEvent(
    'archived',
    'A questionnaire was archived (ARCHIVE revision).',
    ['ARCHIVE'],
    [questionnaireExample('ARCHIVED', 'ARCHIVE', 3)],
  ),
  submissionEvent(
    'created',
    'A signed-in user submitted a questionnaire. data.answers is enriched when it has a scoring block.',
    ['answers'],
    { ...submissionProperties, answers },
    [
      { ...submissionExample, questionnaire_revision: 2, answers: { q1: 'yes' } },
      { ...submissionExample, questionnaire_revision: 2, enrollment_id: null, answers: scoredAnswers },
    ],
  ),
  submissionEvent(
    'anonymous_created',
    'A questionnaire was submitted anonymously with an API key. data.answers is enriched like submission.created.',
    ['answers'],
    {
      submission_id: id,
      questionnaire_id: id,
      questionnaire_revision: submissionProperties.questionnaire_revision,
      answers,
      api_key_id: nullableString,
    },
    [
      {
        submission_id: SUBMISSION_ID,
        questionnaire_id: QUESTIONNAIRE_ID,
        questionnaire_revision: 2,
        api_key_id: API_KEY_ID,
        answers: { q1: 'no' },
      },
    ],
  ),
  submissionEvent(
    'updated',
    'A submission was changed.',
    [],
    {
      ...changedSubmissionProperties,
      changed_fields: {
        type: 'array',
        items: { type: 'string' },
        description: 'Which of answers and metadata the change replaced.',
      },
      answers: { ...answers, description: `The answers after the change. ${answers.description}` },
    },
    [{ ...submissionExample, is_anonymous: false, changed_fields: ['answers'], answers: { q1: 'maybe' } }],
  ),
  submissionEvent(
    'deleted',
    'A submission was soft-deleted.',
    [],
    { ...changedSubmissionProperties, deleted_at: timestamp },
    [{ ...submissionExample, enrollment_id: null, is_anonymous: false, deleted_at: EXAMPLE_TIME }],
  ),
  runEvent(
    'completed',
    'A workflow run completed. Published while an enabled subscription or webhook names this type.',
  ),
  runEvent('failed', 'A workflow run failed: error says which node and why.'),
  runEvent('cancelled', 'A workflow run was cancelled (POST /workflow_run/{id}/cancel).'),
  define(
    'event_subscription',
    'event_subscription.paused',
    'The rate guard paused (disabled) a subscription that started more runs in a minute than its limit ' +
      '(docs/workflows.md "Loop safety"); it stays disabled until it is enabled again.',
    dataSchema('svc.event_subscription.paused data', ['event_subscription_id', 'reason', 'paused_at'], {
      event_subscription_id: id,
      name: { type: 'string' },
      reason: { type: 'string' },
      paused_at: timestamp,
    }),
    'event_subscription_id',
    [
      {
        event_subscription_id: '0199a3b1-1c2d-7e3f-8a4b-5c6d7e8f9a0b',
        name: 'announce new folders',
        reason:
          'rate guard: 6000 runs caused by runs started in the last minute, the limit is 6000 ' +
          '(SVC_WORKFLOW_MAX_RUNS_PER_MINUTE); a workflow that triggers itself? ' +
          'Enable the subscription again once the cause is fixed.',
        paused_at: EXAMPLE_TIME,
      },
    ],
  ),
  define(
    'webhook',
    'webhook.delivery_failed',
    'A webhook delivery used up its attempts and failed for good (never for deliveries of this type itself).',
    dataSchema('svc.webhook.delivery_failed data', ['delivery_id', 'webhook_id', 'event_id', 'event_type'], {
      delivery_id: id,
      webhook_id: id,
      event_id: id,
      event_type: { type: 'string' },
      attempts: { type: 'integer' },
      error: nullableString,
      response_status: { type: ['integer', 'null'] },
    }),
    'delivery_id',
    [
      {
        delivery_id: '0199a3b0-1c2d-7e3f-8a4b-5c6d7e8f9a0b',
        webhook_id: '0199a3af-0b1c-7d2e-9f3a-4b5c6d7e8f90',
        event_id: '0199a3ae-fa0b-7c1d-8e2f-3a4b5c6d7e8f',
        event_type: 'svc.user.created',
        attempts: 5,
        error: 'HTTP 503',
        response_status: 503,
      },
    ],
  ),
];
