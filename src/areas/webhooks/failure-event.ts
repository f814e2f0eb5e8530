import type { EventInput } from '../events/publish.js';
import type { DeliveryRow } from './delivery-store.js';

export const DELIVERY_FAILED = 'svc.webhook.delivery_failed';

/**
 * The event a delivery that used up its attempts publishes (docs/webhooks.md "Failure events"), so
 * a user can alert on it with a subscription or another webhook. A failed delivery of this event
 * itself publishes none: an endpoint that is down would otherwise report its own reports for ever.
 */
export function deliveryFailedEvent(
  row: Pick<DeliveryRow, 'id' | 'webhook_id' | 'event_id' | 'event_type' | 'attempts'>,
  error: string | null,
  responseStatus: number | null,
): EventInput | undefined {
  if (row.event_type === DELIVERY_FAILED) return undefined;
  return {
    type: DELIVERY_FAILED,
    source: '/api/v1/webhook',
    subject: row.id,
    data: {
      delivery_id: row.id,
      webhook_id: row.webhook_id,
      event_id: row.event_id,
      event_type: row.event_type,
      attempts: row.attempts,
      error,
      response_status: responseStatus,
    },
  };
}
