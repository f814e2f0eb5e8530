import { Type } from '@sinclair/typebox';
import { Search, TimeRanges } from '../../http/list-schemas.js';
import { AuditFields, Id, JsonObject, Nullable, patchBody, Timestamp } from '../../http/schemas.js';

/** TypeBox schemas of the questionnaire catalogue: requests, responses, OpenAPI (docs/platform.md). */

const literals = <T extends string>(values: readonly T[], description?: string) =>
  Type.Union(
    values.map((v) => Type.Literal(v)),
    description ? { description } : {},
  );

export const QuestionnaireStatus = literals(['DRAFT', 'PUBLISHED', 'ARCHIVED'] as const);
export const RevisionOperation = literals([
  'EDIT',
  'METADATA_EDIT',
  'PUBLISH',
  'FORK',
  'DELETE',
  'RESTORE',
  'ARCHIVE',
] as const);
export const PermissionLevel = literals(
  ['VIEW', 'EDIT', 'MANAGE'] as const,
  'VIEW: read it; EDIT: change it and create inside it; MANAGE: publish, archive, move, delete, restore, grant',
);

/**
 * Strings from the caller that reach SQL as text: PostgreSQL text cannot hold U+0000, so it is
 * refused here (400) instead of failing in the store (500). JSON documents are stored escaped.
 */
const NO_NUL = '^[^\\u0000]*$';
const text = (opts: { minLength?: number; maxLength: number }) => Type.String({ ...opts, pattern: NO_NUL });
/** An id given by the caller (path, body or filter). */
const Ref = text({ minLength: 1, maxLength: 200 });
export const Params = Type.Object({ id: Ref }, { additionalProperties: false });
const Name = text({ minLength: 1, maxLength: 200 });
const Description = Nullable(text({ maxLength: 4000 }));
const Audit = { ...AuditFields, created_by: Nullable(Type.String()) };

/** The questionnaire without its three content documents: list rows of the tree. */
const questionnaireCore = {
  id: Id,
  name: Type.String(),
  description: Nullable(Type.String()),
  folder_id: Nullable(Type.String()),
  status: QuestionnaireStatus,
  metadata: JsonObject,
  lineage_root_id: Type.String({
    description: 'The first questionnaire of the fork family (its own id for an original)',
  }),
  forked_from_id: Nullable(Type.String()),
  forked_from_sequence: Nullable(Type.Integer()),
  revision_sequence: Type.Integer({ description: 'Sequence of the latest revision' }),
  published_at: Nullable(Timestamp),
  published_by: Nullable(Type.String()),
  archived_at: Nullable(Timestamp),
  ...Audit,
};

export const Questionnaire = Type.Object(
  {
    ...questionnaireCore,
    payload: JsonObject,
    config: JsonObject,
    schedule_payload: JsonObject,
  },
  { $id: 'Questionnaire' },
);

export const TreeQuestionnaire = Type.Object(questionnaireCore);

/** What a questionnaire's author sets beside its name, on create and on update. */
const questionnaireContent = {
  description: Type.Optional(Description),
  folder_id: Type.Optional(Nullable(Ref)),
  payload: Type.Optional(JsonObject),
  config: Type.Optional(JsonObject),
  schedule_payload: Type.Optional(JsonObject),
  metadata: Type.Optional(JsonObject),
};

export const CreateQuestionnaireBody = Type.Object(
  {
    name: Name,
    ...questionnaireContent,
  },
  {
    examples: [
      {
        name: 'Daily check-in',
        description: 'Five short questions',
        folder_id: '019a6f40-1b7e-7d35-a0c2-7e1f9d4b3c58',
        payload: { questions: [{ id: 'score', type: 'number' }] },
      },
    ],
    additionalProperties: false,
  },
);

export const UpdateQuestionnaireBody = Type.Object(
  {
    name: Type.Optional(Name),
    ...questionnaireContent,
    base_sequence: Type.Optional(
      Type.Integer({
        minimum: 1,
        description:
          'Apply only if the latest revision still has this sequence (else 409 QUESTIONNAIRE.SEQUENCE_CONFLICT)',
      }),
    ),
  },
  {
    examples: [{ description: 'Six short questions', base_sequence: 3 }],
    additionalProperties: false,
    minProperties: 1,
  },
);

