import type { Kysely } from 'kysely';

/**
 * Failure branches (docs/workflows.md "Failure branches"): an edge with `on_failure` is followed
 * when its source node fails after its retries, and only then.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('workflow_edge')
    .addColumn('on_failure', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('workflow_edge').dropColumn('on_failure').execute();
}
