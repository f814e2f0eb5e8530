import type { Kysely } from 'kysely';

/** Event subscriptions, their versioned graphs, workflow runs and run nodes. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('event_subscription')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('event_type', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('enabled', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('source_filter', 'text')
    .addColumn('subject_filter', 'text')
    .addColumn('condition_jsonlogic', 'text')
    .addColumn('graph_version', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('updated_by', 'text')
    .addColumn('deleted_at', 'text')
    .execute();
  // The router's lookup: subscriptions by event type (an index, not a scan).
  await db.schema
    .createIndex('event_subscription_route')
    .on('event_subscription')
    .columns(['event_type', 'enabled', 'deleted_at'])
    .execute();
  await db.schema
    .createIndex('event_subscription_created')
    .on('event_subscription')
    .column('created_at')
    .execute();

  await db.schema
    .createTable('workflow_node')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('event_subscription_id', 'text', (c) => c.notNull().references('event_subscription.id'))
    .addColumn('graph_version', 'integer', (c) => c.notNull())
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('config', 'text')
    .addColumn('retry_policy', 'text')
    .addColumn('timeout_ms', 'integer')
    .addColumn('continue_on_error', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('updated_by', 'text')
    .addColumn('deleted_at', 'text')
    .execute();
  await db.schema
    .createIndex('workflow_node_version')
    .on('workflow_node')
    .columns(['event_subscription_id', 'graph_version', 'position'])
    .execute();

  await db.schema
    .createTable('workflow_edge')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('event_subscription_id', 'text', (c) => c.notNull().references('event_subscription.id'))
    .addColumn('graph_version', 'integer', (c) => c.notNull())
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('from_node_id', 'text', (c) => c.notNull().references('workflow_node.id'))
    .addColumn('to_node_id', 'text', (c) => c.notNull().references('workflow_node.id'))
    .addColumn('label', 'text')
    .addColumn('condition_jsonlogic', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('deleted_at', 'text')
    .execute();
  await db.schema
    .createIndex('workflow_edge_version')
    .on('workflow_edge')
    .columns(['event_subscription_id', 'graph_version', 'position'])
    .execute();

  await db.schema
    .createTable('workflow_run')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('event_subscription_id', 'text', (c) => c.notNull().references('event_subscription.id'))
    .addColumn('graph_version', 'integer', (c) => c.notNull())
    .addColumn('event_id', 'text', (c) => c.notNull())
    .addColumn('event_type', 'text', (c) => c.notNull())
    .addColumn('trigger_event', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('started_at', 'text')
    .addColumn('completed_at', 'text')
    .addColumn('error', 'text')
    .addColumn('wake_at', 'text')
    .addColumn('locked_by', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  // Exactly one run per (subscription, event id), however often the outbox hands the event over.
  await db.schema
    .createIndex('workflow_run_event')
    .on('workflow_run')
    .columns(['event_subscription_id', 'event_id'])
    .unique()
    .execute();
  // The worker's claim: running runs whose wake_at is due.
  await db.schema
    .createIndex('workflow_run_wake')
    .on('workflow_run')
    .columns(['status', 'wake_at'])
    .execute();
  await db.schema.createIndex('workflow_run_created').on('workflow_run').column('created_at').execute();

  await db.schema
    .createTable('workflow_run_node')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workflow_run_id', 'text', (c) => c.notNull().references('workflow_run.id'))
    .addColumn('node_id', 'text', (c) => c.notNull())
    .addColumn('node_key', 'text', (c) => c.notNull())
    .addColumn('node_type', 'text', (c) => c.notNull())
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('input', 'text')
    .addColumn('output', 'text')
    .addColumn('error', 'text')
    .addColumn('skip_reason', 'text')
    .addColumn('started_at', 'text')
    .addColumn('completed_at', 'text')
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('interruptions', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('resume_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('workflow_run_node_run')
    .on('workflow_run_node')
    .columns(['workflow_run_id', 'position'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const t of [
    'workflow_run_node',
    'workflow_run',
    'workflow_edge',
    'workflow_node',
    'event_subscription',
  ]) {
    await db.schema.dropTable(t).execute();
  }
}