export const ForkBody = Type.Object(
  {
    name: Type.Optional(Name),
    description: Type.Optional(Description),
    folder_id: Type.Optional(Nullable(Ref)),
    revision_id: Type.Optional(Ref),
  },
  { examples: [{ name: 'Daily check-in (v2)' }], additionalProperties: false },
);

const PatchOperation = Type.Object({
  op: Type.Union([
    Type.Literal('add'),
    Type.Literal('remove'),
    Type.Literal('replace'),
    Type.Literal('move'),
    Type.Literal('copy'),
    Type.Literal('test'),
  ]),
  path: Type.String(),
  value: Type.Optional(Type.Unknown()),
  from: Type.Optional(Type.String()),
});
const Patch = Type.Array(PatchOperation);

export const Revision = Type.Object(
  {
    id: Id,
    questionnaire_id: Id,
    sequence: Type.Integer({ minimum: 1 }),
    operation: RevisionOperation,
    lineage_root_id: Type.String(),
    status: QuestionnaireStatus,
    diffs: Type.Object(
      {
        payload: Patch,
        config: Patch,
        schedule_payload: Patch,
        metadata: Patch,
        attributes: Patch,
      },
      { description: 'RFC 6902 patches from the state before this change to the state after it' },
    ),
    created_at: Timestamp,
    created_by: Nullable(Type.String()),
  },
  { $id: 'QuestionnaireRevision' },
);

export const Snapshot = Type.Object({
  questionnaire_id: Id,
  revision_id: Id,
  sequence: Type.Integer(),
  operation: RevisionOperation,
  lineage_root_id: Type.String(),
  created_at: Timestamp,
  created_by: Nullable(Type.String()),
  state: Type.Object({
    name: Type.String(),
    description: Nullable(Type.String()),
    folder_id: Nullable(Type.String()),
    status: QuestionnaireStatus,
    deleted_at: Nullable(Timestamp),
    payload: JsonObject,
    config: JsonObject,
    schedule_payload: JsonObject,
    metadata: JsonObject,
  }),
});

export const RevisionParams = Type.Object({ id: Ref, revision_id: Ref }, { additionalProperties: false });

export const questionnaireFilters = {
  status: Type.Optional(QuestionnaireStatus),
  folder_id: Type.Optional(Ref),
  lineage_root_id: Type.Optional(Ref),
  name: Type.Optional(Search('the name')),
  search: Type.Optional(Search('name and description')),
  created_by: Type.Optional(Ref),
  ...TimeRanges('created_at', 'updated_at'),
};

export const revisionFilters = {
  operation: Type.Optional(RevisionOperation),
  created_by: Type.Optional(Ref),
  ...TimeRanges('created_at'),
  // The column is a 32-bit integer: a larger filter would be an error on PostgreSQL, not a 400.
  sequence_gte: Type.Optional(Type.Integer({ minimum: 1, maximum: 2_147_483_647 })),
  sequence_lte: Type.Optional(Type.Integer({ minimum: 1, maximum: 2_147_483_647 })),
};

// ---- folders

export const Folder = Type.Object(
  {
    id: Id,
    name: Type.String(),
    description: Nullable(Type.String()),
    parent_id: Nullable(Type.String()),
    config: Type.Object(
      {},
      { additionalProperties: true, description: "This folder's layer of the effective config" },
    ),
    ...Audit,
  },
  { $id: 'Folder' },
);

export const CreateFolderBody = Type.Object(
  {
    name: Name,
    description: Type.Optional(Description),
    parent_id: Type.Optional(Nullable(Ref)),
    config: Type.Optional(JsonObject),
  },
  { examples: [{ name: 'Cardiology', parent_id: null }], additionalProperties: false },
);

export const UpdateFolderBody = patchBody(CreateFolderBody, [{ name: 'Cardiology (archive)' }]);

export const folderFilters = {
  parent_id: Type.Optional(Ref),
  root: Type.Optional(Type.Boolean({ description: 'true: only top-level folders; false: only subfolders' })),
  name: Type.Optional(Search('the name')),
  search: Type.Optional(Search('name and description')),
};

