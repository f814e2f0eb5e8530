import type { Logger } from 'pino';
import type { Dispatcher } from 'undici';
import type { Store } from '../../db/store.js';
import { type Clock, iso } from '../../lib/clock.js';
import { type GuardOptions, guardedDispatcher } from '../../lib/net-guard.js';
import { NO_TRACING, type Tracer } from '../../lib/tracing.js';
import { DueTimer } from '../../worker/due-timer.js';
import { createLease } from '../../worker/lease.js';
import type { Job } from '../../worker/worker.js';
import { newWorkerId } from '../../worker/worker-id.js';
import type { EventPublisher } from '../events/publish.js';
import { createAttempter } from './attempt.js';
import * as deliveries from './delivery-store.js';
import type { WebhookMetrics } from './metrics.js';
import { holdBackOverLimit } from './rate-limit.js';
import { reapAndLog } from './reaper.js';
import { createResultRecorder } from './results.js';
import * as sending from './sending-store.js';
import * as hooks from './webhook-store.js';

export const WEBHOOKS_JOB = 'webhooks';

export interface EngineOptions {
  store: Store;
  clock: Clock;
  log: Logger;
  /** SVC_WEBHOOK_TIMEOUT_MS: one deadline per attempt. */
  timeoutMs: number;
  /** SVC_WEBHOOK_BACKOFF_BASE_SECONDS */
  backoffBaseSeconds: number;
  /** SVC_WEBHOOK_RETRY_INTERVAL_MS: the job's period. */
  retryIntervalMs: number;
  /** SVC_ALLOW_PRIVATE_NETWORKS and SVC_DNS_SERVERS */
  network: GuardOptions;
  /** Wakes the `webhooks` job (new deliveries, a manual retry, a freed slot). */
  wake: () => void;
  /** Attempts in flight in this process, all webhooks together. */
  globalConcurrency?: number;
  /** Attempts in flight in this process to one webhook: a slow endpoint holds at most this many slots. */
  perWebhookConcurrency?: number;
  metrics: WebhookMetrics;
  /** Opens a stored signing key (a Fernet token under the vault key): services.vault.open. */
  secrets: { open(token: string): string };
  /** Publishes svc.webhook.delivery_failed when a delivery uses up its attempts. */
  publisher?: Pick<EventPublisher, 'publish'>;
  /** Spans of delivery attempts (docs/observability.md); none without it. */
  tracer?: Tracer;
}

export interface DeliveryEngine {
  /** The worker job `webhooks`: claims due deliveries into free slots and starts their attempts. */
  job: Job;
  /**
   * Sends every delivery due now and waits until all of them finished and were recorded (tests,
   * benchmarks, CLI). Failed attempts get a later next_attempt_at, so this returns.
   */
  deliverDue(): Promise<void>;
  /** Waits until no attempt is in flight and every result is written. */
  idle(): Promise<void>;
  /** Stops claiming, lets attempts in flight finish and be recorded, closes connections. */
  close(): Promise<void>;
  /** Attempts in flight now (metrics, tests). */
  inFlight(): number;
}

/** How long free slots may wait to fill a claim batch. */
const CLAIM_BATCH_WAIT_MS = 20;

/**
 * The sender: a bounded pool of attempts in flight, fed by claiming due deliveries under a lease
 * (docs/webhooks.md "Attempts, retries and the schedule"). The job step only claims and starts attempts; it never waits for
 * one, so a slow endpoint holds its own slots (at most `perWebhookConcurrency`) and nobody else's.
 * Results are written in batches (one transaction for many attempts) to keep up with fast receivers.
 */
