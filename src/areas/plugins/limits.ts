import type { Logger } from 'pino';
import * as limits from '../../db/call-limits.js';
import type { Store } from '../../db/store.js';
import { AppError } from '../../http/errors.js';
import type { Clock } from '../../lib/clock.js';

/**
 * A plugin instance's `rate_limit` and `max_concurrency` (docs/plugins.md "Limits"), shared by every
 * ACTION and invoke of the instance in every process: the instance's scope of src/db/call-limits.ts.
 */

/** A call admitted under its instance's limits: released after the call. */
export interface CallPermit {
  /** Never rejects: a release that fails leaves the slot to its lease. */
  release(): Promise<void>;
}

/** The answer of an admission: go with a permit, or wait until `retryAt`. */
export type LimitAnswer =
  | { go: true; permit: CallPermit }
  | { go: false; limit: 'rate_limit' | 'max_concurrency'; retryAt: Date };

const NO_SLOT: CallPermit = { release: async () => {} };

export function createCallLimiter(deps: {
  store: Store;
  clock: Clock;
  log: Logger;
  /** Told the holders a freed concurrency slot is for. */
  slotFreed(holders: string[]): void;
}) {
  const { store, clock, log } = deps;
  return {
    /** One decision of the instance's limits, in a short write transaction. */
    async admit(
      instanceId: string,
      instanceLimits: limits.CallLimits,
      holder: string,
      leaseMs: number,
      mode: 'wait' | 'ask',
    ): Promise<LimitAnswer> {
      const scope = `plugin:${instanceId}`;
      const answer = await store.transaction((tx) =>
        limits.admit(tx.db, scope, instanceLimits, holder, clock.now(), { mode, leaseMs }),
      );
      if (!answer.go) return answer;
      const callId = answer.callId;
      if (callId === null) return { go: true, permit: NO_SLOT };
      return {
        go: true,
        permit: {
          async release() {
            try {
              const next = await store.transaction((tx) =>
                limits.release(tx.db, scope, callId, instanceLimits, clock.now()),
              );
              if (next.length > 0) deps.slotFreed(next);
            } catch (err) {
              log.warn(
                { plugin_instance_id: instanceId, err },
                'plugin call slot not released; it frees at its lease',
              );
            }
          },
        },
      };
    },
  };
}

/** 429 for a call over its instance's limits, with the seconds until it may be asked again. */
export function rateLimited(label: string, limit: string, retryAt: Date, now: Date): AppError {
  const ms = Math.max(0, retryAt.getTime() - now.getTime());
  return new AppError(
    'PLUGIN.RATE_LIMITED',
    `${label}: the plugin instance's ${limit} is reached; retry in ${Math.ceil(ms / 1000)} s`,
    { limit, retry_after_ms: ms },
    { 'Retry-After': String(Math.max(1, Math.ceil(ms / 1000))) },
  );
}
