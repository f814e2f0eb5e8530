import type { Store } from '../../db/store.js';
import {
  cutoffOf,
  groupsBySeconds,
  nothingRemoved,
  type PruneStep,
  type Removed,
  stepsThrough,
} from '../retention/rules.js';

/**
 * The deliveries retention removes (docs/reliability.md "Retention"): SUCCESS and FAILED ones whose
 * last change is older than their webhook's rule, with their attempts and, once an event has no
 * delivery left, its stored body. A PENDING delivery is never removed.
 */

/** A webhook's retention of finished deliveries in seconds (its own, else the server's); 0: for ever. */
export interface DeliveryRetentionOf {
  webhookId: string;
  seconds: number;
}

const FINISHED = ['SUCCESS', 'FAILED'] as const;

/** A pass removing the finished deliveries retention no longer keeps at `now`, a step at a time. */
export function deliveryPass(store: Store, rules: DeliveryRetentionOf[], now: Date): PruneStep {
  const statements: Array<{ ids: string[]; status: (typeof FINISHED)[number]; cutoff: string }> = [];
  for (const [seconds, ids] of groupsBySeconds(rules.map((r) => [r.webhookId, r.seconds] as const)))
    for (const status of FINISHED) statements.push({ ids, status, cutoff: cutoffOf(now, seconds) });
  return stepsThrough(statements, (s, limit) => pruneBatch(store, s.ids, s.status, s.cutoff, limit));
}

async function pruneBatch(
  store: Store,
  webhookIds: string[],
  status: (typeof FINISHED)[number],
  cutoff: string,
  limit: number,
): Promise<Removed> {
  return store.transaction<Removed>(async (tx) => {
    let q = tx.db
      .selectFrom('webhook_delivery')
      .select(['id', 'event_id'])
      .where('webhook_id', 'in', webhookIds)
      .where('status', '=', status)
      .where('updated_at', '<', cutoff)
      .limit(limit);
    // Locked rows (a manual retry in flight) are skipped, and two workers never take the same rows.
    if (tx.dialect === 'postgres') q = q.forUpdate().skipLocked();
    const rows = await q.execute();
    if (rows.length === 0) return nothingRemoved();
    const ids = rows.map((r) => r.id);
    const attempts = await tx.db
      .deleteFrom('webhook_delivery_attempt')
      .where('delivery_id', 'in', ids)
      .executeTakeFirst();
    const deliveries = await tx.db.deleteFrom('webhook_delivery').where('id', 'in', ids).executeTakeFirst();
    const eventIds = [...new Set(rows.map((r) => r.event_id))];
    const bodies = await tx.db
      .deleteFrom('webhook_event')
      .where('event_id', 'in', eventIds)
      .where((eb) =>
        eb.not(
          eb.exists(
            eb
              .selectFrom('webhook_delivery as d')
              .select('d.id')
              .whereRef('d.event_id', '=', 'webhook_event.event_id'),
          ),
        ),
      )
      .executeTakeFirst();
    const removed = Number(deliveries.numDeletedRows);
    return {
      records: removed,
      rows: {
        webhook_delivery: removed,
        webhook_delivery_attempt: Number(attempts.numDeletedRows),
        webhook_event: Number(bodies.numDeletedRows),
      },
    };
  });
}

/** When the oldest finished delivery kept was created (null: none), for /metrics. */
export async function oldestFinishedDelivery(store: Store): Promise<string | null> {
  const row = await store.db
    .selectFrom('webhook_delivery')
    .select((eb) => eb.fn.min('created_at').as('oldest'))
    .where('status', 'in', [...FINISHED])
    .executeTakeFirst();
  return (row?.oldest as string | null | undefined) ?? null;
}
