import type { Db } from '../../db/store.js';
import { iso } from '../../lib/clock.js';
import type { CloudEvent } from '../events/cloudevent.js';
import { type FlowControl, type FlowPart, flowKey, type PendingReason, SHARED_KEY } from './flow-control.js';
import * as flows from './flow-store.js';
import type { CompiledCache } from './jsonlogic.js';

export type Placement =
  | { start: true; concurrencyKey: string | null }
  | { start: false; reason: PendingReason; key: string; wakeAt: string | null };

export const earliest = (a: string | null, b: string | null) =>
  a === null ? b : b === null || a < b ? a : b;

/** The lock names a run's decision takes: one per part with a limit, on its key for `event`. */
export function lockNames(
  cache: CompiledCache,
  sub: string,
  flow: FlowControl,
  event: CloudEvent,
  parts: readonly FlowPart[],
): string[] {
  const names: string[] = [];
  for (const part of parts)
    if (flow[part]) names.push(flows.lockName(sub, part, flowKey(cache, flow, part, event)));
  return names;
}

/**
 * The decisions of one transaction on one subscription: what the store holds of its limits, read
 * once per key and kept up to date with the decisions made since.
 */
export class Decisions {
  private readonly running = new Map<string, number>();
  private readonly windows = new Map<string, string[]>();
  private readonly queues = new Map<string, boolean>();
  /** Window entries to record (starts, admissions). */
  readonly entries: Array<{
    subscriptionId: string;
    part: 'throttle' | 'rate_limit';
    key: string;
    at: string;
  }> = [];
  /** Queues whose head to wake once the transaction's runs are written. */
  readonly wakes = new Map<string, [PendingReason, string]>();
  private readonly at: string;

  constructor(
    private readonly db: Db,
    private readonly cache: CompiledCache,
    private readonly sub: string,
    private readonly flow: FlowControl,
    private readonly now: Date,
  ) {
    this.at = iso(now);
  }

  /**
   * Reads, for every key these events name, what the decisions need (one statement per part, not
   * per event): the transaction then holds its locks for a handful of statements per batch.
   */
  async prefetch(events: readonly CloudEvent[]): Promise<void> {
    const keysOf = (part: FlowPart) => {
      const keys = new Set<string>();
      for (const e of events) {
        try {
          keys.add(flowKey(this.cache, this.flow, part, e));
        } catch {
          // A key that fails is the decision's to report.
        }
      }
      return [...keys];
    };
    const since = (periodMs: number) => iso(new Date(this.now.getTime() - periodMs));
    for (const part of ['throttle', 'rate_limit'] as const) {
      const limit = this.flow[part];
      if (!limit) continue;
      const keys = keysOf(part);
      for (const [key, w] of await flows.windowsSince(this.db, this.sub, part, keys, since(limit.period_ms)))
        this.windows.set(`${part}\u0000${key}`, w);
    }
    for (const part of ['throttle', 'concurrency'] as const) {
      if (!this.flow[part]) continue;
      const keys = keysOf(part);
      const queued = await flows.queuedKeys(this.db, this.sub, part, keys);
      for (const key of keys) this.queues.set(`${part}\u0000${key}`, queued.has(key));
      if (part === 'concurrency') {
        const running = await flows.runningUnderKeys(this.db, this.sub, keys);
        for (const key of keys) this.running.set(key, running.get(key) ?? 0);
      }
    }
  }

  private async windowOf(part: 'throttle' | 'rate_limit', key: string, periodMs: number) {
    const id = `${part}\u0000${key}`;
    let w = this.windows.get(id);
    if (!w) {
      const since = iso(new Date(this.now.getTime() - periodMs));
      w = (await flows.windowsSince(this.db, this.sub, part, [key], since)).get(key) ?? [];
      this.windows.set(id, w);
    }
    return w;
  }

