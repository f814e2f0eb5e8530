import type { Logger } from 'pino';
import { admit, type CallLimits } from '../../db/call-limits.js';
import type { Store } from '../../db/store.js';
import type { DeliveryRow } from './delivery-store.js';
import { releaseUnsent } from './sending-store.js';
import type { SendingTarget } from './webhook-store.js';

/**
 * A webhook's `rate_limit` (docs/webhooks.md "Rate limit"): of the deliveries about to be sent,
 * those over their webhook's limit take a turn in its window (src/db/call-limits.ts) and wait for
 * it; they are handed back, uncounted, due at their turn. Webhooks without one cost nothing here.
 * Answers the deliveries held back, with the time each may be sent.
 */
export async function holdBackOverLimit(
  store: Store,
  now: Date,
  rows: readonly DeliveryRow[],
  targets: ReadonlyMap<string, SendingTarget>,
  log: Logger,
  /** Told of each delivery handed back (the engine gives its slot back). */
  onHeld: (row: DeliveryRow, at: Date) => void,
): Promise<Map<string, Date>> {
  const held = new Map<string, Date>();
  const limited = rows.filter((r) => targets.get(r.webhook_id)?.rate_limit);
  if (limited.length === 0) return held;
  await store.transaction(async (tx) => {
    for (const row of limited) {
      const target = targets.get(row.webhook_id) as SendingTarget;
      const limits: CallLimits = { rate_limit: JSON.parse(target.rate_limit as string) };
      const answer = await admit(tx.db, `webhook:${row.webhook_id}`, limits, row.id, now, {
        mode: 'wait',
        leaseMs: 0,
      });
      if (!answer.go) held.set(row.id, answer.retryAt);
    }
  });
  // Uncounted, due at their turn (their claims' leases released): one write per turn and claimer.
  const byTurn = new Map<string, DeliveryRow[]>();
  for (const row of limited) {
    const at = held.get(row.id);
    if (at === undefined) continue;
    const turn = JSON.stringify([at.toISOString(), row.locked_by ?? '']);
    byTurn.set(turn, [...(byTurn.get(turn) ?? []), row]);
  }
  for (const [turn, rows] of byTurn) {
    const [at, lockedBy] = JSON.parse(turn) as [string, string];
    try {
      await store.write((db) =>
        releaseUnsent(
          db,
          rows.map((r) => r.id),
          lockedBy,
          at,
        ),
      );
    } catch (err) {
      // Their leases expire instead; the reaper then counts one attempt too many, nothing worse.
      log.error({ err, deliveries: rows.length }, 'returning rate-limited webhook deliveries failed');
    }
    for (const row of rows) onHeld(row, held.get(row.id) as Date);
  }
  return held;
}
