import type { Tx } from '../../db/store.js';
import { type Causation, traceAttributes } from '../../lib/causation.js';
import { type Clock, iso } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import type { CloudEvent } from './cloudevent.js';
import type { HeldTask, OutboxJob } from './outbox.js';
import type { EventRegistry } from './registry.js';
import { DEFAULT_MAX_ATTEMPTS } from './retry.js';
import { insertNewTasks, insertTask, type TaskRow } from './store.js';

export interface EventInput {
  /** Full type, e.g. `svc.user.created`. */
  type: string;
  /** Stable per area, e.g. `/api/v1/user` (documented in docs/events.md). */
  source: string;
  /** Id of the resource the event is about. */
  subject: string;
  data: Record<string, unknown>;
  /** What caused it (the request's principal.causation): its depth and causing run, as extensions. */
  causation?: Causation;
}

export interface EventPublisher {
  /**
   * Writes the event's outbox task inside `tx` and wakes the worker once `tx` commits. Taking a Tx
   * (not a connection) is the rule of the transactional outbox: the event exists iff the change does.
   */
  publish(tx: Tx, input: EventInput): Promise<CloudEvent>;
  /**
   * Writes events made outside svc (POST /event) as they are, through the same outbox; answers the
   * ids written (an id that has a task already is not written again).
   */
  enqueue(tx: Tx, events: readonly CloudEvent<unknown>[]): Promise<Set<string>>;
}

/** Adds to an event's data what its area wants every consumer to see; idempotent. */
export type EventEnricher = <T>(type: string, data: T) => T;

export const LOCAL_HANDLERS_TARGET = 'local-handlers';

/**
 * The outbox task of an event, handed to every local handler: due now, or, when `held`, already
 * claimed by this process's drain (IN_PROGRESS, its first attempt counted, as a claim counts it).
 */
function taskRow(event: CloudEvent<unknown>, now: string, held: HeldTask | null): TaskRow {
  return {
    id: newId(),
    event_id: event.id,
    event_type: event.type,
    cloudevent: JSON.stringify(event),
    target: LOCAL_HANDLERS_TARGET,
    status: held ? 'IN_PROGRESS' : 'PENDING',
    error: null,
    attempts: held ? 1 : 0,
    interruptions: 0,
    max_attempts: DEFAULT_MAX_ATTEMPTS,
    next_attempt_at: now,
    locked_until: held?.locked_until ?? null,
    locked_by: held?.locked_by ?? null,
    done_at: null,
    created_at: now,
    updated_at: now,
  };
}

/** This process's outbox drain, when tasks can be written already claimed by it (outbox.ts). */
export type LocalDrain = Pick<OutboxJob, 'claim' | 'started'>;

export function createEventPublisher(deps: {
  clock: Clock;
  /** Called after commit: wakes the drain here and, on PostgreSQL, in every worker process. */
  wake: () => void;
  /**
   * When given, every event is checked against it before it is written (docs/events.md "Publishing (for areas)"): an
   * unregistered type is `EVENT.UNKNOWN_TYPE`, a wrong source, subject or data `EVENT.INVALID`, and the
   * area's transaction rolls back. On outside production, so no area ships garbage events.
   */
  registry?: EventRegistry;
  /** What areas add to their events' data before anyone sees it (the submissions' scoring index). */
  enrich?: EventEnricher;
  /**
   * The drain of this process: its tasks are written already claimed by it and handed over after
   * commit, with no claim statement and no wake of other processes (docs/events.md).
   */
  drain?: LocalDrain;
}): EventPublisher {
  return {
    async publish(tx, given) {
      // Enriched before the check: the data written (and checked) is what subscribers receive.
      const data = deps.enrich ? deps.enrich(given.type, given.data) : given.data;
      const input = data === given.data ? given : { ...given, data };
      deps.registry?.check(input);
      const now = iso(deps.clock.now());
      const event: CloudEvent = {
        specversion: '1.0',
        id: newId(),
        source: input.source,
        type: input.type,
        subject: input.subject,
        time: now,
        datacontenttype: 'application/json',
        data: input.data,
      };
      if (input.causation && input.causation.depth > 0) {
        event.svcdepth = input.causation.depth;
        if (input.causation.id) event.causationid = input.causation.id;
      }
      if (input.causation?.trace) Object.assign(event, traceAttributes(input.causation.trace));
      const held = deps.drain?.claim() ?? null;
      const row = taskRow(event, now, held);
      await insertTask(tx.db, row);
      tx.afterCommit(held ? () => deps.drain!.started([row]) : deps.wake);
      return event;
    },

    async enqueue(tx, events) {
      const now = iso(deps.clock.now());
      const held = deps.drain?.claim() ?? null;
      const rows = events.map((e) => taskRow(e, now, held));
      const written = await insertNewTasks(tx.db, rows);
      if (written.size === 0) return written;
      if (held) {
        const mine = rows.filter((r) => written.has(r.event_id));
        tx.afterCommit(() => deps.drain!.started(mine));
      } else tx.afterCommit(deps.wake);
      return written;
    },
  };
}
