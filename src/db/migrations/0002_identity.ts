import { randomUUID } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import { BUILTIN_ROLES } from '../../areas/identity/scopes.js';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('users')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('email_normalized', 'text', (c) => c.notNull())
    .addColumn('name', 'text')
    .addColumn('password_hash', 'text', (c) => c.notNull())
    .addColumn('mfa_enabled', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('updated_by', 'text')
    .addColumn('deleted_at', 'text')
    .execute();
  // Unique among active users only: a deleted user's email can be used again.
  await db.schema
    .createIndex('users_email_active')
    .on('users')
    .column('email_normalized')
    .unique()
    .where(sql.ref('deleted_at'), 'is', null)
    .execute();

  await db.schema
    .createTable('role')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('is_builtin', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('updated_by', 'text')
    .addColumn('deleted_at', 'text')
    .execute();
  await db.schema
    .createIndex('role_key_active')
    .on('role')
    .column('key')
    .unique()
    .where(sql.ref('deleted_at'), 'is', null)
    .execute();

  await db.schema
    .createTable('user_role')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id'))
    .addColumn('role_id', 'text', (c) => c.notNull().references('role.id'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('updated_by', 'text')
    .addColumn('deleted_at', 'text')
    .execute();
  await db.schema
    .createIndex('user_role_active')
    .on('user_role')
    .columns(['user_id', 'role_id'])
    .unique()
    .where(sql.ref('deleted_at'), 'is', null)
    .execute();
  await db.schema.createIndex('user_role_role').on('user_role').column('role_id').execute();

  await db.schema
    .createTable('role_scope_entry')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('role_id', 'text', (c) => c.notNull().references('role.id'))
    .addColumn('scope_key', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('updated_by', 'text')
    .addColumn('deleted_at', 'text')
    .execute();
  await db.schema
    .createIndex('role_scope_entry_active')
    .on('role_scope_entry')
    .columns(['role_id', 'scope_key'])
    .unique()
    .where(sql.ref('deleted_at'), 'is', null)
    .execute();

  await db.schema
    .createTable('authz_state')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('version', 'integer', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('auth_session')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id'))
    .addColumn('auth_path', 'text', (c) => c.notNull())
    .addColumn('device_id', 'text')
    .addColumn('ip_address', 'text')
    .addColumn('user_agent', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('revoked_at', 'text')
    .addColumn('revoked_reason', 'text')
    .execute();
  await db.schema.createIndex('auth_session_user').on('auth_session').column('user_id').execute();

  await db.schema
    .createTable('api_key')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('token_hint', 'text', (c) => c.notNull())
    .addColumn('scope_keys', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('is_revoked', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('revoked_at', 'text')
    .addColumn('last_used_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('api_key_user').on('api_key').columns(['user_id', 'created_at']).execute();

  // Seed data the service needs from the first start: the built-in roles and the authz version row.
  const now = new Date().toISOString();
  const anyDb = db as Kysely<Record<string, Record<string, unknown>>>;
  await anyDb.insertInto('authz_state').values({ id: 1, version: 1 }).execute();
  await anyDb
    .insertInto('role')
    .values(
      BUILTIN_ROLES.map((r) => ({
        id: randomUUID(),
        key: r.key,
        name: r.name,
        description: r.description,
        is_builtin: 1,
        created_at: now,
        updated_at: now,
        updated_by: null,
        deleted_at: null,
      })),
    )
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const t of [
    'api_key',
    'auth_session',
    'authz_state',
    'role_scope_entry',
    'user_role',
    'role',
    'users',
  ]) {
    await db.schema.dropTable(t).execute();
  }
}
