import { AppError } from '../../http/errors.js';
import type { Causation } from '../../lib/causation.js';
import type { Clock } from '../../lib/clock.js';
import { interruptionIsFree } from '../../worker/retry-policy.js';
import { describeThrown } from './jsonlogic.js';
import { askLimit, limitAdmitted, limitWait } from './machine/limits.js';
import type { RunMachine } from './machine.js';
import { type Invoke, nodeRetryPolicy } from './run-state.js';
import type { RunTracing } from './run-tracing.js';

/** What ACTION nodes need of the plugins area (services.plugins). */
export interface ActionInvoker {
  /**
   * The action's retry-relevant facts, and a call of it bound to the instance as read now: one read
   * serves the attempt's checks and its call (PLUGIN.INSTANCE_NOT_FOUND, PLUGIN.ACTION_NOT_FOUND).
   */
  prepareAction(
    instanceId: string,
    action: string,
  ): Promise<{
    description: { idempotent: boolean; timeout_seconds: number };
    /** Whether the instance has a rate_limit or max_concurrency (docs/plugins.md "Limits"). */
    limited: boolean;
    /** Asks the instance's limits for the call of `holder`; refused, it keeps its place in line. */
    admit(
      holder: string,
      callMs: number,
    ): Promise<
      | { go: true; permit: { release(): Promise<void> } }
      | { go: false; limit: 'rate_limit' | 'max_concurrency'; retryAt: Date }
    >;
    /**
     * Calls the action: answers by `timeoutMs` at the latest (rejecting with PLUGIN.TIMEOUT, even when
     * the handler ignores its signal), and rejects at once when `signal` aborts.
     */
    invoke(req: {
      payload?: unknown;
      idempotencyKey?: string;
      timeoutMs?: number;
      signal?: AbortSignal;
      causation?: Causation;
      permit?: { release(): Promise<void> };
    }): Promise<unknown>;
  }>;
}

export interface ActionCallDeps {
  clock: Clock;
  actions: ActionInvoker;
  /** Persists the run with this attempt in flight (running, input, attempts) under its lease. */
  persistAttempt(machine: RunMachine): Promise<void>;
  /** Told when a run enters (true) and leaves (false) a plugin call: the engine's scheduling counts them. */
  calling(active: boolean): void;
  /** The node's span context, the parent of the call's client span (run-tracing.ts). */
  tracing: RunTracing;
}

function errorText(err: unknown): string {
  if (err instanceof AppError) return `${err.code}: ${err.message}`;
  return describeThrown(err);
}

/**
 * One ACTION attempt (docs/workflows.md "Execution rules"): check the action, decide whether an attempt found in
 * flight after a crash may run again (only an idempotent action, as often as its retry policy's interruptions allow),
 * persist the attempt, resolve `$secret:` references, call the plugin under the effective timeout,
 * and tell the machine how it went. The machine decides retries and what follows. `signal` aborts
 * the call when the run ends meanwhile (its outcome is then not recorded: the machine stopped the node).
 */
/** How long a FOREACH's items share one read of their action (an instance disabled meanwhile stops them after it). */
const ITEM_ACTION_READ_MS = 1000;

