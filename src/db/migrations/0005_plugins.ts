import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('plugin_definition')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull().unique())
    .addColumn('version', 'text', (c) => c.notNull())
    .addColumn('runtime', 'text', (c) => c.notNull())
    .addColumn('entrypoint', 'text', (c) => c.notNull())
    .addColumn('plugin_key', 'text', (c) => c.notNull())
    .addColumn('instance_config_schema', 'text', (c) => c.notNull())
    .addColumn('actions', 'text', (c) => c.notNull())
    .addColumn('dist_name', 'text')
    .addColumn('dist_commit', 'text')
    .addColumn('enabled', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('plugin_definition_plugin_key')
    .on('plugin_definition')
    .column('plugin_key')
    .execute();

  await db.schema
    .createTable('plugin_instance')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('plugin_definition_id', 'text', (c) => c.notNull().references('plugin_definition.id'))
    .addColumn('display_name', 'text', (c) => c.notNull())
    .addColumn('config_json', 'text')
    .addColumn('config_hash', 'text', (c) => c.notNull())
    .addColumn('enabled', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('updated_by', 'text')
    .addColumn('deleted_at', 'text')
    .execute();
  await db.schema
    .createIndex('plugin_instance_definition')
    .on('plugin_instance')
    .columns(['plugin_definition_id', 'deleted_at'])
    .execute();
  await db.schema.createIndex('plugin_instance_created').on('plugin_instance').column('created_at').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('plugin_instance').execute();
  await db.schema.dropTable('plugin_definition').execute();
}
