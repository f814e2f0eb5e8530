import type { Logger } from 'pino';
import { takeLocks } from '../../db/locks.js';
import type { Store } from '../../db/store.js';
import { AppError } from '../../http/errors.js';
import { depthOf } from '../../lib/causation.js';
import { type Clock, iso } from '../../lib/clock.js';
import type { DueTimer } from '../../worker/due-timer.js';
import type { CloudEvent } from '../events/cloudevent.js';
import { runsOfEvents } from './control-store.js';
import {
  type FlowControl,
  FlowKeyError,
  type FlowPart,
  flowKey,
  flowPriority,
  type PendingReason,
  shapesRuns,
} from './flow-control.js';
import { Decisions, earliest, lockNames, type Placement } from './flow-decisions.js';
import * as flows from './flow-store.js';
import type { GraphSource, RoutedSubscription } from './graph-source.js';
import { CompiledCache } from './jsonlogic.js';
import { RunMachine } from './machine.js';
import type { WorkflowMetrics } from './metrics.js';
import type { Plan } from './plan.js';
import { newRun, skippedRun } from './router.js';
import type { RunTracing } from './run-tracing.js';
import { insertRuns } from './store.js';
import type { WorkflowRunNodeTable, WorkflowRunTable } from './tables.js';

/**
 * The flow gate (docs/workflows.md "Flow control"): decides, for a subscription with a flow control,
 * whether a run starts now, waits (in the queue of its reason and key), is folded into a debounced
 * run, or is refused by a rate limit; and, when a waiting run comes due, whether it starts.
 *
 * Each decision is made in one transaction under per-key locks (src/db/locks.ts), against what
 * the store holds: the running runs of a concurrency key, the window of a throttle or rate limit, the
 * queue of waiting runs. A queue's head is the only run of it with a wake time; starting it wakes
 * the next, and a run that ends under a concurrency key wakes that queue's head (store.ts writeRuns),
 * so no decision reads more than a queue's head and a limit's worth of rows.
 */
export interface FlowGateDeps {
  store: Store;
  clock: Clock;
  log: Logger;
  workerId: string;
  /** Where a run this worker starts now has its lease until. */
  leaseUntil(): string;
  planOf(subscriptionId: string, version: number): Promise<Plan>;
  subscriptions: Pick<GraphSource, 'getActive'>;
  /** The span of a run a rate limit skipped. */
  tracing: RunTracing;
}

export interface FlowRouted {
  /** Runs started now, written running and held by this worker: the engine drives them. */
  started: RunMachine[];
  /** The earliest wake time of a run that waits (a debounce, a throttle), or null. */
  nextWake: string | null;
  /** A waiting run was woken to be asked again (due now). */
  woke: boolean;
  /** Runs written (started, waiting or skipped) and events folded into waiting runs. */
  counts: { started: number; waiting: number; skipped: number; folded: number };
}

export interface FlowAdmitted {
  /** The claimed waiting runs that start now (running, held by this worker). */
  started: WorkflowRunTable[];
  nextWake: string | null;
  woke: boolean;
  /** How long each started run waited, in seconds (metrics). */
  waited: Array<{ subscriptionId: string; seconds: number }>;
}

export interface FlowGate {
  /** The router's hand-over of `events` to a subscription with flow control. */
  route(sub: RoutedSubscription, flow: FlowControl, events: readonly CloudEvent[]): Promise<FlowRouted>;
  /** Claimed waiting runs (held by this worker): which start now; the others wait again. */
  admit(rows: readonly WorkflowRunTable[]): Promise<FlowAdmitted>;
}