export function createDeliveryEngine(opts: EngineOptions): DeliveryEngine {
  const { store, clock, log } = opts;
  const globalCap = opts.globalConcurrency ?? 128;
  const perWebhookCap = opts.perWebhookConcurrency ?? 32;
  // Claimed deliveries wait in a local buffer of up to two pools' worth, so the pool refills from
  // memory the moment a slot frees while the next claim is still on its way to the store (a claim
  // is a round trip or two, which on a busy machine can take longer than the pool takes to empty).
  const bufferCap = 2 * globalCap;
  const minClaim = Math.max(1, Math.floor(globalCap / 2));
  let lastClaimAt = 0;
  let claimTimer: NodeJS.Timeout | undefined;
  // A lease covers the wait in the buffer (two pools' worth ahead of it, each freed within one
  // attempt deadline at the latest), the attempt itself and the time to record it; past it, the
  // holder is presumed dead (crash) and the delivery is claimable again.
  const lease = createLease(clock, 3 * opts.timeoutMs + 5_000);
  /** A buffered delivery older than this is handed back rather than started: its lease is too short. */
  const maxBufferWaitMs = 2 * opts.timeoutMs + 2_500;
  // Every claim gets its own lease token (this engine's id + a sequence number), so a result that
  // arrives after its lease was lost can never be taken for a later claim of the same delivery.
  const engineId = newWorkerId();
  let claimSeq = 0;
  let dispatcher: Dispatcher | undefined;
  const http = () => {
    dispatcher ??= guardedDispatcher({ ...opts.network, timeoutMs: opts.timeoutMs });
    return dispatcher;
  };

  /**
   * What the engine is doing: `closed` once close() began (nothing is claimed or started after); a
   * claim on its way from the store; a batch taken from `ready` reading its webhooks' url and secret,
   * its slots reserved. One claim and one batch at a time, and they may overlap.
   */
  const mode = {
    lifecycle: 'open' as 'open' | 'closed',
    claim: 'idle' as 'idle' | 'claiming',
    batch: 'idle' as 'idle' | 'starting',
  };
  const closed = () => mode.lifecycle === 'closed';
  let inflight = 0;
  /** Claimed, not started yet, oldest first, with the event body (read once, at claim: it never changes). */
  const ready: Array<{ row: deliveries.DeliveryRow; payload: string | undefined; claimedAt: number }> = [];
  /** Buffered plus in flight, per webhook: the per-webhook cap counts both. */
  const perWebhook = new Map<string, number>();
  const settleWaiters: Array<() => void> = [];
  /** Wakes the job when the earliest retry is due (sooner than the job's interval would). */
  const retryTimer = new DueTimer(clock, opts.wake, { horizonMs: opts.retryIntervalMs });

  function notifySettled() {
    for (const w of settleWaiters.splice(0)) w();
  }

  function scheduleRetryWake(at: Date) {
    if (!closed()) retryTimer.arm(at.getTime());
  }

  const results = createResultRecorder(store, log, notifySettled, opts.publisher);
  const attempt = createAttempter({ ...opts, http, tracer: opts.tracer ?? NO_TRACING });

  let lastReap = Number.NEGATIVE_INFINITY;

  function release(webhookId: string) {
    const n = (perWebhook.get(webhookId) ?? 1) - 1;
    if (n <= 0) perWebhook.delete(webhookId);
    else perWebhook.set(webhookId, n);
  }

  /**
   * Starts buffered deliveries while the pool has free slots. The batch is taken on the next turn of
   * the event loop, so every slot freed by the responses that arrived together joins one batch (and
   * one read of its webhooks) instead of a read per finished attempt.
   */
  function pump() {
    // The batch in progress pumps again when it has started (slots freed meanwhile join the next one).
    if (mode.batch === 'starting' || closed() || ready.length === 0 || inflight >= globalCap) return;
    mode.batch = 'starting';
    setImmediate(takeBatch);
  }

  function takeBatch() {
    const stale: deliveries.DeliveryRow[] = [];
    const batch: (typeof ready)[number][] = [];
    while (!closed() && inflight + batch.length < globalCap && ready.length > 0) {
      const next = ready.shift() as (typeof ready)[number];
      // Never start an attempt its lease might not cover (only after an unusually long wait).
      if (performance.now() - next.claimedAt > maxBufferWaitMs) stale.push(next.row);
      else batch.push(next);
    }
    if (stale.length > 0) void handBack(stale);
    if (batch.length === 0) {
      mode.batch = 'idle';
      notifySettled();
      return;
    }
    inflight += batch.length;
    void startBatch(batch);
  }

  /**
   * Reads the url and secret of the batch's webhooks, then starts the batch. The read is made here,
   * not at claim time: a claimed delivery can wait in `ready`, and a rotate_secret or url change
   * made meanwhile (in any process) must apply to it (docs/webhooks.md). One small query per batch
   * (its distinct webhooks, not its deliveries); under load a batch gathers every slot freed while
   * the previous read ran.
   */
  async function startBatch(batch: (typeof ready)[number][]): Promise<void> {
    let targets: Map<string, hooks.SendingTarget> | undefined;
    let sendable = batch;
    try {
      const ids = [...new Set(batch.map((b) => b.row.webhook_id))];
      targets = new Map((await hooks.webhooksForSending(store.db, ids)).map((h) => [h.id, h]));
      // docs/webhooks.md "Rate limit": deliveries over their webhook's limit go back, due at their turn.
      const held = await holdBackOverLimit(
        store,
        clock.now(),
        batch.map((b) => b.row),
        targets,
        log,
        (row, at) => {
          inflight--;
          release(row.webhook_id);
          scheduleRetryWake(at);
        },
      );
      if (held.size > 0) sendable = batch.filter((b) => !held.has(b.row.id));
    } catch (err) {
      log.error({ err, count: batch.length }, 'reading webhooks for sending failed; deliveries handed back');
      targets = undefined;
    }
    mode.batch = 'idle';
    if (closed() || !targets) {
      await handBack(sendable.map((b) => b.row));
      inflight -= sendable.length;
      notifySettled();
      if (!closed()) opts.wake();
      return;
    }
    for (const { row, payload } of sendable) {
      attempt(row, payload, targets.get(row.webhook_id))
        .then((outcome) => {
          if (outcome.retryAt) scheduleRetryWake(outcome.retryAt);
          results.record(outcome);
        })
        .catch((err) => log.error({ err, delivery_id: row.id }, 'webhook attempt crashed'))
        .finally(() => {
          inflight--;
          release(row.webhook_id);
          pump();
          notifySettled();
          if (!closed()) opts.wake();
        });
    }
    pump();
  }

  /**
   * Hands claimed deliveries that were never sent back to the store, uncounted, and frees their
   * places in the per-webhook counts.
   */
  async function handBack(rows: deliveries.DeliveryRow[]): Promise<void> {
    for (const r of rows) release(r.webhook_id);
    await returnUnsent(store, log, rows);
    notifySettled();
  }

  let lastClaimShort = false;

  /** Claims into the free room (pool plus buffer) and starts what the pool can take. */
  async function claimAndStart(): Promise<{ claimed: number; asked: number; deferred: boolean }> {
    pump();
    const busy = inflight + ready.length;
    const room = globalCap + bufferCap - busy;
    if (closed() || mode.claim === 'claiming' || room <= 0) return { claimed: 0, asked: 0, deferred: false };
    // Claim in batches (a claim per freed slot would run the claim query once per attempt), but
    // never wait long for a batch: slots held by slow endpoints must not keep the rest idle.
    // After a claim that found less than it asked for (nothing more due, or every webhook at its
    // cap), the same wait applies: claiming again at every freed slot would find just as little.
    const waitForBatch = room < minClaim || lastClaimShort;
    if (busy > 0 && waitForBatch && performance.now() - lastClaimAt < CLAIM_BATCH_WAIT_MS) {
      return { claimed: 0, asked: 0, deferred: true };
    }
    mode.claim = 'claiming';
    try {
      lastClaimAt = performance.now();
      const asked = Math.min(room, 512);
      const now = clock.now();
      const nowIso = iso(now);
      // Dead leases are looked for at most once a second: they only appear after a crash.
      if (now.getTime() - lastReap >= 1000) {
        lastReap = now.getTime();
        const earliest = await reapAndLog(store, now, opts.backoffBaseSeconds, log, opts.publisher);
        if (earliest) scheduleRetryWake(earliest);
      }
      // One statement, atomic by itself (store.write: on SQLite it shares the group commit).
      const token = `${engineId}:${++claimSeq}`;
      const claimed = await store.write((db) =>
        sending.claimDue(db, {
          now: nowIso,
          leaseUntil: lease.until(),
          token,
          limit: asked,
          perWebhookCap,
          inFlight: perWebhook,
          dialect: store.dialect,
        }),
      );
      lastClaimShort = claimed.length < asked;
      // Counted from the claim on: every way a claimed delivery leaves (an attempt's end, handBack) frees it.
      for (const row of claimed) perWebhook.set(row.webhook_id, (perWebhook.get(row.webhook_id) ?? 0) + 1);
      let bodies: Map<string, string>;
      try {
        bodies = await deliveries.payloadsOf(
          store.db,
          claimed.map((r) => r.event_id),
        );
      } catch (err) {
        log.error(
          { err, count: claimed.length },
          'reading webhook event bodies failed; deliveries handed back',
        );
        await handBack(claimed);
        return { claimed: 0, asked, deferred: false };
      }
      const claimedAt = performance.now();
      for (const row of claimed) ready.push({ row, payload: bodies.get(row.event_id), claimedAt });
      if (closed()) void handBack(ready.splice(0).map((r) => r.row));
      pump();
      return { claimed: claimed.length, asked, deferred: false };
    } finally {
      mode.claim = 'idle';
      notifySettled();
    }
  }

  /** Wakes the job once the batch wait is over, in case no attempt finishes meanwhile. */
  function wakeAfterBatchWait() {
    if (claimTimer || closed()) return;
    claimTimer = setTimeout(() => {
      claimTimer = undefined;
      opts.wake();
    }, CLAIM_BATCH_WAIT_MS);
    claimTimer.unref();
  }

  function nextSettle(): Promise<void> {
    return new Promise((resolve) => settleWaiters.push(resolve));
  }

  /** Nothing claimed, buffered, in flight or unrecorded. */
  const settled = () =>
    inflight === 0 && ready.length === 0 && mode.claim === 'idle' && results.pending() === 0;

  async function idle(): Promise<void> {
    while (!settled()) await nextSettle();
  }

  async function close(): Promise<void> {
    mode.lifecycle = 'closed';
    retryTimer.clear();
    clearTimeout(claimTimer);
    // Buffered deliveries go back to the store at once rather than waiting out their leases.
    const unsent = ready.splice(0);
    if (unsent.length > 0) await handBack(unsent.map((r) => r.row));
    await idle();
    const d = dispatcher;
    dispatcher = undefined;
    await d?.close();
  }

  return {
    job: {
      name: WEBHOOKS_JOB,
      intervalMs: opts.retryIntervalMs,
      async run() {
        const { claimed, asked, deferred } = await claimAndStart();
        if (deferred) wakeAfterBatchWait();
        // A full claim means more may be due; a full pool is woken again as slots free up.
        return asked > 0 && claimed === asked && inflight + ready.length < globalCap + bufferCap;
      },
      // Graceful stop of `svc worker`: attempts in flight finish and are recorded.
      stop: () => close(),
    },
    async deliverDue() {
      for (;;) {
        const { claimed, deferred } = await claimAndStart();
        if (claimed === 0) {
          if (settled()) return;
          await (deferred
            ? Promise.race([nextSettle(), new Promise((r) => setTimeout(r, CLAIM_BATCH_WAIT_MS))])
            : nextSettle());
        }
      }
    },
    idle,
    close,
    inFlight: () => inflight,
  };
}

/** Gives claimed deliveries that were never sent back to the store, uncounted, each under its lease. */
async function returnUnsent(store: Store, log: Logger, rows: deliveries.DeliveryRow[]): Promise<void> {
  try {
    const byLease = new Map<string, string[]>();
    for (const r of rows) byLease.set(r.locked_by ?? '', [...(byLease.get(r.locked_by ?? '') ?? []), r.id]);
    for (const [lease, ids] of byLease) await store.write((db) => sending.releaseUnsent(db, ids, lease));
  } catch (err) {
    // Their leases expire instead; the reaper then counts one attempt too many, nothing worse.
    log.error({ err, count: rows.length }, 'returning unsent webhook deliveries failed');
  }
}
