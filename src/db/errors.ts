/** True when a write failed on a unique constraint (SQLite or PostgreSQL), e.g. a duplicate key. */
export function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: string } | undefined;
  // better-sqlite3: SQLITE_CONSTRAINT_UNIQUE / _PRIMARYKEY; pg: SQLSTATE 23505 unique_violation.
  return (
    e?.code === 'SQLITE_CONSTRAINT_UNIQUE' ||
    e?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY' ||
    e?.code === '23505'
  );
}

/**
 * True when a query failed because the store could not be reached or dropped the connection (a
 * PostgreSQL restart, a terminated backend, a network cut), not because of the query: such a request
 * is worth retrying shortly. SQLSTATE classes 08 (connection exception) and 57P (operator
 * intervention: admin/crash shutdown, cannot connect now), socket errors, and node-postgres' own
 * messages for a connection that ended under it.
 */
export function isStoreUnavailable(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | undefined;
  const code = typeof e?.code === 'string' ? e.code : '';
  if (/^08/.test(code) || /^57P0[1-3]$/.test(code)) return true;
  if (['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND'].includes(code))
    return true;
  const message = typeof e?.message === 'string' ? e.message : '';
  return /Connection terminated|Client has encountered a connection error|Client was closed|timeout exceeded when trying to connect/i.test(
    message,
  );
}
