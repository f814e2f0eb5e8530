import type { Registry } from 'prom-client';
import { counter, histogram } from '../../lib/metrics.js';

export interface WebhookMetrics {
  /** An attempt ended: its outcome, its number (1 = first), its duration, and the delivery's status after it. */
  attempted(outcome: 'success' | 'failed', attempt: number, seconds: number, status: string): void;
}

/** Webhook deliveries on /metrics, counted by the process that made the attempts. */
export function createWebhookMetrics(registry: Registry): WebhookMetrics {
  const attempts = counter(
    registry,
    'svc_webhook_attempts_total',
    'Webhook delivery attempts, by outcome (success, failed) and attempt number',
    ['outcome', 'attempt'],
  );
  const duration = histogram(
    registry,
    'svc_webhook_attempt_duration_seconds',
    'Duration of webhook delivery attempts, by outcome',
    ['outcome'],
    [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  );
  const finished = counter(
    registry,
    'svc_webhook_deliveries_finished_total',
    'Webhook deliveries that reached a final status (SUCCESS, or FAILED with attempts exhausted)',
    ['status'],
  );
  return {
    attempted(outcome, attempt, seconds, status) {
      attempts.inc({ outcome, attempt: String(attempt) });
      duration.observe({ outcome }, seconds);
      if (status === 'SUCCESS' || status === 'FAILED') finished.inc({ status });
    },
  };
}
