/**
 * Enrollment statuses (docs/platform.md "Status transitions") and the one transition table every status
 * change goes through. docs/platform.md prints the same table.
 */
export const ENROLLMENT_STATUSES = [
  'PENDING_CONSENT',
  'ENROLLED',
  'COMPLETED',
  'TERMINATED_BY_PROVIDER',
  'TERMINATED_BY_PATIENT',
] as const;

export type EnrollmentStatus = (typeof ENROLLMENT_STATUSES)[number];

/** Who causes a change: a provider through PATCH /enrollment/{id}, or the responder through /enrollment_consent. */
export type EnrollmentActor = 'provider' | 'responder';

/** Open enrollments take submissions and block a second open enrollment for the same questionnaire. */
export const OPEN_STATUSES: readonly EnrollmentStatus[] = ['PENDING_CONSENT', 'ENROLLED'];

export const isOpen = (status: string): boolean => (OPEN_STATUSES as readonly string[]).includes(status);

/**
 * from -> to -> actors allowed to make that move. Everything absent is refused with
 * ENROLLMENT.INVALID_TRANSITION. COMPLETED and the two TERMINATED statuses are terminal.
 * - Only the responder moves PENDING_CONSENT to ENROLLED (consent cannot be given for them; an
 *   enrollment whose consent was taken outside the app is created ENROLLED with consent_required false).
 * - A provider may record a patient's withdrawal (TERMINATED_BY_PATIENT), e.g. one given by phone.
 * - Only a provider completes an enrollment.
 * - A provider may send an ENROLLED enrollment back to PENDING_CONSENT to ask for consent again
 *   (a new consent document version after a protocol amendment).
 */
export const TRANSITIONS: Record<EnrollmentStatus, Partial<Record<EnrollmentStatus, EnrollmentActor[]>>> = {
  PENDING_CONSENT: {
    ENROLLED: ['responder'],
    TERMINATED_BY_PATIENT: ['responder', 'provider'],
    TERMINATED_BY_PROVIDER: ['provider'],
  },
  ENROLLED: {
    PENDING_CONSENT: ['provider'],
    COMPLETED: ['provider'],
    TERMINATED_BY_PATIENT: ['responder', 'provider'],
    TERMINATED_BY_PROVIDER: ['provider'],
  },
  COMPLETED: {},
  TERMINATED_BY_PROVIDER: {},
  TERMINATED_BY_PATIENT: {},
};

export function canTransition(from: string, to: string, actor: EnrollmentActor): boolean {
  const row = TRANSITIONS[from as EnrollmentStatus];
  return row?.[to as EnrollmentStatus]?.includes(actor) ?? false;
}

/** The statuses `actor` may move an enrollment in `from` to (for error details). */
export function allowedTargets(from: string, actor: EnrollmentActor): EnrollmentStatus[] {
  const row = TRANSITIONS[from as EnrollmentStatus] ?? {};
  return (Object.keys(row) as EnrollmentStatus[]).filter((to) => row[to]?.includes(actor));
}
