import { Counter, Histogram, type Registry } from 'prom-client';

export interface PluginMetrics {
  /** An invocation ended: `outcome` is `ok` or the error code it ended with. */
  invoked(plugin: string, action: string, outcome: string, seconds: number): void;
}

/** Plugin action invocations on /metrics (ACTION nodes and the manual invoke alike). */
export function createPluginMetrics(registry: Registry): PluginMetrics {
  const invocations = new Counter({
    name: 'svc_plugin_invocations_total',
    help: 'Plugin action invocations, by plugin, action and outcome (ok or the error code)',
    labelNames: ['plugin', 'action', 'outcome'] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'svc_plugin_invocation_duration_seconds',
    help: 'Duration of plugin action invocations, by plugin and action',
    labelNames: ['plugin', 'action'] as const,
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120],
    registers: [registry],
  });
  return {
    invoked(plugin, action, outcome, seconds) {
      invocations.inc({ plugin, action, outcome });
      duration.observe({ plugin, action }, seconds);
    },
  };
}
