import { type Kysely, sql } from 'kysely';

/**
 * Retention (docs/reliability.md "Retention"): per-subscription and per-webhook settings, the
 * indexes the prune job walks (each kind's finished rows, oldest first, without a scan of what it
 * keeps), and the lease that lets one worker at a time run a pass.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('event_subscription')
    .addColumn('retention_completed_runs_seconds', 'integer')
    .execute();
  await db.schema
    .alterTable('event_subscription')
    .addColumn('retention_failed_runs_seconds', 'integer')
    .execute();
  await db.schema.alterTable('webhook').addColumn('retention_deliveries_seconds', 'integer').execute();
  // Per subscription and status: one range per retention rule, so the runs one rule keeps are never
  // scanned by another's pass.
  await db.schema
    .createIndex('workflow_run_retention')
    .on('workflow_run')
    .columns(['event_subscription_id', 'status', 'completed_at'])
    .execute();
  // A re-run's origin stays while the re-run does.
  await db.schema
    .createIndex('workflow_run_rerun')
    .on('workflow_run')
    .column('rerun_of')
    .where(sql.ref('rerun_of'), 'is not', null)
    .execute();
  await db.schema
    .createIndex('webhook_delivery_retention')
    .on('webhook_delivery')
    .columns(['webhook_id', 'status', 'updated_at'])
    .execute();
  // An event's stored body goes with its last delivery.
  await db.schema.createIndex('webhook_delivery_event').on('webhook_delivery').column('event_id').execute();
  // One row per maintenance job: who runs it now, and until when.
  await db.schema
    .createTable('maintenance_lease')
    .addColumn('job', 'text', (c) => c.primaryKey())
    .addColumn('holder', 'text', (c) => c.notNull())
    .addColumn('until', 'text', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('maintenance_lease').execute();
  await db.schema.dropIndex('webhook_delivery_event').execute();
  await db.schema.dropIndex('webhook_delivery_retention').execute();
  await db.schema.dropIndex('workflow_run_rerun').execute();
  await db.schema.dropIndex('workflow_run_retention').execute();
  await db.schema.alterTable('webhook').dropColumn('retention_deliveries_seconds').execute();
  await db.schema.alterTable('event_subscription').dropColumn('retention_failed_runs_seconds').execute();
  await db.schema.alterTable('event_subscription').dropColumn('retention_completed_runs_seconds').execute();
}