export function createFlowGate(deps: FlowGateDeps): FlowGate {
  const { store, clock, log, workerId } = deps;
  const cache = new CompiledCache(500);

  function priorityOf(sub: string, flow: FlowControl, event: CloudEvent): number {
    const p = flowPriority(cache, flow, event);
    if (p.problem)
      log.warn({ subscription_id: sub, event_id: event.id, reason: p.problem }, 'flow control: priority 0');
    return p.priority;
  }

  async function route(sub: RoutedSubscription, flow: FlowControl, events: readonly CloudEvent[]) {
    const plan = await deps.planOf(sub.id, sub.graph_version);
    const now = clock.now();
    const at = iso(now);
    const out: FlowRouted = {
      started: [],
      nextWake: null,
      woke: false,
      counts: { started: 0, waiting: 0, skipped: 0, folded: 0 },
    };
    // The keys first: they name the locks, and a key that cannot be evaluated starts no run.
    const items = events.map((event) => {
      try {
        return {
          event,
          locks: lockNames(cache, sub.id, flow, event, ['rate_limit', 'debounce', 'throttle', 'concurrency']),
        };
      } catch (err) {
        if (!(err instanceof FlowKeyError)) throw err;
        return { event, locks: [], error: err.message };
      }
    });
    const started: Array<{ row: WorkflowRunTable; machine: RunMachine }> = [];
    await store.transaction(async (tx) => {
      await takeLocks(
        tx.db,
        items.flatMap((i) => i.locks),
      );
      // An event handed over again whose run exists already makes nothing (nor counts in a window).
      const known = await runsOfEvents(
        tx.db,
        sub.id,
        events.map((e) => e.id),
      );
      const d = new Decisions(tx.db, cache, sub.id, flow, now);
      await d.prefetch(items.filter((i) => !i.error && !known.has(i.event.id)).map((i) => i.event));
      const writes: Array<{ run: WorkflowRunTable; nodes: WorkflowRunNodeTable[] }> = [];
      /** Debounced runs this batch opened, by key: later events of the batch fold into them. */
      const opened = new Map<string, WorkflowRunTable>();
      for (const item of items) {
        const { event } = item;
        if (known.has(event.id)) continue;
        const refusal = item.error ? `not started: ${item.error}` : await d.rateLimited(event);
        if (refusal !== null) {
          writes.push({ run: skippedRun(sub, event, at, refusal), nodes: [] });
          out.counts.skipped++;
          continue;
        }
        const priority = priorityOf(sub.id, flow, event);
        const debounce = flow.debounce;
        if (debounce) {
          const key = flowKey(cache, flow, 'debounce', event);
          const again = (deadline: string | null) =>
            earliest(iso(new Date(now.getTime() + debounce.period_ms)), deadline) as string;
          const trigger = {
            event_id: event.id,
            event_type: event.type,
            trigger_event: JSON.stringify(event),
            causation_depth: depthOf(event),
            priority,
            updated_at: at,
          };
          const mine = opened.get(key);
          if (mine) {
            Object.assign(mine, trigger, {
              wake_at: again(mine.flow_deadline),
              debounced_events: (mine.debounced_events ?? 1) + 1,
            });
            out.counts.folded++;
            continue;
          }
          const open = await flows.openDebounce(tx.db, sub.id, key);
          if (open) {
            if (open.event_id !== event.id) {
              const wakeAt = again(open.flow_deadline);
              await flows.fold(tx.db, open.id, { ...trigger, wake_at: wakeAt });
              out.nextWake = earliest(out.nextWake, wakeAt);
            }
            out.counts.folded++;
            continue;
          }
          const { row, nodes } = newRun(plan, event, at, null);
          const deadline =
            debounce.max_wait_ms === undefined ? null : iso(new Date(now.getTime() + debounce.max_wait_ms));
          Object.assign(row, {
            status: 'pending',
            started_at: null,
            pending_reason: 'debounce',
            flow_key: key,
            flow_deadline: deadline,
            wake_at: again(deadline),
            debounced_events: 1,
            priority,
          });
          opened.set(key, row);
          writes.push({ run: row, nodes });
          continue;
        }
        const placement = await d.place(event);
        const { row, nodes, states } = newRun(plan, event, at, null);
        row.priority = priority;
        if (placement.start) {
          // Written running and held here: the decision counted it, and this engine drives it.
          row.concurrency_key = placement.concurrencyKey;
          row.locked_by = workerId;
          row.wake_at = deps.leaseUntil();
          const machine = new RunMachine(
            plan,
            event,
            { id: row.id, status: 'running', error: null, started_at: at, completed_at: null },
            states,
          );
          started.push({ row, machine });
        } else {
          Object.assign(row, {
            status: 'pending',
            started_at: null,
            pending_reason: placement.reason,
            flow_key: placement.key,
            wake_at: placement.wakeAt,
          });
        }
        writes.push({ run: row, nodes });
      }
      const inserted = await insertRuns(tx.db, writes);
      const created = new Set(writes.filter((_, i) => inserted[i]).map((w) => w.run.id));
      for (const w of writes) {
        if (!created.has(w.run.id)) continue;
        if (w.run.status === 'skipped' && deps.tracing.enabled)
          tx.afterCommit(() => deps.tracing.skipped(w.run, JSON.parse(w.run.trigger_event) as CloudEvent));
        if (w.run.status === 'pending') {
          out.counts.waiting++;
          out.nextWake = earliest(out.nextWake, w.run.wake_at);
        }
      }
      for (const s of started) if (created.has(s.row.id)) out.started.push(s.machine);
      out.counts.started = out.started.length;
      out.woke = await d.finish();
    });
    return out;
  }

  async function admit(rows: readonly WorkflowRunTable[]): Promise<FlowAdmitted> {
    const out: FlowAdmitted = { started: [], nextWake: null, woke: false, waited: [] };
    const bySub = new Map<string, WorkflowRunTable[]>();
    for (const r of rows)
      bySub.set(r.event_subscription_id, [...(bySub.get(r.event_subscription_id) ?? []), r]);
    for (const [subId, group] of bySub) {
      let flow: FlowControl | null = null;
      try {
        flow = (await deps.subscriptions.getActive(subId)).flow_control;
      } catch (err) {
        // Deleted since (its 404): nothing holds its waiting runs back any more. Anything else (the
        // store failing) leaves the claims to run out and be asked again.
        if (!(err instanceof AppError)) throw err;
      }
      // In start order: the order of the queues they came from.
      group.sort(
        (a, b) =>
          b.priority - a.priority || a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id),
      );
      const now = clock.now();
      const at = iso(now);
      await store.transaction(async (tx) => {
        const parts: FlowPart[] = ['throttle', 'concurrency'];
        const events = new Map(group.map((r) => [r.id, JSON.parse(r.trigger_event) as CloudEvent]));
        const keyProblem = new Map<string, string>();
        const names: string[] = [];
        if (shapesRuns(flow)) {
          for (const r of group) {
            try {
              names.push(...lockNames(cache, subId, flow, events.get(r.id) as CloudEvent, parts));
            } catch (err) {
              if (!(err instanceof FlowKeyError)) throw err;
              keyProblem.set(r.id, err.message);
            }
          }
        }
        await takeLocks(tx.db, names);
        const d = shapesRuns(flow) ? new Decisions(tx.db, cache, subId, flow, now) : undefined;
        await d?.prefetch(
          group.filter((r) => !keyProblem.has(r.id)).map((r) => events.get(r.id) as CloudEvent),
        );
        const passOn: Array<[PendingReason, string]> = [];
        /** Whether `r` leaves its throttle or concurrency queue other than by that rule's start. */
        const leftItsQueue = (r: WorkflowRunTable, placement: Placement) => {
          if (r.flow_key === null || (r.pending_reason !== 'throttle' && r.pending_reason !== 'concurrency'))
            return false;
          if (!placement.start) return placement.reason !== r.pending_reason || placement.key !== r.flow_key;
          return !(d && flow?.[r.pending_reason]);
        };
        for (const r of group) {
          const problem = keyProblem.get(r.id);
          if (problem !== undefined) {
            await flows.skipWaiting(tx.db, r.id, workerId, at, `not started: ${problem}`);
            // It leaves its queue without starting: the next takes its turn.
            if (leftItsQueue(r, { start: false, reason: 'debounce', key: '', wakeAt: null }))
              passOn.push([r.pending_reason as PendingReason, r.flow_key as string]);
            continue;
          }
          const placement: Placement = d
            ? await d.place(events.get(r.id) as CloudEvent, { reason: r.pending_reason })
            : { start: true, concurrencyKey: null };
          if (placement.start) {
            const row = await flows.startWaiting(
              tx.db,
              r.id,
              workerId,
              at,
              deps.leaseUntil(),
              placement.concurrencyKey,
            );
            if (row) {
              out.started.push(row);
              out.waited.push({
                subscriptionId: subId,
                seconds: (now.getTime() - Date.parse(r.created_at)) / 1000,
              });
            }
          } else {
            await flows.waitAgain(tx.db, r.id, workerId, at, placement);
            out.nextWake = earliest(out.nextWake, placement.wakeAt);
          }
          if (leftItsQueue(r, placement))
            passOn.push([r.pending_reason as PendingReason, r.flow_key as string]);
        }
        if (d && (await d.finish())) out.woke = true;
        // A run that left its queue other than by the rule that queued it (the rule is gone, or a
        // rule before it queues it elsewhere) hands that queue's turn to the next.
        for (const [reason, key] of passOn)
          if (await flows.wakeHead(tx.db, subId, reason, key, at)) out.woke = true;
      });
    }
    return out;
  }

  return { route, admit };
}

