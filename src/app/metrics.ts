import type { FastifyInstance } from 'fastify';
import { Counter, collectDefaultMetrics, Registry } from 'prom-client';
import type { StoreActivity } from '../db/store.js';
import { counter, histogram } from '../lib/metrics.js';

/**
 * One registry per process context (several apps in one test process don't clash): Node's and the
 * process's default series, to which the areas add the pipeline's and `registerHttpMetrics` HTTP's.
 */
export function createMetricsRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  // Gauges named `_total` break the Prometheus naming rule (promtool: "non-counter metrics should not
  // have _total suffix"); each is the sum of the same series without `_total`, which stays.
  for (const name of [
    'nodejs_active_handles_total',
    'nodejs_active_requests_total',
    'nodejs_active_resources_total',
  ])
    registry.removeSingleMetric(name);
  return registry;
}

/**
 * Request counts and durations by route and status, and the /metrics endpoint itself, which serves
 * what `scrape` answers (the registry, or the registry with the worker thread's series added).
 */
export function registerHttpMetrics(
  app: FastifyInstance,
  registry: Registry,
  scrape: () => Promise<Registry> = async () => registry,
): void {
  const labelNames = ['method', 'route', 'status'] as const;
  const requests = counter(registry, 'http_requests_total', 'HTTP requests by route and status', labelNames);
  const duration = histogram(
    registry,
    'http_request_duration_seconds',
    'HTTP request duration by route and status',
    labelNames,
    [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
  );
  app.addHook('onResponse', async (request, reply) => {
    // The route pattern, not the raw URL: ids in paths must not explode the label set.
    const labels = {
      method: request.method,
      route: request.routeOptions.url ?? 'unmatched',
      status: reply.statusCode,
    };
    requests.inc(labels);
    duration.observe(labels, reply.elapsedTime / 1000);
  });
  app.get(
    '/metrics',
    { schema: { hide: true }, config: { access: { kind: 'public' } } },
    async (_req, reply) => {
      const scraped = await scrape();
      reply.type(scraped.contentType);
      return scraped.metrics();
    },
  );
}

/**
 * Statements and transactions the store has run, read at each scrape: divided by the work done, they
 * are the per-execution counts of docs/performance.md. (Transaction control, BEGIN, COMMIT and savepoints, is not counted as statements.)
 */
export function registerStoreMetrics(registry: Registry, activity: StoreActivity): void {
  const series = [
    ['svc_store_statements_total', 'SQL statements run by this process', 'statements'],
    ['svc_store_transactions_total', 'Transactions begun by this process', 'transactions'],
  ] as const;
  for (const [name, help, field] of series) {
    let reported = 0;
    new Counter({
      name,
      help,
      registers: [registry],
      collect() {
        this.inc(activity[field] - reported);
        reported = activity[field];
      },
    });
  }
}
