import { auditInsert, auditUpdate, softDeleted } from '../../db/audit.js';
import { isUniqueViolation } from '../../db/errors.js';
import type { SignInFilter } from '../../db/sign-ins.js';
import type { Db, Store, Tx } from '../../db/store.js';
import type { Acting, AuthPath, Principal } from '../../http/access.js';
import { AppError } from '../../http/errors.js';
import type { ListResult, Page } from '../../http/list.js';
import { type Clock, iso } from '../../lib/clock.js';
import { isEmailAddress, MIN_PASSWORD_LENGTH } from '../../lib/email.js';
import { newId } from '../../lib/ids.js';
import type { EventPublisher } from '../events/publish.js';
import type { PasswordHasher } from './passwords.js';
import type { User } from './records.js';
import * as roles from './role-store.js';
import * as st from './user-store.js';

export const USER_EVENT_SOURCE = '/api/v1/user';

export const normaliseEmail = (email: string): string => email.trim().toLowerCase();
export const userNotFound = () => new AppError('USER.NOT_FOUND', 'User not found');

export async function requireUser(d: Db, id: string): Promise<User> {
  const user = await st.findUser(d, id);
  if (!user) throw userNotFound();
  return user;
}

const emailTaken = () => new AppError('USER.EMAIL_EXISTS', 'A user with this email already exists');

/** What a sign-in session records of how it began. */
export interface SessionStart {
  userId: string;
  authPath: AuthPath;
  deviceId?: string | null;
  ip?: string | null;
  userAgent?: string | null;
}

/** Users, their passwords and their sign-in sessions; every change publishes its `svc.user.*` event. */
export interface UserService {
  createUser(
    acting: Acting | null,
    input: { email: string; password: string; name?: string | null; role_keys?: string[] },
  ): Promise<User>;
  updateUser(
    acting: Acting,
    id: string,
    patch: { email?: string; name?: string | null; password?: string },
  ): Promise<User>;
  deleteUser(acting: Acting, id: string): Promise<User>;
  /** The active user with this email and password, with the hash it matched; undefined otherwise. */
  verifyCredentials(email: string, password: string): Promise<(User & { password_hash: string }) | undefined>;
  /** Sets a password (reset or change), ends the user's sessions except `keepSessionId`, emits the event. */
  setPassword(
    actor: string,
    userId: string,
    password: string,
    keepSessionId?: string,
    tx?: Tx,
  ): Promise<void>;
  /** Changes a user's own password after checking the current one; ends their other sessions. */
  changePassword(principal: Principal, current: string, next: string): Promise<void>;
  /** Opens a sign-in session in the caller's transaction; answers its id. */
  startSession(tx: Tx, input: SessionStart): Promise<string>;
  getSession(d: Db, id: string): Promise<st.SessionRecord | undefined>;
  revokeSessions(tx: Tx, reason: string, where: SignInFilter): Promise<void>;
  getUser(id: string): Promise<User>;
  findUser(d: Db, id: string): Promise<User | undefined>;
  sessionState(d: Db, sessionId: string): Promise<st.SessionState | undefined>;
  setMfaEnabled(tx: Tx, actor: string, userId: string, enabled: boolean): Promise<void>;
  getUsers(ids: string[]): Promise<User[]>;
  findUserByEmail(email: string): Promise<User | undefined>;
  listUsers(page: Page, f: st.UserFilters): Promise<ListResult<User>>;
}

