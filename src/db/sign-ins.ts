import type { Transaction } from 'kysely';
import { whereEquals } from '../http/list.js';
import type { Database } from './schema.js';

/**
 * How a sign-in ends: its rows are revoked in two areas' tables at once, identity's `auth_session` and
 * auth's `refresh_token`, by one rule. Each area calls `revokeSignIns` on its own table (the
 * architecture check reads the table argument), so neither writes the other's.
 */

/** Tables of sign-ins, which end by revocation (sessions, refresh tokens). */
type Revocable = {
  [K in keyof Database]: Database[K] extends {
    revoked_at: string | null;
    revoked_reason: string | null;
    user_id: string;
    device_id: string | null;
    auth_path: string;
  }
    ? K
    : never;
}[keyof Database];

/** Which sign-ins to end (all conditions given must hold). */
export interface SignInFilter {
  sessionId?: string;
  userId?: string;
  deviceId?: string;
  authPaths?: string[];
  exceptSessionId?: string;
}

/**
 * Revokes the unrevoked rows of `table` that match `where`, the column `sessionColumn` holding the
 * session's id there. A sign-in ends in two areas' tables at once (identity's sessions, auth's
 * refresh tokens), by the same rule.
 */
export async function revokeSignIns(
  tx: Transaction<Database>,
  table: Revocable,
  sessionColumn: 'id' | 'session_id',
  revoked: { at: string; reason: string },
  where: SignInFilter,
): Promise<void> {
  // The generic table name is checked at the call (as in audit.ts's helpers), not inside.
  let q = tx
    .updateTable(table as 'refresh_token')
    .set({ revoked_at: revoked.at, revoked_reason: revoked.reason })
    .where('revoked_at', 'is', null);
  q = whereEquals(q, { [sessionColumn]: where.sessionId, user_id: where.userId, device_id: where.deviceId });
  if (where.authPaths) q = q.where('auth_path', 'in', where.authPaths);
  if (where.exceptSessionId) q = q.where(sessionColumn, '!=', where.exceptSessionId);
  await q.execute();
}
