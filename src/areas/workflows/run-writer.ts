import type { Store } from '../../db/store.js';
import { WriteBatcher } from '../../worker/write-batcher.js';
import type { EventPublisher } from '../events/publish.js';
import type { RunWrite } from './store.js';
import * as runs from './store.js';
import type { WorkflowRunNodeTable, WorkflowRunTable } from './tables.js';

/**
 * The engine's two batched writes (group commit): runs created, and runs' changes, each with the
 * event of its end when it ended (a run's end and its event commit together, and only where this
 * worker still held the run), and the wake of a run waiting for the room an end makes.
 */
export function createRunWriter(
  store: Store,
  workerId: string,
  publisher?: Pick<EventPublisher, 'publish'>,
  /** A run's end woke a waiting run (flow control): due once the write commits. */
  woken: () => void = () => {},
) {
  const batcher = new WriteBatcher(store);
  return {
    createRun: batcher.register(
      'create-run',
      (tx, items: Array<{ run: WorkflowRunTable; nodes: WorkflowRunNodeTable[] }>) =>
        runs.insertRuns(tx.db, items),
    ),
    writeRun: batcher.register('write-run', async (tx, items: RunWrite[]) => {
      const held = await runs.writeRuns(tx.db, workerId, items, () => tx.afterCommit(woken));
      for (const [i, item] of items.entries()) {
        if (held[i] && item.ended && publisher) await publisher.publish(tx, item.ended);
      }
      return held;
    }),
  };
}
