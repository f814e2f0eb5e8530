import type { Logger } from 'pino';
import type { Store } from '../../db/store.js';
import { type Clock, iso } from '../../lib/clock.js';
import type { GraphSource, RoutedSubscription } from './graph-source.js';
import { countRunsSince } from './store.js';

export interface RateGuardDeps {
  clock: Clock;
  log: Logger;
  subscriptions: GraphSource;
  /** Where the runs are: their count since an instant is the guard's source of truth, all processes. */
  store: Pick<Store, 'db'>;
  /** SVC_WORKFLOW_MAX_RUNS_PER_MINUTE: the limit on runs caused by runs, for a subscription that sets none; 0 = no limit. */
  defaultLimit: number;
}

/** What the guard watches of a subscription: every run (its own limit) or runs caused by runs (the server's). */
export type GuardScope = 'all' | 'caused';

export interface Allowance {
  scope: GuardScope;
  /** How many of the wanted runs in scope may start now; fewer than wanted has paused the subscription. */
  allowed: number;
}

export interface RateGuard {
  /**
   * How many new runs of `sub` may start now. `wanted` counts the batch's runs in each scope: all of
   * them, and those whose event runs caused (causation depth 1 or more).
   */
  allowance(sub: RoutedSubscription, wanted: { all: number; caused: number }): Promise<Allowance>;
}

const WINDOW_MS = 60_000;

/**
 * The rate guard (docs/workflows.md "Loop safety"), a circuit breaker for loops. A subscription's
 * own `max_runs_per_minute` counts every run; without one, the server's limit counts only runs whose
 * trigger event runs caused, so traffic from people, keys, schedules and outside systems is never
 * paused by default. Over the limit the subscription is paused (disabled, saying why, with a
 * `svc.event_subscription.paused` event) until a user enables it again. The count is read from the
 * store, so it holds across processes; to keep that read off the hot path it is taken once per
 * tenth of the limit started here, so a subscription may overshoot by that much per process.
 */
export function createRateGuard(deps: RateGuardDeps): RateGuard {
  /** Runs in scope this process started per subscription since it last read the count. */
  const sinceCount = new Map<string, number>();

  async function pause(sub: RoutedSubscription, scope: GuardScope, recent: number, limit: number) {
    const reason =
      scope === 'all'
        ? `rate guard: ${recent} runs started in the last minute, the limit is ${limit} ` +
          '(max_runs_per_minute); a workflow that triggers itself? ' +
          'Enable the subscription again once the cause is fixed.'
        : `rate guard: ${recent} runs caused by runs started in the last minute, the limit is ${limit} ` +
          '(SVC_WORKFLOW_MAX_RUNS_PER_MINUTE); a workflow that triggers itself? ' +
          'Enable the subscription again once the cause is fixed.';
    if (await deps.subscriptions.pause(sub.id, reason)) {
      deps.log.warn(
        { subscription_id: sub.id, runs_last_minute: recent, limit, scope },
        'workflow rate guard: subscription paused',
      );
    }
  }

  return {
    async allowance(sub, wanted) {
      const scope: GuardScope = sub.max_runs_per_minute === null ? 'caused' : 'all';
      const limit = sub.max_runs_per_minute ?? deps.defaultLimit;
      const n = wanted[scope];
      if (limit <= 0 || n === 0) return { scope, allowed: n };
      const local = (sinceCount.get(sub.id) ?? 0) + n;
      if (local < Math.max(1, Math.floor(limit / 10))) {
        sinceCount.set(sub.id, local);
        return { scope, allowed: n };
      }
      const since = iso(new Date(deps.clock.now().getTime() - WINDOW_MS));
      const recent = await countRunsSince(deps.store.db, sub.id, since, scope === 'caused');
      const allowed = Math.max(0, Math.min(n, limit - recent));
      // Started now, counted by the next read once committed.
      sinceCount.set(sub.id, allowed);
      if (allowed < n) await pause(sub, scope, recent + allowed, limit);
      return { scope, allowed };
    },
  };
}
