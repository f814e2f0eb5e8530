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
