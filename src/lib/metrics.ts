import { Counter, Histogram, type Registry } from 'prom-client';

/**
 * The two metric kinds the areas declare, on the process registry (services.metrics): one line each
 * instead of an options object, so every area's metrics.ts reads as a list of names and meanings.
 */
export function counter<L extends string>(
  registry: Registry,
  name: string,
  help: string,
  labels: readonly L[],
) {
  return new Counter<L>({ name, help, labelNames: labels, registers: [registry] });
}

export function histogram<L extends string>(
  registry: Registry,
  name: string,
  help: string,
  labels: readonly L[],
  buckets: number[],
) {
  return new Histogram<L>({ name, help, labelNames: labels, buckets, registers: [registry] });
}
