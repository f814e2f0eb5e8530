/** Table types of the enrollments area (migration 0009_enrollments). */

export interface EnrollmentTable {
  id: string;
  /** The responder enrolled. */
  user_id: string;
  /** One of ENROLLMENT_STATUSES (transitions.ts). */
  status: string;
  /** 1: the responder must consent (starts PENDING_CONSENT); 0: consent was recorded outside the app. */
  consent_required: number;
  /** Version of the consent document the responder is asked to accept; null when none is tracked. */
  consent_version: string | null;
  consented_at: string | null;
  starts_at: string | null;
  ends_at: string | null;
  /** JSON object: per-enrollment schedule (overrides the questionnaire's schedule_payload for clients). */
  schedule: string | null;
  /** JSON object: free-form integration data. */
  metadata: string | null;
  /** Why the last status change happened (termination reason, withdrawal note). */
  status_reason: string | null;
  status_changed_at: string;
  created_by: string;
  created_at: string;
  updated_at: string;
  updated_by: string | null;
  deleted_at: string | null;
}

/**
 * The questionnaires of an enrollment, in order. `open_key` is 1 while the enrollment is open
 * (PENDING_CONSENT or ENROLLED, not deleted) and NULL otherwise: the unique index on
 * (user_id, questionnaire_id, open_key) then allows one open enrollment per user and questionnaire on
 * both stores (NULLs never collide), while closed enrollments keep their history.
 */
export interface EnrollmentQuestionnaireTable {
  enrollment_id: string;
  questionnaire_id: string;
  position: number;
  user_id: string;
  open_key: number | null;
}

export interface EnrollmentTables {
  enrollment: EnrollmentTable;
  enrollment_questionnaire: EnrollmentQuestionnaireTable;
}
