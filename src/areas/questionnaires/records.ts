import type { Static } from '@sinclair/typebox';
import type {
  FolderPermission as FolderPermissionSchema,
  Folder as FolderSchema,
  QuestionnairePermission as QuestionnairePermissionSchema,
  Questionnaire as QuestionnaireSchema,
  Revision as RevisionSchema,
} from './schemas.js';
import type { FolderTable, GranteeType, QuestionnaireRevisionTable, QuestionnaireTable } from './tables.js';

/**
 * The catalogue's records as the API shows them (their shapes are the TypeBox schemas of schemas.ts),
 * and the row mappers that make them (JSON text parsed).
 */

export type JsonObject = Record<string, unknown>;

export type Questionnaire = Static<typeof QuestionnaireSchema>;

/** The four documents a revision diffs (docs/platform.md "Revisions"), plus the scalar attributes, each an RFC 6902 patch. */
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

export type QuestionnaireRevision = Static<typeof RevisionSchema>;

export type Folder = Static<typeof FolderSchema>;

export type FolderPermission = Static<typeof FolderPermissionSchema>;

export type QuestionnairePermission = Static<typeof QuestionnairePermissionSchema>;

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
