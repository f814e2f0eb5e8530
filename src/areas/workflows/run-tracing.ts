import { Lru } from '../../lib/lru.js';
import {
  eventTrace,
  NO_SPAN,
  NO_TRACING,
  type Span,
  type TraceContext,
  type Tracer,
  traceIdOf,
} from '../../lib/tracing.js';
import type { CloudEvent } from '../events/cloudevent.js';
import type { RunFacts } from './run-events.js';
import type { NodeState, RunState } from './run-state.js';
import type { WorkflowRunTable } from './tables.js';

/**
 * A run's spans (docs/observability.md "Runs"). A run may wait for days and move between workers,
 * so no span is held open across its waits:
 * - the run's own span, `workflow.run`, has ids fixed by the run's id under its trigger event's
 *   trace, and is recorded once, when the run ends, spanning its whole life;
 * - each stretch a worker drives it is a `workflow.run.segment`, recorded as it ends, a child of the
 *   run's span and linked to it (a run driven from start to end in one stretch has none);
 * - each node that ran is a `workflow.node <TYPE>`, recorded when the node's end is written, a child
 *   of the run's span, with ids fixed by the run and the node's key, so the calls its attempts made
 *   (recorded earlier, in whichever process made them) are its children.
 * Every process computes the same ids, so nothing about tracing is stored with a run.
 */

const TERMINAL_NODE = new Set(['completed', 'failed']);

/**
 * Whether a trace is recorded: every sampler svc offers decides once per trace (from its id or its
 * caller's flag), so a run's spans are recorded exactly when its own context says sampled.
 */
const sampled = (context: TraceContext | undefined): boolean => context?.traceparent.endsWith('-01') ?? false;

const ms = (at: string | null): number | undefined => (at === null ? undefined : Date.parse(at));

export function createRunTracing(tracer: Tracer = NO_TRACING, traceUrlTemplate?: string) {
  /**
   * Contexts already computed, by run id (a run asks for its own many times). Bounded: a busy engine
   * asks for thousands of runs, and one forgotten is cheap to compute again.
   */
  const contexts = new Lru<TraceContext | null>(10_000);

  /** The run's span context: fixed by its id under the trace its trigger event carries. */
  function run(runId: string, event: CloudEvent): TraceContext | undefined {
    if (!tracer.enabled) return undefined;
    return (
      contexts.getOrCreate(runId, () => tracer.fixed(`run:${runId}`, eventTrace(event)) ?? null) ?? undefined
    );
  }

  /** A node's span context: the parent of the calls its attempts make. */
  function node(runId: string, event: CloudEvent, key: string): TraceContext | undefined {
    if (!tracer.enabled) return undefined;
    return tracer.fixed(`node:${runId}:${key}`, run(runId, event) ?? null);
  }

  /** Records the run's span: it ended (completed, failed, cancelled or skipped) and that is written. */
  function runEnded(state: RunState, facts: RunFacts): void {
    if (!sampled(run(state.id, facts.event))) {
      contexts.delete(state.id);
      return;
    }
    const end = ms(state.completed_at);
    const span = tracer.start('workflow.run', {
      id: run(state.id, facts.event),
      parent: eventTrace(facts.event),
      startTime: ms(state.started_at) ?? end,
      attributes: {
        'svc.workflow_run.id': state.id,
        'svc.event_subscription.id': facts.subscriptionId,
        'svc.workflow_run.graph_version': facts.graphVersion,
        'svc.workflow_run.status': state.status,
        'svc.event.id': facts.event.id,
        'svc.event.type': facts.event.type,
      },
    });
    if (state.status === 'failed' && state.error !== null) span.fail(state.error);
    span.end(end);
    contexts.delete(state.id);
  }

  /**
   * What a stored run's end is known by (its end event's facts), with its span context: for runs
   * ended outside the engine's drive (cancelled, skipped, an unloadable graph).
   */
  function factsOf(row: WorkflowRunTable, event = JSON.parse(row.trigger_event) as CloudEvent): RunFacts {
    return {
      subscriptionId: row.event_subscription_id,
      graphVersion: row.graph_version,
      event,
      rerunOf: row.rerun_of,
      trace: run(row.id, event),
    };
  }

  return {
    enabled: tracer.enabled,
    run,
    node,

    /** Whether the run's spans are recorded (its trace is sampled). */
    recorded: (runId: string, event: CloudEvent): boolean => sampled(run(runId, event)),

    /** A log line's fields for the run's span: its trace and span ids, or none when not recorded. */
    logFields(runId: string, event: CloudEvent): { trace_id: string; span_id: string } | undefined {
      const context = run(runId, event);
      if (!sampled(context)) return undefined;
      const [, traceId, spanId] = (context as TraceContext).traceparent.split('-');
      return { trace_id: traceId, span_id: spanId };
    },

    /** A run as the API answers it: with the trace its spans are in, and that trace's link. */
    answered<R extends { id: string; trigger_event: unknown }>(
      r: R,
    ): R & { trace_id: string | null; trace_url: string | null } {
      const traceId = traceIdOf(run(r.id, r.trigger_event as CloudEvent)?.traceparent);
      return {
        ...r,
        trace_id: traceId,
        trace_url: traceId && traceUrlTemplate ? traceUrlTemplate.replaceAll('{trace_id}', traceId) : null,
      };
    },

    /**
     * Records a stretch this worker drove the run, from `start` (ms) to now. A run driven from its
     * start to its end in one stretch has none: its own span is that stretch.
     */
    segment(
      machine: { run: RunState; plan: { subscriptionId: string }; event: CloudEvent },
      stretch: { start: number; outcome: 'ended' | 'released' | 'stopped'; first: boolean },
    ): Span {
      if (stretch.first && stretch.outcome === 'ended') return NO_SPAN;
      const parent = run(machine.run.id, machine.event);
      if (!sampled(parent)) return NO_SPAN;
      const span = tracer.start('workflow.run.segment', {
        parent,
        links: [parent],
        startTime: stretch.start,
        attributes: {
          'svc.workflow_run.id': machine.run.id,
          'svc.event_subscription.id': machine.plan.subscriptionId,
          'svc.workflow_run.status': machine.run.status,
          'svc.workflow_run.segment.outcome': stretch.outcome,
        },
      });
      if (stretch.outcome === 'stopped') span.fail('the drive stopped before the run ended or was released');
      span.end();
      return span;
    },

    /** Records the spans of nodes whose end was just written. */
    nodesEnded(state: RunState, facts: RunFacts, nodes: readonly NodeState[]): void {
      if (!sampled(run(state.id, facts.event))) return;
      for (const n of nodes) {
        if (!TERMINAL_NODE.has(n.status) || n.completed_at === null) continue;
        const span = tracer.start(`workflow.node ${n.type}`, {
          id: node(state.id, facts.event, n.key),
          parent: run(state.id, facts.event),
          startTime: ms(n.started_at) ?? ms(n.completed_at),
          attributes: {
            'svc.workflow_run.id': state.id,
            'svc.workflow_node.key': n.key,
            'svc.workflow_node.type': n.type,
            'svc.workflow_node.status': n.status,
            'svc.workflow_node.attempts': n.attempts,
          },
        });
        if (n.status === 'failed' && n.error !== null) span.fail(n.error);
        span.end(ms(n.completed_at));
      }
    },

    runEnded,

    factsOf,

    /** Records the span of a run written ended, never driven (a guard or flow control skipped it). */
    skipped(row: WorkflowRunTable, event: CloudEvent): void {
      if (tracer.enabled) runEnded(row, factsOf(row, event));
    },
  };
}

export type RunTracing = ReturnType<typeof createRunTracing>;
