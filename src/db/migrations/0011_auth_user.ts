import { type Kysely, sql } from 'kysely';

/**
 * The sign-in state of a user moves from columns the auth area had added to identity's `users` into
 * a table of its own (`auth_user`, one row per user who has any): one owner per table. `mfa_enabled`
 * stays on `users`: it is part of the user record. Rows are copied for users whose state differs from
 * the defaults; the columns are then dropped.
 */
const MOVED = [
  'mfa_secret',
  'mfa_last_step',
  'mfa_pending_secret',
  'mfa_pending_verified',
  'mfa_pending_last_step',
  'access_token_ttl_seconds',
  'refresh_token_ttl_seconds',
  'password_reset_required',
] as const;

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('auth_user')
    .addColumn('user_id', 'text', (c) => c.primaryKey().references('users.id'))
    .addColumn('mfa_secret', 'text')
    .addColumn('mfa_last_step', 'bigint')
    .addColumn('mfa_pending_secret', 'text')
    .addColumn('mfa_pending_verified', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('mfa_pending_last_step', 'bigint')
    .addColumn('access_token_ttl_seconds', 'bigint')
    .addColumn('refresh_token_ttl_seconds', 'bigint')
    .addColumn('password_reset_required', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('updated_at', 'text')
    .addColumn('updated_by', 'text')
    .execute();
  const columns = sql.join(MOVED.map((c) => sql.ref(c)));
  await sql`insert into auth_user (user_id, ${columns}, updated_at, updated_by)
    select id, ${columns}, updated_at, updated_by from users
    where mfa_secret is not null or mfa_pending_secret is not null or mfa_last_step is not null
      or access_token_ttl_seconds is not null or refresh_token_ttl_seconds is not null
      or password_reset_required <> 0`.execute(db);
  // SQLite drops one column per statement.
  for (const c of MOVED) await db.schema.alterTable('users').dropColumn(c).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const c of MOVED) {
    const flag = c === 'mfa_pending_verified' || c === 'password_reset_required';
    await db.schema
      .alterTable('users')
      .addColumn(c, c === 'mfa_secret' || c === 'mfa_pending_secret' ? 'text' : 'bigint', (col) =>
        flag ? col.notNull().defaultTo(0) : col,
      )
      .execute();
  }
  const columns = sql.join(MOVED.map((c) => sql.ref(c)));
  await sql`update users set (${columns}) = (select ${columns} from auth_user where auth_user.user_id = users.id)
    where id in (select user_id from auth_user)`.execute(db);
  await db.schema.dropTable('auth_user').execute();
}
