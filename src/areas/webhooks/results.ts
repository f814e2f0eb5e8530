import type { Logger } from 'pino';
import type { Store } from '../../db/store.js';
import { WriteBatcher } from '../../worker/write-batcher.js';
import type { EventPublisher } from '../events/publish.js';
import type { AttemptOutcome } from './attempt.js';
import * as sending from './sending-store.js';

export interface ResultRecorder {
  /** Hands an attempt's outcome over to be written; never throws (a failed write is logged). */
  record(outcome: AttemptOutcome): void;
  /** Outcomes handed over and not written yet. */
  pending(): number;
}

/**
 * Writes attempt results through the write batcher: results arriving together share one transaction
 * (one commit, a multi-row statement), and a batch that fails is retried result by result. A result
 * that cannot be written leaves its lease to expire, and the delivery is attempted again
 * (at-least-once). `settled` is called after each write, whatever its outcome.
 */
export function createResultRecorder(
  store: Store,
  log: Logger,
  settled: () => void,
  publisher?: Pick<EventPublisher, 'publish'>,
): ResultRecorder {
  const batcher = new WriteBatcher(store, 500);
  const write = batcher.register('attempt-result', async (tx, outcomes: AttemptOutcome[]) => {
    const results = await sending.completeAttempts(
      tx.db,
      outcomes.map((o) => o.completion),
      tx.dialect,
    );
    // A delivery that failed for good reports it in the same transaction as its last result.
    for (const [i, o] of outcomes.entries()) {
      if (results[i] === 'applied' && o.failure && publisher) await publisher.publish(tx, o.failure);
    }
    await sending.insertAttempts(
      tx.db,
      outcomes.map((o) => o.attempt),
      tx.dialect,
    );
    return results;
  });
  let pending = 0;
  return {
    record(outcome) {
      pending++;
      write(outcome)
        .then(
          (result) => {
            if (result !== 'lost') return;
            log.warn(
              { delivery_id: outcome.completion.id },
              'webhook attempt finished after its lease expired; result kept in the attempt log only',
            );
          },
          (err) =>
            log.error(
              { err, delivery_id: outcome.completion.id },
              'recording a webhook attempt result failed',
            ),
        )
        .finally(() => {
          pending--;
          settled();
        });
    },
    pending: () => pending,
  };
}
