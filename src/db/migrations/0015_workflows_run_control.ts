import { type Kysely, sql } from 'kysely';

/**
 * Run control (docs/workflows.md "Run control"): a re-run is a new run of the same subscription and
 * trigger event, linked to the run it repeats by `rerun_of`. The router's rule "one run per
 * (subscription, event)" now holds for the runs events start (rerun_of null); re-runs may repeat it.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('workflow_run').addColumn('rerun_of', 'text').execute();
  await db.schema.dropIndex('workflow_run_event').execute();
  await db.schema
    .createIndex('workflow_run_event')
    .on('workflow_run')
    .columns(['event_subscription_id', 'event_id'])
    .unique()
    .where(sql.ref('rerun_of'), 'is', null)
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db
    .deleteFrom('workflow_run' as never)
    .where(sql.ref('rerun_of'), 'is not', null)
    .execute();
  await db.schema.dropIndex('workflow_run_event').execute();
  await db.schema
    .createIndex('workflow_run_event')
    .on('workflow_run')
    .columns(['event_subscription_id', 'event_id'])
    .unique()
    .execute();
  await db.schema.alterTable('workflow_run').dropColumn('rerun_of').execute();
}
