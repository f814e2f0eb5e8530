import { type Kysely, type Selectable, sql } from 'kysely';
import { updateActive } from '../../db/audit.js';
import type { Database } from '../../db/schema.js';
import type { Db, Store, Tx } from '../../db/store.js';
import type { AuthPath } from '../../http/access.js';
import { containsInsensitive, type ListResult, type Page, paginate } from '../../http/list.js';
import type { AuthDeviceTable, AuthUserColumns, RefreshTokenTable } from './tables.js';

/**
 * SQL of the sign-in flows. Token hashes are selected only by the queries that redeem a token; the
 * encrypted TOTP secrets only by the MFA checks and the vault key rotation. Single-use tokens are
 * consumed by conditional updates (`... where used_at is null`), so two processes redeeming the same
 * token cannot both win.
 */

type AuthDb = Database & { users: AuthUserColumns };
const auth = (db: Db) => db.withTables<{ users: AuthUserColumns }>() as unknown as Kysely<AuthDb>;
const changed = (r: { numUpdatedRows: bigint } | undefined) => Number(r?.numUpdatedRows ?? 0) > 0;

// ---- records as the API shows them
export interface RefreshTokenRecord {
  id: string;
  user_id: string;
  session_id: string;
  parent_id: string | null;
  device_id: string | null;
  auth_path: AuthPath;
  expires_at: string;
  ip_address: string | null;
  user_agent: string | null;
  created_at: string;
  used_at: string | null;
  revoked_at: string | null;
  revoked_reason: string | null;
  deleted_at: string | null;
}

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

export interface DeviceRecord {
  id: string;
  user_id: string;
  name: string;
  status: 'PENDING' | 'REGISTERED';
  registration_expires_at: string;
  registered_at: string | null;
  registered_by: string | null;
  consent_given: boolean;
  consent_at: string | null;
  last_login_at: string | null;
  access_token_ttl_seconds: number | null;
  refresh_token_ttl_seconds: number | null;
  created_at: string;
  updated_at: string;
  updated_by: string | null;
  deleted_at: string | null;
}

const DEVICE_COLUMNS = [
  'id',
  'user_id',
  'name',
  'registration_expires_at',
  'registered_at',
  'registered_by',
  'consent_given',
  'consent_at',
  'last_login_at',
  'access_token_ttl_seconds',
  'refresh_token_ttl_seconds',
  'created_at',
  'updated_at',
  'updated_by',
  'deleted_at',
] as const;

type DeviceRow = Pick<Selectable<AuthDeviceTable>, (typeof DEVICE_COLUMNS)[number]>;
const toDevice = (r: DeviceRow): DeviceRecord => ({
  id: r.id,
  user_id: r.user_id,
  name: r.name,
  status: r.registered_at ? 'REGISTERED' : 'PENDING',
  registration_expires_at: r.registration_expires_at,
  registered_at: r.registered_at,
  registered_by: r.registered_by,
  consent_given: Boolean(r.consent_given),
  consent_at: r.consent_at,
  last_login_at: r.last_login_at,
  access_token_ttl_seconds: r.access_token_ttl_seconds === null ? null : Number(r.access_token_ttl_seconds),
  refresh_token_ttl_seconds:
    r.refresh_token_ttl_seconds === null ? null : Number(r.refresh_token_ttl_seconds),
  created_at: r.created_at,
  updated_at: r.updated_at,
  updated_by: r.updated_by,
  deleted_at: r.deleted_at,
});

export interface RefreshFilters {
  user_id?: string;
  device_id?: string;
  session_id?: string;
  auth_path?: string;
  /** Usable right now: not rotated, not revoked, not expired. */
  active?: boolean;
}

export interface DeviceFilters {
  user_id?: string;
  search?: string;
}

