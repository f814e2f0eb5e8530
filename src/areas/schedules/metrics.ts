import { Gauge, type Registry } from 'prom-client';
import type { Store } from '../../db/store.js';
import type { Clock } from '../../lib/clock.js';
import { counter, histogram } from '../../lib/metrics.js';
import { earliestFire } from './store.js';

export interface ScheduleMetrics {
  /** A fire recorded by this process: `published` its event, or `refused` (the type refused it). */
  fired(outcome: 'published' | 'refused', lagSeconds: number): void;
}

/**
 * Schedules on /metrics: the fires of this process and how late each was, and how overdue the
 * earliest enabled schedule is (read from the store at each scrape, so a stalled scheduler shows
 * on every process even when nothing fires).
 */
export function createScheduleMetrics(registry: Registry, store: Store, clock: Clock): ScheduleMetrics {
  const fires = counter(
    registry,
    'svc_schedule_fires_total',
    'Schedule fire times recorded by this process, by outcome (published, refused)',
    ['outcome'],
  );
  const lag = histogram(
    registry,
    'svc_schedule_fire_lag_seconds',
    'Time from a fire time to the commit of its event',
    [],
    [0.01, 0.05, 0.1, 0.5, 1, 2, 5, 15, 60, 300, 3600],
  );
  new Gauge({
    name: 'svc_schedule_overdue_seconds',
    help: 'How long the earliest due fire of an enabled schedule has waited (0 when none is due)',
    registers: [registry],
    async collect() {
      const at = await earliestFire(store.db);
      const overdue = at ? (clock.now().getTime() - Date.parse(at)) / 1000 : 0;
      this.set(Math.max(0, overdue));
    },
  });
  return {
    fired(outcome, lagSeconds) {
      fires.inc({ outcome });
      lag.observe(Math.max(0, lagSeconds));
    },
  };
}