  /**
   * Whether the queue has waiting runs. A claimed run asking is never in it: a run waits in the
   * queue of its own reason only, and that queue's order it keeps without asking.
   */
  private async queued(reason: PendingReason, key: string): Promise<boolean> {
    const id = `${reason}\u0000${key}`;
    let q = this.queues.get(id);
    if (q === undefined) {
      q = (await flows.queuedKeys(this.db, this.sub, reason, [key])).has(key);
      this.queues.set(id, q);
    }
    return q;
  }

  /** The reason a rate limit refuses `event`, or null (then it counts in the window). */
  async rateLimited(event: CloudEvent): Promise<string | null> {
    const rl = this.flow.rate_limit;
    if (!rl) return null;
    const key = flowKey(this.cache, this.flow, 'rate_limit', event);
    const w = await this.windowOf('rate_limit', key, rl.period_ms);
    if (w.length >= rl.limit)
      return (
        `not started: rate_limit: ${rl.limit} run(s) per ${rl.period_ms} ms` +
        `${key === SHARED_KEY ? '' : ` for key ${key}`} reached`
      );
    w.push(this.at);
    this.entries.push({ subscriptionId: this.sub, part: 'rate_limit', key, at: this.at });
    return null;
  }

  /**
   * Whether a run on `event` starts now or waits, and where. `current` is a claimed waiting run: its
   * own queue's order is already kept (it was that queue's head), others' are joined at their end.
   */
  async place(event: CloudEvent, current?: { reason: PendingReason | null }): Promise<Placement> {
    const { throttle, concurrency } = this.flow;
    let throttleKey: string | undefined;
    let runningNow = 0;
    let concurrencyKey: string | undefined;
    if (throttle) {
      throttleKey = flowKey(this.cache, this.flow, 'throttle', event);
      if (current?.reason !== 'throttle' && (await this.queued('throttle', throttleKey)))
        return this.wait('throttle', throttleKey, null);
      const w = await this.windowOf('throttle', throttleKey, throttle.period_ms);
      if (w.length >= throttle.limit) {
        // Sliding: the start `limit` places back leaves the window one period after it.
        const free = Date.parse(w[w.length - throttle.limit]) + throttle.period_ms;
        return this.wait('throttle', throttleKey, iso(new Date(free)));
      }
    }
    if (concurrency) {
      concurrencyKey = flowKey(this.cache, this.flow, 'concurrency', event);
      if (current?.reason !== 'concurrency' && (await this.queued('concurrency', concurrencyKey)))
        return this.wait('concurrency', concurrencyKey, null);
      runningNow =
        this.running.get(concurrencyKey) ??
        (await flows.runningUnderKeys(this.db, this.sub, [concurrencyKey])).get(concurrencyKey) ??
        0;
      if (runningNow >= concurrency.limit) return this.wait('concurrency', concurrencyKey, null);
    }
    if (throttle && throttleKey !== undefined) {
      (await this.windowOf('throttle', throttleKey, throttle.period_ms)).push(this.at);
      this.entries.push({ subscriptionId: this.sub, part: 'throttle', key: throttleKey, at: this.at });
      // A head that starts hands the turn to the next (a run joining starts nothing: it queued).
      if (current?.reason === 'throttle') this.wakes.set(`t${throttleKey}`, ['throttle', throttleKey]);
    }
    if (concurrency && concurrencyKey !== undefined) {
      this.running.set(concurrencyKey, runningNow + 1);
      if (current?.reason === 'concurrency' && runningNow + 1 < concurrency.limit)
        this.wakes.set(`c${concurrencyKey}`, ['concurrency', concurrencyKey]);
    }
    return { start: true, concurrencyKey: concurrencyKey ?? null };
  }

  private wait(reason: PendingReason, key: string, wakeAt: string | null): Placement {
    this.queues.set(`${reason}\u0000${key}`, true);
    return { start: false, reason, key, wakeAt };
  }

  /** Records the window entries and wakes the queues' heads (after the runs are written). */
  async finish(): Promise<boolean> {
    await flows.recordWindow(this.db, this.entries);
    let woke = false;
    for (const [reason, key] of this.wakes.values())
      if (await flows.wakeHead(this.db, this.sub, reason, key, this.at)) woke = true;
    return woke;
  }
}
