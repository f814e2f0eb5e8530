export interface EventDeliveryTaskTable {
  id: string;
  event_id: string;
  event_type: string;
  /** The full CloudEvent as JSON text. */
  cloudevent: string;
  target: string;
  status: 'PENDING' | 'IN_PROGRESS' | 'DONE' | 'FAILED';
  error: string | null;
  attempts: number;
  max_attempts: number;
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
