export interface EventDeliveryTaskTable {
  id: string;
  event_id: string;
  event_type: string;
  /** The full CloudEvent as JSON text. */
  cloudevent: string;
  target: string;
  status: 'PENDING' | 'IN_PROGRESS' | 'DONE' | 'FAILED';
  error: string | null;
  /** Attempts that failed (a handler failed, or a crash interrupted it more often than OUTBOX_RETRY allows). */
  attempts: number;
  max_attempts: number;
  /** Attempts a crash interrupted (the lease ran out): retried at once, not counted in `attempts`. */
  interruptions: number;
  next_attempt_at: string;
  /** Lease: while in the future, the task belongs to the worker that claimed it. */
  locked_until: string | null;
  locked_by: string | null;
  done_at: string | null;
  created_at: string;
  updated_at: string;
}

/** A custom event type a user registered (docs/events.md "Custom event types"). */
export interface EventTypeDefinitionTable {
  id: string;
  event_type: string;
  description: string;
  /** JSON Schema of the events' data (JSON text); null: any data. */
  data_schema: string | null;
  /** Example CloudEvents (JSON text of an array). */
  examples: string;
  /** "1.0", then "2.0", "3.0", ... each time data_schema changes. */
  schema_version: string;
  deprecated: number;
  created_at: string;
  updated_at: string;
  updated_by: string | null;
  deleted_at: string | null;
}

export interface EventTables {
  event_delivery_task: EventDeliveryTaskTable;
  event_type_definition: EventTypeDefinitionTable;
}