export const TreeNode = Type.Recursive(
  (Node) =>
    Type.Object({
      ...Folder.properties,
      children: Type.Array(Node),
      questionnaires: Type.Optional(Type.Array(TreeQuestionnaire)),
    }),
  { $id: 'FolderTreeNode' },
);

export const TreeQuery = Type.Object(
  {
    include_questionnaires: Type.Optional(Type.Boolean({ default: false })),
    questionnaire_status_id: Type.Optional(QuestionnaireStatus),
    include_archived: Type.Optional(Type.Boolean({ default: false })),
    root_id: Type.Optional(Ref),
  },
  { additionalProperties: false },
);

export const Tree = Type.Object({
  folders: Type.Array(TreeNode),
  questionnaires: Type.Optional(
    Type.Array(TreeQuestionnaire, { description: 'Questionnaires not inside a listed folder (root level)' }),
  ),
});

// ---- permissions

const grantFields = {
  user_id: Nullable(Type.String()),
  role_id: Nullable(Type.String()),
  level: PermissionLevel,
};

export const FolderPermission = Type.Object(
  { id: Id, folder_id: Id, ...grantFields, ...Audit },
  { $id: 'FolderPermission' },
);
export const QuestionnairePermission = Type.Object(
  {
    id: Id,
    questionnaire_id: Id,
    ...grantFields,
    ...Audit,
  },
  { $id: 'QuestionnairePermission' },
);

const grantee = {
  user_id: Type.Optional(Ref),
  role_id: Type.Optional(Ref),
  level: PermissionLevel,
};

/** The body that grants a permission on one folder or questionnaire: exactly one grantee. */
const createPermissionBody = <F extends 'folder_id' | 'questionnaire_id'>(
  objectField: F,
  example: Record<string, string>,
) =>
  Type.Object({ [objectField]: Ref, ...grantee } as { [K in F]: typeof Ref } & typeof grantee, {
    examples: [{ [objectField]: '019a6f40-1b7e-7d35-a0c2-7e1f9d4b3c58', ...example }],
    additionalProperties: false,
    description: 'Exactly one of user_id and role_id',
  });
export const CreateFolderPermissionBody = createPermissionBody('folder_id', {
  role_id: '019a6f3e-9a44-7c10-8e21-5b0d3f6c2a17',
  level: 'VIEW',
});
export const CreateQuestionnairePermissionBody = createPermissionBody('questionnaire_id', {
  user_id: '019a6f3e-8c1d-7b2a-9f4e-2d5c8b7a1e03',
  level: 'EDIT',
});
export const UpdatePermissionBody = Type.Object(
  { level: PermissionLevel },
  { examples: [{ level: 'MANAGE' }], additionalProperties: false },
);

export const permissionFilters = (objectField: 'folder_id' | 'questionnaire_id') => ({
  [objectField]: Type.Optional(Ref),
  user_id: Type.Optional(Ref),
  role_id: Type.Optional(Ref),
  level: Type.Optional(PermissionLevel),
});

// ---- config

const ConfigSource = Type.Object({
  type: literals(['defaults', 'folder', 'questionnaire'] as const),
  id: Type.Optional(Type.String()),
});

export const EffectiveQuestionnaireConfig = Type.Object({
  questionnaire_id: Id,
  folder_id: Nullable(Type.String()),
  config: JsonObject,
  sources: Type.Array(ConfigSource, { description: 'Layers merged in order (RFC 7396); later wins' }),
});

export const EffectiveFolderConfig = Type.Object({
  folder_id: Id,
  config: JsonObject,
  sources: Type.Array(ConfigSource),
});

export const AppConfig = Type.Object({
  version: Type.String(),
  api_version: Type.String(),
  auth: Type.Object({ external_idp_enabled: Type.Boolean(), mfa_methods: Type.Array(Type.String()) }),
  questionnaire: Type.Object({
    statuses: Type.Array(Type.String()),
    transitions: Type.Record(
      Type.String(),
      Type.Object({ from: Type.Array(Type.String()), to: Type.String() }),
    ),
    revision_operations: Type.Array(Type.String()),
    config_defaults: JsonObject,
  }),
  permission_levels: Type.Array(Type.String()),
  pagination: Type.Object({ default_limit: Type.Integer(), max_limit: Type.Integer() }),
});
