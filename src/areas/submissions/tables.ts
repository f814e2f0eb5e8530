/** Table types of the submissions area (migration 0009_enrollments). */

export interface QuestionnaireSubmissionTable {
  id: string;
  questionnaire_id: string;
  /** The questionnaire's revision sequence the answers were given (or last amended) against. */
  questionnaire_revision: number | null;
  /** The respondent; null for anonymous submissions. */
  user_id: string | null;
  enrollment_id: string | null;
  is_anonymous: number;
  /** JSON object: the raw answers as submitted (or as last amended). */
  answers: string;
  /** JSON object: client context (device, timings), free-form. */
  metadata: string | null;
  /** The API key used, when the submission came through one. */
  api_key_id: string | null;
  /** Who made the request (for anonymous submissions: the API key's creator, docs/identity.md "API keys"). */
  created_by: string;
  created_at: string;
  updated_at: string;
  updated_by: string | null;
  deleted_at: string | null;
}

export interface SubmissionTables {
  questionnaire_submission: QuestionnaireSubmissionTable;
}
