import { type Kysely, sql } from 'kysely';

/**
 * Flow control (docs/workflows.md "Flow control"): a subscription's `flow_control`, what a run holds
 * of it (why and on which key it waits, the key it runs under, its priority, the events a debounce
 * folded in), and the windows of starts that throttles and rate limits count.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('event_subscription').addColumn('flow_control', 'text').execute();
  for (const [name, type] of [
    ['pending_reason', 'text'],
    ['flow_key', 'text'],
    ['concurrency_key', 'text'],
    ['flow_deadline', 'text'],
    ['debounced_events', 'integer'],
  ] as const) {
    await db.schema.alterTable('workflow_run').addColumn(name, type).execute();
  }
  await db.schema
    .alterTable('workflow_run')
    .addColumn('priority', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  // A queue per (subscription, reason, key), in start order: its head is one indexed read however
  // many runs wait. Only waiting runs have entries.
  await db.schema
    .createIndex('workflow_run_queue')
    .on('workflow_run')
    .columns(['event_subscription_id', 'pending_reason', 'flow_key', 'priority desc', 'created_at', 'id'])
    .where(sql.ref('status'), '=', 'pending')
    .execute();
  // The runs a concurrency limit counts: those running under a key.
  await db.schema
    .createIndex('workflow_run_concurrency')
    .on('workflow_run')
    .columns(['event_subscription_id', 'concurrency_key'])
    .where((eb) =>
      eb.and([eb(sql.ref('status'), '=', 'running'), eb(sql.ref('concurrency_key'), 'is not', null)]),
    )
    .execute();
  // One open debounce run per key: events fold into it; a second writer's insert loses and folds.
  await db.schema
    .createIndex('workflow_run_debounce')
    .on('workflow_run')
    .columns(['event_subscription_id', 'flow_key'])
    .unique()
    .where((eb) =>
      eb.and([
        eb(sql.ref('status'), '=', 'pending'),
        eb(sql.ref('pending_reason'), '=', 'debounce'),
        eb(sql.ref('locked_by'), 'is', null),
      ]),
    )
    .execute();
  // Starts (throttle) and admissions (rate_limit) per key, counted over a sliding window.
  await db.schema
    .createTable('flow_window')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('subscription_id', 'text', (c) => c.notNull())
    .addColumn('part', 'text', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('flow_window_key')
    .on('flow_window')
    .columns(['subscription_id', 'part', 'key', 'at'])
    .execute();
  await db.schema.createIndex('flow_window_at').on('flow_window').column('at').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('flow_window').execute();
  for (const index of ['workflow_run_debounce', 'workflow_run_concurrency', 'workflow_run_queue'])
    await db.schema.dropIndex(index).execute();
  for (const name of [
    'priority',
    'debounced_events',
    'flow_deadline',
    'concurrency_key',
    'flow_key',
    'pending_reason',
  ])
    await db.schema.alterTable('workflow_run').dropColumn(name).execute();
  await db.schema.alterTable('event_subscription').dropColumn('flow_control').execute();
}
