import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('vault_entry')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('value', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('enabled', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('updated_by', 'text')
    .addColumn('deleted_at', 'text')
    .execute();
  // A key is unique among active entries only (docs/vault.md "Entries"): a deleted key can be reused.
  // Partial indexes exist on both SQLite and PostgreSQL; the index also serves the resolver's lookup.
  await db.schema
    .createIndex('vault_entry_key_active')
    .unique()
    .on('vault_entry')
    .column('key')
    .where(sql.ref('deleted_at'), 'is', null)
    .execute();
  await db.schema.createIndex('vault_entry_created').on('vault_entry').column('created_at').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('vault_entry').execute();
}
