import { Registry } from 'prom-client';
import type { CloudEvent } from '../../src/areas/events/cloudevent.js';
import type { EventHandler } from '../../src/areas/events/handlers.js';
import { createOutboxMetrics } from '../../src/areas/events/metrics.js';
import { createOutboxJob, type OutboxJob, type OutboxOptions } from '../../src/areas/events/outbox.js';
import type { EventInput } from '../../src/areas/events/publish.js';
import { createOutboxSignal } from '../../src/areas/events/signal.js';
import type { TaskRow } from '../../src/areas/events/store.js';
import { newId } from '../../src/lib/ids.js';
import type { TestApp } from '../helpers/app.js';

/** A registered event (svc.user.created) with a fresh subject. */
export function userCreated(n = 0): EventInput {
  const id = newId();
  return {
    type: 'svc.user.created',
    source: '/api/v1/user',
    subject: id,
    data: { user_id: id, email: `user-${n}@example.test` },
  };
}

/** Publishes `count` events, `perTx` to a transaction, as an area would. */
export async function publishMany(t: TestApp, count: number, perTx = 1): Promise<CloudEvent[]> {
  const published: CloudEvent[] = [];
  for (let i = 0; i < count; i += perTx) {
    const batch = await t.ctx.store.transaction(async (tx) => {
      const out: CloudEvent[] = [];
      for (let j = i; j < Math.min(i + perTx, count); j++)
        out.push(await t.ctx.services.events.publish(tx, userCreated(j)));
      return out;
    });
    published.push(...batch);
  }
  return published;
}

/** The drain the app's worker runs. */
export function outboxJob(t: TestApp): OutboxJob {
  const job = t.ctx.services.jobs.find((j) => j.name === 'outbox');
  if (!job) throw new Error('no outbox job registered');
  return job as OutboxJob;
}

/** A second drain on the same store (another worker), with its own handlers. */
export function anotherDrain(
  t: TestApp,
  handlers: EventHandler[],
  options: Partial<OutboxOptions> = {},
): OutboxJob {
  const { store, clock, log, services } = t.ctx;
  return createOutboxJob(
    {
      store,
      clock,
      log,
      wakeups: services.wakeups,
      handlers,
      signal: createOutboxSignal({ store, wakeups: services.wakeups, log, watchOtherProcesses: false }),
      metrics: createOutboxMetrics(new Registry(), store, clock),
    },
    { leaseMs: t.ctx.config.outboxLeaseMs, intervalMs: t.ctx.config.outboxDrainIntervalMs, ...options },
  );
}

/** Every task row, oldest first (for assertions the API does not expose, like exact counts by worker). */
export async function allTasks(t: TestApp): Promise<TaskRow[]> {
  return t.ctx.store.db
    .selectFrom('event_delivery_task')
    .selectAll()
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** The CloudEvents in the outbox, of one type or with one id (what was published, as stored). */
// biome-ignore lint/suspicious/noExplicitAny: stored events are asserted field by field
export async function outboxEvents(t: TestApp, by: { type?: string; id?: string }): Promise<any[]> {
  let q = t.ctx.store.db.selectFrom('event_delivery_task').select('cloudevent');
  if (by.type !== undefined) q = q.where('event_type', '=', by.type);
  if (by.id !== undefined) q = q.where('event_id', '=', by.id);
  return (await q.orderBy('created_at').orderBy('id').execute()).map((r) => JSON.parse(r.cloudevent));
}

/** A handler that records what it was given, and fails an event while `fail(event, call)` says so. */
export function recorder(name: string, fail: (event: CloudEvent, call: number) => boolean = () => false) {
  const calls: CloudEvent[] = [];
  const handler: EventHandler = {
    name,
    async handle(events) {
      const failures = new Map<string, Error>();
      for (const event of events) {
        calls.push(event);
        const call = calls.filter((c) => c.id === event.id).length;
        if (fail(event, call)) failures.set(event.id, new Error(`boom ${calls.length}`));
      }
      return failures;
    },
  };
  return { handler, calls };
}

/** Resolves once `check` holds, polling; rejects after `ms` (a deadline, not a timing assertion). */
export async function eventually<T>(
  check: () => Promise<T | false | undefined>,
  ms = 10_000,
  what = 'condition',
) {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
