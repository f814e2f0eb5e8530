import type { Logger } from 'pino';
import type { Store } from '../../db/store.js';
import { iso } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import type { EventPublisher } from '../events/publish.js';
import { afterAttemptFailure } from './backoff.js';
import { deliveryFailedEvent } from './failure-event.js';
import * as sending from './sending-store.js';
import * as hooks from './webhook-store.js';

const INTERRUPTED =
  'interrupted: the worker stopped before the attempt finished (its lease expired); counted as a failed attempt';

export interface Reaping {
  /** Deliveries whose lease had run out (their attempt is logged INTERRUPTED). */
  reaped: number;
  /** Of those, the ones whose interrupted attempt was their last: now FAILED. */
  exhausted: number;
  /** The earliest retry the reaping scheduled. */
  earliest?: Date;
}

/**
 * Leases whose holder died mid-attempt: the attempt is logged as INTERRUPTED (it counted when it
 * was claimed) and, like any failed attempt k, makes the delivery wait base x 2^(k-1) before the
 * next one (docs/webhooks.md "Attempts, retries and the schedule"), or FAILED when that was its last attempt. One transaction.
 */
export async function reapDeadLeases(
  store: Store,
  now: Date,
  backoffBaseSeconds: number,
  publisher?: Pick<EventPublisher, 'publish'>,
): Promise<Reaping> {
  const nowIso = iso(now);
  return store.transaction(async (tx) => {
    const reaped = await sending.reapExpiredLeases(tx.db, nowIso, 1000);
    if (reaped.length === 0) return { reaped: 0, exhausted: 0 };
    const lastChance: string[] = [];
    const retries = new Map<string, string[]>();
    let earliest: Date | undefined;
    for (const r of reaped) {
      // attempts 0: a manual retry reset the delivery after the claim; it stays due as the reset left it.
      if (r.attempts === 0) continue;
      const next = afterAttemptFailure(r.attempts, r.max_attempts, backoffBaseSeconds, now);
      if (next.status === 'FAILED') {
        lastChance.push(r.id);
        continue;
      }
      const at = iso(next.next_attempt_at);
      const ids = retries.get(at);
      if (ids) ids.push(r.id);
      else retries.set(at, [r.id]);
      if (!earliest || next.next_attempt_at < earliest) earliest = next.next_attempt_at;
    }
    await sending.deferInterrupted(tx.db, retries, nowIso, INTERRUPTED);
    const exhausted = await sending.failExhausted(tx.db, lastChance, nowIso, INTERRUPTED);
    for (const row of exhausted) {
      const failure = deliveryFailedEvent(row, INTERRUPTED, null);
      if (failure && publisher) await publisher.publish(tx, failure);
    }
    const urls = new Map(
      (await hooks.webhooksForSending(tx.db, [...new Set(reaped.map((r) => r.webhook_id))])).map((h) => [
        h.id,
        h.url,
      ]),
    );
    await sending.insertAttempts(
      tx.db,
      reaped.map((r) => ({
        id: newId(),
        delivery_id: r.id,
        webhook_id: r.webhook_id,
        attempt: Math.max(r.attempts, 1),
        sequence: r.total_attempts,
        outcome: 'INTERRUPTED' as const,
        started_at: r.locked_at ?? nowIso,
        finished_at: nowIso,
        duration_ms: null,
        url: urls.get(r.webhook_id) ?? '',
        http_status: null,
        response_body: null,
        error: INTERRUPTED,
        signed_at: null,
      })),
      tx.dialect,
    );
    return { reaped: reaped.length, exhausted: exhausted.length, earliest };
  });
}

/** `reapDeadLeases`, with what it found logged; answers the earliest retry it scheduled. */
export async function reapAndLog(
  store: Store,
  now: Date,
  backoffBaseSeconds: number,
  log: Logger,
  publisher?: Pick<EventPublisher, 'publish'>,
): Promise<Date | undefined> {
  const { reaped, exhausted, earliest } = await reapDeadLeases(store, now, backoffBaseSeconds, publisher);
  if (reaped > 0) {
    log.warn({ count: reaped }, 'webhook attempts interrupted by a stopped worker; counted as failed');
  }
  if (exhausted > 0) {
    log.warn({ count: exhausted }, 'webhook deliveries failed: their last attempt was interrupted');
  }
  return earliest;
}
