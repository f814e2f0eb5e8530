import type { Kysely } from 'kysely';

/**
 * Outbox tasks count the attempts a crash interrupted (a lease that ran out) apart from failed ones:
 * an interruption is not the event's fault, so it does not use up `attempts` (docs/events.md).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('event_delivery_task')
    .addColumn('interruptions', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('event_delivery_task').dropColumn('interruptions').execute();
}
