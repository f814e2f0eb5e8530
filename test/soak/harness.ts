import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import pino from 'pino';
import { closeContext, createContext } from '../../src/app/runtime.js';
import type { AppContext } from '../../src/app/types.js';
import { loadConfig } from '../../src/config/config.js';
import { SvcProcess } from '../helpers/process.js';
import { TEST_SECRETS } from '../helpers/secrets.js';

/**
 * The crash soak (#21, docs/reliability.md "Crash soak"): real `svc` processes under a steady stream
 * of domain writes (POST /folder, each publishing svc.folder.created), a subscription whose graph
 * calls the `http` action on a local receiver and a webhook to the same receiver, while processes are
 * killed with SIGKILL at random moments and restarted. Afterwards it drains and checks the promises:
 * one event per committed write, one run per (subscription, event), one delivery per (webhook,
 * event), nothing left unfinished, and non-idempotent calls never repeated. `npm run soak` runs the
 * long version (scripts/soak.ts); test/faults/crash-soak*.test.ts run short ones in CI.
 */

export interface SoakOptions {
  /** A SQLite file URL or a PostgreSQL database of its own (the soak fills it). */
  databaseUrl: string;
  /** `single`: one `svc serve` with its worker; `workers`: serve with SVC_WORKER=off and N `svc worker`s. */
  topology: { kind: 'single' } | { kind: 'workers'; workers: number };
  kills: number;
  /** Random pause before each kill (ms). */
  gapMs: [number, number];
  /** Concurrent writers. */
  writers?: number;
  /** Writes after the last kill, before draining. */
  tailMs?: number;
  /** How long the drain may take before the soak reports what is left. */
  drainTimeoutMs?: number;
  /** Progress lines (the script prints them; tests stay quiet). */
  say?: (line: string) => void;
  seed?: number;
  /** Run the built CLI (dist/, as users do; the soak script builds first) instead of src under tsx. */
  built?: boolean;
}

export interface SoakReport {
  store: string;
  topology: string;
  seed: number;
  durationS: number;
  kills: number;
  writes: {
    acknowledged: number;
    /** Requests that got no answer (refused connection while restarting, or cut by the kill). */
    cut: number;
    /** Answers other than 200, by status (none is expected: a write either commits or never answers). */
    refused: Record<number, number>;
    committed: number;
  };
  events: number;
  /** Committed writes without their event, or with more than one. */
  writesWithoutOneEvent: number;
  /** Acknowledged writes the store does not have. */
  acknowledgedButMissing: number;
  runs: { total: number; completed: number; failed: number; interrupted: number };
  /** (subscription, event) pairs with no run or more than one. */
  eventsWithoutOneRun: number;
  deliveries: { total: number; success: number; failed: number };
  eventsWithoutOneDelivery: number;
  /** Rows left pending/running/IN_PROGRESS after the drain. */
  unfinished: { tasks: number; runs: number; deliveries: number };
  /** http-action calls received more than once for one event (the action is not idempotent: must be 0). */
  actionRepeats: number;
  /** Webhook requests beyond one per delivery (at-least-once delivery: allowed, counted). */
  webhookRepeats: number;
  /** From each kill to the first write answered again (serve) or the restarted worker ready (ms). */
  recoveryMs: { p50: number; max: number; all: number[] };
  drainMs: number;
}

/** Short leases and intervals: a killed process's claims come back in seconds, not the defaults' 30 s. */
const PROCESS_ENV = {
  SVC_ALLOW_PRIVATE_NETWORKS: 'true',
  SVC_OUTBOX_LEASE_MS: '2000',
  SVC_OUTBOX_DRAIN_INTERVAL_MS: '500',
  SVC_WORKFLOW_LEASE_MS: '2000',
  SVC_WORKFLOW_POLL_INTERVAL_MS: '250',
  SVC_WEBHOOK_TIMEOUT_MS: '1000',
  SVC_WEBHOOK_RETRY_INTERVAL_MS: '250',
  SVC_WEBHOOK_BACKOFF_BASE_SECONDS: '0',
  SVC_WORKFLOW_MAX_RUNS_PER_MINUTE: '0',
  SVC_ACCESS_TOKEN_TTL_SECONDS: '86400',
};

