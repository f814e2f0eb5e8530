import type { ExpressionBuilder, Selectable } from 'kysely';
import { findWhere } from '../../db/audit.js';
import { batches } from '../../db/prepared.js';
import type { Database } from '../../db/schema.js';
import type { Db } from '../../db/store.js';
import { type ListResult, type Page, paginate, whereEquals, whereTimeRanges } from '../../http/list.js';
import type { TimeRangeFilters } from '../../http/list-schemas.js';
import { newId } from '../../lib/ids.js';
import type { CloudEvent } from '../events/cloudevent.js';
import { MAX_ATTEMPTS } from './backoff.js';
import type { Delivery, DeliveryAttempt } from './schemas.js';
import type { WebhookDeliveryAttemptTable, WebhookDeliveryTable } from './tables.js';

/**
 * Deliveries as the dispatcher creates them and the API reads and retries them, with the event
 * bodies they send (`webhook_event`) and their attempt log. The sender's claims and results are in
 * sending-store.ts.
 */
export type DeliveryRow = Selectable<WebhookDeliveryTable>;
/** A delivery with the body it sends (stored once per event in webhook_event). */
export type DeliveryWithPayload = DeliveryRow & { payload: string };
export type AttemptRow = Selectable<WebhookDeliveryAttemptTable>;

/** Stores events' bodies once each (an event handed over again changes nothing). */
export async function insertEvents(
  db: Db,
  events: readonly { eventId: string; payload: string }[],
): Promise<void> {
  // Bounded batches keep each statement under SQLite's host-parameter limit.
  for (const batch of batches(db, events, 500)) {
    await db
      .insertInto('webhook_event')
      .values(batch.map((e) => ({ event_id: e.eventId, payload: e.payload })))
      .onConflict((oc) => oc.column('event_id').doNothing())
      .execute();
  }
}

/** The bodies of these events, by event id. */
export async function payloadsOf(db: Db, eventIds: readonly string[]): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const unique = [...new Set(eventIds)];
  for (let i = 0; i < unique.length; i += 500) {
    const rows = await db
      .selectFrom('webhook_event')
      .select(['event_id', 'payload'])
      .where('event_id', 'in', unique.slice(i, i + 500))
      .execute();
    for (const r of rows) out.set(r.event_id, r.payload);
  }
  return out;
}

async function withPayloads(db: Db, rows: DeliveryRow[]): Promise<DeliveryWithPayload[]> {
  const payloads = await payloadsOf(
    db,
    rows.map((r) => r.event_id),
  );
  return rows.map((r) => ({ ...r, payload: payloads.get(r.event_id) ?? '{}' }));
}

/** Inserts deliveries, ignoring any (webhook, event) pair that already has one. Returns how many were new. */
export async function insertDeliveries(db: Db, rows: DeliveryRow[]): Promise<number> {
  let inserted = 0;
  // Bounded batches keep each statement under SQLite's host-parameter limit.
  for (const batch of batches(db, rows, 200)) {
    const res = await db
      .insertInto('webhook_delivery')
      .values(batch)
      .onConflict((oc) => oc.columns(['webhook_id', 'event_id']).doNothing())
      .executeTakeFirst();
    inserted += Number(res.numInsertedOrUpdatedRows ?? 0);
  }
  return inserted;
}

export interface DeliveryFilters extends TimeRangeFilters<'delivered_at'> {
  status?: DeliveryRow['status'];
  event_type?: string;
  http_status?: number;
  http_status_gte?: number;
  http_status_lte?: number;
}

export async function listDeliveries(
  db: Db,
  webhookId: string,
  page: Page,
  f: DeliveryFilters,
): Promise<ListResult<DeliveryWithPayload>> {
  let q = db.selectFrom('webhook_delivery').where('webhook_id', '=', webhookId);
  q = whereEquals(q, { status: f.status, event_type: f.event_type, http_status: f.http_status });
  if (f.http_status_gte !== undefined) q = q.where('http_status', '>=', f.http_status_gte);
  if (f.http_status_lte !== undefined) q = q.where('http_status', '<=', f.http_status_lte);
  q = whereTimeRanges(q, f, ['delivered_at']);
  const result = await paginate(q, page, (row: DeliveryRow) => row);
  return { items: await withPayloads(db, result.items), total: result.total };
}

