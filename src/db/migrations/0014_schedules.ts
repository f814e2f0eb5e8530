import type { Kysely } from 'kysely';

/**
 * Schedules (docs/schedules.md): cron expressions that publish an event at each fire time, and one
 * row per (schedule, fire time) fired, whose primary key makes a fire happen once however many
 * workers look at the schedule.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('schedule')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('cron', 'text', (c) => c.notNull())
    .addColumn('timezone', 'text', (c) => c.notNull())
    .addColumn('event_type', 'text', (c) => c.notNull())
    .addColumn('data', 'text', (c) => c.notNull())
    .addColumn('enabled', 'integer', (c) => c.notNull())
    .addColumn('catch_up', 'text', (c) => c.notNull())
    .addColumn('next_fire_at', 'text')
    .addColumn('last_fired_at', 'text')
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('updated_by', 'text')
    .addColumn('deleted_at', 'text')
    .execute();
  await db.schema.createIndex('schedule_due').on('schedule').columns(['enabled', 'next_fire_at']).execute();
  await db.schema
    .createTable('schedule_fire')
    .addColumn('schedule_id', 'text', (c) => c.notNull())
    .addColumn('fire_time', 'text', (c) => c.notNull())
    .addColumn('event_id', 'text')
    .addColumn('error', 'text')
    .addColumn('fired_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('schedule_fire_pk', ['schedule_id', 'fire_time'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('schedule_fire').execute();
  await db.schema.dropTable('schedule').execute();
}
