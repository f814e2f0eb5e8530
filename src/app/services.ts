import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { type AnalyticsService, createAnalyticsService } from '../areas/analytics/service.js';
import { type AuthService, createAuthService } from '../areas/auth/service.js';
import { createEnrollmentService, type EnrollmentService } from '../areas/enrollments/service.js';
import { createEventTypeService } from '../areas/events/event-types.js';
import type { EventHandler } from '../areas/events/handlers.js';
import { createOutboxMetrics } from '../areas/events/metrics.js';
import { createOutboxJob } from '../areas/events/outbox.js';
import { createEventPublisher } from '../areas/events/publish.js';
import { createEventRegistry } from '../areas/events/registry.js';
import { createEventsService, type EventsService } from '../areas/events/service.js';
import { createOutboxSignal } from '../areas/events/signal.js';
import { createIdentityService, type IdentityService } from '../areas/identity/service.js';
import { createPluginMetrics } from '../areas/plugins/metrics.js';
import { createPluginService, type PluginService } from '../areas/plugins/service.js';
import { createQuestionnaireArea, type QuestionnaireArea } from '../areas/questionnaires/area.js';
import { callLimitPruner } from '../areas/retention/call-limits.js';
import { createPruneJob } from '../areas/retention/job.js';
import { createRetentionMetrics } from '../areas/retention/metrics.js';
import { createScheduleJob, SCHEDULES_JOB } from '../areas/schedules/job.js';
import { createScheduleMetrics } from '../areas/schedules/metrics.js';
import { createScheduleService, type ScheduleService } from '../areas/schedules/service.js';
import { enrichEventData } from '../areas/submissions/enrich.js';
import { createSubmissionService, type SubmissionService } from '../areas/submissions/service.js';
import { createSubscriptionService, type SubscriptionService } from '../areas/subscriptions/service.js';
import { createVaultService, type VaultService } from '../areas/vault/service.js';
import { createDeliveryEngine, type DeliveryEngine, WEBHOOKS_JOB } from '../areas/webhooks/engine.js';
import { createWebhookMetrics } from '../areas/webhooks/metrics.js';
import { createWebhookService, type WebhookService } from '../areas/webhooks/service.js';
import { createRunControlService, type RunControlService } from '../areas/workflows/control.js';
import { createWorkflowEngine, WORKFLOWS_JOB, type WorkflowEngine } from '../areas/workflows/engine.js';
import { createWorkflowMetrics } from '../areas/workflows/metrics.js';
import { createWorkflowService, type WorkflowService } from '../areas/workflows/service.js';
import type { Config } from '../config/config.js';
import type { Store } from '../db/store.js';
import type { Authenticator } from '../http/access.js';
import type { Clock } from '../lib/clock.js';
import { type GuardOptions, lookupFor } from '../lib/net-guard.js';
import { NO_TRACING, type Tracer } from '../lib/tracing.js';
import { Wakeups } from '../worker/wakeups.js';
import type { Job } from '../worker/worker.js';
import { createMetricsRegistry, registerStoreMetrics } from './metrics.js';

/**
 * The composition root: every area's service, built once in dependency order and passed
 * explicitly. Routes, the worker and the CLI all use these; nothing reaches into another area's store.
 */
export interface Services {
  wakeups: Wakeups;
  /** What /metrics serves: the pipeline's metrics (each area registers its own) and HTTP's. */
  metrics: Registry;
  /** publish (inside a transaction) and ingest, the event type registry (`types`), the outbox task list. */
  events: EventsService;
  authenticate: Authenticator;
  /** Users, roles, scopes, API keys, sessions and the authenticator (src/areas/identity). */
  identity: IdentityService;
  /** Sign-in flows: credentials, refresh tokens, MFA, password reset, external IdP, devices. */
  auth: AuthService;
  /** Questionnaires and their revisions, snapshots, forks (docs/platform.md). */
  questionnaires: QuestionnaireArea['questionnaires'];
  /** Folders and the folder tree (docs/platform.md#folders). */
  folders: QuestionnaireArea['folders'];
  /** Folder and questionnaire grants (docs/platform.md#permissions). */
  permissions: QuestionnaireArea['permissions'];
  /** Public app config and effective questionnaire/folder config (docs/platform.md#config). */
  platformConfig: QuestionnaireArea['platformConfig'];
  /** Enrollments of responders into questionnaires, consent (docs/platform.md#enrollments). */
  enrollments: EnrollmentService;
  /** Questionnaire submissions and their events (docs/platform.md#submissions). */
  submissions: SubmissionService;
  /** Signed BI dashboard embedding (docs/platform.md#analytics). */
  analytics: AnalyticsService;
  vault: VaultService;
  /** Plugin definitions (discovered at start-up), instances and invocation (docs/plugins.md). */
  plugins: PluginService;
  /** Event subscriptions and their graphs (docs/workflows.md). */
  subscriptions: SubscriptionService;
  /** Cancel, re-run, retry and replay runs (docs/workflows.md "Run control"). */
  runControl: RunControlService;
  /** Cron schedules publishing events (docs/schedules.md); the `schedules` job fires them. */
  schedules: ScheduleService;
  /** The durable workflow engine: the router (an event handler) and the `workflows` job. */
  workflowEngine: WorkflowEngine;
  /** Workflow runs, introspection, evaluation and simulation (docs/workflows.md). */
  workflows: WorkflowService;
  /** Webhooks: CRUD, deliveries and the dispatcher (an event handler). */
  webhooks: WebhookService;
  /** The webhook sender: its pool of attempts in flight and the `webhooks` job that feeds it. */
  webhookEngine: DeliveryEngine;
  /** What the outbox drain hands every event to, fixed at construction (src/areas/events/handlers.ts). */
  eventHandlers: readonly EventHandler[];
  /** Background loops the worker runs. */
  jobs: Job[];
}

