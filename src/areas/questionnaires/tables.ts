/**
 * Tables of the questionnaire catalogue: folders, questionnaires, their revisions, and the access
 * grants on both. JSON documents are text (parsed by the store's row mappers), timestamps ISO text.
 */

export type QuestionnaireStatus = 'DRAFT' | 'PUBLISHED' | 'ARCHIVED';

export type RevisionOperation =
  | 'EDIT'
  | 'METADATA_EDIT'
  | 'PUBLISH'
  | 'FORK'
  | 'DELETE'
  | 'RESTORE'
  | 'ARCHIVE';

export type PermissionLevel = 'VIEW' | 'EDIT' | 'MANAGE';

export type GranteeType = 'USER' | 'ROLE';

export interface FolderTable {
  id: string;
  name: string;
  description: string | null;
  parent_id: string | null;
  /** JSON object: this folder's layer of the effective questionnaire config. */
  config: string;
  created_at: string;
  created_by: string | null;
  updated_at: string;
  updated_by: string | null;
  deleted_at: string | null;
}

export interface QuestionnaireTable {
  id: string;
  name: string;
  description: string | null;
  folder_id: string | null;
  status: QuestionnaireStatus;
  /** JSON objects. */
  payload: string;
  config: string;
  schedule_payload: string;
  metadata: string;
  /** The first questionnaire of the fork family (its own id for an original). */
  lineage_root_id: string;
  forked_from_id: string | null;
  forked_from_sequence: number | null;
  /** Sequence of the latest revision. */
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

export interface QuestionnaireRevisionTable {
  id: string;
  questionnaire_id: string;
  /** 1, 2, 3 ... per questionnaire; unique with questionnaire_id. */
  sequence: number;
  operation: RevisionOperation;
  lineage_root_id: string;
  /** Status of the questionnaire after this change. */
  status: QuestionnaireStatus;
  /** JSON: `{payload, config, schedule_payload, metadata, attributes}`, each an RFC 6902 patch. */
  diffs: string;
  created_at: string;
  created_by: string | null;
}

interface PermissionColumns {
  id: string;
  grantee_type: GranteeType;
  grantee_id: string;
  level: PermissionLevel;
  created_at: string;
  created_by: string | null;
  updated_at: string;
  updated_by: string | null;
  deleted_at: string | null;
}

export interface FolderPermissionTable extends PermissionColumns {
  folder_id: string;
}

export interface QuestionnairePermissionTable extends PermissionColumns {
  questionnaire_id: string;
}

export interface QuestionnaireTables {
  folder: FolderTable;
  questionnaire: QuestionnaireTable;
  questionnaire_revision: QuestionnaireRevisionTable;
  folder_permission: FolderPermissionTable;
  questionnaire_permission: QuestionnairePermissionTable;
}
