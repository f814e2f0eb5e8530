import { type Kysely, sql } from 'kysely';

/**
 * WAIT_EVENT (docs/workflows.md "WAIT_EVENT"): a waiting node's key, found by one index lookup per
 * incoming event however many runs wait, and the event-side expressions waited on per event type.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('workflow_run_node').addColumn('wait_key', 'text').execute();
  // Only nodes waiting for an event have a key: the index holds those and nothing else.
  await db.schema
    .createIndex('workflow_run_node_wait')
    .on('workflow_run_node')
    .column('wait_key')
    .where(sql.ref('wait_key'), 'is not', null)
    .execute();
  await db.schema
    .createTable('workflow_wait_spec')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('event_type', 'text', (c) => c.notNull())
    .addColumn('expression', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('workflow_wait_spec_type')
    .on('workflow_wait_spec')
    .column('event_type')
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('workflow_wait_spec').execute();
  await db.schema.dropIndex('workflow_run_node_wait').execute();
  await db.schema.alterTable('workflow_run_node').dropColumn('wait_key').execute();
}