export function createActionCaller(deps: ActionCallDeps) {
  /** Per run, the action its FOREACH items call as read last (one read serves items started within a second). */
  const itemActions = new WeakMap<RunMachine, Map<string, { at: number; prepared: Prepared }>>();
  type Prepared = Awaited<ReturnType<ActionInvoker['prepareAction']>>;

  async function prepare(
    machine: RunMachine,
    b: Invoke,
    instanceId: string,
    action: string,
  ): Promise<Prepared> {
    if (b.item === undefined) return deps.actions.prepareAction(instanceId, action);
    const now = performance.now();
    let byNode = itemActions.get(machine);
    const hit = byNode?.get(b.node.key);
    if (hit && now - hit.at < ITEM_ACTION_READ_MS) return hit.prepared;
    const prepared = await deps.actions.prepareAction(instanceId, action);
    if (!byNode) {
      byNode = new Map();
      itemActions.set(machine, byNode);
    }
    byNode.set(b.node.key, { at: now, prepared });
    return prepared;
  }

  async function invoke(machine: RunMachine, b: Invoke, signal?: AbortSignal): Promise<void> {
    const { node } = b;
    // The node's attempt, or a FOREACH item's (its action is in the node's config.action).
    const state = machine.attemptOf(b);
    const instanceId = node.forEach?.action?.pluginInstanceId ?? (node.config?.plugin_instance_id as string);
    const action = node.forEach?.action?.pluginAction ?? (node.config?.plugin_action as string);
    let prepared: Awaited<ReturnType<ActionInvoker['prepareAction']>> | undefined;
    let describeError: string | undefined;
    try {
      prepared = await prepare(machine, b, instanceId, action);
    } catch (err) {
      describeError = errorText(err);
    }
    // The run ended while the action was being looked up (another branch failed, an END was reached).
    if (!machine.wants(b)) return;
    if (b.interrupted) {
      const attempt = `attempt ${state.attempts} was in flight when its worker stopped and may have reached the plugin`;
      if (!prepared) {
        machine.invokeFailed(
          b,
          `${attempt}; whether "${action}" is idempotent cannot be checked (${describeError}), so it was not invoked again`,
          deps.clock.now(),
          true,
        );
        return;
      }
      if (!prepared.description.idempotent) {
        machine.invokeFailed(
          b,
          `${attempt}; action "${action}" is not idempotent, so it was not invoked again`,
          deps.clock.now(),
          true,
        );
        return;
      }
      if (!interruptionIsFree(nodeRetryPolicy(node.retry), state.interruptions)) {
        machine.invokeFailed(
          b,
          `${attempt}; the node was interrupted ${state.interruptions + 1} times, so it was not invoked again`,
          deps.clock.now(),
          true,
        );
        return;
      }
      machine.markInterrupted(b);
    }
    if (!prepared) {
      machine.beginInvoke(b, deps.clock.now());
      machine.invokeFailed(b, describeError as string, deps.clock.now());
      return;
    }
    const { description } = prepared;
    const actionMs = description.timeout_seconds * 1000;
    const limit = Math.max(1, Math.min(node.timeoutMs ?? Number.POSITIVE_INFINITY, actionMs));
    const holder =
      b.item === undefined
        ? `${machine.run.id}:${node.key}`
        : `${machine.run.id}:${node.key}:${b.item.index}`;
    let permit: { release(): Promise<void> } | undefined;
    if (prepared.limited) {
      // docs/plugins.md "Limits": over the instance's limit the attempt waits, uncounted, holding no slot.
      askLimit(machine, b);
      const answer = await prepared.admit(holder, limit);
      if (!answer.go) {
        limitWait(machine, b, answer.retryAt, answer.limit, instanceId, deps.clock.now());
        return;
      }
      limitAdmitted(machine, b);
      permit = answer.permit;
      if (!machine.wants(b)) {
        await permit.release();
        return;
      }
    }
    machine.beginInvoke(b, deps.clock.now());
    try {
      // The attempt is durable (running, input, attempts) before the plugin can see it.
      await deps.persistAttempt(machine);
      await call(machine, b, prepared, { holder, limit, permit, signal });
    } finally {
      await permit?.release();
    }
  }

  async function call(
    machine: RunMachine,
    b: Invoke,
    prepared: Prepared,
    at: { holder: string; limit: number; permit?: { release(): Promise<void> }; signal?: AbortSignal },
  ): Promise<void> {
    const { node } = b;
    const state = machine.attemptOf(b);
    const { limit } = at;
    deps.calling(true);
    try {
      // The invoker answers by `limit` at the latest (PLUGIN.TIMEOUT, even from a handler that ignores
      // its signal), and gives up when `signal` aborts: the run ended meanwhile (another branch
      // failed, an END was reached), so the call is abandoned. One deadline, kept by the invoker.
      const output = await prepared.invoke({
        // Vault references resolve inside the invocation, which keeps their values out of the
        // output the run node stores and out of every error (docs/vault.md "References").
        payload: state.input ?? {},
        idempotencyKey: at.holder,
        timeoutMs: limit,
        permit: at.permit,
        signal: at.signal,
        // What this call causes in svc is one level deeper than the run (the loop guard).
        // With tracing on, the node's span is the parent of the call's.
        causation: {
          depth: machine.depth + 1,
          id: machine.run.id,
          trace: deps.tracing.node(machine.run.id, machine.event, b.node.key),
        },
      });
      machine.invokeSucceeded(b, output, deps.clock.now());
    } catch (err) {
      const pluginTimeout = err instanceof AppError && err.code === 'PLUGIN.TIMEOUT';
      const message = pluginTimeout
        ? `attempt ${state.attempts} timed out after ${limit} ms (effective timeout: the smaller of timeout_ms ${
            node.timeoutMs ?? 'unset'
          } and the action's timeout_seconds ${prepared.description.timeout_seconds})`
        : errorText(err);
      const retryAfterMs =
        err instanceof AppError
          ? (err.details as { retry_after_ms?: unknown } | undefined)?.retry_after_ms
          : undefined;
      machine.invokeFailed(
        b,
        message,
        deps.clock.now(),
        false,
        typeof retryAfterMs === 'number' ? retryAfterMs : undefined,
      );
    } finally {
      deps.calling(false);
    }
  }

  return invoke;
}
