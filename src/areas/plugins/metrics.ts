import { Gauge, type Registry } from 'prom-client';
import { waitingCalls } from '../../db/call-limits.js';
import type { Store } from '../../db/store.js';
import type { Clock } from '../../lib/clock.js';
import { counter, histogram } from '../../lib/metrics.js';

export interface PluginMetrics {
  /** An invocation ended: `outcome` is `ok` or the error code it ended with. */
  invoked(plugin: string, action: string, outcome: string, seconds: number): void;
}

/**
 * Plugin action invocations on /metrics (ACTION nodes and the manual invoke alike), and the calls
 * waiting for an instance's limits (read from the store at each scrape: the whole deployment's).
 */
export function createPluginMetrics(registry: Registry, store: Store, clock: Clock): PluginMetrics {
  new Gauge({
    name: 'svc_plugin_calls_waiting',
    help: "ACTION attempts waiting for their plugin instance's limit, by instance and limit (rate_limit, max_concurrency)",
    labelNames: ['plugin_instance_id', 'limit'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const w of await waitingCalls(store.db, 'plugin:', clock.now()))
        this.set({ plugin_instance_id: w.scope.slice('plugin:'.length), limit: w.limit }, w.count);
    },
  });
  const invocations = counter(
    registry,
    'svc_plugin_invocations_total',
    'Plugin action invocations, by plugin, action and outcome (ok or the error code)',
    ['plugin', 'action', 'outcome'],
  );
  const duration = histogram(
    registry,
    'svc_plugin_invocation_duration_seconds',
    'Duration of plugin action invocations, by plugin and action',
    ['plugin', 'action'],
    [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120],
  );
  return {
    invoked(plugin, action, outcome, seconds) {
      invocations.inc({ plugin, action, outcome });
      duration.observe({ plugin, action }, seconds);
    },
  };
}
