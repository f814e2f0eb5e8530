import type { Logger } from 'pino';
import { type Clock, iso } from '../../lib/clock.js';
import type { GraphSource, RoutedSubscription } from './graph-source.js';

export interface RateGuardDeps {
  clock: Clock;
  log: Logger;
  subscriptions: GraphSource;
  /** Runs of a subscription created since an instant (the guard's source of truth, all processes). */
  countRunsSince(subscriptionId: string, since: string): Promise<number>;
  /** SVC_WORKFLOW_MAX_RUNS_PER_MINUTE: the limit of a subscription that sets none; 0 = no limit. */
  defaultLimit: number;
}

export interface RateGuard {
  /** How many of `wanted` new runs of `sub` may start now; fewer than wanted pauses it. */
  allowance(sub: RoutedSubscription, wanted: number): Promise<number>;
}

const WINDOW_MS = 60_000;

/**
 * The rate guard (docs/workflows.md "Loop safety"): a subscription that starts more runs in a minute
 * than its max_runs_per_minute is paused (disabled, saying why) until a user enables it again. The
 * count is read from the store, so it holds across processes; to keep that read off the hot path it
 * is taken once per tenth of the limit started here, so a subscription may overshoot by that much
 * per process before it is paused.
 */
export function createRateGuard(deps: RateGuardDeps): RateGuard {
  /** Runs this process started per subscription since it last read the count. */
  const sinceCount = new Map<string, number>();

  async function pause(sub: RoutedSubscription, recent: number, limit: number): Promise<void> {
    const reason =
      `rate guard: ${recent} runs started in the last minute, the limit is ${limit} ` +
      '(max_runs_per_minute or SVC_WORKFLOW_MAX_RUNS_PER_MINUTE); a workflow that triggers itself? ' +
      'Enable the subscription again once the cause is fixed.';
    if (await deps.subscriptions.pause(sub.id, reason)) {
      deps.log.warn(
        { subscription_id: sub.id, runs_last_minute: recent, limit },
        'workflow rate guard: subscription paused',
      );
    }
  }

  return {
    async allowance(sub, wanted) {
      const limit = sub.max_runs_per_minute ?? deps.defaultLimit;
      if (limit <= 0 || wanted === 0) return wanted;
      const local = (sinceCount.get(sub.id) ?? 0) + wanted;
      if (local < Math.max(1, Math.floor(limit / 10))) {
        sinceCount.set(sub.id, local);
        return wanted;
      }
      const since = iso(new Date(deps.clock.now().getTime() - WINDOW_MS));
      const recent = await deps.countRunsSince(sub.id, since);
      const allowed = Math.max(0, Math.min(wanted, limit - recent));
      // Started now, counted by the next read once committed.
      sinceCount.set(sub.id, allowed);
      if (allowed < wanted) await pause(sub, recent + allowed, limit);
      return allowed;
    },
  };
}
