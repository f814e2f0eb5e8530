import { type Db, type Tx, updatedAny } from '../../db/store.js';
import type { AuthUserTable } from './tables.js';

/**
 * SQL of a user's sign-in state (`auth_user`). A user without a row has the defaults, so reads answer
 * a complete state and writes are upserts. The encrypted TOTP secrets are selected only by the MFA
 * checks and the vault key rotation.
 */

export type AccountState = Omit<AuthUserTable, 'user_id' | 'updated_at' | 'updated_by'>;

const DEFAULTS: AccountState = {
  mfa_secret: null,
  mfa_last_step: null,
  mfa_pending_secret: null,
  mfa_pending_verified: 0,
  mfa_pending_last_step: null,
  access_token_ttl_seconds: null,
  refresh_token_ttl_seconds: null,
  password_reset_required: 0,
};

const numberOrNull = (v: number | null) => (v === null ? null : Number(v));

export async function findAccount(d: Db, userId: string): Promise<AccountState> {
  const row = await d.selectFrom('auth_user').selectAll().where('user_id', '=', userId).executeTakeFirst();
  if (!row) return DEFAULTS;
  // bigint columns arrive as numbers on SQLite and as parsed int8 on PostgreSQL (db/store.ts).
  return {
    mfa_secret: row.mfa_secret,
    mfa_last_step: numberOrNull(row.mfa_last_step),
    mfa_pending_secret: row.mfa_pending_secret,
    mfa_pending_verified: Number(row.mfa_pending_verified),
    mfa_pending_last_step: numberOrNull(row.mfa_pending_last_step),
    access_token_ttl_seconds: numberOrNull(row.access_token_ttl_seconds),
    refresh_token_ttl_seconds: numberOrNull(row.refresh_token_ttl_seconds),
    password_reset_required: Number(row.password_reset_required),
  };
}

/** Sets the given columns of the user's state (creating the row with defaults for the rest). */
export async function updateAccount(
  tx: Tx,
  userId: string,
  patch: Partial<AccountState> & { updated_at?: string; updated_by?: string | null },
): Promise<void> {
  if (Object.keys(patch).length === 0) return;
  await tx.db
    .insertInto('auth_user')
    .values({ ...DEFAULTS, updated_at: null, updated_by: null, ...patch, user_id: userId })
    .onConflict((oc) => oc.column('user_id').doUpdateSet(patch))
    .execute();
}

/**
 * Every stored TOTP secret, deleted users' included (no token may stay under a retired vault key),
 * for the vault key rotation. PostgreSQL: the rows are locked for the transaction so a concurrent MFA
 * set-up waits; SQLite's single writer serialises instead.
 */
export async function mfaCiphertexts(tx: Tx) {
  let q = tx.db
    .selectFrom('auth_user')
    .select(['user_id', 'mfa_secret', 'mfa_pending_secret'])
    .where((eb) => eb.or([eb('mfa_secret', 'is not', null), eb('mfa_pending_secret', 'is not', null)]))
    .orderBy('user_id');
  if (tx.dialect === 'postgres') q = q.forUpdate();
  return q.execute();
}

/**
 * Records `step` as the last accepted TOTP step, only if it is later than the one recorded: false
 * means the code was already used (here or in another process).
 */
export async function consumeTotpStep(
  tx: Tx,
  userId: string,
  column: 'mfa_last_step' | 'mfa_pending_last_step',
  step: number,
): Promise<boolean> {
  const r = await tx.db
    .updateTable('auth_user')
    .set({ [column]: step })
    .where('user_id', '=', userId)
    .where((eb) => eb.or([eb(column, 'is', null), eb(column, '<', step)]))
    .executeTakeFirst();
  return updatedAny(r);
}
