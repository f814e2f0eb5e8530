import { depthOf } from '../../lib/causation.js';
import type { TraceContext } from '../../lib/tracing.js';
import type { CloudEvent } from '../events/cloudevent.js';
import type { EventInput } from '../events/publish.js';
import type { RunState } from './run-state.js';

export const RUN_EVENT_SOURCE = '/api/v1/workflow_run';

/** What a run's end is known by: the facts every svc.workflow_run.* event carries. */
export interface RunFacts {
  subscriptionId: string;
  graphVersion: number;
  event: CloudEvent;
  rerunOf?: string | null;
  /** The run's span context (run-tracing.ts): its end event carries it. */
  trace?: TraceContext;
}

/**
 * The event a run's end publishes (docs/workflows.md "Run events"): `svc.workflow_run.<status>` with
 * the run's facts, one run deeper than its trigger. A run that a run event started publishes none:
 * an alerting workflow on `.completed` would otherwise report its own completions, each a new run.
 */
export function runEndedEvent(run: RunState, facts: RunFacts): EventInput | undefined {
  if (facts.event.type.startsWith('svc.workflow_run.')) return undefined;
  return {
    type: `svc.workflow_run.${run.status}`,
    source: RUN_EVENT_SOURCE,
    subject: run.id,
    data: {
      workflow_run_id: run.id,
      event_subscription_id: facts.subscriptionId,
      status: run.status,
      error: run.error,
      event_id: facts.event.id,
      event_type: facts.event.type,
      graph_version: facts.graphVersion,
      started_at: run.started_at,
      completed_at: run.completed_at,
      ...(facts.rerunOf !== undefined ? { rerun_of: facts.rerunOf } : {}),
    },
    causation: {
      depth: depthOf(facts.event) + 1,
      id: run.id,
      ...(facts.trace ? { trace: facts.trace } : {}),
    },
  };
}

/** How long "does anyone want svc.workflow_run.completed" is trusted. */
const INTEREST_MS = 5_000;

/**
 * Whether a run that ended with `status` publishes its event. Failed and cancelled runs always do;
 * a completed run only while an enabled subscription or webhook names the type (checked every 5 s):
 * every run completes, and an outbox task per run that nobody listens to would add a write (and a
 * drain step) to every run.
 */
export function runEventPolicy(wanted: (type: string) => Promise<boolean>) {
  let cached: { at: number; yes: boolean } | undefined;
  return async (status: string): Promise<boolean> => {
    if (status === 'failed' || status === 'cancelled') return true;
    if (status !== 'completed') return false;
    if (!cached || Date.now() - cached.at > INTEREST_MS) {
      cached = { at: Date.now(), yes: await wanted('svc.workflow_run.completed') };
    }
    return cached.yes;
  };
}
