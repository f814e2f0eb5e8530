import type { Logger } from 'pino';
import type { Dispatcher } from 'undici';
import { causationHeaders, withTrace } from '../../lib/causation.js';
import { type Clock, iso } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import type { GuardOptions } from '../../lib/net-guard.js';
import {
  contextOf,
  eventTrace,
  logFields,
  NO_SPAN,
  type Span,
  safeUrl,
  type TraceContext,
  type Tracer,
} from '../../lib/tracing.js';
import { VERSION } from '../../version.js';
import type { EventInput } from '../events/publish.js';
import { afterAttemptFailure } from './backoff.js';
import type * as deliveries from './delivery-store.js';
import { deliveryFailedEvent } from './failure-event.js';
import type { WebhookMetrics } from './metrics.js';
import { sendAttempt } from './sender.js';
import type * as sending from './sending-store.js';
import { signDelivery } from './signing.js';
import * as hooks from './webhook-store.js';

const USER_AGENT = `svc-webhooks/${VERSION}`;

export interface AttemptOptions {
  clock: Clock;
  log: Logger;
  /** SVC_WEBHOOK_TIMEOUT_MS: one deadline per attempt. */
  timeoutMs: number;
  /** SVC_WEBHOOK_BACKOFF_BASE_SECONDS */
  backoffBaseSeconds: number;
  /** SVC_ALLOW_PRIVATE_NETWORKS and SVC_DNS_SERVERS */
  network: GuardOptions;
  metrics: WebhookMetrics;
  /** Opens a stored signing key (a Fernet token under the vault key): services.vault.open. */
  secrets: { open(token: string): string };
  /** The guarded HTTP client of the engine (net-guard.ts), made on first use. */
  http(): Dispatcher;
  /** A client span per attempt, in the trace its event carries (docs/observability.md). */
  tracer: Tracer;
}

/** One attempt's result, to be written: the delivery's new state and its attempt-log row. */
export interface AttemptOutcome {
  completion: sending.Completion;
  attempt: deliveries.AttemptRow;
  /** The failure event to publish with the result when this attempt was the last (failure-event.ts). */
  failure?: EventInput;
  /** When the delivery is due again, if it failed with attempts left. */
  retryAt?: Date;
}

/**
 * The client span of an attempt: a child of the span its event was published under (the event's
 * `traceparent`), or a trace of its own. The receiver gets the span as its `traceparent` header.
 */
function attemptSpan(tracer: Tracer, row: deliveries.DeliveryRow, url: string, payload: string): Span {
  let parent: TraceContext | null = null;
  try {
    parent = eventTrace(JSON.parse(payload) as Record<string, unknown>);
  } catch {
    // Not JSON (cannot happen for a stored event): a trace of its own.
  }
  return tracer.start('webhook.deliver', {
    kind: 'client',
    parent,
    attributes: {
      'http.request.method': 'POST',
      'url.full': safeUrl(url),
      'svc.webhook.id': row.webhook_id,
      'svc.webhook_delivery.id': row.id,
      'svc.webhook_delivery.attempt': row.attempts,
      'svc.event.type': row.event_type,
    },
  });
}

/**
 * Makes one attempt of a claimed delivery (docs/webhooks.md "The request"): sign with the webhook's current key, POST
 * under the attempt deadline, and decide what follows (SUCCESS, a retry at base x 2^(k-1), or FAILED).
 * Nothing is written here; the engine records the outcome.
 */
