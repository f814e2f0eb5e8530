import { type Kysely, sql } from 'kysely';

/** Enrollments, their questionnaires, and questionnaire submissions (docs/platform.md). */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('enrollment')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('consent_required', 'integer', (c) => c.notNull())
    .addColumn('consent_version', 'text')
    .addColumn('consented_at', 'text')
    .addColumn('starts_at', 'text')
    .addColumn('ends_at', 'text')
    .addColumn('schedule', 'text')
    .addColumn('metadata', 'text')
    .addColumn('status_reason', 'text')
    .addColumn('status_changed_at', 'text', (c) => c.notNull())
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('updated_by', 'text')
    .addColumn('deleted_at', 'text')
    .execute();
  await db.schema
    .createIndex('enrollment_user')
    .on('enrollment')
    .columns(['user_id', 'created_at'])
    .execute();
  await db.schema.createIndex('enrollment_created').on('enrollment').column('created_at').execute();

  await db.schema
    .createTable('enrollment_questionnaire')
    .addColumn('enrollment_id', 'text', (c) => c.notNull().references('enrollment.id'))
    .addColumn('questionnaire_id', 'text', (c) => c.notNull())
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('open_key', 'integer')
    .addPrimaryKeyConstraint('enrollment_questionnaire_pk', ['enrollment_id', 'questionnaire_id'])
    .execute();
  // One open enrollment per user and questionnaire; NULL open_key (closed) never collides.
  await db.schema
    .createIndex('enrollment_questionnaire_open')
    .on('enrollment_questionnaire')
    .columns(['user_id', 'questionnaire_id', 'open_key'])
    .unique()
    .execute();
  await db.schema
    .createIndex('enrollment_questionnaire_q')
    .on('enrollment_questionnaire')
    .column('questionnaire_id')
    .execute();

  await db.schema
    .createTable('questionnaire_submission')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('questionnaire_id', 'text', (c) => c.notNull())
    .addColumn('questionnaire_revision', 'integer')
    .addColumn('user_id', 'text')
    .addColumn('enrollment_id', 'text', (c) => c.references('enrollment.id'))
    .addColumn('is_anonymous', 'integer', (c) => c.notNull())
    .addColumn('answers', 'text', (c) => c.notNull())
    .addColumn('metadata', 'text')
    .addColumn('api_key_id', 'text')
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('updated_by', 'text')
    .addColumn('deleted_at', 'text')
    .execute();
  await db.schema
    .createIndex('questionnaire_submission_q')
    .on('questionnaire_submission')
    .columns(['questionnaire_id', 'created_at'])
    .execute();
  await db.schema
    .createIndex('questionnaire_submission_user')
    .on('questionnaire_submission')
    .columns(['user_id', 'created_at'])
    .execute();
  await db.schema
    .createIndex('questionnaire_submission_created')
    .on('questionnaire_submission')
    .column('created_at')
    .execute();
  await db.schema
    .createIndex('questionnaire_submission_enrollment')
    .on('questionnaire_submission')
    .column('enrollment_id')
    .where(sql.ref('enrollment_id'), 'is not', null)
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('questionnaire_submission').execute();
  await db.schema.dropTable('enrollment_questionnaire').execute();
  await db.schema.dropTable('enrollment').execute();
}
