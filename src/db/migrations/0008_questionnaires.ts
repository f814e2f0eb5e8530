import { type Kysely, sql } from 'kysely';

/** Questionnaire catalogue: folders, questionnaires, revisions, folder and questionnaire grants. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('folder')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('parent_id', 'text', (c) => c.references('folder.id'))
    .addColumn('config', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('created_by', 'text')
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('updated_by', 'text')
    .addColumn('deleted_at', 'text')
    .execute();
  await db.schema.createIndex('folder_parent').on('folder').column('parent_id').execute();

  await db.schema
    .createTable('questionnaire')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('folder_id', 'text', (c) => c.references('folder.id'))
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('config', 'text', (c) => c.notNull())
    .addColumn('schedule_payload', 'text', (c) => c.notNull())
    .addColumn('metadata', 'text', (c) => c.notNull())
    .addColumn('lineage_root_id', 'text', (c) => c.notNull())
    .addColumn('forked_from_id', 'text')
    .addColumn('forked_from_sequence', 'integer')
    .addColumn('revision_sequence', 'integer', (c) => c.notNull())
    .addColumn('published_at', 'text')
    .addColumn('published_by', 'text')
    .addColumn('archived_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('created_by', 'text')
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('updated_by', 'text')
    .addColumn('deleted_at', 'text')
    .execute();
  await db.schema.createIndex('questionnaire_folder').on('questionnaire').column('folder_id').execute();
  await db.schema
    .createIndex('questionnaire_lineage')
    .on('questionnaire')
    .column('lineage_root_id')
    .execute();
  await db.schema.createIndex('questionnaire_created').on('questionnaire').column('created_at').execute();

  await db.schema
    .createTable('questionnaire_revision')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('questionnaire_id', 'text', (c) => c.notNull().references('questionnaire.id'))
    .addColumn('sequence', 'integer', (c) => c.notNull())
    .addColumn('operation', 'text', (c) => c.notNull())
    .addColumn('lineage_root_id', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('diffs', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('created_by', 'text')
    .execute();
  // The sequence guarantee (docs/platform.md "Revisions"): one revision per (questionnaire, sequence).
  await db.schema
    .createIndex('questionnaire_revision_sequence')
    .on('questionnaire_revision')
    .columns(['questionnaire_id', 'sequence'])
    .unique()
    .execute();
  await db.schema
    .createIndex('questionnaire_revision_lineage')
    .on('questionnaire_revision')
    .column('lineage_root_id')
    .execute();

  for (const [table, object] of [
    ['folder_permission', 'folder'],
    ['questionnaire_permission', 'questionnaire'],
  ] as const) {
    await db.schema
      .createTable(table)
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn(`${object}_id`, 'text', (c) => c.notNull().references(`${object}.id`))
      .addColumn('grantee_type', 'text', (c) => c.notNull())
      .addColumn('grantee_id', 'text', (c) => c.notNull())
      .addColumn('level', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('created_by', 'text')
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .addColumn('updated_by', 'text')
      .addColumn('deleted_at', 'text')
      .execute();
    // One active grant per object and grantee (a partial index: soft-deleted grants do not count).
    await db.schema
      .createIndex(`${table}_unique_active`)
      .on(table)
      .columns([`${object}_id`, 'grantee_type', 'grantee_id'])
      .unique()
      .where(sql.ref('deleted_at'), 'is', null)
      .execute();
    await db.schema
      .createIndex(`${table}_grantee`)
      .on(table)
      .columns(['grantee_type', 'grantee_id'])
      .execute();
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of [
    'questionnaire_permission',
    'folder_permission',
    'questionnaire_revision',
    'questionnaire',
    'folder',
  ]) {
    await db.schema.dropTable(table).execute();
  }
}