export async function findDelivery(db: Db, webhookId: string, id: string) {
  const row = await findWhere(db, 'webhook_delivery', { id, webhook_id: webhookId });
  return row ? (await withPayloads(db, [row]))[0] : undefined;
}

export async function attemptsOf(db: Db, deliveryId: string): Promise<AttemptRow[]> {
  return db
    .selectFrom('webhook_delivery_attempt')
    .selectAll()
    .where('delivery_id', '=', deliveryId)
    .orderBy('sequence', 'asc')
    .execute();
}

export async function listAttempts(db: Db, deliveryId: string, page: Page): Promise<ListResult<AttemptRow>> {
  const q = db.selectFrom('webhook_delivery_attempt').where('delivery_id', '=', deliveryId);
  return paginate(q, page, (row: AttemptRow) => row);
}

/**
 * A manual retry (docs/webhooks.md "Attempts, retries and the schedule"): back to PENDING, attempts 0, due now, error cleared. The lease is left alone:
 * an attempt in flight keeps it, so nobody else can start a second send of this delivery meanwhile;
 * the bumped generation tells that attempt it was superseded.
 */
export async function resetDelivery(db: Db, id: string, now: string): Promise<void> {
  await db.updateTable('webhook_delivery').set(reset(now)).where('id', '=', id).execute();
}

/** A delivery sent again: PENDING, attempts 0, due now, its generation moved on (see resetDelivery). */
const reset = (now: string) => (eb: ExpressionBuilder<Database, 'webhook_delivery'>) => ({
  status: 'PENDING' as const,
  attempts: 0,
  next_attempt_at: now,
  error: null,
  updated_at: now,
  generation: eb('generation', '+', 1),
});

/**
 * POST /webhook/{id}/recover: every FAILED delivery of a webhook created since `since` back to
 * PENDING, as a manual retry does each; answers how many.
 */
export async function resetFailedSince(
  db: Db,
  webhookId: string,
  since: string,
  now: string,
): Promise<number> {
  const res = await db
    .updateTable('webhook_delivery')
    .set(reset(now))
    .where('webhook_id', '=', webhookId)
    .where('status', '=', 'FAILED')
    .where('created_at', '>=', since)
    .executeTakeFirst();
  return Number(res.numUpdatedRows);
}

/** A new delivery of `event` to one webhook, due now. */
export function deliveryRow(webhookId: string, event: CloudEvent, now: string, id = newId()): DeliveryRow {
  return {
    id,
    webhook_id: webhookId,
    event_id: event.id,
    event_type: event.type,
    status: 'PENDING',
    http_status: null,
    response_body: null,
    error: null,
    attempts: 0,
    max_attempts: MAX_ATTEMPTS,
    next_attempt_at: now,
    delivered_at: null,
    created_at: now,
    updated_at: now,
    locked_until: null,
    locked_by: null,
    locked_at: null,
    generation: 0,
    total_attempts: 0,
  };
}

export function toDelivery(row: DeliveryWithPayload): Delivery {
  return {
    id: row.id,
    webhook_id: row.webhook_id,
    event_id: row.event_id,
    event_type: row.event_type,
    payload: JSON.parse(row.payload) as Record<string, unknown>,
    status: row.status,
    http_status: row.http_status,
    response_body: row.response_body,
    error: row.error,
    attempts: row.attempts,
    max_attempts: row.max_attempts,
    next_attempt_at: row.next_attempt_at,
    delivered_at: row.delivered_at,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

export function toAttempt(row: AttemptRow): DeliveryAttempt {
  return {
    id: row.id,
    delivery_id: row.delivery_id,
    attempt: row.attempt,
    sequence: row.sequence,
    outcome: row.outcome,
    started_at: row.started_at,
    finished_at: row.finished_at,
    duration_ms: row.duration_ms,
    url: row.url,
    http_status: row.http_status,
    response_body: row.response_body,
    error: row.error,
    signed_at: row.signed_at,
  };
}
