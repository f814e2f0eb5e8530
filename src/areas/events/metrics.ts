import { Gauge, type Registry } from 'prom-client';
import type { Store } from '../../db/store.js';
import type { Clock } from '../../lib/clock.js';
import { counter } from '../../lib/metrics.js';
import { backlog } from './store.js';

export interface OutboxMetrics {
  /** A claimed task settled: DONE, back to PENDING for a retry, or FAILED for good. */
  settled(outcome: 'done' | 'retry' | 'failed', count?: number): void;
}

/**
 * The outbox on /metrics: its backlog and the age of its oldest unsettled task (read from the store
 * at each scrape, so every process reports the shared outbox), and the settlements of this process.
 */
export function createOutboxMetrics(registry: Registry, store: Store, clock: Clock): OutboxMetrics {
  // Both gauges are answered by one query per scrape.
  let reading: Promise<{ tasks: number; oldestCreatedAt: string | null }> | undefined;
  const read = () => {
    reading ??= backlog(store.db).finally(() => {
      setImmediate(() => {
        reading = undefined;
      });
    });
    return reading;
  };
  new Gauge({
    name: 'svc_outbox_backlog_tasks',
    help: 'Outbox tasks not yet settled (PENDING or IN_PROGRESS)',
    registers: [registry],
    async collect() {
      this.set((await read()).tasks);
    },
  });
  new Gauge({
    name: 'svc_outbox_oldest_task_age_seconds',
    help: 'Age of the oldest unsettled outbox task (0 when there is none)',
    registers: [registry],
    async collect() {
      const { oldestCreatedAt } = await read();
      const age = oldestCreatedAt ? (clock.now().getTime() - Date.parse(oldestCreatedAt)) / 1000 : 0;
      this.set(Math.max(0, age));
    },
  });
  const settled = counter(
    registry,
    'svc_outbox_tasks_settled_total',
    'Outbox task attempts settled by this process, by outcome (done, retry, failed)',
    ['outcome'],
  );
  return {
    settled: (outcome, count = 1) => {
      if (count > 0) settled.inc({ outcome }, count);
    },
  };
}
