import type { Static } from '@sinclair/typebox';
import { findActive, findWhere } from '../../db/audit.js';
import { revokeSignIns, type SignInFilter } from '../../db/sign-ins.js';
import { type Db, type Tx, updatedAny } from '../../db/store.js';
import { type Page, paginate, whereEquals } from '../../http/list.js';
import type { RefreshTokenRecord as RefreshTokenRecordSchema } from './schemas.js';
import type { MfaChallengeTable, PasswordResetTokenTable, RefreshTokenTable } from './tables.js';

/**
 * SQL of the tokens the sign-in flows hand out: refresh tokens, MFA login challenges, password reset
 * tokens. Token hashes are selected only by the queries that redeem a token. Single-use tokens are
 * consumed by conditional updates (`... where used_at is null`), so two processes redeeming the same
 * token cannot both win.
 */

export type RefreshTokenRecord = Static<typeof RefreshTokenRecordSchema>;

const REFRESH_COLUMNS = [
  'id',
  'user_id',
  'session_id',
  'parent_id',
  'device_id',
  'auth_path',
  'expires_at',
  'ip_address',
  'user_agent',
  'created_at',
  'used_at',
  'revoked_at',
  'revoked_reason',
  'deleted_at',
] as const;

export interface RefreshFilters {
  user_id?: string;
  device_id?: string;
  session_id?: string;
  auth_path?: string;
  /** Usable right now: not rotated, not revoked, not expired. */
  active?: boolean;
}

export async function insertRefreshToken(tx: Tx, row: RefreshTokenTable) {
  await tx.db.insertInto('refresh_token').values(row).execute();
}

/** Everything a redemption needs in one round trip: the token, its session, user and device. */
/**
 * Everything a redemption needs of this area in one round trip: the token and its device. The state
 * of its session and user is identity's (UserService.sessionState).
 */
export async function refreshTokenForRedeem(d: Db, tokenHash: string) {
  return d
    .selectFrom('refresh_token as r')
    .leftJoin('auth_device as dv', 'dv.id', 'r.device_id')
    .select([
      'r.id',
      'r.user_id',
      'r.session_id',
      'r.device_id',
      'r.auth_path',
      'r.expires_at',
      'r.used_at',
      'r.revoked_at',
      'r.deleted_at',
      'dv.deleted_at as device_deleted_at',
    ])
    .where('r.token_hash', '=', tokenHash)
    .executeTakeFirst();
}

/** Revokes the unrevoked refresh tokens matching `where` (their sessions end through identity). */
export const revokeRefreshTokens = (tx: Tx, now: string, reason: string, where: SignInFilter) =>
  revokeSignIns(tx.db, 'refresh_token', 'session_id', { at: now, reason }, where);

/** Marks a token rotated; false when another request redeemed (or revoked) it first. */
export async function markRefreshTokenUsed(tx: Tx, id: string, now: string): Promise<boolean> {
  const r = await tx.db
    .updateTable('refresh_token')
    .set({ used_at: now })
    .where('id', '=', id)
    .where('used_at', 'is', null)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return updatedAny(r);
}

/** A refresh token without its hash; the cast: a stored auth_path is one of the record's sign-in paths. */
export async function refreshToken(
  d: Db,
  id: string,
  orDeleted = false,
): Promise<RefreshTokenRecord | undefined> {
  return (await findActive(d, 'refresh_token', id, { columns: REFRESH_COLUMNS, orDeleted })) as
    | RefreshTokenRecord
    | undefined;
}

/** `now` decides which tokens are active (not rotated, not revoked, not expired). */
export function listRefreshTokens(d: Db, page: Page, f: RefreshFilters, now: string) {
  const { user_id, device_id, session_id, auth_path } = f;
  const listed = d.selectFrom('refresh_token').where('deleted_at', 'is', null);
  let q = whereEquals(listed, { user_id, device_id, session_id, auth_path });
  if (f.active === true) {
    q = q.where('used_at', 'is', null).where('revoked_at', 'is', null).where('expires_at', '>', now);
  }
  if (f.active === false) {
    q = q.where((eb) =>
      eb.or([eb('used_at', 'is not', null), eb('revoked_at', 'is not', null), eb('expires_at', '<=', now)]),
    );
  }
  return paginate<RefreshTokenRecord>(q, page, (r) => r, REFRESH_COLUMNS);
}

