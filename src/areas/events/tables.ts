export interface EventDeliveryTaskTable {
  id: string;
  event_id: string;
  event_type: string;
  /** The full CloudEvent as JSON text. */
  cloudevent: string;
  target: string;
  status: 'PENDING' | 'IN_PROGRESS' | 'DONE' | 'FAILED';
  error: string | null;
  /** Attempts that failed (a handler failed, or a crash interrupted it MAX_INTERRUPTIONS times). */
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

export interface EventTables {
  event_delivery_task: EventDeliveryTaskTable;
}
