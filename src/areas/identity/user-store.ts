import { findActive, findWhere, updateActive } from '../../db/audit.js';
import { revokeSignIns, type SignInFilter } from '../../db/sign-ins.js';
import type { Db, Tx } from '../../db/store.js';
import { type ListResult, type Page, paginate, whereFilters } from '../../http/list.js';
import { toUser, USER_COLUMNS, type User } from './records.js';
import type { AuthSessionTable, UserTable } from './tables.js';

/** SQL of users and their sign-in sessions. The password hash is selected only where it is verified. */

export async function insertUser(tx: Tx, row: UserTable): Promise<void> {
  await tx.db.insertInto('users').values(row).execute();
}

/** An active user; with `orDeleted`, a user as it is now, deleted or not (the answer of a delete). */
export async function findUser(d: Db, id: string, orDeleted = false): Promise<User | undefined> {
  const r = await findActive(d, 'users', id, { columns: USER_COLUMNS, orDeleted });
  return r ? toUser(r) : undefined;
}

export async function findUsers(d: Db, ids: string[]): Promise<User[]> {
  if (ids.length === 0) return [];
  const rows = await d
    .selectFrom('users')
    .select(USER_COLUMNS)
    .where('id', 'in', ids)
    .where('deleted_at', 'is', null)
    .execute();
  return rows.map(toUser);
}

/** A user's columns and the password hash, read only where a password is verified. */
const WITH_HASH = [...USER_COLUMNS, 'password_hash'] as const;

/** Includes the password hash: for verifying a password only. */
export const findUserWithHashByEmail = (d: Db, emailNormalized: string) =>
  findWhere(d, 'users', { email_normalized: emailNormalized, deleted_at: null }, WITH_HASH);

/** Includes the password hash: for verifying a password only. */
export const findUserWithHash = (d: Db, id: string) => findActive(d, 'users', id, { columns: WITH_HASH });

export interface UserFilters {
  email?: string;
  search?: string;
  role_id?: string;
}

export async function listUsers(d: Db, page: Page, f: UserFilters): Promise<ListResult<User>> {
  let q = whereFilters(d.selectFrom('users').where('deleted_at', 'is', null), {
    equals: { email_normalized: f.email?.toLowerCase() },
    search: { value: f.search, in: ['email', 'name'] },
  });
  if (f.role_id) {
    q = q.where('id', 'in', (eb) =>
      eb
        .selectFrom('user_role')
        .select('user_id')
        .where('role_id', '=', f.role_id!)
        .where('deleted_at', 'is', null),
    );
  }
  return paginate(q, page, toUser, USER_COLUMNS);
}

/**
 * Changes an active user; false when there is none (missing, or deleted meanwhile: a concurrent
 * delete that committed first makes this one match no row, so only one delete succeeds).
 */
export const updateUser = (tx: Tx, id: string, patch: Partial<UserTable>) =>
  updateActive(tx.db, 'users', id, patch);

// ---- sessions

export async function insertSession(tx: Tx, row: AuthSessionTable): Promise<void> {
  await tx.db.insertInto('auth_session').values(row).execute();
}

/** A sign-in session as other areas see it (never its token). */
export interface SessionRecord {
  id: string;
  user_id: string;
  auth_path: string;
  device_id: string | null;
  revoked_at: string | null;
}

export async function findSession(d: Db, id: string): Promise<SessionRecord | undefined> {
  return d
    .selectFrom('auth_session')
    .select(['id', 'user_id', 'auth_path', 'device_id', 'revoked_at'])
    .where('id', '=', id)
    .executeTakeFirst();
}

/** Whether a session has ended and whether its user is deleted: what a refresh-token redemption checks. */
/** Whether a session still holds: ended, or its user deleted. */
export interface SessionState {
  revoked_at: string | null;
  user_deleted_at: string | null;
}

export async function sessionState(d: Db, sessionId: string): Promise<SessionState | undefined> {
  return d
    .selectFrom('auth_session as s')
    .innerJoin('users as u', 'u.id', 's.user_id')
    .select(['s.revoked_at', 'u.deleted_at as user_deleted_at'])
    .where('s.id', '=', sessionId)
    .executeTakeFirst();
}

/** Ends the active sessions matching `where`. */
export const revokeSessions = (tx: Tx, now: string, reason: string, where: SignInFilter) =>
  revokeSignIns(tx.db, 'auth_session', 'id', { at: now, reason }, where);
