import { auditInsert, auditUpdate } from '../../db/audit.js';
import type { Store } from '../../db/store.js';
import type { Collection } from '../../http/collection.js';
import { AppError } from '../../http/errors.js';
import { type Clock, iso } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import type { EventTypeService } from '../events/event-types.js';
import { cronOf, nextFireTimes } from './cron.js';
import type { CreateSchedule, Schedule, UpdateSchedule } from './schemas.js';
import * as st from './store.js';
import type { ScheduleTable } from './tables.js';

export interface ScheduleService
  extends Collection<Schedule, CreateSchedule, UpdateSchedule, st.ScheduleFilters> {}

export interface ScheduleDeps {
  store: Store;
  clock: Clock;
  /** The event type registry: a schedule's type must be a custom type and its data must match it. */
  eventTypes: Pick<EventTypeService, 'checkPublished'>;
  /** Wakes the schedules job (a new or changed schedule may fire sooner than it planned). */
  wake(): void;
}

/** How many coming fire times every answer shows. */
const SHOWN_FIRE_TIMES = 5;

/** The API's schedule: the stored row plus its next fire times, read in its time zone. */
export function toSchedule(row: ScheduleTable, now: Date): Schedule {
  const upcoming =
    row.enabled === 1 && row.next_fire_at !== null
      ? [
          row.next_fire_at,
          ...nextFireTimes(
            cronOf(row.cron, row.timezone),
            new Date(row.next_fire_at),
            SHOWN_FIRE_TIMES - 1,
          ).map(iso),
        ]
      : [];
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    cron: row.cron,
    timezone: row.timezone,
    event_type: row.event_type,
    data: JSON.parse(row.data) as Record<string, unknown>,
    enabled: row.enabled === 1,
    catch_up: row.catch_up,
    // A due fire not taken yet shows as what it is: the first fire time, even if slightly past.
    next_fire_times: upcoming.filter((t, i) => i === 0 || t > iso(now)),
    last_fired_at: row.last_fired_at,
    last_error: row.last_error,
    created_at: row.created_at,
    updated_at: row.updated_at,
    updated_by: row.updated_by,
    deleted_at: row.deleted_at,
  };
}

/**
 * Schedules (docs/schedules.md): cron expressions that publish an event of a custom type at each fire
 * time. This is their CRUD; the `schedules` job (job.ts) fires them.
 */
export function createScheduleService(deps: ScheduleDeps): ScheduleService {
  const { store, clock } = deps;
  const notFound = () => new AppError('SCHEDULE.NOT_FOUND', 'Schedule not found');

  /** The first fire time after now, or 400 when the expression never fires. */
  function firstFire(cron: string, timezone: string): string {
    const [next] = nextFireTimes(cronOf(cron, timezone), clock.now(), 1);
    if (!next) throw new AppError('VALIDATION_ERROR', `cron "${cron}" never fires`, { field: 'cron' });
    return iso(next);
  }

  /** The type must be one users publish, and the data must match its schema (as at every fire). */
  async function checkEvent(eventType: string, data: Record<string, unknown>): Promise<void> {
    try {
      await deps.eventTypes.checkPublished({ type: eventType, data });
    } catch (err) {
      if (err instanceof AppError) {
        const field = err.code === 'EVENT.INVALID' ? 'data' : 'event_type';
        throw new AppError(err.code, `${field}: ${err.message}`, { ...err.details, field });
      }
      throw err;
    }
  }

  async function active(id: string): Promise<ScheduleTable> {
    const row = await st.findSchedule(store.db, id);
    if (!row) throw notFound();
    return row;
  }

  return {
    async create(userId, body) {
      const timezone = body.timezone ?? 'UTC';
      const data = body.data ?? {};
      const enabled = body.enabled !== false;
      const next = firstFire(body.cron, timezone);
      await checkEvent(body.event_type, data);
      const row: ScheduleTable = {
        id: newId(),
        name: body.name,
        description: body.description ?? null,
        cron: body.cron,
        timezone,
        event_type: body.event_type,
        data: JSON.stringify(data),
        enabled: enabled ? 1 : 0,
        catch_up: body.catch_up ?? 'last',
        next_fire_at: enabled ? next : null,
        last_fired_at: null,
        last_error: null,
        ...auditInsert(iso(clock.now()), userId),
      };
      await store.transaction((tx) => st.insertSchedule(tx.db, row));
      deps.wake();
      return toSchedule(row, clock.now());
    },

    async list(page, filters) {
      const result = await st.listSchedules(store.db, page, filters);
      const now = clock.now();
      return { items: result.items.map((r) => toSchedule(r, now)), total: result.total };
    },

    async get(id) {
      return toSchedule(await active(id), clock.now());
    },

    async update(userId, id, body) {
      const current = await active(id);
      const cron = body.cron ?? current.cron;
      const timezone = body.timezone ?? current.timezone;
      const enabled = body.enabled ?? current.enabled === 1;
      const eventType = body.event_type ?? current.event_type;
      const data = body.data ?? (JSON.parse(current.data) as Record<string, unknown>);
      const timing = body.cron !== undefined || body.timezone !== undefined || body.enabled !== undefined;
      // A new expression or zone, or enabling again, plans from now: a disabled spell is no downtime.
      const next = timing ? (enabled ? firstFire(cron, timezone) : null) : current.next_fire_at;
      if (body.event_type !== undefined || body.data !== undefined) await checkEvent(eventType, data);
      const patch: st.SchedulePatch = {
        ...auditUpdate(iso(clock.now()), userId),
        next_fire_at: next,
      };
      if (body.name !== undefined) patch.name = body.name;
      if (body.description !== undefined) patch.description = body.description;
      if (body.cron !== undefined) patch.cron = body.cron;
      if (body.timezone !== undefined) patch.timezone = body.timezone;
      if (body.event_type !== undefined) patch.event_type = body.event_type;
      if (body.data !== undefined) patch.data = JSON.stringify(body.data);
      if (body.enabled !== undefined) patch.enabled = body.enabled ? 1 : 0;
      if (body.catch_up !== undefined) patch.catch_up = body.catch_up;
      const updated = await store.transaction((tx) => st.updateSchedule(tx.db, id, patch));
      if (!updated) throw notFound();
      deps.wake();
      return toSchedule(await active(id), clock.now());
    },

    async remove(userId, id) {
      await active(id);
      const removed = await store.transaction((tx) =>
        st.softDeleteSchedule(tx.db, id, iso(clock.now()), userId),
      );
      if (!removed) throw notFound();
      return { status: 'deleted' };
    },
  };
}
