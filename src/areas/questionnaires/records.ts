import type {
  FolderTable,
  GranteeType,
  PermissionLevel,
  QuestionnaireRevisionTable,
  QuestionnaireStatus,
  QuestionnaireTable,
  RevisionOperation,
} from './tables.js';

/** The API shapes of the catalogue's records, and the row mappers that make them (JSON text parsed). */

export type JsonObject = Record<string, unknown>;

export interface Questionnaire {
  id: string;
  name: string;
  description: string | null;
  folder_id: string | null;
  status: QuestionnaireStatus;
  payload: JsonObject;
  config: JsonObject;
  schedule_payload: JsonObject;
  metadata: JsonObject;
  lineage_root_id: string;
  forked_from_id: string | null;
  forked_from_sequence: number | null;
  revision_sequence: number;
  published_at: string | null;
  published_by: string | null;
  archived_at: string | null;
  created_at: string;
  created_by: string | null;
  updated_at: string;
  updated_by: string | null;
  deleted_at: string | null;
}

/** The four documents a revision diffs (SPEC), plus the scalar attributes, each an RFC 6902 patch. */
export const DIFFED_DOCUMENTS = ['payload', 'config', 'schedule_payload', 'metadata'] as const;
export type DiffedDocument = (typeof DIFFED_DOCUMENTS)[number];

/** Scalar fields a snapshot restores besides the documents. */
export const SNAPSHOT_ATTRIBUTES = ['name', 'description', 'folder_id', 'status', 'deleted_at'] as const;

export interface PatchOperation {
  op: 'add' | 'remove' | 'replace' | 'move' | 'copy' | 'test';
  path: string;
  value?: unknown;
  from?: string;
}

export type RevisionDiffs = Record<DiffedDocument | 'attributes', PatchOperation[]>;

export interface QuestionnaireRevision {
  id: string;
  questionnaire_id: string;
  sequence: number;
  operation: RevisionOperation;
  lineage_root_id: string;
  status: QuestionnaireStatus;
  diffs: RevisionDiffs;
  created_at: string;
  created_by: string | null;
}

export interface Folder {
  id: string;
  name: string;
  description: string | null;
  parent_id: string | null;
  config: JsonObject;
  created_at: string;
  created_by: string | null;
  updated_at: string;
  updated_by: string | null;
  deleted_at: string | null;
}

export interface Permission {
  id: string;
  /** Exactly one of user_id and role_id is set: the grantee. */
  user_id: string | null;
  role_id: string | null;
  level: PermissionLevel;
  created_at: string;
  created_by: string | null;
  updated_at: string;
  updated_by: string | null;
  deleted_at: string | null;
}

export interface FolderPermission extends Permission {
  folder_id: string;
}

export interface QuestionnairePermission extends Permission {
  questionnaire_id: string;
}

const parse = (text: string): JsonObject => JSON.parse(text) as JsonObject;

export const toQuestionnaire = (r: QuestionnaireTable): Questionnaire => ({
  ...r,
  payload: parse(r.payload),
  config: parse(r.config),
  schedule_payload: parse(r.schedule_payload),
  metadata: parse(r.metadata),
  revision_sequence: Number(r.revision_sequence),
  forked_from_sequence: r.forked_from_sequence === null ? null : Number(r.forked_from_sequence),
});

export const toRevision = (r: QuestionnaireRevisionTable): QuestionnaireRevision => ({
  ...r,
  sequence: Number(r.sequence),
  diffs: JSON.parse(r.diffs) as RevisionDiffs,
});

export const toFolder = (r: FolderTable): Folder => ({ ...r, config: parse(r.config) });

export function grantee(r: { grantee_type: GranteeType; grantee_id: string }) {
  return {
    user_id: r.grantee_type === 'USER' ? r.grantee_id : null,
    role_id: r.grantee_type === 'ROLE' ? r.grantee_id : null,
  };
}
