import { anyScope } from '../../http/access.js';
import type { App } from '../../http/app.js';
import { envelope, splitListQuery } from '../../http/list.js';
import { errorAnswers } from '../../http/schemas.js';
import { assertCloudEvent, type CloudEvent } from '../events/cloudevent.js';
import {
  ContextBody,
  ContextResponse,
  EvaluateBody,
  EvaluateResponse,
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
export function registerWorkflowRoutes(app: App, { workflows }: { workflows: WorkflowService }): void {
  app.post(
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
    async (req) => workflows.simulate(req.params.id, assertCloudEvent(req.body.event) as CloudEvent),
  );
  app.get(
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
  app.get(
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
    app.post(
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
      async (req) => workflows[verb](req.principal.userId, req.params.id),
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
  app.get(
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
  app.post(
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
  app.post(
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