export function createUserService(deps: {
  store: Store;
  clock: Clock;
  events: EventPublisher;
  passwords: PasswordHasher;
}): UserService {
  const { store, clock, events, passwords } = deps;
  const now = () => iso(clock.now());
  const userEvent = (
    tx: Tx,
    acting: Acting | null,
    type: string,
    user: User,
    extra: Record<string, unknown> = {},
  ) =>
    events.publish(tx, {
      type: `svc.user.${type}`,
      source: USER_EVENT_SOURCE,
      subject: user.id,
      data: { user_id: user.id, email: user.email, ...extra },
      causation: acting?.causation,
    });

  async function createUser(
    acting: Acting | null,
    input: { email: string; password: string; name?: string | null; role_keys?: string[] },
  ): Promise<User> {
    const actor = acting?.userId ?? null;
    // POST /user checks these in its schema; the CLI and the bootstrap admin come through here too.
    if (!isEmailAddress(input.email)) {
      throw new AppError('VALIDATION_ERROR', 'email must be an email address', { field: 'email' });
    }
    if (input.password.length < MIN_PASSWORD_LENGTH) {
      throw new AppError('VALIDATION_ERROR', `password must be at least ${MIN_PASSWORD_LENGTH} characters`, {
        field: 'password',
      });
    }
    const hash = await passwords.hash(input.password);
    const t = now();
    const row = {
      id: newId(),
      email: input.email.trim(),
      email_normalized: normaliseEmail(input.email),
      name: input.name ?? null,
      password_hash: hash,
      mfa_enabled: 0,
      ...auditInsert(t, actor),
    };
    try {
      return await store.transaction(async (tx) => {
        await st.insertUser(tx, row);
        if (input.role_keys?.length) {
          const all = await roles.allRoles(tx.db);
          // A key named twice is one role: the second insert would break the unique index.
          for (const key of new Set(input.role_keys)) {
            const role = all.find((r) => r.key === key);
            if (!role) throw new AppError('ROLE.NOT_FOUND', `Role "${key}" not found`);
            await roles.insertUserRole(tx, {
              id: newId(),
              user_id: row.id,
              role_id: role.id,
              ...auditInsert(t, actor),
            });
          }
          await roles.bumpAuthzVersion(tx);
        }
        const user = (await st.findUser(tx.db, row.id))!;
        await userEvent(tx, acting, 'created', user, { name: user.name });
        return user;
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw emailTaken();
      throw err;
    }
  }

  async function updateUser(
    acting: Acting,
    id: string,
    patch: { email?: string; name?: string | null; password?: string },
  ): Promise<User> {
    const hash = patch.password !== undefined ? await passwords.hash(patch.password) : undefined;
    try {
      return await store.transaction(async (tx) => {
        const before = await requireUser(tx.db, id);
        const t = now();
        const updated = await st.updateUser(tx, id, {
          ...(patch.email !== undefined && {
            email: patch.email.trim(),
            email_normalized: normaliseEmail(patch.email),
          }),
          ...(patch.name !== undefined && { name: patch.name }),
          ...(hash !== undefined && { password_hash: hash }),
          ...auditUpdate(t, acting.userId),
        });
        if (!updated) throw userNotFound();
        const user = (await st.findUser(tx.db, id))!;
        const changed = [
          ...(patch.email !== undefined && patch.email.trim() !== before.email ? ['email'] : []),
          ...(patch.name !== undefined && patch.name !== before.name ? ['name'] : []),
        ];
        if (changed.length) await userEvent(tx, acting, 'updated', user, { changed_fields: changed });
        if (hash !== undefined) {
          await st.revokeSessions(tx, t, 'password_changed', { userId: id });
          await userEvent(tx, acting, 'password.changed', user, { changed_by: acting.userId });
        }
        return user;
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw emailTaken();
      throw err;
    }
  }

  async function deleteUser(acting: Acting, id: string): Promise<User> {
    const actor = acting.userId;
    return store.transaction(async (tx) => {
      await requireUser(tx.db, id);
      const t = now();
      if (!(await st.updateUser(tx, id, softDeleted(t, actor)))) throw userNotFound();
      await roles.softDeleteUserRolesOfUser(tx, id, t, actor);
      await st.revokeSessions(tx, t, 'user_deleted', { userId: id });
      await roles.bumpAuthzVersion(tx);
      const deleted = (await st.findUser(tx.db, id, true))!;
      await userEvent(tx, acting, 'deleted', deleted);
      return deleted;
    });
  }

  /** Checks a password; the same cost whether or not the email exists. */
  async function verifyCredentials(
    email: string,
    password: string,
  ): Promise<(User & { password_hash: string }) | undefined> {
    const row = await st.findUserWithHashByEmail(store.db, normaliseEmail(email));
    if (!row) return passwords.verifyDummy(password).then(() => undefined);
    if (!(await passwords.verify(password, row.password_hash))) return undefined;
    return { ...row, mfa_enabled: Boolean(row.mfa_enabled) };
  }

  /** Sets a password (reset or change), ends the user's sessions except `keepSessionId`, emits the event. */
  async function setPassword(
    actor: string,
    userId: string,
    password: string,
    keepSessionId?: string,
    tx0?: Tx,
  ): Promise<void> {
    const hash = await passwords.hash(password);
    const run = async (tx: Tx) => {
      const user = await requireUser(tx.db, userId);
      const t = now();
      if (!(await st.updateUser(tx, userId, { password_hash: hash, ...auditUpdate(t, actor) })))
        throw userNotFound();
      await st.revokeSessions(tx, t, 'password_changed', { userId, exceptSessionId: keepSessionId });
      await userEvent(tx, null, 'password.changed', user, { changed_by: actor });
    };
    if (tx0) await run(tx0);
    else await store.transaction(run);
  }

  /** Changes a user's own password after checking the current one; ends their other sessions. */
  async function changePassword(principal: Principal, current: string, next: string): Promise<void> {
    const row = await st.findUserWithHash(store.db, principal.userId);
    if (!row || !(await passwords.verify(current, row.password_hash))) {
      throw new AppError('AUTH.PASSWORD_INCORRECT', 'Current password is incorrect');
    }
    await setPassword(principal.userId, principal.userId, next, principal.sessionId);
  }

  /** A sign-in session (the sign-in flows hang their refresh tokens off it); answers its id. */
  async function startSession(tx: Tx, input: SessionStart): Promise<string> {
    const id = newId();
    await st.insertSession(tx, {
      id,
      user_id: input.userId,
      auth_path: input.authPath,
      device_id: input.deviceId ?? null,
      ip_address: input.ip ?? null,
      user_agent: input.userAgent ?? null,
      created_at: now(),
      revoked_at: null,
      revoked_reason: null,
    });
    return id;
  }

  return {
    createUser,
    updateUser,
    deleteUser,
    verifyCredentials,
    setPassword,
    changePassword,
    startSession,
    /** One session as the sign-in flows check it (revoked or not). */
    getSession: (d: Db, id: string) => st.findSession(d, id),
    /** Ends the matching sessions inside the caller's transaction (their refresh tokens are auth's). */
    revokeSessions: (tx: Tx, reason: string, where: SignInFilter) =>
      st.revokeSessions(tx, now(), reason, where),
    getUser: (id: string) => requireUser(store.db, id),
    /** The active user, read with `d` (a transaction's, to see its own writes); undefined if none. */
    findUser: (d: Db, id: string) => st.findUser(d, id),
    /** Whether a session has ended and its user is deleted (undefined: no such session). */
    sessionState: (d: Db, sessionId: string) => st.sessionState(d, sessionId),
    /** MFA on or off on the user record (the sign-in flows own the secrets); a change of the user. */
    setMfaEnabled: async (tx: Tx, actor: string, userId: string, enabled: boolean) => {
      if (!(await st.updateUser(tx, userId, { mfa_enabled: enabled ? 1 : 0, ...auditUpdate(now(), actor) })))
        throw userNotFound();
    },
    /** Active users by id, in one query (missing or deleted ids are left out). */
    getUsers: (ids: string[]) => st.findUsers(store.db, [...new Set(ids)]),
    findUserByEmail: async (email: string): Promise<User | undefined> => {
      const row = await st.findUserWithHashByEmail(store.db, normaliseEmail(email));
      if (!row) return undefined;
      const { password_hash: _h, ...user } = row;
      return { ...user, mfa_enabled: Boolean(user.mfa_enabled) };
    },
    listUsers: (page: Page, f: Parameters<typeof st.listUsers>[2]) => st.listUsers(store.db, page, f),
  };
}
