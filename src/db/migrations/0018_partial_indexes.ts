import { type Kysely, sql } from 'kysely';

/**
 * Indexes that hold only the rows their queries look for, so a finished run or outbox task (most
 * rows, once a store has run for a while) costs no entry in them (docs/performance.md "Storage"):
 * due runs are those with a wake time; the drain claims PENDING tasks by due time and reaps
 * IN_PROGRESS ones by lease. The outbox's prune walks `event_delivery_task_created` instead.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('workflow_run_wake').execute();
  await db.schema
    .createIndex('workflow_run_wake')
    .on('workflow_run')
    .columns(['status', 'wake_at'])
    .where(sql.ref('wake_at'), 'is not', null)
    .execute();
  await db.schema.dropIndex('event_delivery_task_claim').execute();
  await db.schema
    .createIndex('event_delivery_task_due')
    .on('event_delivery_task')
    .column('next_attempt_at')
    .where(sql.ref('status'), '=', 'PENDING')
    .execute();
  await db.schema
    .createIndex('event_delivery_task_leased')
    .on('event_delivery_task')
    .column('locked_until')
    .where(sql.ref('status'), '=', 'IN_PROGRESS')
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('event_delivery_task_leased').execute();
  await db.schema.dropIndex('event_delivery_task_due').execute();
  await db.schema
    .createIndex('event_delivery_task_claim')
    .on('event_delivery_task')
    .columns(['status', 'next_attempt_at'])
    .execute();
  await db.schema.dropIndex('workflow_run_wake').execute();
  await db.schema
    .createIndex('workflow_run_wake')
    .on('workflow_run')
    .columns(['status', 'wake_at'])
    .execute();
}