export interface ServiceDeps {
  config: Config;
  store: Store;
  clock: Clock;
  log: Logger;
  /** Spans of runs, nodes, plugin calls and webhook attempts (NO_TRACING when off). */
  tracer?: Tracer;
  /** Handlers the drain calls after the areas' own (a test's or a benchmark's probe). */
  extraEventHandlers?: readonly EventHandler[];
  /** This process runs the worker alone (`svc worker`): every event comes from other processes. */
  workerOnly?: boolean;
}

export function createServices(deps: ServiceDeps): Services {
  const tracer = deps.tracer ?? NO_TRACING;
  const wakeups = new Wakeups();
  const metrics = createMetricsRegistry();
  registerStoreMetrics(metrics, deps.store.activity);
  const eventRegistry = createEventRegistry();
  const outboxSignal = createOutboxSignal({
    store: deps.store,
    wakeups,
    log: deps.log,
    watchOtherProcesses: deps.workerOnly ?? false,
  });
  const eventTypes = createEventTypeService({
    store: deps.store,
    clock: deps.clock,
    registry: eventRegistry,
    // Called at request time, once the areas below exist.
    usersOf: async (type) => [
      ...(await subscriptions.namingType(type)),
      ...(await webhooks.namingType(type)),
    ],
  });
  const events = createEventsService({
    store: deps.store,
    clock: deps.clock,
    types: eventTypes,
    wake: outboxSignal.wake,
    // Outside production every published event is checked against the registry (docs/events.md).
    publisher: createEventPublisher({
      clock: deps.clock,
      wake: outboxSignal.wake,
      registry: deps.config.production ? undefined : eventRegistry,
      enrich: enrichEventData,
      // Called at publish time, once the drain below exists.
      drain: { claim: () => outbox.claim(), started: (rows) => outbox.started(rows) },
    }),
  });
  const identity = createIdentityService({
    store: deps.store,
    clock: deps.clock,
    log: deps.log,
    events,
    // Always set here: config refuses production without it and dev-secrets fills it otherwise.
    jwtSecret: deps.config.jwtSecret!,
    passwordHashCost: deps.config.passwordHashCost,
    accessTokenTtlSeconds: deps.config.accessTokenTtlSeconds,
  });
  const catalogue = createQuestionnaireArea({
    config: deps.config,
    store: deps.store,
    clock: deps.clock,
    log: deps.log,
    events,
    identity,
  });
  const questionnaires = catalogue.questionnaires;
  const enrollments = createEnrollmentService({
    store: deps.store,
    clock: deps.clock,
    identity,
    questionnaires,
  });
  const vault = createVaultService({
    store: deps.store,
    clock: deps.clock,
    log: deps.log,
    encryptionKey: deps.config.vaultEncryptionKey,
    previousKeys: deps.config.vaultPreviousKeys,
  });
  // How svc reaches out (webhooks, the http and email actions): the SSRF policy and the resolver.
  const network: GuardOptions = {
    allowPrivate: deps.config.allowPrivateNetworks,
    lookup: lookupFor(deps.config.dnsServers),
  };
  const webhooks = createWebhookService({
    store: deps.store,
    clock: deps.clock,
    log: deps.log,
    network,
    wake: () => wakeups.wake(WEBHOOKS_JOB),
    eventTypes,
    vault,
  });
  const webhookEngine = createDeliveryEngine({
    store: deps.store,
    clock: deps.clock,
    log: deps.log,
    timeoutMs: deps.config.webhookTimeoutMs,
    backoffBaseSeconds: deps.config.webhookBackoffBaseSeconds,
    retryIntervalMs: deps.config.webhookRetryIntervalMs,
    network,
    wake: () => wakeups.wake(WEBHOOKS_JOB),
    metrics: createWebhookMetrics(metrics),
    secrets: vault,
    publisher: events,
    tracer,
  });
  const plugins = createPluginService({
    store: deps.store,
    clock: deps.clock,
    log: deps.log,
    vault,
    pluginDir: deps.config.pluginDir,
    pluginServices: deps.config.pluginServices,
    network,
    metrics: createPluginMetrics(metrics, deps.store, deps.clock),
    tracer,
  });
  const auth = createAuthService({
    store: deps.store,
    clock: deps.clock,
    log: deps.log,
    identity,
    events,
    config: deps.config,
    vault,
  });
  const subscriptions = createSubscriptionService({
    store: deps.store,
    clock: deps.clock,
    actions: plugins,
    eventTypes,
    publisher: events,
  });
  const workflowEngine = createWorkflowEngine({
    store: deps.store,
    clock: deps.clock,
    log: deps.log,
    subscriptions,
    actions: plugins,
    metrics: createWorkflowMetrics(metrics, deps.store),
    wakeups,
    leaseMs: deps.config.workflowLeaseMs,
    pollIntervalMs: deps.config.workflowPollIntervalMs,
    runParallelism: deps.config.workflowRunParallelism,
    workerParallelism: deps.config.workflowWorkerParallelism,
    maxDepth: deps.config.workflowMaxDepth,
    maxRunsPerMinute: deps.config.workflowMaxRunsPerMinute,
    publisher: events,
    runEventWanted: async (type) =>
      (await subscriptions.namingType(type)).length > 0 || (await webhooks.wantsType(type)),
    checkEventData: (type, data) => eventTypes.checkData(type, data),
    tracer,
  });
  // A plugin instance's freed concurrency slot wakes the attempts waiting for it (docs/plugins.md "Limits").
  plugins.onSlotFreed((holders) => {
    workflowEngine
      .slotFreed(holders)
      .catch((err) => deps.log.warn({ err }, 'plugin limit waiters not woken; they ask again at their poll'));
  });
  // The drain comes last: its handlers are the areas' event consumers, complete from the start.
  const eventHandlers = [
    webhooks.dispatcher,
    workflowEngine.router,
    workflowEngine.waits,
    ...(deps.extraEventHandlers ?? []),
  ];
  const outbox = createOutboxJob(
    {
      store: deps.store,
      clock: deps.clock,
      log: deps.log,
      wakeups,
      handlers: eventHandlers,
      signal: outboxSignal,
      metrics: createOutboxMetrics(metrics, deps.store, deps.clock),
    },
    { intervalMs: deps.config.outboxDrainIntervalMs, leaseMs: deps.config.outboxLeaseMs },
  );
  const schedules = createScheduleService({
    store: deps.store,
    clock: deps.clock,
    eventTypes,
    wake: () => wakeups.wake(SCHEDULES_JOB),
  });
  const scheduleJob = createScheduleJob({
    store: deps.store,
    clock: deps.clock,
    log: deps.log,
    publisher: events,
    eventTypes,
    metrics: createScheduleMetrics(metrics, deps.store, deps.clock),
    pollIntervalMs: deps.config.schedulePollIntervalMs,
    wake: () => wakeups.wake(SCHEDULES_JOB),
    tracer,
  });
  const workflows = createWorkflowService({
    store: deps.store,
    clock: deps.clock,
    subscriptions,
    planOf: workflowEngine.planOf,
    enrich: enrichEventData,
    actions: plugins,
    tracer,
    traceUrlTemplate: deps.config.traceUrlTemplate,
  });
  const runControl = createRunControlService({
    store: deps.store,
    clock: deps.clock,
    subscriptions,
    planOf: workflowEngine.planOf,
    wake: () => wakeups.wake(WORKFLOWS_JOB),
    publisher: events,
    pastEvents: (type, from, to, limit) => events.eventsBetween(type, from, to, limit),
    tracer,
    traceUrlTemplate: deps.config.traceUrlTemplate,
  });
  // Retention (docs/reliability.md "Retention"): each area removes its own finished records.
  const pruners = [
    workflows.pruner(deps.config.retention),
    workflows.flowWindowPruner(),
    callLimitPruner(deps.store, deps.clock),
    webhooks.pruner(deps.config.retention.deliveriesSeconds),
    events.pruner(deps.config.retention.outboxSeconds),
  ];
  const pruneJob = createPruneJob({
    store: deps.store,
    clock: deps.clock,
    log: deps.log,
    pruners,
    metrics: createRetentionMetrics(metrics, deps.clock, pruners),
    intervalMs: deps.config.pruneIntervalMs,
  });
  return {
    wakeups,
    metrics,
    events,
    authenticate: identity.authenticate,
    identity,
    auth,
    vault,
    plugins,
    subscriptions,
    schedules,
    workflowEngine,
    workflows,
    runControl,
    questionnaires,
    folders: catalogue.folders,
    permissions: catalogue.permissions,
    platformConfig: catalogue.platformConfig,
    enrollments,
    submissions: createSubmissionService({
      store: deps.store,
      clock: deps.clock,
      events,
      questionnaires,
      enrollments,
      settings: catalogue.platformConfig,
    }),
    analytics: createAnalyticsService({ config: deps.config.analytics, clock: deps.clock }),
    webhooks,
    webhookEngine,
    eventHandlers,
    jobs: [outbox, webhookEngine.job, workflowEngine.job, scheduleJob, auth.cleanupJob, pruneJob],
  };
}