/**
 * The engine's side of flow control (flow-gate.ts): runs the gate starts at once are driven here,
 * waiting runs woken are claimed at once, and those waiting for a time are claimed then.
 */
export function engineFlowControl(
  gate: FlowGate,
  engine: { launch(m: RunMachine): void; notify(): void; dueTimer: DueTimer; metrics: WorkflowMetrics },
) {
  const wakes = (woke: boolean, nextWake: string | null) => {
    if (woke) engine.notify();
    if (nextWake !== null) engine.dueTimer.arm(Date.parse(nextWake));
  };
  return {
    async route(...args: Parameters<FlowGate['route']>) {
      const routed = await gate.route(...args);
      // Written running and held by this worker with the decision: driven now.
      for (const m of routed.started) engine.launch(m);
      wakes(routed.woke, routed.nextWake);
      return routed.counts;
    },
    /** Claimed runs ready to drive: the running ones, and the waiting ones the gate lets start. */
    async ready(due: WorkflowRunTable[]): Promise<WorkflowRunTable[]> {
      const waiting = due.filter((r) => r.status === 'pending');
      if (waiting.length === 0) return due;
      const admitted = await gate.admit(waiting);
      wakes(admitted.woke, admitted.nextWake);
      for (const w of admitted.waited) engine.metrics.runWaited(w.subscriptionId, w.seconds);
      return [...due.filter((r) => r.status !== 'pending'), ...admitted.started];
    },
  };
}
