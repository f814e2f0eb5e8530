/** Schedules and the fire times they fired (migration 0014_schedules). */
export interface ScheduleTable {
  id: string;
  name: string;
  description: string | null;
  /** 5 fields (minute first) or 6 (seconds first), croner syntax. */
  cron: string;
  /** IANA time zone the cron expression is read in. */
  timezone: string;
  event_type: string;
  /** The event's data (JSON text of an object). */
  data: string;
  enabled: number;
  /** After downtime: none, last or all (bounded) of the fire times missed. */
  catch_up: 'none' | 'last' | 'all';
  /** The next fire time (ISO); null while disabled. */
  next_fire_at: string | null;
  last_fired_at: string | null;
  /** Why the last fire published nothing (its data broke the type's schema, the type is gone). */
  last_error: string | null;
  created_at: string;
  updated_at: string;
  updated_by: string | null;
  deleted_at: string | null;
}

/** One fire of a schedule: its primary key (schedule, fire time) makes it happen once. */
export interface ScheduleFireTable {
  schedule_id: string;
  fire_time: string;
  /** The event published; null when the fire failed (error says why). */
  event_id: string | null;
  error: string | null;
  /** The worker that fired it (host/pid/instance, as locked_by elsewhere). */
  fired_by: string;
  created_at: string;
}

export interface ScheduleTables {
  schedule: ScheduleTable;
  schedule_fire: ScheduleFireTable;
}
