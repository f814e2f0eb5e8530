import type { Registry } from 'prom-client';
import { counter, histogram } from '../../lib/metrics.js';

export interface PluginMetrics {
  /** An invocation ended: `outcome` is `ok` or the error code it ended with. */
  invoked(plugin: string, action: string, outcome: string, seconds: number): void;
}

/** Plugin action invocations on /metrics (ACTION nodes and the manual invoke alike). */
export function createPluginMetrics(registry: Registry): PluginMetrics {
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
