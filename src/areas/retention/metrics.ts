import { Gauge, type Registry } from 'prom-client';
import type { Clock } from '../../lib/clock.js';
import { counter } from '../../lib/metrics.js';
import type { Pruner } from './job.js';

export interface RetentionMetrics {
  removed(table: string, rows: number): void;
}

/**
 * Retention on /metrics: rows the prune job removed, per table (this process's passes), and the age
 * of the oldest record of each kind that retention may remove, read from the store at each scrape
 * (every process reports the shared store).
 */
export function createRetentionMetrics(
  registry: Registry,
  clock: Clock,
  pruners: readonly Pick<Pruner, 'kind' | 'oldest'>[],
): RetentionMetrics {
  const removed = counter(registry, 'svc_prune_rows_removed_total', 'Rows the prune job removed, per table', [
    'table',
  ]);
  new Gauge({
    name: 'svc_retention_oldest_age_seconds',
    help: 'Age of the oldest finished record of each kind still stored (runs, deliveries, outbox_tasks, call_limits); 0 when there is none',
    labelNames: ['kind'],
    registers: [registry],
    async collect() {
      const now = clock.now().getTime();
      for (const p of pruners) {
        const oldest = await p.oldest();
        this.set({ kind: p.kind }, oldest ? Math.max(0, (now - Date.parse(oldest)) / 1000) : 0);
      }
    },
  });
  return {
    removed: (table, rows) => {
      if (rows > 0) removed.inc({ table }, rows);
    },
  };
}
