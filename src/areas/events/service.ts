import type { Store } from '../../db/store.js';
import type { Acting } from '../../http/access.js';
import { AppError } from '../../http/errors.js';
import type { ListResult, Page } from '../../http/list.js';
import { traceAttributes } from '../../lib/causation.js';
import { type Clock, iso } from '../../lib/clock.js';
import type { Pruner } from '../retention/job.js';
import { type CloudEvent, validateCloudEvent } from './cloudevent.js';
import type { EventTypeService } from './event-types.js';
import { oldestFinishedTask, taskPass } from './prune.js';
import type { EventPublisher } from './publish.js';
import type { EventDeliveryTask, EventDeliveryTaskQuery } from './schemas.js';
import { eventsBetween, findTask, listTasks, retryFailed, sourcesOf, toTask } from './store.js';

type TaskFilters = Omit<EventDeliveryTaskQuery, keyof Page>;

/** What POST /event answers per event: its id, and whether it was seen before (a producer retrying). */
export interface Accepted {
  id: string;
  duplicate: boolean;
}

/**
 * The events area as other areas and the routes see it: publishing (svc's own events, and users'
 * through `ingest`), the type registry, the outbox tasks.
 */
export interface EventsService extends EventPublisher {
  readonly types: EventTypeService;
  /**
   * POST /event: checks each event (CloudEvents 1.0, a registered custom type, data matching its
   * data_schema) and writes them through the outbox in one transaction, all or none. An id already
   * published from the same source is accepted again as a duplicate; from another source it is 409.
   */
  ingest(acting: Acting, events: readonly unknown[]): Promise<Accepted[]>;
  listTasks(page: Page, filters: TaskFilters): Promise<ListResult<EventDeliveryTask>>;
  /** Events of a type published in [from, to], oldest first, at most `limit`, each with when it was written. */
  eventsBetween(
    eventType: string,
    from: string,
    to: string,
    limit: number,
  ): Promise<Array<{ event: CloudEvent; at: string }>>;
  /** A FAILED task back to PENDING, due now, its counts reset; the drain is woken. */
  retryTask(id: string): Promise<EventDeliveryTask>;
  /** Finished outbox tasks, kept `seconds` after they finish (0: for ever), for the prune job. */
  pruner(seconds: number): Pruner;
}

export function createEventsService(deps: {
  store: Store;
  clock: Clock;
  types: EventTypeService;
  publisher: EventPublisher;
  /** Wakes the outbox drain (here and, on PostgreSQL, in every process). */
  wake: () => void;
}): EventsService {
  return {
    publish: deps.publisher.publish,
    enqueue: deps.publisher.enqueue,
    types: deps.types,

    pruner: (seconds) => ({
      kind: 'outbox_tasks',
      pass: async (now) => taskPass(deps.store, seconds, now),
      oldest: () => oldestFinishedTask(deps.store),
    }),

    async ingest(acting, given) {
      const batch = given.length > 1;
      const at = (i: number, attribute: string) => (batch ? `events.${i}.${attribute}` : attribute);
      const now = iso(deps.clock.now());
      const events: CloudEvent<unknown>[] = [];
      for (const [i, raw] of given.entries()) {
        const check = validateCloudEvent(raw);
        if (!check.valid) {
          const first = check.errors[0];
          throw new AppError(
            'EVENT.INVALID',
            `Invalid CloudEvent: ${at(i, first.attribute)} ${first.message}`,
            {
              ...(batch ? { index: i } : {}),
              errors: check.errors,
            },
          );
        }
        const event = received(check.event, acting, now);
        try {
          await deps.types.checkPublished(event as { type: string; data?: unknown; data_base64?: unknown });
        } catch (err) {
          if (batch && err instanceof AppError) {
            throw new AppError(err.code, `events.${i}: ${err.message}`, { ...err.details, index: i });
          }
          throw err;
        }
        events.push(event);
      }
      // The same id twice in one batch: one event (or a conflict when the sources differ).
      const firstOf = new Map<string, CloudEvent<unknown>>();
      for (const e of events) {
        const seen = firstOf.get(e.id);
        if (seen && seen.source !== e.source) throw idConflict(e, seen.source);
        if (!seen) firstOf.set(e.id, e);
      }
      const written = await deps.store.transaction(async (tx) => {
        const fresh = await deps.publisher.enqueue(tx, [...firstOf.values()]);
        const repeated = [...firstOf.keys()].filter((id) => !fresh.has(id));
        const sources = await sourcesOf(tx.db, repeated);
        for (const id of repeated) {
          const e = firstOf.get(id)!;
          if (sources.get(id) !== e.source) throw idConflict(e, sources.get(id) ?? '(svc)');
        }
        return fresh;
      });
      const counted = new Set<string>();
      return events.map((e) => {
        const duplicate = !written.has(e.id) || counted.has(e.id);
        counted.add(e.id);
        return { id: e.id, duplicate };
      });
    },

    listTasks: (page, filters) => listTasks(deps.store.db, { ...page, ...filters }),
    async eventsBetween(eventType, from, to, limit) {
      const rows = await eventsBetween(deps.store.db, eventType, from, to, limit);
      return rows.map((r) => ({ event: JSON.parse(r.cloudevent) as CloudEvent, at: r.created_at }));
    },
    async retryTask(id) {
      const task = await deps.store.transaction(async (tx) => {
        const current = await findTask(tx.db, id);
        if (!current) throw new AppError('EVENT.TASK_NOT_FOUND', 'Outbox task not found', { task_id: id });
        if (!(await retryFailed(tx.db, id, iso(deps.clock.now())))) {
          throw new AppError(
            'EVENT.TASK_NOT_FAILED',
            `Only FAILED tasks can be retried; this one is ${current.status}`,
            {
              task_id: id,
              status: current.status,
            },
          );
        }
        tx.afterCommit(deps.wake);
        return (await findTask(tx.db, id))!;
      });
      return toTask(task);
    },
  };
}

const idConflict = (e: CloudEvent<unknown>, source: string) =>
  new AppError(
    'EVENT.ID_CONFLICT',
    `Event id "${e.id}" was already used by source "${source}"; ids must be unique across sources (use UUIDs)`,
    { event_id: e.id, source: e.source },
  );

/**
 * An event as svc keeps it: the producer's attributes unchanged, `time` filled with the receipt time
 * when absent, `datacontenttype` application/json for JSON data without one. Causation comes from
 * the request (a workflow's call), never from the producer's own svcdepth/causationid; the
 * producer's `traceparent` is kept, and an event without one gets the request's (tracing on).
 */
function received(event: Record<string, unknown>, acting: Acting, now: string): CloudEvent<unknown> {
  const { svcdepth: _d, causationid: _c, ...rest } = event;
  const out: Record<string, unknown> = { ...rest };
  for (const [k, v] of Object.entries(out)) if (v === null) delete out[k];
  out.time ??= now;
  if (out.data !== undefined) out.datacontenttype ??= 'application/json';
  const causation = acting.causation;
  if (causation && causation.depth > 0) {
    out.svcdepth = causation.depth;
    if (causation.id) out.causationid = causation.id;
  }
  // An event that carries a trace of its own stays in it; any other joins the request's.
  if (out.traceparent === undefined) Object.assign(out, traceAttributes(causation?.trace));
  return out as unknown as CloudEvent<unknown>;
}
