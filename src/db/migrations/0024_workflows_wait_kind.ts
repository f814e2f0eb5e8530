import { type Kysely, sql } from 'kysely';

/**
 * What a running node waits for, said once (docs/workflows.md "States"): `delay`, `retry`,
 * `join_timeout`, `event`, `child` or `limit`, instead of being read from its error and the prefix
 * of its wait key. Nodes waiting when the column is added get the kind those said.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('workflow_run_node').addColumn('wait_kind', 'text').execute();
  await sql`
    UPDATE workflow_run_node SET wait_kind = CASE
      WHEN wait_key LIKE 'run:%' THEN 'child'
      WHEN wait_key LIKE 'limit:%' THEN 'limit'
      WHEN wait_key IS NOT NULL THEN 'event'
      WHEN error IS NOT NULL THEN 'retry'
      WHEN node_type = 'DELAY' THEN 'delay'
      WHEN node_type = 'JOIN' THEN 'join_timeout'
    END
    WHERE status = 'running' AND (wait_key IS NOT NULL OR resume_at IS NOT NULL)
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('workflow_run_node').dropColumn('wait_kind').execute();
}
