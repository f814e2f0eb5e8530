import { Counter, Histogram, type Registry } from 'prom-client';

export interface WebhookMetrics {
  /** An attempt ended: its outcome, its number (1 = first), its duration, and the delivery's status after it. */
  attempted(outcome: 'success' | 'failed', attempt: number, seconds: number, status: string): void;
}

/** Webhook deliveries on /metrics, counted by the process that made the attempts. */
export function createWebhookMetrics(registry: Registry): WebhookMetrics {
  const attempts = new Counter({
    name: 'svc_webhook_attempts_total',
    help: 'Webhook delivery attempts, by outcome (success, failed) and attempt number',
    labelNames: ['outcome', 'attempt'] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'svc_webhook_attempt_duration_seconds',
    help: 'Duration of webhook delivery attempts, by outcome',
    labelNames: ['outcome'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  const finished = new Counter({
    name: 'svc_webhook_deliveries_finished_total',
    help: 'Webhook deliveries that reached a final status (SUCCESS, or FAILED with attempts exhausted)',
    labelNames: ['status'] as const,
    registers: [registry],
  });
  return {
    attempted(outcome, attempt, seconds, status) {
      attempts.inc({ outcome, attempt: String(attempt) });
      duration.observe({ outcome }, seconds);
      if (status === 'SUCCESS' || status === 'FAILED') finished.inc({ status });
    },
  };
}
