import type { Kysely } from 'kysely';

/**
 * The loop guard's measure on each run (docs/workflows.md "Loop safety"): how many runs led to its
 * trigger event. The server-wide rate guard counts only runs that runs caused (depth 1 or more), so
 * traffic from people, keys, schedules and outside systems is never paused by default.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('workflow_run')
    .addColumn('causation_depth', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('workflow_run').dropColumn('causation_depth').execute();
}
