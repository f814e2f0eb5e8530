import { anyScope } from '../../http/access.js';
import type { App } from '../../http/app.js';
import { envelope, splitListQuery } from '../../http/list.js';
import { errorAnswers } from '../../http/schemas.js';
import { assertCloudEvent, type CloudEvent } from '../events/cloudevent.js';
import type { RunControlService } from './control.js';
import {
  BulkCancelBody,
  BulkCancelResponse,
  ContextBody,
  ContextResponse,
  EvaluateBody,
  EvaluateResponse,
  ReplayBody,
  ReplayResponse,
  Run,
  RunList,
  RunNodeList,
  RunParams,
  RunQuery,
  SimulationResponse,
  TestBody,
} from './schemas.js';
import type { WorkflowService } from './service.js';

const tags = ['workflows'];

/** Simulation (workflow:execute), runs and introspection (workflow:read / workflow:execute). */
export function registerWorkflowRoutes(
  api: App,
  { workflows, runControl }: { workflows: WorkflowService; runControl: RunControlService },
): void {
  api.post(
    '/event_subscription/:id/test',
    {
      schema: {
        operationId: 'testEventSubscription',
        summary: "Simulate a subscription's graph on an event, without side effects",
        tags,
        description:
          'Simulates the subscription graph against an event: same states as a run, nothing persisted, plugins not called, delays skipped; node failures are reported inside a 200 answer.',
        params: RunParams,
        body: TestBody,
        response: { 200: SimulationResponse },
      },
      config: anyScope('workflow:execute'),
    },
    // The schema checks the shape; the CloudEvents rules (URI-reference source, media types, extension
    // values) are the ones every published event meets, so a simulated event meets them too.
    async (req) =>
      workflows.simulate(
        req.params.id,
        assertCloudEvent(req.body.event) as CloudEvent,
        (req.body.events ?? []).map((e) => assertCloudEvent(e) as CloudEvent),
      ),
  );
  api.get(
    '/workflow_run',
    {
      schema: {
        operationId: 'listWorkflowRuns',
        summary: 'List workflow runs',
        tags,
        querystring: RunQuery,
        response: { 200: RunList },
      },
      config: anyScope('workflow:read'),
    },
    async (req) => {
      const { page, filters } = splitListQuery(req.query);
      return envelope('runs', await workflows.list(page, filters), page);
    },
  );
  api.get(
    '/workflow_run/:id',
    {
      schema: {
        operationId: 'getWorkflowRun',
        summary: 'Get a workflow run',
        tags,
        params: RunParams,
        response: { 200: Run },
      },
      config: anyScope('workflow:read'),
    },
    async (req) => workflows.get(req.params.id),
  );
  const control = (
    verb: 'cancel' | 'rerun' | 'retry',
    operationId: string,
    summary: string,
    description: string,
  ) =>
    api.post(
      `/workflow_run/:id/${verb}`,
      {
        schema: {
          operationId,
          summary,
          description,
          tags,
          params: RunParams,
          response: { 200: Run, ...errorAnswers(404, 409) },
        },
        config: anyScope('workflow:execute'),
      },
      async (req) => runControl[verb](req.principal.userId, req.params.id),
    );
  api.post(
    '/workflow_run/cancel',
    {
      schema: {
        operationId: 'cancelWorkflowRuns',
        summary: 'Cancel many runs',
        description:
          'The pending and running runs among run_ids, or every pending and running run of event_subscription_id ' +
          '(at most 1000 per request; has_more says to send it again), each as POST /workflow_run/{id}/cancel does.',
        tags,
        body: BulkCancelBody,
        response: { 200: BulkCancelResponse },
      },
      config: anyScope('workflow:execute'),
    },
    async (req) => runControl.cancelMany(req.principal.userId, req.body),
  );
  api.post(
    '/event_subscription/:id/replay',
    {
      schema: {
        operationId: 'replayEventSubscription',
        summary: 'Run a subscription again on past events',
        description:
          'New runs of the subscription (its current graph) for the events of its type published in [from, to], ' +
          "oldest first, at most limit (default 100, at most 1000; next_from continues). The subscription's " +
          'filters and condition apply as when routing; an event that already had its run gets a re-run of it.',
        tags,
        params: RunParams,
        body: ReplayBody,
        response: { 200: ReplayResponse, ...errorAnswers(404) },
      },
      config: anyScope('workflow:execute'),
    },
    async (req) => runControl.replay(req.principal.userId, req.params.id, req.body),
  );
  control(
    'cancel',
    'cancelWorkflowRun',
    'Cancel a pending or running run',
    'The run ends cancelled at once: pending nodes are skipped, a DELAY or retry wait ends, an ACTION in flight ' +
      'may still complete at its target but is neither recorded nor retried. 409 WORKFLOW.RUN_FINISHED once it ended.',
  );
  control(
    'rerun',
    'rerunWorkflowRun',
    'Run again on the same event',
    "A new run of the run's subscription on the same trigger event and the subscription's current graph, " +
      'linked by rerun_of. Answers the new run.',
  );
  control(
    'retry',
    'retryWorkflowRun',
    'Resume a failed run from where it failed',
    'Its failed nodes run again (from their first attempt); completed and skipped nodes keep their results. ' +
      '409 WORKFLOW.RUN_NOT_FAILED unless the run failed.',
  );
  api.get(
    '/workflow_run/:id/node',
    {
      schema: {
        operationId: 'listWorkflowRunNodes',
        summary: 'The node states of a run',
        tags,
        params: RunParams,
        response: { 200: RunNodeList },
      },
      config: anyScope('workflow:read'),
    },
    async (req) => workflows.nodes(req.params.id),
  );
  api.post(
    '/workflow_run/:id/context',
    {
      schema: {
        operationId: 'getWorkflowRunContext',
        summary: "The context a run's expressions see, with its available paths",
        tags,
        params: RunParams,
        body: ContextBody,
        response: { 200: ContextResponse },
      },
      config: anyScope('workflow:execute'),
    },
    async (req) => workflows.context(req.params.id, req.body.node_key),
  );
  api.post(
    '/workflow/evaluate',
    {
      schema: {
        operationId: 'evaluateExpression',
        summary: 'Evaluate a JSONLogic expression against a context',
        tags,
        description:
          'Evaluates a JSONLogic expression against `data` (direct mode) or against the context a node of a run saw (`workflow_run_id` + `node_key`).',
        body: EvaluateBody,
        response: { 200: EvaluateResponse },
      },
      config: anyScope('workflow:execute'),
    },
    async (req) => workflows.evaluate(req.body),
  );
}
