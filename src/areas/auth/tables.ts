/**
 * Tables of the sign-in flows (migration 0003_auth). Every secret a client holds (refresh, MFA,
 * reset and device registration tokens) is stored only as its SHA-256 hex; the TOTP secret is stored
 * as a Fernet token under the vault key.
 */

/** A refresh token. One sign-in session (auth_session) is one rotation family. */
export interface RefreshTokenTable {
  id: string;
  /** SHA-256 hex of the token; selected only by the query that redeems it. */
  token_hash: string;
  user_id: string;
  /** The sign-in session this token belongs to: its rotation family. */
  session_id: string;
  /** The token this one replaced (null for the first of a family). */
  parent_id: string | null;
  device_id: string | null;
  auth_path: string;
  expires_at: string;
  ip_address: string | null;
  user_agent: string | null;
  created_at: string;
  /** Set when the token was redeemed (rotated); presenting it again is reuse. */
  used_at: string | null;
  revoked_at: string | null;
  revoked_reason: string | null;
  /** Soft delete: set by DELETE /refresh_token/{id} and by the 24-hour expiry job. */
  deleted_at: string | null;
}

export interface AuthDeviceTable {
  id: string;
  user_id: string;
  name: string;
  /** SHA-256 hex of the one-time registration token. */
  registration_token_hash: string;
  registration_expires_at: string;
  /** Set when the registration token was exchanged (it works once). */
  registered_at: string | null;
  registered_by: string | null;
  consent_given: number;
  consent_at: string | null;
  last_login_at: string | null;
  access_token_ttl_seconds: number | null;
  refresh_token_ttl_seconds: number | null;
  created_at: string;
  updated_at: string;
  updated_by: string | null;
  deleted_at: string | null;
}

export interface PasswordResetTokenTable {
  id: string;
  user_id: string;
  token_hash: string;
  expires_at: string;
  used_at: string | null;
  created_at: string;
}

/** The pending second step of a password login of a user with MFA enabled. */
export interface MfaChallengeTable {
  id: string;
  user_id: string;
  token_hash: string;
  expires_at: string;
  /** Wrong codes given against this challenge; it dies after MFA_CHALLENGE_MAX_ATTEMPTS. */
  attempts: number;
  used_at: string | null;
  created_at: string;
}

/** Failed attempts per account (hash of the email) and per client address: the brute-force guard. */
export interface AuthAttemptTable {
  key: string;
  failures: number;
  last_failure_at: string;
  locked_until: string | null;
  /** How many times the key was locked in a row; each lock lasts twice as long as the one before. */
  lock_count: number;
}

/**
 * A user's sign-in state (migration 0011): one row per user who has any; a user without one has no
 * MFA secret, the global lifetimes and no reset requirement. `mfa_enabled` is on identity's `users`.
 */
export interface AuthUserTable {
  user_id: string;
  /** Fernet token of the active TOTP secret (base32 text). */
  mfa_secret: string | null;
  /** Highest TOTP time step accepted for the active secret: codes never work twice. */
  mfa_last_step: number | null;
  /** Fernet token of a secret from POST /auth/mfa/setup that is not enabled yet. */
  mfa_pending_secret: string | null;
  mfa_pending_verified: number;
  mfa_pending_last_step: number | null;
  /** Per-user lifetimes (null: the global setting). */
  access_token_ttl_seconds: number | null;
  refresh_token_ttl_seconds: number | null;
  /** Password-based sign-in is refused until the password is reset (docs/auth.md). */
  password_reset_required: number;
  updated_at: string | null;
  updated_by: string | null;
}

export interface AuthTables {
  auth_user: AuthUserTable;
  refresh_token: RefreshTokenTable;
  auth_device: AuthDeviceTable;
  password_reset_token: PasswordResetTokenTable;
  mfa_challenge: MfaChallengeTable;
  auth_attempt: AuthAttemptTable;
}