/** A small deterministic generator, so a seed printed by a run reproduces its kill timing. */
function random(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 2 ** 32;
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const percentile = (xs: number[], p: number) => {
  if (xs.length === 0) return 0;
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
};

/** The local receiver: counts http-action calls and webhook requests by event id. */
async function receiver(): Promise<{
  url: string;
  actions: Map<string, number>;
  hooks: Map<string, number>;
  server: Server;
}> {
  const actions = new Map<string, number>();
  const hooks = new Map<string, number>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as {
        id?: string;
        event?: string;
      };
      if (req.url === '/action' && body.event) actions.set(body.event, (actions.get(body.event) ?? 0) + 1);
      if (req.url === '/hook' && body.id) {
        const key = `${req.headers['webhook-id']}`;
        hooks.set(key, (hooks.get(key) ?? 0) + 1);
      }
      res.setHeader('content-type', 'application/json');
      res.end('{"ok":true}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, actions, hooks, server };
}

/** The soak's configuration, made through the services of a context on the same store. */
async function configure(ctx: AppContext, url: string): Promise<{ token: string }> {
  const s = ctx.services;
  const email = `soak-${randomBytes(4).toString('hex')}@example.test`;
  const user = await s.identity.createUser(null, {
    email,
    password: randomBytes(16).toString('hex'),
    role_keys: ['admin'],
  });
  const key = await s.identity.createApiKey(
    { userId: user.id, scopes: await s.identity.scopesOfUser(user.id), authPath: 'password' },
    { name: 'soak', scope_keys: ['folder:write', 'folder:read'], expires_in: 86_400 },
  );
  const defs = await s.plugins.listDefinitions(
    { limit: 1, offset: 0, sort_by: 'name', sort_dir: 'asc' },
    { name: 'http' },
  );
  const http = await s.plugins.createInstance('soak', {
    plugin_definition_id: defs.items[0].id,
    display_name: 'soak receiver',
    enabled: true,
  });
  const sub = await s.subscriptions.create('soak', { name: 'soak', event_type: 'svc.folder.created' });
  await s.subscriptions.putGraph('soak', sub.id, {
    nodes: [
      {
        key: 'call',
        type: 'ACTION',
        config: {
          plugin_instance_id: http.id,
          plugin_action: 'request',
          input_mapping: {
            method: 'POST',
            url: `${url}/action`,
            body: { eachKey: { event: { var: 'event.id' } } },
          },
        },
      },
      { key: 'end', type: 'END' },
    ],
    edges: [{ from_node_id: 'call', to_node_id: 'end' }],
  });
  await s.webhooks.create('soak', { name: 'soak', url: `${url}/hook`, event_types: ['svc.folder.created'] });
  return { token: key.token };
}

export async function runSoak(options: SoakOptions): Promise<SoakReport> {
  const say = options.say ?? (() => {});
  const seed = options.seed ?? Math.floor(Math.random() * 2 ** 31);
  const rnd = random(seed);
  const store = options.databaseUrl.startsWith('sqlite') ? 'sqlite' : 'postgres';
  const topology =
    options.topology.kind === 'single' ? 'svc serve' : `svc serve + ${options.topology.workers} svc worker`;
  say(`soak: ${store}, ${topology}, ${options.kills} kills, seed ${seed}`);

  const rx = await receiver();
  const ctx = await createContext(
    loadConfig({
      NODE_ENV: 'test',
      SVC_DATABASE_URL: options.databaseUrl,
      SVC_WORKER: 'off',
      SVC_ALLOW_PRIVATE_NETWORKS: 'true',
      SVC_PASSWORD_HASH_COST: '10',
      ...TEST_SECRETS,
    }),
    { log: pino({ level: 'silent' }) },
  );
  const processes: SvcProcess[] = [];
  const started = Date.now();
  try {
    const { token } = await configure(ctx, rx.url);
    const serveEnv: Record<string, string> = options.topology.kind === 'single' ? {} : { SVC_WORKER: 'off' };
    const spawn = async (role: 'serve' | 'worker') => {
      const p = new SvcProcess(
        role,
        options.databaseUrl,
        {
          ...PROCESS_ENV,
          ...(role === 'serve' ? serveEnv : {}),
        },
        options.built ? 'built' : 'source',
      );
      await p.ready();
      return p;
    };
    let serve = await spawn('serve');
    processes.push(serve);
    if (options.topology.kind === 'workers')
      for (let i = 0; i < options.topology.workers; i++) processes.push(await spawn('worker'));

    // Writers: POST /folder against whichever serve process is current.
    const acked = new Set<string>();
    /** Answers other than 200 by status; a write cut by a kill (no answer) is counted in `cut`. */
    const refused = new Map<number, number>();
    let cut = 0;
    let writing = true;
    let lastAckAt = 0;
    const writer = async (w: number) => {
      for (let n = 0; writing; n++) {
        try {
          const res = await fetch(`${serve.address}/api/v1/folder`, {
            method: 'POST',
            headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
            body: JSON.stringify({ name: `soak ${w}-${n}` }),
            signal: AbortSignal.timeout(10_000),
          });
          const body = (await res.json()) as { id?: string };
          if (res.status === 200 && body.id) {
            acked.add(body.id);
            lastAckAt = Date.now();
          } else refused.set(res.status, (refused.get(res.status) ?? 0) + 1);
        } catch {
          cut++;
          await sleep(100);
        }
      }
    };
    const writers = Array.from({ length: options.writers ?? 6 }, (_, w) => writer(w));

    const recovery: number[] = [];
    for (let k = 0; k < options.kills; k++) {
      const [lo, hi] = options.gapMs;
      await sleep(lo + rnd() * (hi - lo));
      const index = Math.floor(rnd() * processes.length);
      const victim = processes[index];
      const killedAt = Date.now();
      victim.child.kill('SIGKILL');
      await new Promise((r) => (victim.alive ? victim.child.once('exit', r) : r(null)));
      await victim.stop(); // removes its data dir
      const next = await spawn(victim.role);
      processes[index] = next;
      if (victim.role === 'serve') {
        serve = next;
        while (lastAckAt <= killedAt) await sleep(10);
      }
      recovery.push(Date.now() - killedAt);
      say(
        `kill ${k + 1}/${options.kills}: ${victim.role} pid ${victim.pid}, recovered in ${recovery.at(-1)} ms`,
      );
    }
    await sleep(options.tailMs ?? 1_000);
    writing = false;
    await Promise.all(writers);

    const drainStarted = Date.now();
    const unfinished = async () => {
      const count = async (table: string, column: string, states: string[]) => {
        const row = await sql<{ n: number | string }>`select count(*) as n from ${sql.table(table)}
          where ${sql.ref(column)} in (${sql.join(states)})`.execute(ctx.store.db);
        return Number(row.rows[0].n);
      };
      return {
        tasks: await count('event_delivery_task', 'status', ['PENDING', 'IN_PROGRESS']),
        runs: await count('workflow_run', 'status', ['pending', 'running']),
        deliveries: await count('webhook_delivery', 'status', ['PENDING', 'IN_PROGRESS']),
      };
    };
    let left = await unfinished();
    const drainDeadline = Date.now() + (options.drainTimeoutMs ?? 120_000);
    while (left.tasks + left.runs + left.deliveries > 0 && Date.now() < drainDeadline) {
      await sleep(250);
      left = await unfinished();
    }
    const drainMs = Date.now() - drainStarted;
    say(`drained in ${drainMs} ms; left: ${JSON.stringify(left)}`);

    const report = await check(ctx, acked, rx);
    return {
      store,
      topology,
      seed,
      durationS: Math.round((Date.now() - started) / 100) / 10,
      kills: recovery.length,
      writes: {
        acknowledged: acked.size,
        cut,
        refused: Object.fromEntries(refused),
        committed: report.committed,
      },
      ...report.figures,
      unfinished: left,
      recoveryMs: { p50: percentile(recovery, 50), max: Math.max(0, ...recovery), all: recovery },
      drainMs,
    };
  } finally {
    await Promise.all(processes.map((p) => p.stop()));
    await closeContext(ctx);
    await new Promise((r) => rx.server.close(r));
    rx.server.closeAllConnections();
  }
}

type Figures = Omit<
  SoakReport,
  'store' | 'topology' | 'seed' | 'durationS' | 'kills' | 'writes' | 'unfinished' | 'recoveryMs' | 'drainMs'
>;

/** The promises, read from the store and the receiver's counts. */
async function check(
  ctx: AppContext,
  acked: Set<string>,
  rx: { actions: Map<string, number>; hooks: Map<string, number> },
): Promise<{ committed: number; figures: Figures }> {
  const db = ctx.store.db;
  const folders = await db.selectFrom('folder').select('id').where('name', 'like', 'soak %').execute();
  const committed = new Set(folders.map((f) => f.id));
  const events = await db
    .selectFrom('event_delivery_task')
    .select(['event_id', 'cloudevent'])
    .where('event_type', '=', 'svc.folder.created')
    .execute();
  const eventsPerFolder = new Map<string, number>();
  for (const e of events) {
    const subject = (JSON.parse(e.cloudevent) as { subject: string }).subject;
    eventsPerFolder.set(subject, (eventsPerFolder.get(subject) ?? 0) + 1);
  }
  let writesWithoutOneEvent = 0;
  for (const id of committed) if (eventsPerFolder.get(id) !== 1) writesWithoutOneEvent++;
  for (const id of eventsPerFolder.keys()) if (!committed.has(id)) writesWithoutOneEvent++;
  let acknowledgedButMissing = 0;
  for (const id of acked) if (!committed.has(id)) acknowledgedButMissing++;

  const eventIds = new Set(events.map((e) => e.event_id));
  const runs = await db
    .selectFrom('workflow_run')
    .select(['event_id', 'status', 'error'])
    .where('event_type', '=', 'svc.folder.created')
    .where('rerun_of', 'is', null)
    .execute();
  const runsPerEvent = new Map<string, number>();
  for (const r of runs) runsPerEvent.set(r.event_id, (runsPerEvent.get(r.event_id) ?? 0) + 1);
  let eventsWithoutOneRun = 0;
  for (const id of eventIds) if (runsPerEvent.get(id) !== 1) eventsWithoutOneRun++;

  const deliveries = await db
    .selectFrom('webhook_delivery')
    .select(['id', 'event_id', 'status'])
    .where('event_type', '=', 'svc.folder.created')
    .execute();
  const deliveriesPerEvent = new Map<string, number>();
  for (const d of deliveries)
    deliveriesPerEvent.set(d.event_id, (deliveriesPerEvent.get(d.event_id) ?? 0) + 1);
  let eventsWithoutOneDelivery = 0;
  for (const id of eventIds) if (deliveriesPerEvent.get(id) !== 1) eventsWithoutOneDelivery++;

  let actionRepeats = 0;
  for (const n of rx.actions.values()) actionRepeats += n - 1;
  let webhookRepeats = 0;
  for (const n of rx.hooks.values()) webhookRepeats += n - 1;
  return {
    committed: committed.size,
    figures: {
      events: events.length,
      writesWithoutOneEvent,
      acknowledgedButMissing,
      runs: {
        total: runs.length,
        completed: runs.filter((r) => r.status === 'completed').length,
        failed: runs.filter((r) => r.status === 'failed').length,
        interrupted: runs.filter((r) => r.status === 'failed' && /in flight/.test(r.error ?? '')).length,
      },
      eventsWithoutOneRun,
      deliveries: {
        total: deliveries.length,
        success: deliveries.filter((d) => d.status === 'SUCCESS').length,
        failed: deliveries.filter((d) => d.status === 'FAILED').length,
      },
      eventsWithoutOneDelivery,
      actionRepeats,
      webhookRepeats,
    },
  };
}

/** The report as the lines `npm run soak` prints and docs/reliability.md quotes. */
export function describeReport(r: SoakReport): string {
  return [
    `${r.store}, ${r.topology}: ${r.kills} SIGKILLs in ${r.durationS} s (seed ${r.seed})`,
    `  writes: ${r.writes.acknowledged} acknowledged, ${r.writes.committed} committed, ${r.writes.cut} without an answer (process down), answers other than 200: ${JSON.stringify(r.writes.refused)}`,
    `  events: ${r.events}; committed writes without exactly one event: ${r.writesWithoutOneEvent}; acknowledged but missing: ${r.acknowledgedButMissing}`,
    `  runs: ${r.runs.total} (${r.runs.completed} completed, ${r.runs.failed} failed, of which ${r.runs.interrupted} interrupted in flight); events without exactly one run: ${r.eventsWithoutOneRun}`,
    `  deliveries: ${r.deliveries.total} (${r.deliveries.success} SUCCESS, ${r.deliveries.failed} FAILED); events without exactly one delivery: ${r.eventsWithoutOneDelivery}`,
    `  left unfinished after the drain: ${r.unfinished.tasks} tasks, ${r.unfinished.runs} runs, ${r.unfinished.deliveries} deliveries (drained in ${r.drainMs} ms)`,
    `  http-action calls repeated: ${r.actionRepeats} (must be 0); webhook requests repeated: ${r.webhookRepeats} (at-least-once, allowed)`,
    `  recovery after a kill: p50 ${r.recoveryMs.p50} ms, max ${r.recoveryMs.max} ms`,
  ].join('\n');
}

/** The promises a report breaks (empty when every one held); the soak's tests assert it is empty. */
export function soakHeld(r: SoakReport): string[] {
  const broken: string[] = [];
  if (r.writesWithoutOneEvent > 0)
    broken.push(`${r.writesWithoutOneEvent} committed writes without exactly one event`);
  if (r.acknowledgedButMissing > 0) broken.push(`${r.acknowledgedButMissing} acknowledged writes lost`);
  if (r.eventsWithoutOneRun > 0) broken.push(`${r.eventsWithoutOneRun} events without exactly one run`);
  if (r.eventsWithoutOneDelivery > 0)
    broken.push(`${r.eventsWithoutOneDelivery} events without exactly one delivery`);
  const left = r.unfinished.tasks + r.unfinished.runs + r.unfinished.deliveries;
  if (left > 0) broken.push(`${left} rows left unfinished`);
  if (r.actionRepeats > 0) broken.push(`${r.actionRepeats} non-idempotent calls repeated`);
  if (r.runs.failed !== r.runs.interrupted)
    broken.push(`${r.runs.failed - r.runs.interrupted} runs failed for another reason than a crash`);
  if (r.deliveries.failed > 0) broken.push(`${r.deliveries.failed} deliveries FAILED`);
  if (Object.keys(r.writes.refused).length > 0)
    broken.push(`writes answered ${JSON.stringify(r.writes.refused)}`);
  return broken;
}
