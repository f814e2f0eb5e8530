import { type Kysely, sql } from 'kysely';

/**
 * Custom event types (docs/events.md "Custom event types"): definitions users register beside the
 * built-in `svc.` catalogue, and one outbox task per event id, which is also how an event published
 * over HTTP twice (a producer retrying) is recognised and accepted once.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('event_type_definition')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('event_type', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull())
    .addColumn('data_schema', 'text')
    .addColumn('examples', 'text', (c) => c.notNull())
    .addColumn('schema_version', 'text', (c) => c.notNull())
    .addColumn('deprecated', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('updated_by', 'text')
    .addColumn('deleted_at', 'text')
    .execute();
  // One active definition per type; a deleted type may be registered again.
  await db.schema
    .createIndex('event_type_definition_type')
    .on('event_type_definition')
    .column('event_type')
    .unique()
    .where(sql.ref('deleted_at'), 'is', null)
    .execute();
  await db.schema
    .createIndex('event_delivery_task_event')
    .on('event_delivery_task')
    .column('event_id')
    .unique()
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('event_delivery_task_event').execute();
  await db.schema.dropTable('event_type_definition').execute();
}