export async function softDeleteRefreshToken(tx: Tx, id: string, now: string) {
  await tx.db.updateTable('refresh_token').set({ deleted_at: now }).where('id', '=', id).execute();
}

/** The 24-hour job: soft-deletes every expired token still listed; answers how many. */
export async function softDeleteExpiredRefreshTokens(d: Db, now: string): Promise<number> {
  const r = await d
    .updateTable('refresh_token')
    .set({ deleted_at: now })
    .where('deleted_at', 'is', null)
    .where('expires_at', '<=', now)
    .executeTakeFirst();
  return Number(r.numUpdatedRows);
}

/** Housekeeping next to it: spent or expired one-time tokens and stale attempt counters go. */
export async function purgeSpentOneTimeTokens(d: Db, now: string, quietSince: string) {
  await d.deleteFrom('mfa_challenge').where('expires_at', '<=', now).execute();
  await d.deleteFrom('password_reset_token').where('expires_at', '<=', now).execute();
  await d
    .deleteFrom('auth_attempt')
    .where('last_failure_at', '<', quietSince)
    .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<=', now)]))
    .execute();
}

export async function insertMfaChallenge(tx: Tx, row: MfaChallengeTable) {
  await tx.db.insertInto('mfa_challenge').values(row).execute();
}

const CHALLENGE_COLUMNS = ['id', 'user_id', 'expires_at', 'attempts', 'used_at'] as const;

export const mfaChallenge = (d: Db, tokenHash: string) =>
  findWhere(d, 'mfa_challenge', { token_hash: tokenHash }, CHALLENGE_COLUMNS);

export async function countMfaChallengeFailure(d: Db, id: string) {
  await d
    .updateTable('mfa_challenge')
    .set((eb) => ({ attempts: eb('attempts', '+', 1) }))
    .where('id', '=', id)
    .execute();
}

/**
 * Spends the unspent one-time tokens of `table` that match `where` (one token by id, or all of a
 * user's); false when none was left: another request spent it first.
 */
async function spend(
  tx: Tx,
  table: 'mfa_challenge' | 'password_reset_token',
  now: string,
  where: { id: string } | { user_id: string },
): Promise<boolean> {
  const unspent = tx.db.updateTable(table).set({ used_at: now }).where('used_at', 'is', null);
  // Spelled out, not whereEquals (which skips a value not given): this write must never match all.
  const q = 'id' in where ? unspent.where('id', '=', where.id) : unspent.where('user_id', '=', where.user_id);
  return updatedAny(await q.executeTakeFirst());
}

/** Spends every open challenge of the user: the password it proved is no longer good enough. */
export async function endMfaChallenges(tx: Tx, userId: string, now: string) {
  await spend(tx, 'mfa_challenge', now, { user_id: userId });
}

export const useMfaChallenge = (tx: Tx, id: string, now: string) => spend(tx, 'mfa_challenge', now, { id });

export async function insertResetToken(tx: Tx, row: PasswordResetTokenTable) {
  await tx.db.insertInto('password_reset_token').values(row).execute();
}

export const resetToken = (d: Db, tokenHash: string) =>
  findWhere(d, 'password_reset_token', { token_hash: tokenHash }, ['id', 'user_id', 'expires_at', 'used_at']);

/** Spends the token and every other outstanding token of the user; false if it was spent already. */
export async function useResetToken(tx: Tx, id: string, userId: string, now: string): Promise<boolean> {
  if (!(await spend(tx, 'password_reset_token', now, { id }))) return false;
  await spend(tx, 'password_reset_token', now, { user_id: userId });
  return true;
}
