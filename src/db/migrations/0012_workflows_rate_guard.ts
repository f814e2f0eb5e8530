import type { Kysely } from 'kysely';

/**
 * The per-subscription rate guard (docs/workflows.md "Loop safety"): a subscription's own limit of
 * runs started per minute, and why and when the guard paused it; runs are counted per subscription
 * over the last minute through a (subscription, created_at) index.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('event_subscription').addColumn('max_runs_per_minute', 'integer').execute();
  await db.schema.alterTable('event_subscription').addColumn('paused_reason', 'text').execute();
  await db.schema.alterTable('event_subscription').addColumn('paused_at', 'text').execute();
  await db.schema
    .createIndex('workflow_run_subscription_created')
    .on('workflow_run')
    .columns(['event_subscription_id', 'created_at'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('workflow_run_subscription_created').execute();
  await db.schema.alterTable('event_subscription').dropColumn('paused_at').execute();
  await db.schema.alterTable('event_subscription').dropColumn('paused_reason').execute();
  await db.schema.alterTable('event_subscription').dropColumn('max_runs_per_minute').execute();
}
