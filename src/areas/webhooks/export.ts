import { createdAfter, pagesByCreation } from '../../db/keyset.js';
import type { Db } from '../../db/store.js';
import { payloadsOf, toAttempt, toDelivery } from './delivery-store.js';
import type { DeliveryDetail } from './schemas.js';

/** Which deliveries `svc export deliveries` writes: created in [since, until), of one webhook if given. */
export interface DeliveryExportFilter {
  since: string;
  until: string;
  webhookId?: string;
}

const PAGE = 100;

/**
 * Deliveries as `GET /webhook/{id}/delivery/{delivery_id}` answers them (the body sent and the
 * attempt log), oldest first, a page at a time by (created_at, id): memory stays level however many
 * match (docs/reliability.md "Export").
 */
export async function* exportDeliveries(
  db: Db,
  filter: DeliveryExportFilter,
): AsyncGenerator<DeliveryDetail> {
  const pages = pagesByCreation((after, size) => {
    let q = db
      .selectFrom('webhook_delivery')
      .selectAll()
      .where('created_at', '>=', filter.since)
      .where('created_at', '<', filter.until);
    if (filter.webhookId) q = q.where('webhook_id', '=', filter.webhookId);
    if (after) q = q.where(createdAfter(after));
    return q.orderBy('created_at').orderBy('id').limit(size).execute();
  }, PAGE);
  for await (const rows of pages) {
    const ids = rows.map((r) => r.id);
    const payloads = await payloadsOf(
      db,
      rows.map((r) => r.event_id),
    );
    const attempts = await db
      .selectFrom('webhook_delivery_attempt')
      .selectAll()
      .where('delivery_id', 'in', ids)
      .orderBy('sequence')
      .execute();
    const byDelivery = new Map<string, ReturnType<typeof toAttempt>[]>();
    for (const a of attempts)
      byDelivery.set(a.delivery_id, [...(byDelivery.get(a.delivery_id) ?? []), toAttempt(a)]);
    for (const r of rows)
      yield {
        ...toDelivery({ ...r, payload: payloads.get(r.event_id) ?? '{}' }),
        attempts_log: byDelivery.get(r.id) ?? [],
      };
  }
}