export function createAuthStore(store: Store) {
  const db = store.db;
  return {
    // ---- brute-force guard
    /** The latest `locked_until` among `keys` that lies after `now`, if any. */
    async lockedUntil(keys: string[], now: string): Promise<string | undefined> {
      if (keys.length === 0) return undefined;
      const rows = await db
        .selectFrom('auth_attempt')
        .select('locked_until')
        .where('key', 'in', keys)
        .where('locked_until', '>', now)
        .execute();
      return rows
        .map((r) => r.locked_until!)
        .sort()
        .pop();
    },
    /**
     * Counts one attempt (a failure, or one reserved before its outcome is known) under `key`, unless
     * the key is locked now: an upsert, so concurrent processes never lose a count and concurrent
     * requests each see their own. A key quiet since `quietSince` (no failure, and no lock within the
     * window: a lock longer than the window does not reset the doubling by itself) starts over.
     * Answers the count, the locks so far and the lock in force.
     */
    async countAttempt(key: string, now: string, quietSince: string) {
      const ref = (c: 'failures' | 'lock_count' | 'last_failure_at' | 'locked_until') =>
        sql.ref(`auth_attempt.${c}`);
      const locked = sql<boolean>`(${ref('locked_until')} is not null and ${ref('locked_until')} > ${now})`;
      const stale = sql<boolean>`(${ref('last_failure_at')} < ${quietSince} and (${ref('locked_until')} is null or ${ref('locked_until')} < ${quietSince}))`;
      return db
        .insertInto('auth_attempt')
        .values({ key, failures: 1, last_failure_at: now, locked_until: null, lock_count: 0 })
        .onConflict((oc) =>
          oc.column('key').doUpdateSet({
            failures: sql`case when ${locked} then ${ref('failures')} when ${stale} then 1 else ${ref('failures')} + 1 end`,
            lock_count: sql`case when ${locked} then ${ref('lock_count')} when ${stale} then 0 else ${ref('lock_count')} end`,
            last_failure_at: sql`case when ${locked} then ${ref('last_failure_at')} else ${now} end`,
          }),
        )
        .returning(['failures', 'lock_count', 'locked_until'])
        .executeTakeFirstOrThrow();
    },
    /**
     * Gives back a reserved attempt that did not fail. When that attempt was the one that locked the
     * key, the lock is undone too (back to `max - 1` failures), as if it had never been counted.
     */
    async refundAttempt(key: string, undoLockOf: { max: number; lockedUntil: string } | null) {
      if (undoLockOf) {
        await db
          .updateTable('auth_attempt')
          .set((eb) => ({
            locked_until: null,
            failures: undoLockOf.max - 1,
            lock_count: sql`case when ${eb.ref('lock_count')} > 0 then ${eb.ref('lock_count')} - 1 else 0 end`,
          }))
          .where('key', '=', key)
          .where('locked_until', '=', undoLockOf.lockedUntil)
          .execute();
        return;
      }
      await db
        .updateTable('auth_attempt')
        .set((eb) => ({
          failures: sql`case when ${eb.ref('failures')} > 0 then ${eb.ref('failures')} - 1 else 0 end`,
        }))
        .where('key', '=', key)
        .execute();
    },
    /** Locks the key once its failures reached `max`; only one of concurrent callers applies it. */
    async lock(key: string, max: number, lockedUntil: string): Promise<boolean> {
      const r = await db
        .updateTable('auth_attempt')
        .set((eb) => ({ locked_until: lockedUntil, failures: 0, lock_count: eb('lock_count', '+', 1) }))
        .where('key', '=', key)
        .where('failures', '>=', max)
        .executeTakeFirst();
      return changed(r);
    },
    async clearAttempts(key: string) {
      await db.deleteFrom('auth_attempt').where('key', '=', key).execute();
    },

    // ---- the auth columns of users
    async authUser(d: Db, userId: string) {
      return auth(d)
        .selectFrom('users')
        .select([
          'id',
          'email',
          'mfa_enabled',
          'mfa_secret',
          'mfa_last_step',
          'mfa_pending_secret',
          'mfa_pending_verified',
          'mfa_pending_last_step',
          'access_token_ttl_seconds',
          'refresh_token_ttl_seconds',
          'password_reset_required',
        ])
        .where('id', '=', userId)
        .where('deleted_at', 'is', null)
        .executeTakeFirst();
    },
    async updateAuthUser(tx: Tx, userId: string, patch: Partial<AuthUserColumns>) {
      await auth(tx.db).updateTable('users').set(patch).where('id', '=', userId).execute();
    },
    /**
     * Every user's encrypted TOTP secrets, deleted users' included (no token may stay under a retired
     * vault key), for the vault key rotation. PostgreSQL: the rows are locked for the transaction so
     * a concurrent MFA set-up waits; SQLite has no row locks (and no FOR UPDATE): its single writer
     * serialises instead.
     */
    async mfaCiphertexts(tx: Tx) {
      let q = auth(tx.db)
        .selectFrom('users')
        .select(['id', 'mfa_secret', 'mfa_pending_secret'])
        .where((eb) => eb.or([eb('mfa_secret', 'is not', null), eb('mfa_pending_secret', 'is not', null)]))
        .orderBy('id');
      if (tx.dialect === 'postgres') q = q.forUpdate();
      return q.execute();
    },
    /**
     * Records `step` as the last accepted TOTP step, only if it is later than the one recorded:
     * false means the code was already used (here or in another process).
     */
    async consumeTotpStep(
      tx: Tx,
      userId: string,
      column: 'mfa_last_step' | 'mfa_pending_last_step',
      step: number,
    ): Promise<boolean> {
      const r = await auth(tx.db)
        .updateTable('users')
        .set({ [column]: step })
        .where('id', '=', userId)
        .where((eb) => eb.or([eb(column, 'is', null), eb(column, '<', step)]))
        .executeTakeFirst();
      return changed(r);
    },

    // ---- sessions (identity's auth_session rows; a session is one refresh-token family)
    async session(d: Db, id: string) {
      return d
        .selectFrom('auth_session')
        .select(['id', 'user_id', 'auth_path', 'device_id', 'revoked_at'])
        .where('id', '=', id)
        .executeTakeFirst();
    },
    /** Ends sessions and revokes their refresh tokens. */
    async revokeSessions(
      tx: Tx,
      now: string,
      reason: string,
      where: {
        sessionId?: string;
        userId?: string;
        deviceId?: string;
        authPaths?: string[];
        exceptSessionId?: string;
      },
    ) {
      let s = tx.db
        .updateTable('auth_session')
        .set({ revoked_at: now, revoked_reason: reason })
        .where('revoked_at', 'is', null);
      let r = tx.db
        .updateTable('refresh_token')
        .set({ revoked_at: now, revoked_reason: reason })
        .where('revoked_at', 'is', null);
      if (where.sessionId) {
        s = s.where('id', '=', where.sessionId);
        r = r.where('session_id', '=', where.sessionId);
      }
      if (where.userId) {
        s = s.where('user_id', '=', where.userId);
        r = r.where('user_id', '=', where.userId);
      }
      if (where.deviceId) {
        s = s.where('device_id', '=', where.deviceId);
        r = r.where('device_id', '=', where.deviceId);
      }
      if (where.authPaths) {
        s = s.where('auth_path', 'in', where.authPaths);
        r = r.where('auth_path', 'in', where.authPaths);
      }
      if (where.exceptSessionId) {
        s = s.where('id', '!=', where.exceptSessionId);
        r = r.where('session_id', '!=', where.exceptSessionId);
      }
      await s.execute();
      await r.execute();
    },

    // ---- refresh tokens
    async insertRefreshToken(tx: Tx, row: RefreshTokenTable) {
      await tx.db.insertInto('refresh_token').values(row).execute();
    },
    /** Everything a redemption needs in one round trip: the token, its session, user and device. */
    async refreshTokenForRedeem(tokenHash: string) {
      return db
        .selectFrom('refresh_token as r')
        .innerJoin('auth_session as s', 's.id', 'r.session_id')
        .innerJoin('users as u', 'u.id', 'r.user_id')
        .leftJoin('auth_device as d', 'd.id', 'r.device_id')
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
          's.revoked_at as session_revoked_at',
          'u.deleted_at as user_deleted_at',
          'd.deleted_at as device_deleted_at',
        ])
        .where('r.token_hash', '=', tokenHash)
        .executeTakeFirst();
    },
    /** Marks a token rotated; false when another request redeemed (or revoked) it first. */
    async markRefreshTokenUsed(tx: Tx, id: string, now: string): Promise<boolean> {
      const r = await tx.db
        .updateTable('refresh_token')
        .set({ used_at: now })
        .where('id', '=', id)
        .where('used_at', 'is', null)
        .where('revoked_at', 'is', null)
        .executeTakeFirst();
      return changed(r);
    },
    async refreshToken(d: Db, id: string, includeDeleted = false): Promise<RefreshTokenRecord | undefined> {
      let q = d.selectFrom('refresh_token').select(REFRESH_COLUMNS).where('id', '=', id);
      if (!includeDeleted) q = q.where('deleted_at', 'is', null);
      return (await q.executeTakeFirst()) as RefreshTokenRecord | undefined;
    },
    async listRefreshTokens(
      page: Page,
      f: RefreshFilters,
      now: string,
    ): Promise<ListResult<RefreshTokenRecord>> {
      let q = db.selectFrom('refresh_token').where('deleted_at', 'is', null);
      if (f.user_id) q = q.where('user_id', '=', f.user_id);
      if (f.device_id) q = q.where('device_id', '=', f.device_id);
      if (f.session_id) q = q.where('session_id', '=', f.session_id);
      if (f.auth_path) q = q.where('auth_path', '=', f.auth_path);
      if (f.active === true) {
        q = q.where('used_at', 'is', null).where('revoked_at', 'is', null).where('expires_at', '>', now);
      }
      if (f.active === false) {
        q = q.where((eb) =>
          eb.or([
            eb('used_at', 'is not', null),
            eb('revoked_at', 'is not', null),
            eb('expires_at', '<=', now),
          ]),
        );
      }
      return paginate(q, page, (r: RefreshTokenRecord) => r, REFRESH_COLUMNS);
    },
    async softDeleteRefreshToken(tx: Tx, id: string, now: string) {
      await tx.db.updateTable('refresh_token').set({ deleted_at: now }).where('id', '=', id).execute();
    },
    /** The 24-hour job: soft-deletes every expired token still listed; answers how many. */
    async softDeleteExpiredRefreshTokens(now: string): Promise<number> {
      const r = await db
        .updateTable('refresh_token')
        .set({ deleted_at: now })
        .where('deleted_at', 'is', null)
        .where('expires_at', '<=', now)
        .executeTakeFirst();
      return Number(r.numUpdatedRows);
    },
    /** Housekeeping next to it: spent or expired one-time tokens and stale attempt counters go. */
    async purgeSpentOneTimeTokens(now: string, quietSince: string) {
      await db.deleteFrom('mfa_challenge').where('expires_at', '<=', now).execute();
      await db.deleteFrom('password_reset_token').where('expires_at', '<=', now).execute();
      await db
        .deleteFrom('auth_attempt')
        .where('last_failure_at', '<', quietSince)
        .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<=', now)]))
        .execute();
    },

    // ---- MFA login challenges
    async insertMfaChallenge(tx: Tx, row: Database['mfa_challenge']) {
      await tx.db.insertInto('mfa_challenge').values(row).execute();
    },
    async mfaChallenge(tokenHash: string) {
      return db
        .selectFrom('mfa_challenge')
        .select(['id', 'user_id', 'expires_at', 'attempts', 'used_at'])
        .where('token_hash', '=', tokenHash)
        .executeTakeFirst();
    },
    async countMfaChallengeFailure(id: string) {
      await db
        .updateTable('mfa_challenge')
        .set((eb) => ({ attempts: eb('attempts', '+', 1) }))
        .where('id', '=', id)
        .execute();
    },
    /** Spends every open challenge of the user: the password it proved is no longer good enough. */
    async endMfaChallenges(tx: Tx, userId: string, now: string) {
      await tx.db
        .updateTable('mfa_challenge')
        .set({ used_at: now })
        .where('user_id', '=', userId)
        .where('used_at', 'is', null)
        .execute();
    },
    async useMfaChallenge(tx: Tx, id: string, now: string): Promise<boolean> {
      const r = await tx.db
        .updateTable('mfa_challenge')
        .set({ used_at: now })
        .where('id', '=', id)
        .where('used_at', 'is', null)
        .executeTakeFirst();
      return changed(r);
    },

    // ---- password reset tokens
    async insertResetToken(tx: Tx, row: Database['password_reset_token']) {
      await tx.db.insertInto('password_reset_token').values(row).execute();
    },
    async resetToken(d: Db, tokenHash: string) {
      return d
        .selectFrom('password_reset_token')
        .select(['id', 'user_id', 'expires_at', 'used_at'])
        .where('token_hash', '=', tokenHash)
        .executeTakeFirst();
    },
    /** Spends the token and every other outstanding token of the user; false if it was spent already. */
    async useResetToken(tx: Tx, id: string, userId: string, now: string): Promise<boolean> {
      const r = await tx.db
        .updateTable('password_reset_token')
        .set({ used_at: now })
        .where('id', '=', id)
        .where('used_at', 'is', null)
        .executeTakeFirst();
      if (!changed(r)) return false;
      await tx.db
        .updateTable('password_reset_token')
        .set({ used_at: now })
        .where('user_id', '=', userId)
        .where('used_at', 'is', null)
        .execute();
      return true;
    },

    // ---- devices
    async insertDevice(tx: Tx, row: AuthDeviceTable) {
      await tx.db.insertInto('auth_device').values(row).execute();
    },
    async device(d: Db, id: string, includeDeleted = false): Promise<DeviceRecord | undefined> {
      let q = d.selectFrom('auth_device').select(DEVICE_COLUMNS).where('id', '=', id);
      if (!includeDeleted) q = q.where('deleted_at', 'is', null);
      const row = await q.executeTakeFirst();
      return row && toDevice(row);
    },
    async deviceByRegistrationToken(d: Db, tokenHash: string) {
      return d
        .selectFrom('auth_device')
        .select(['id', 'user_id', 'registration_expires_at', 'registered_at', 'deleted_at'])
        .where('registration_token_hash', '=', tokenHash)
        .executeTakeFirst();
    },
    /** Spends a registration token: false if it was used, expired or the device deleted meanwhile. */
    async registerDevice(tx: Tx, id: string, now: string): Promise<boolean> {
      const r = await tx.db
        .updateTable('auth_device')
        .set({ registered_at: now, last_login_at: now, updated_at: now })
        .where('id', '=', id)
        .where('registered_at', 'is', null)
        .where('deleted_at', 'is', null)
        .where('registration_expires_at', '>', now)
        .executeTakeFirst();
      return changed(r);
    },
    /** Changes an active device; false when it is gone (deleted meanwhile by a concurrent request). */
    updateDevice: (tx: Tx, id: string, patch: Partial<AuthDeviceTable>) =>
      updateActive(tx.db, 'auth_device', id, patch),
    async listDevices(page: Page, f: DeviceFilters): Promise<ListResult<DeviceRecord>> {
      let q = db.selectFrom('auth_device').where('deleted_at', 'is', null);
      if (f.user_id) q = q.where('user_id', '=', f.user_id);
      if (f.search) q = q.where(containsInsensitive('name', f.search));
      return paginate(q, page, toDevice, DEVICE_COLUMNS);
    },
  };
}

export type AuthStore = ReturnType<typeof createAuthStore>;