export function createAttempter(
  opts: AttemptOptions,
): (
  row: deliveries.DeliveryRow,
  payload: string | undefined,
  hook: hooks.SendingTarget | undefined,
) => Promise<AttemptOutcome> {
  /** Plaintext signing keys by stored token: a Fernet decryption per attempt is avoidable work. */
  const keys = new Map<string, string>();
  /** The signing key of `hook`, or undefined when no configured vault key opens its token (logged). */
  function signingKey(hook: hooks.SendingTarget): string | undefined {
    const stored = hook.secret;
    // A plaintext key of a version before sealing (sealed at the next start-up, hooks.isSealedSecret).
    if (!hooks.isSealedSecret(stored)) return stored;
    let key = keys.get(stored);
    if (key === undefined) {
      try {
        key = opts.secrets.open(stored);
      } catch {
        opts.log.error(
          { webhook_id: hook.id },
          'webhook secret cannot be decrypted with the configured vault keys',
        );
        return undefined;
      }
      if (keys.size >= 1000) keys.delete(keys.keys().next().value as string);
      keys.set(stored, key);
    }
    return key;
  }

  return async function attempt(
    row: deliveries.DeliveryRow,
    payload: string | undefined,
    hook: hooks.SendingTarget | undefined,
  ): Promise<AttemptOutcome> {
    const startedAt = opts.clock.now();
    let result: Awaited<ReturnType<typeof sendAttempt>>;
    let signedAt: number | null = null;
    /** The attempt's client span: NO_SPAN for an attempt that sent nothing, or with tracing off. */
    let span = NO_SPAN;
    const secret = hook && payload !== undefined ? signingKey(hook) : undefined;
    if (!hook || payload === undefined) {
      result = {
        success: false,
        httpStatus: null,
        responseBody: null,
        error: hook ? 'event body not found' : 'webhook not found',
        durationMs: 0,
      };
    } else if (!opts.network.allowPrivate && !hook.url.startsWith('https:')) {
      result = {
        success: false,
        httpStatus: null,
        responseBody: null,
        error: 'forbidden target: only https:// URLs are allowed unless SVC_ALLOW_PRIVATE_NETWORKS=true',
        durationMs: 0,
      };
    } else if (secret === undefined) {
      result = {
        success: false,
        httpStatus: null,
        responseBody: null,
        error: 'the webhook secret cannot be decrypted with the configured vault keys',
        durationMs: 0,
      };
    } else {
      signedAt = Math.floor(startedAt.getTime() / 1000);
      const headers = signDelivery({
        secret,
        webhookId: row.webhook_id,
        deliveryId: row.id,
        eventType: row.event_type,
        timestamp: signedAt,
        body: payload,
      });
      span = opts.tracer.enabled ? attemptSpan(opts.tracer, row, hook.url, payload) : NO_SPAN;
      result = await sendAttempt(opts.http(), {
        url: hook.url,
        headers: {
          ...headers,
          'user-agent': USER_AGENT,
          ...causationHeaders(withTrace(undefined, contextOf(span))),
        },
        body: payload,
        timeoutMs: opts.timeoutMs,
      });
      if (span.recording) {
        span.set({ 'http.response.status_code': result.httpStatus ?? undefined });
        if (!result.success) span.fail(result.error ?? `HTTP ${result.httpStatus}`);
        span.end();
      }
    }
    const finished = opts.clock.now();
    const now = iso(finished);
    let changes: sending.Completion['changes'];
    let retryAt: Date | undefined;
    if (result.success) {
      changes = {
        status: 'SUCCESS',
        http_status: result.httpStatus,
        response_body: result.responseBody,
        error: null,
        next_attempt_at: null,
        delivered_at: now,
        updated_at: now,
      };
    } else {
      const next = afterAttemptFailure(row.attempts, row.max_attempts, opts.backoffBaseSeconds, finished);
      changes = {
        status: next.status,
        http_status: result.httpStatus,
        response_body: result.responseBody,
        error: result.error,
        next_attempt_at: next.status === 'PENDING' ? iso(next.next_attempt_at) : null,
        delivered_at: row.delivered_at,
        updated_at: now,
      };
      if (next.status === 'PENDING') retryAt = next.next_attempt_at;
      // The URL is left out: it may carry credentials in its userinfo or query.
      opts.log.info(
        {
          webhook_id: row.webhook_id,
          delivery_id: row.id,
          event_type: row.event_type,
          attempt: row.attempts,
          http_status: result.httpStatus,
          duration_ms: result.durationMs,
          error: result.error,
          next: next.status === 'PENDING' ? changes.next_attempt_at : 'FAILED (attempts exhausted)',
          ...logFields(span),
        },
        'webhook attempt failed',
      );
    }
    opts.metrics.attempted(
      result.success ? 'success' : 'failed',
      row.attempts,
      result.durationMs / 1000,
      changes.status,
    );
    return {
      retryAt,
      failure:
        changes.status === 'FAILED'
          ? deliveryFailedEvent(row, changes.error, changes.http_status)
          : undefined,
      completion: {
        id: row.id,
        token: row.locked_by ?? '',
        generation: row.generation,
        success: result.success,
        changes,
      },
      attempt: {
        id: newId(),
        delivery_id: row.id,
        webhook_id: row.webhook_id,
        attempt: row.attempts,
        sequence: row.total_attempts,
        outcome: result.success ? 'SUCCESS' : 'FAILED',
        started_at: iso(startedAt),
        finished_at: now,
        duration_ms: result.durationMs,
        url: hook?.url ?? '',
        http_status: result.httpStatus,
        response_body: result.responseBody,
        error: result.error,
        signed_at: signedAt,
      },
    };
  };
}
