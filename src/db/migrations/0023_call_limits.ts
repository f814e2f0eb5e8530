import type { Kysely } from 'kysely';

/**
 * Limits of outbound calls (docs/plugins.md "Limits", docs/webhooks.md "Rate limit"): a plugin
 * instance's rate_limit and max_concurrency, a webhook's rate_limit, and the entries that count
 * them across processes (src/db/call-limits.ts).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('plugin_instance').addColumn('rate_limit', 'text').execute();
  await db.schema.alterTable('plugin_instance').addColumn('max_concurrency', 'integer').execute();
  await db.schema.alterTable('webhook').addColumn('rate_limit', 'text').execute();
  await db.schema
    .createTable('call_limit_entry')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('scope', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('holder', 'text', (c) => c.notNull())
    .addColumn('at', 'text', (c) => c.notNull())
    .addColumn('until', 'text', (c) => c.notNull())
    .execute();
  // The window and the queue of a scope are ranges of this index; a holder's own entries the other.
  await db.schema
    .createIndex('call_limit_entry_scope')
    .on('call_limit_entry')
    .columns(['scope', 'kind', 'at'])
    .execute();
  await db.schema.createIndex('call_limit_entry_holder').on('call_limit_entry').column('holder').execute();
  await db.schema.createIndex('call_limit_entry_until').on('call_limit_entry').column('until').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('call_limit_entry').execute();
  await db.schema.alterTable('webhook').dropColumn('rate_limit').execute();
  await db.schema.alterTable('plugin_instance').dropColumn('max_concurrency').execute();
  await db.schema.alterTable('plugin_instance').dropColumn('rate_limit').execute();
}
