export type DeliveryStatus = 'PENDING' | 'SUCCESS' | 'FAILED';

export interface WebhookTable {
  id: string;
  name: string;
  url: string;
  /** JSON text: string[]; `["*"]` subscribes to every type. */
  event_types: string;
  description: string | null;
  /** 0/1 */
  enabled: number;
  /** The 64-hex signing key. Selected only by the sender and by create/rotate (never by lists). */
  secret: string;
  secret_hint: string;
  /** Seconds its finished deliveries are kept; null: SVC_RETENTION_DELIVERIES_SECONDS. */
  retention_deliveries_seconds: number | null;
  /** JSON text `{limit, period_ms}` or null (docs/webhooks.md "Rate limit"). */
  rate_limit: string | null;
  created_at: string;
  updated_at: string;
  updated_by: string | null;
  deleted_at: string | null;
}

export interface WebhookDeliveryTable {
  id: string;
  webhook_id: string;
  event_id: string;
  event_type: string;
  status: DeliveryStatus;
  http_status: number | null;
  response_body: string | null;
  error: string | null;
  attempts: number;
  max_attempts: number;
  next_attempt_at: string | null;
  delivered_at: string | null;
  created_at: string;
  updated_at: string;
  /** Lease of the worker sending it now: while in the future, nobody else may claim the row. */
  locked_until: string | null;
  /** Token of the lease holder; null when no attempt is in flight (or it finished). */
  locked_by: string | null;
  /** When the current lease was taken (start of the attempt in flight). */
  locked_at: string | null;
  /** Bumped by every manual retry, so an attempt in flight across a retry knows it was superseded. */
  generation: number;
  /** Every attempt ever made (never reset by a manual retry): orders the attempt log. */
  total_attempts: number;
}

export interface WebhookDeliveryAttemptTable {
  id: string;
  delivery_id: string;
  webhook_id: string;
  /** The delivery's attempt number for this try (1..max_attempts; restarts after a manual retry). */
  attempt: number;
  /** 1, 2, 3, ... over the delivery's whole life (a manual retry does not restart it). */
  sequence: number;
  /** INTERRUPTED: the worker holding the lease died mid-attempt (recorded when the lease is taken over). */
  outcome: 'SUCCESS' | 'FAILED' | 'INTERRUPTED';
  started_at: string;
  finished_at: string;
  duration_ms: number | null;
  /** The url the attempt went to (the webhook's url can change between attempts). */
  url: string;
  http_status: number | null;
  response_body: string | null;
  error: string | null;
  /** The signature timestamp (Unix seconds) sent with this attempt; each attempt is signed afresh. */
  signed_at: number | null;
}

/** One row per event that has deliveries: the body all of them send. */
export interface WebhookEventTable {
  event_id: string;
  /** The full CloudEvent as JSON text: sent byte for byte as the request body. */
  payload: string;
}

export interface WebhookTables {
  webhook: WebhookTable;
  webhook_event: WebhookEventTable;
  webhook_delivery: WebhookDeliveryTable;
  webhook_delivery_attempt: WebhookDeliveryAttemptTable;
}
