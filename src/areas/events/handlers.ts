import type { CloudEvent } from './cloudevent.js';

/** The events of a batch a handler failed, by event id; an event not in it succeeded. */
export type HandlerFailures = ReadonlyMap<string, Error>;

/**
 * Something the outbox drain hands every published event to (the workflow router, the webhook
 * dispatcher), listed in `eventHandlers` in src/app/services.ts when the drain is built.
 *
 * The drain hands over a whole claimed batch at once, so a handler looks up what it needs once per
 * batch rather than once per event: per-event lookups were most of the drain's latency.
 *
 * A failed event's task is retried later (every handler again, at-least-once), so `handle` must be
 * idempotent: key any row it writes by `event.id` (plus its own discriminator). Answering failures
 * fails only those events; throwing fails every event of the batch.
 */
export interface EventHandler {
  /** Appears in the task's `error` and in logs when the handler fails an event. */
  name: string;
  /** `events` holds one or more events, in claim order. */
  // biome-ignore lint/suspicious/noConfusingVoidType: a handler that fails no event simply returns.
  handle(events: readonly CloudEvent[]): Promise<HandlerFailures | undefined | void>;
}
