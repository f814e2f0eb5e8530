import type { CloudEvent } from './cloudevent.js';

/**
 * Something the outbox drain hands every published event to (the workflow router, the webhook
 * dispatcher, ...), registered by appending to `Services.eventHandlers` in src/app/services.ts.
 *
 * Throwing fails the event's task: it is retried later (every handler again, at-least-once), so
 * `handle` must be idempotent: key any row it writes by `event.id` (plus its own discriminator).
 */
export interface EventHandler {
  /** Appears in the task's `error` and in logs when `handle` throws. */
  name: string;
  handle(event: CloudEvent): Promise<void>;
}
