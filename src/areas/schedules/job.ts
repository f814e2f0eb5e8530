import type { Cron } from 'croner';
import type { Logger } from 'pino';
import type { Store } from '../../db/store.js';
import { type Clock, iso } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import { NO_TRACING, type Tracer } from '../../lib/tracing.js';
import { DueTimer } from '../../worker/due-timer.js';
import type { Job } from '../../worker/worker.js';
import { newWorkerId } from '../../worker/worker-id.js';
import type { CloudEvent } from '../events/cloudevent.js';
import type { EventTypeService } from '../events/event-types.js';
import type { EventPublisher } from '../events/publish.js';
import { cronOf, fireTimesBetween, nextFireTimes } from './cron.js';
import type { ScheduleMetrics } from './metrics.js';
import * as st from './store.js';
import type { ScheduleTable } from './tables.js';

export const SCHEDULES_JOB = 'schedules';
/** A fire time less than this late is on time; older ones were missed (catch_up decides). */
export const ON_TIME_MS = 60_000;
/** At most this many missed fire times are fired by catch_up "all" (the latest ones). */
export const MAX_CATCH_UP = 100;
/** The source of every event a schedule publishes (the subject is the schedule's id). */
export const SCHEDULE_SOURCE = '/api/v1/schedule';
const BATCH = 50;

export interface ScheduleJobDeps {
  store: Store;
  clock: Clock;
  log: Logger;
  publisher: Pick<EventPublisher, 'enqueue'>;
  eventTypes: Pick<EventTypeService, 'checkPublished'>;
  metrics: ScheduleMetrics;
  /** How often the job looks for schedules another process created or changed. */
  pollIntervalMs: number;
  /** Wakes this job (its timer). */
  wake(): void;
  /** Each fire starts a trace of its own (docs/observability.md "Spans"). */
  tracer?: Tracer;
}

/**
 * The `schedules` job: fires every due schedule. A fire is one transaction: the (schedule, fire
 * time) row, whose primary key lets exactly one worker fire it, the event through the outbox, and the
 * schedule's next fire time. The job sleeps until the earliest next fire time (a timer), or at most
 * the poll interval.
 */
export function createScheduleJob(deps: ScheduleJobDeps): Job {
  const { store, clock, log } = deps;
  const timer = new DueTimer(clock, deps.wake);
  const workerId = newWorkerId();
  const tracer = deps.tracer ?? NO_TRACING;

  /**
   * The fire times of `row` to fire now, oldest first: those in [next_fire_at, now] less than
   * ON_TIME_MS late, and of the older (missed) ones what its catch_up says: none, the latest one
   * (only when no fire is on time), or all of them (the latest MAX_CATCH_UP).
   */
  function fireTimes(row: ScheduleTable, cron: Cron, now: Date): Date[] {
    const fromDue = new Date(Date.parse(row.next_fire_at as string) - 1);
    const cutoff = new Date(now.getTime() - ON_TIME_MS);
    const onTime = fireTimesBetween(cron, fromDue > cutoff ? fromDue : cutoff, now, 1000);
    if (row.catch_up === 'none' || (row.catch_up === 'last' && onTime.length > 0)) return onTime;
    const missed = fireTimesBetween(cron, fromDue, cutoff, row.catch_up === 'all' ? MAX_CATCH_UP : 1);
    return [...missed, ...onTime];
  }

  async function fire(row: ScheduleTable, now: Date): Promise<number> {
    const cron = cronOf(row.cron, row.timezone);
    const times = fireTimes(row, cron, now);
    const data = JSON.parse(row.data) as Record<string, unknown>;
    // Checked before the transaction (the registry reads the store): the type may have been
    // deleted or its schema changed since the schedule was saved.
    let error: string | null = null;
    try {
      await deps.eventTypes.checkPublished({ type: row.event_type, data });
    } catch (err) {
      error = (err as Error).message;
    }
    const next = nextFireTimes(cron, now, 1)[0];
    const fired = await store.transaction(async (tx) => {
      const held = await st.lockDue(tx, row.id, iso(now));
      if (!held) return [];
      const fired: Date[] = [];
      let last: string | null = null;
      for (const time of times) {
        const fireTime = iso(time);
        const event: CloudEvent<unknown> = {
          specversion: '1.0',
          id: newId(),
          source: SCHEDULE_SOURCE,
          type: row.event_type,
          subject: row.id,
          time: fireTime,
          datacontenttype: 'application/json',
          data,
        };
        const mine = await st.insertFire(tx.db, {
          schedule_id: row.id,
          fire_time: fireTime,
          event_id: error ? null : event.id,
          error,
          fired_by: workerId,
          created_at: iso(now),
        });
        if (!mine) continue;
        // The fire is the root of its event's trace: the runs it starts join it.
        const span = tracer.enabled
          ? tracer.start('schedule.fire', {
              kind: 'producer',
              attributes: {
                'svc.schedule.id': row.id,
                'svc.schedule.fire_time': fireTime,
                'svc.event.id': event.id,
                'svc.event.type': row.event_type,
              },
            })
          : undefined;
        if (span) {
          event.traceparent = span.context.traceparent;
          if (error) span.fail(error);
          span.end();
        }
        if (!error) await deps.publisher.enqueue(tx, [event]);
        fired.push(time);
        last = fireTime;
      }
      await st.updateSchedule(tx.db, row.id, {
        next_fire_at: next ? iso(next) : null,
        ...(last ? { last_fired_at: last, last_error: error } : {}),
      });
      if (error && fired.length > 0)
        log.warn(
          { schedule_id: row.id, fires: fired.length, error },
          'schedule fired no event: its event is refused',
        );
      return fired;
    });
    // Counted once committed: a rolled-back fire is fired again by the next step.
    const committedAt = clock.now().getTime();
    for (const time of fired)
      deps.metrics.fired(error ? 'refused' : 'published', (committedAt - time.getTime()) / 1000);
    return fired.length;
  }

  return {
    name: SCHEDULES_JOB,
    intervalMs: deps.pollIntervalMs,
    async run() {
      const now = clock.now();
      const due = await st.dueSchedules(store.db, iso(now), BATCH);
      for (const row of due) {
        try {
          await fire(row, now);
        } catch (err) {
          // A store failure: the schedule stays due and the next step tries again.
          log.error({ schedule_id: row.id, err }, 'schedule fire failed; retried at the next step');
        }
      }
      const earliest = await st.earliestFire(store.db);
      if (earliest) timer.arm(Date.parse(earliest));
      return due.length === BATCH;
    },
    async stop() {
      timer.clear();
    },
  };
}
