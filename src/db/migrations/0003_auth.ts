import { type Kysely, sql } from 'kysely';

/** Sign-in flows (src/areas/auth): refresh tokens, devices, reset tokens, MFA state, brute-force guard. */
export async function up(db: Kysely<unknown>): Promise<void> {
  // SQLite adds one column per ALTER TABLE statement.
  const userColumns: Array<[string, 'text' | 'integer', boolean]> = [
    ['mfa_secret', 'text', false],
    ['mfa_last_step', 'integer', false],
    ['mfa_pending_secret', 'text', false],
    ['mfa_pending_verified', 'integer', true],
    ['mfa_pending_last_step', 'integer', false],
    ['access_token_ttl_seconds', 'integer', false],
    ['refresh_token_ttl_seconds', 'integer', false],
    ['password_reset_required', 'integer', true],
  ];
  for (const [name, type, flag] of userColumns) {
    // bigint on PostgreSQL: TOTP steps are unix-seconds / 30 and lifetimes are seconds (fit a double).
    await db.schema
      .alterTable('users')
      .addColumn(name, type === 'integer' ? 'bigint' : 'text', (c) => (flag ? c.notNull().defaultTo(0) : c))
      .execute();
  }

  await db.schema
    .createTable('auth_device')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('registration_token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('registration_expires_at', 'text', (c) => c.notNull())
    .addColumn('registered_at', 'text')
    .addColumn('registered_by', 'text')
    .addColumn('consent_given', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('consent_at', 'text')
    .addColumn('last_login_at', 'text')
    .addColumn('access_token_ttl_seconds', 'bigint')
    .addColumn('refresh_token_ttl_seconds', 'bigint')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('updated_by', 'text')
    .addColumn('deleted_at', 'text')
    .execute();
  await db.schema
    .createIndex('auth_device_user')
    .on('auth_device')
    .columns(['user_id', 'created_at'])
    .execute();

  await db.schema
    .createTable('refresh_token')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id'))
    .addColumn('session_id', 'text', (c) => c.notNull().references('auth_session.id'))
    .addColumn('parent_id', 'text')
    .addColumn('device_id', 'text')
    .addColumn('auth_path', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('ip_address', 'text')
    .addColumn('user_agent', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('used_at', 'text')
    .addColumn('revoked_at', 'text')
    .addColumn('revoked_reason', 'text')
    .addColumn('deleted_at', 'text')
    .execute();
  await db.schema.createIndex('refresh_token_session').on('refresh_token').column('session_id').execute();
  await db.schema
    .createIndex('refresh_token_user')
    .on('refresh_token')
    .columns(['user_id', 'created_at'])
    .execute();
  // The expiry job's scan: active rows by expiry.
  await db.schema
    .createIndex('refresh_token_expiry')
    .on('refresh_token')
    .column('expires_at')
    .where(sql.ref('deleted_at'), 'is', null)
    .execute();

  await db.schema
    .createTable('password_reset_token')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id'))
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('used_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('password_reset_token_user')
    .on('password_reset_token')
    .column('user_id')
    .execute();

  await db.schema
    .createTable('mfa_challenge')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id'))
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('used_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('auth_attempt')
    .addColumn('key', 'text', (c) => c.primaryKey())
    .addColumn('failures', 'integer', (c) => c.notNull())
    .addColumn('last_failure_at', 'text', (c) => c.notNull())
    .addColumn('locked_until', 'text')
    .addColumn('lock_count', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const t of ['auth_attempt', 'mfa_challenge', 'password_reset_token', 'refresh_token', 'auth_device']) {
    await db.schema.dropTable(t).execute();
  }
  for (const c of [
    'password_reset_required',
    'refresh_token_ttl_seconds',
    'access_token_ttl_seconds',
    'mfa_pending_last_step',
    'mfa_pending_verified',
    'mfa_pending_secret',
    'mfa_last_step',
    'mfa_secret',
  ]) {
    await db.schema.alterTable('users').dropColumn(c).execute();
  }
}
