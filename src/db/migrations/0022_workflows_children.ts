import { type Kysely, sql } from 'kysely';

/**
 * CALL and FOREACH (docs/workflows.md "CALL", "FOREACH"): a child run names the run and node that
 * started it, and whether that node waits for its end; a FOREACH's items are durable one by one.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('workflow_run').addColumn('parent_run_id', 'text').execute();
  await db.schema.alterTable('workflow_run').addColumn('parent_node_key', 'text').execute();
  await db.schema
    .alterTable('workflow_run')
    .addColumn('awaited_by_parent', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  // Only child runs have a parent: the index holds those and nothing else.
  await db.schema
    .createIndex('workflow_run_parent')
    .on('workflow_run')
    .column('parent_run_id')
    .where(sql.ref('parent_run_id'), 'is not', null)
    .execute();
  await db.schema
    .createTable('workflow_run_item')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workflow_run_id', 'text', (c) => c.notNull())
    .addColumn('node_key', 'text', (c) => c.notNull())
    .addColumn('item_index', 'integer', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('input', 'text')
    .addColumn('output', 'text')
    .addColumn('error', 'text')
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('interruptions', 'integer', (c) => c.notNull())
    .addColumn('resume_at', 'text')
    .addColumn('child_run_id', 'text')
    .addColumn('started_at', 'text')
    .addColumn('completed_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('workflow_run_item_node')
    .on('workflow_run_item')
    .columns(['workflow_run_id', 'node_key', 'item_index'])
    .unique()
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('workflow_run_item').execute();
  await db.schema.dropIndex('workflow_run_parent').execute();
  await db.schema.alterTable('workflow_run').dropColumn('awaited_by_parent').execute();
  await db.schema.alterTable('workflow_run').dropColumn('parent_node_key').execute();
  await db.schema.alterTable('workflow_run').dropColumn('parent_run_id').execute();
}
