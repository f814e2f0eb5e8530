/**
 * The whole pipeline from outside (#17): `POST /questionnaire_submission` by a signed-in user →
 * svc.submission.created → a subscription whose condition holds (`answers.score > 5`) → COMPUTE
 * `derive` → ACTION `http` POST of its output to a local receiver that checks it. "Full executions/s"
 * counts the receiver's valid POSTs, the backlog after the load window waited for and counted in the
 * time. svc runs as users run it (`node dist/cli/svc.js serve`, `npm run build` first) on a fresh
 * SQLite file or PostgreSQL database, set up over its API. The ceiling, in the same invocation: a plain
 * `node:http` server doing the same condition, computation and outbound POST, with no persistence.
 *
 *   npm run build && npm run bench -- pipeline [--store sqlite|postgres|<store>-thread|<store>-main|split|split-sqlite] [--connections 10,50]
 *     [--seconds 15] [--reps 3] [--request-only]
 *   npm run bench -- pipeline --cost-model [--store sqlite,postgres] [--seconds 5]
 *   npm run bench -- pipeline --instructions 1000 [--store sqlite] [--reps 3]   (callgrind.ts)
 *   npm run bench -- pipeline --storage 10000 [--store sqlite,postgres]   (bytes per execution, storage.ts)
 *
 * `sqlite` and `postgres` run `svc serve` as it starts by default (SVC_WORKER=auto: on a SQLite file
 * with two cores or more the worker in a worker thread, on PostgreSQL on the API's thread);
 * `<store>-thread` with SVC_WORKER=thread (the worker in a worker thread), `<store>-main` with
 * SVC_WORKER=main (the worker on the API's thread). `split` is PostgreSQL with
 * `svc serve SVC_WORKER=off` and one `svc worker`; `split-sqlite` the same on
 * one SQLite file (the worker woken by the file's write-ahead log). Prints figures; never fails.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { createPostgresDatabase } from '../../test/helpers/database.js';
import { COUNTED_NODE_ARGS, startCounting, stopCounting, underCallgrind, WARM_UP } from './callgrind.js';
import { ceiling } from './ceiling.js';
import { perExecution, storeSizes } from './storage.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const { values } = parseArgs({
  options: {
    store: { type: 'string', default: 'sqlite,postgres' },
    connections: { type: 'string', default: '10,50' },
    seconds: { type: 'string', default: '15' },
    reps: { type: 'string', default: '3' },
    // How long idle RSS is read after set-up (IDLE_WAIT_MS); shorter for quick experiments.
    'idle-seconds': { type: 'string', default: '120' },
    // The request stage alone: svc serve with SVC_WORKER=off and no worker; executions are not waited for.
    'request-only': { type: 'boolean', default: false },
    // How an execution's cost grows with stored runs, subscriptions of other types and nodes per graph.
    'cost-model': { type: 'boolean', default: false },
    // Instructions per execution counted by callgrind over this many executions (callgrind.ts).
    instructions: { type: 'string' },
    // Bytes stored per execution, table by table, over this many executions (storage.ts).
    storage: { type: 'string' },
  },
});
const SECONDS = Number(values.seconds);
const REQUEST_ONLY = values['request-only'];
const REPS = Number(values.reps);
const ANSWERS = { score: 7, q1: 'yes', q2: 3, q3: ['a', 'b'], comment: 'fine' };
const PG_BASE = process.env.SVC_BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const EMAIL = 'bench-admin@example.test';
const PASSWORD = 'bench-admin-password-1';

if (!existsSync(join(ROOT, 'dist/cli/svc.js'))) {
  console.error('bench/pipeline runs the built CLI: npm run build first');
  process.exit(2);
}

/** The receiver: counts POSTs whose body is what the graph computes. */
function receiver() {
  let valid = 0;
  let invalid = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        if (body.doubled === 14 && body.label === 'svc.submission.created:7') valid++;
        else invalid++;
      } catch {
        invalid++;
      }
      res.setHeader('content-type', 'application/json');
      res.end('{"ok":true}');
    });
  });
  server.keepAliveTimeout = 60_000;
  return {
    server,
    counts: () => ({ valid, invalid }),
    async listen() {
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    },
  };
}

async function freePort(): Promise<number> {
  const s = http.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

interface Svc {
  url: string;
  databaseUrl: string;
  processes: ChildProcess[];
  stop(): Promise<void>;
}

/** `wrap`: a command line prefix svc runs under (callgrind.ts). */
async function startSvc(variant: string, wrap: string[] = []): Promise<Svc> {
  // `<store>-thread` / `<store>-main`: SVC_WORKER=thread / main instead of the default (auto).
  const place = /-(thread|main)$/.exec(variant)?.[1];
  const kind = place ? variant.slice(0, -place.length - 1) : variant;
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-'));
  let databaseUrl = `sqlite:${dir}/svc.db`;
  let drop = async () => {};
  if (kind !== 'sqlite' && kind !== 'split-sqlite') {
    const database = await createPostgresDatabase(PG_BASE, 'svc_bench');
    databaseUrl = database.url;
    drop = database.drop;
  }
  const port = await freePort();
  const env = {
    PATH: process.env.PATH,
    SVC_DATABASE_URL: databaseUrl,
    SVC_DATA_DIR: dir,
    PORT: String(port),
    HOST: '127.0.0.1',
    SVC_JWT_SECRET: 'bench-jwt-secret-that-is-long-enough-0123456789',
    SVC_VAULT_ENCRYPTION_KEY: 'bench-vault-key',
    SVC_BOOTSTRAP_ADMIN_EMAIL: EMAIL,
    SVC_BOOTSTRAP_ADMIN_PASSWORD: PASSWORD,
    SVC_ALLOW_PRIVATE_NETWORKS: 'true',
    SVC_WORKFLOW_MAX_RUNS_PER_MINUTE: '0',
    SVC_ACCESS_TOKEN_TTL_SECONDS: '86400',
  };
  // e.g. SVC_BENCH_NODE_ARGS='--cpu-prof --cpu-prof-dir=/tmp/prof' to profile svc under the load.
  const nodeArgs = (process.env.SVC_BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
  // Under callgrind: no V8 background threads (compilers, GC helpers), whose share varies run to run.
  if (wrap.length > 0) nodeArgs.push(...COUNTED_NODE_ARGS);
  const [command, ...prefix] = [...wrap, process.execPath];
  const run = (role: string, extra: Record<string, string> = {}) =>
    spawn(command, [...prefix, ...nodeArgs, 'dist/cli/svc.js', role], {
      cwd: ROOT,
      env: { ...env, ...extra },
      stdio: 'ignore',
    });
  const split = kind === 'split' || kind === 'split-sqlite';
  const processes = [
    run('serve', split || REQUEST_ONLY ? { SVC_WORKER: 'off' } : place ? { SVC_WORKER: place } : {}),
  ];
  const url = `http://127.0.0.1:${port}`;
  // Under valgrind the start takes a minute or more.
  for (let i = 0; i < (wrap.length > 0 ? 3000 : 300); i++) {
    const ok = await fetch(`${url}/readyz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  if (split) processes.push(run('worker'));
  return {
    url,
    databaseUrl,
    processes,
    async stop() {
      for (const p of processes) p.kill('SIGTERM');
      await Promise.all(
        processes.map((p) => new Promise((r) => (p.exitCode === null ? p.once('exit', r) : r(null)))),
      );
      await drop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Sets up the scenario over the API; answers the respondent's headers and the submission body. */
async function setUp(base: string, receiverUrl: string) {
  const call = async (method: string, path: string, body?: unknown, token?: string) => {
    const res = await fetch(`${base}/api/v1${path}`, {
      method,
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = (await res.json()) as Record<string, unknown> & { id: string };
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
    return json;
  };
  const login = async (email: string, password: string) =>
    (await call('POST', '/auth/login/credentials', { email, password })).access_token as string;
  const admin = await login(EMAIL, PASSWORD);
  // One respondent submits over and over: the questionnaire must allow it (the default is one each).
  const q = await call(
    'POST',
    '/questionnaire',
    { name: 'Daily check-in', payload: {}, config: { allow_multiple_submissions: true } },
    admin,
  );
  await call('POST', `/questionnaire/${q.id}/publish`, undefined, admin);
  const defs = await call('GET', '/plugin_definition?name=http', undefined, admin);
  const httpDef = (defs.plugin_definitions as Array<{ id: string }>)[0].id;
  const instance = await call(
    'POST',
    '/plugin_instance',
    { plugin_definition_id: httpDef, display_name: 'receiver', enabled: true },
    admin,
  );
  const sub = await call(
    'POST',
    '/event_subscription',
    {
      name: 'high scores',
      event_type: 'svc.submission.created',
      condition_jsonlogic: { '>': [{ var: 'event.data.answers.score' }, 5] },
    },
    admin,
  );
  /** The measured graph: COMPUTE `derive`, `extra` more COMPUTE nodes in a chain (the cost model), ACTION `call`. */
  const putGraph = (extra: number) => {
    const chain = Array.from({ length: extra }, (_, i) => ({
      key: `step${i + 1}`,
      type: 'COMPUTE',
      config: { logic: { '+': [{ var: 'event.data.answers.score' }, i] } },
    }));
    const keys = ['derive', ...chain.map((n) => n.key), 'call'];
    return call(
      'PUT',
      `/event_subscription/${sub.id}/graph`,
      {
        nodes: [
          {
            key: 'derive',
            type: 'COMPUTE',
            config: {
              logic: {
                eachKey: {
                  type: { var: 'event.type' },
                  score: { var: 'event.data.answers.score' },
                  doubled: { '*': [{ var: 'event.data.answers.score' }, 2] },
                  label: { cat: [{ var: 'event.type' }, ':', { var: 'event.data.answers.score' }] },
                },
              },
            },
          },
          ...chain,
          {
            key: 'call',
            type: 'ACTION',
            config: {
              plugin_instance_id: instance.id,
              plugin_action: 'request',
              input_mapping: { method: 'POST', url: receiverUrl, body: { var: 'nodes.derive.output' } },
            },
          },
        ],
        edges: keys.slice(1).map((to, i) => ({ from_node_id: keys[i], to_node_id: to })),
      },
      admin,
    );
  };
  await putGraph(0);
  /** Subscriptions of another event type (never routed here): the cost model's routing load. */
  let others = 0;
  const otherSubscriptions = async (total: number) => {
    for (; others < total; others++)
      await call(
        'POST',
        '/event_subscription',
        { name: `other ${others}`, event_type: 'svc.submission.deleted' },
        admin,
      );
  };
  await call(
    'POST',
    '/user',
    { email: 'respondent@example.test', password: PASSWORD, role_keys: ['responder'] },
    admin,
  );
  const token = await login('respondent@example.test', PASSWORD);
  return {
    request: {
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ questionnaire_id: q.id, answers: ANSWERS }),
    },
    putGraph,
    otherSubscriptions,
  };
}

/**
 * How long the svc processes are left alone after set-up while their idle RSS is read. V8 gives the
 * young generation back (32 MiB of it per isolate, and compacts) in its memory reducer, which starts
 * only once V8's allocation rate, sampled on the reducer's 8 s ticks over a 5 s window, no longer
 * holds the busy period: about 40 s after the last work on a bare `svc serve` (--trace-gc: the
 * reducing mark-compact at 40.6 s; 135-145 MiB before, 99-100 after), and 55 s for one thread and
 * 65 s for the other after the benchmark's set-up on a slower machine (2026-11-28, fifth session),
 * where a reading at 60 s caught neither. So RSS is read every 5 s for 120 s (`--idle-seconds`) and
 * idle is the lowest reading; "after set-up" is read 1 s after set-up, before them.
 */
const IDLE_WAIT_MS = 1000 * Number(values['idle-seconds']);
const IDLE_SAMPLE_MS = 5_000;

const rssMiB = (pid: number) => {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : 0;
};
const cpuSeconds = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
};

/**
 * CPU seconds of every PostgreSQL server process on this machine (backends, WAL writer,
 * checkpointer): the benchmark's server is local, and on two shared cores its work is as much part
 * of an execution's cost as svc's. Not a figure for a remote server.
 */
const postgresCpuSeconds = () => {
  let sum = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (!readFileSync(`/proc/${entry}/comm`, 'utf8').startsWith('postgres')) continue;
      sum += cpuSeconds(Number(entry));
    } catch {
      // The process ended between the listing and the read.
    }
  }
  return sum;
};

/** The store's statement and transaction counters of one process, from its /metrics. */
async function storeActivity(base: string | undefined) {
  if (!base) return { statements: 0, transactions: 0 };
  const text = await (await fetch(`${base}/metrics`)).text();
  const read = (name: string) => Number(new RegExp(`^${name} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
  return {
    statements: read('svc_store_statements_total'),
    transactions: read('svc_store_transactions_total'),
  };
}

interface Figures {
  /** The window and its backlog, seconds. */
  wall: number;
  /** Per execution, in the process that serves (the whole pipeline except in `split`). */
  statements: number;
  transactions: number;
  rps: number;
  p50: number;
  p99: number;
  execs: number;
  rssPeak: number;
  cpu: number;
  /** PostgreSQL's processes, cores (0 when not measured). */
  serverCpu: number;
}

/** One measured window: load, then the backlog waited for; executions counted at the receiver. */
async function measure(
  url: string,
  request: { headers: Record<string, string>; body: string },
  connections: number,
  seconds: number,
  counts: () => { valid: number },
  pids: number[],
  metricsOf?: string,
  server = false,
): Promise<Figures> {
  const before = counts().valid;
  const activity0 = await storeActivity(metricsOf);
  const cpu0 = pids.reduce((a, p) => a + cpuSeconds(p), 0);
  const serverCpu0 = server ? postgresCpuSeconds() : 0;
  let rssPeak = 0;
  const sampler = setInterval(() => {
    rssPeak = Math.max(
      rssPeak,
      pids.reduce((a, p) => a + rssMiB(p), 0),
    );
  }, 250);
  const started = Date.now();
  const result = await autocannon({ url, method: 'POST', connections, duration: seconds, ...request });
  const ok = result['2xx'];
  // The backlog: every accepted submission is one execution (score 7 > 5).
  while (!REQUEST_ONLY && counts().valid - before < ok && Date.now() - started < seconds * 1000 + 120_000)
    await new Promise((r) => setTimeout(r, 50));
  const wall = (Date.now() - started) / 1000;
  if (result.non2xx > 0 || result.errors > 0)
    console.log(`  (${result.non2xx} answers other than 2xx, ${result.errors} errors in this window)`);
  clearInterval(sampler);
  const cpu = pids.reduce((a, p) => a + cpuSeconds(p), 0) - cpu0;
  const serverCpu = server ? postgresCpuSeconds() - serverCpu0 : 0;
  const activity = await storeActivity(metricsOf);
  // With --request-only nothing executes: the counts are per accepted request.
  const executions = Math.max(1, REQUEST_ONLY ? ok : counts().valid - before);
  return {
    wall,
    statements: (activity.statements - activity0.statements) / executions,
    transactions: (activity.transactions - activity0.transactions) / executions,
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    execs: (counts().valid - before) / wall,
    rssPeak,
    cpu: cpu / wall,
    serverCpu: serverCpu / wall,
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const range = (xs: number[], digits = 0) =>
  `${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)}`;

const rx = receiver();
const receiverUrl = await rx.listen();
const top = await ceiling(receiverUrl);
const SUBMIT = '/api/v1/questionnaire_submission';

/** Submits `amount` more (at concurrency 50 unless told) and waits for their executions. */
async function preload(
  url: string,
  request: { headers: Record<string, string>; body: string },
  amount: number,
  connections = 50,
) {
  if (amount <= 0) return;
  const before = rx.counts().valid;
  await autocannon({ url, method: 'POST', connections: Math.min(connections, amount), amount, ...request });
  while (rx.counts().valid - before < amount) await new Promise((r) => setTimeout(r, 100));
}

/**
 * The cost model: one svc per store, concurrency 10, one window per condition. Stored runs grow
 * first (10, 1,000, 100,000 before the window; each window adds its own), then subscriptions of
 * another event type (1, 10, 100: they are never routed this event), then COMPUTE nodes in the chain.
 */
async function costModel(kind: string) {
  const svc = await startSvc(kind);
  try {
    const setup = await setUp(svc.url, receiverUrl);
    const pids = svc.processes.map((p) => p.pid as number);
    let stored = 0;
    const row = async (condition: string) => {
      const f = await measure(`${svc.url}${SUBMIT}`, setup.request, 10, SECONDS, rx.counts, pids, svc.url);
      stored += Math.round(f.execs * f.wall);
      console.log(
        `| ${kind} | ${condition} | **${f.execs.toFixed(0)}** | ${((1000 * f.cpu) / f.execs).toFixed(2)} | ` +
          `${f.p50} / ${f.p99} | ${f.statements.toFixed(1)} / ${f.transactions.toFixed(1)} |`,
      );
    };
    for (const target of [10, 1_000, 100_000]) {
      await preload(`${svc.url}${SUBMIT}`, setup.request, target - stored);
      stored = Math.max(stored, target);
      await row(`${target.toLocaleString('en')} stored runs`);
    }
    // Besides the measured subscription: 1, then 10, then 100 of another event type.
    for (const total of [1, 10, 100]) {
      await setup.otherSubscriptions(total);
      await row(`${total} subscription${total > 1 ? 's' : ''} of another type`);
    }
    for (const extra of [4, 9]) {
      await setup.putGraph(extra);
      await row(`${extra + 2} nodes per graph`);
    }
  } finally {
    await svc.stop();
  }
}

/**
 * Instructions per execution (callgrind.ts): svc and the ceiling each under callgrind, `n` executions
 * at concurrency 10 counted after WARM_UP uncounted ones (set-up, JIT warm-up), REPS times.
 */
async function instructions(n: number) {
  const dir = mkdtempSync(join(tmpdir(), 'svc-callgrind-'));
  const ceilingProcess = spawn(
    underCallgrind(dir)[0],
    [
      ...underCallgrind(dir).slice(1),
      process.execPath,
      ...COUNTED_NODE_ARGS,
      '--import',
      'tsx',
      'bench/pipeline/ceiling.ts',
      receiverUrl,
    ],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'ignore'] },
  );
  const ceilingUrl = await new Promise<string>((resolve) =>
    ceilingProcess.stdout?.once('data', (d: Buffer) => resolve(d.toString().trim())),
  );
  const ceilingPid = ceilingProcess.pid as number;
  const count = async (
    pids: number[],
    url: string,
    request: { headers: Record<string, string>; body: string },
  ) => {
    for (const pid of pids) startCounting(pid);
    await preload(url, request, n, 10);
    let sum = 0;
    for (const pid of pids) sum += await stopCounting(pid, dir);
    return sum / n;
  };
  console.log(
    `pipeline instructions: ${n} executions at concurrency 10 counted by callgrind, ${REPS} repetitions\n`,
  );
  console.log(
    '| store | svc: instructions per exec (millions) | ceiling: instructions per exec (millions) | svc / ceiling | statements / transactions per exec |',
  );
  console.log('|---|---|---|---|---|');
  try {
    for (const kind of values.store.split(',')) {
      const svc = await startSvc(kind, underCallgrind(dir));
      try {
        const { request } = await setUp(svc.url, receiverUrl);
        const pids = svc.processes.map((p) => p.pid as number);
        await preload(`${svc.url}${SUBMIT}`, request, WARM_UP, 10);
        await preload(ceilingUrl, request, WARM_UP, 10);
        const svcIr: number[] = [];
        const topIr: number[] = [];
        const activity: number[][] = [];
        for (let i = 0; i < REPS; i++) {
          const a0 = await storeActivity(svc.url);
          svcIr.push(await count(pids, `${svc.url}${SUBMIT}`, request));
          const a1 = await storeActivity(svc.url);
          activity.push([(a1.statements - a0.statements) / n, (a1.transactions - a0.transactions) / n]);
          topIr.push(await count([ceilingPid], ceilingUrl, request));
        }
        const ratio = svcIr.map((x, i) => x / topIr[i]);
        const mil = (xs: number[]) => xs.map((x) => x / 1e6);
        console.log(
          `| ${kind} | **${median(mil(svcIr)).toFixed(3)}** (${range(mil(svcIr), 3)}) | ${median(mil(topIr)).toFixed(3)} (${range(mil(topIr), 3)}) | ` +
            `${median(ratio).toFixed(1)}× (${range(ratio, 1)}) | ${median(activity.map((a) => a[0])).toFixed(1)} / ${median(activity.map((a) => a[1])).toFixed(1)} |`,
        );
      } finally {
        await svc.stop();
      }
    }
  } finally {
    // valgrind writes its last dump as the process ends: wait for it before removing the directory.
    const ended = new Promise((r) => ceilingProcess.once('exit', r));
    ceilingProcess.kill('SIGTERM');
    await ended;
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Bytes per execution (storage.ts): the store's size before and after `n` executions at concurrency
 * 50, once every outbox task and run they started has finished, per table and for the whole store.
 * "Beyond the submissions" leaves out the user's own data (questionnaire_submission).
 */
async function storage(n: number) {
  console.log(`pipeline storage: bytes stored per execution over ${n} executions\n`);
  for (const kind of values.store.split(',')) {
    const svc = await startSvc(kind);
    try {
      const { request } = await setUp(svc.url, receiverUrl);
      await preload(`${svc.url}${SUBMIT}`, request, 200);
      await new Promise((r) => setTimeout(r, 2_000));
      const before = await storeSizes(svc.databaseUrl);
      await preload(`${svc.url}${SUBMIT}`, request, n);
      // The receiver counts an execution when its POST arrives: the run and the outbox task finish after.
      await new Promise((r) => setTimeout(r, 3_000));
      const rows = perExecution(before, await storeSizes(svc.databaseUrl), n);
      const tables = rows.filter(([t]) => t !== 'file');
      const sum = tables.reduce((a, [, b]) => a + b, 0);
      const user = tables.find(([t]) => t === 'questionnaire_submission')?.[1] ?? 0;
      const file = rows.find(([t]) => t === 'file')?.[1] ?? 0;
      console.log(
        `${kind}: **${sum.toFixed(0)} bytes per execution** (${(sum - user).toFixed(0)} beyond the submissions; ` +
          `the whole store grew ${file.toFixed(0)})`,
      );
      console.log(tables.map(([t, b]) => `  ${t}: ${b.toFixed(0)}`).join('\n'));
    } finally {
      await svc.stop();
    }
  }
}

if (values.storage) {
  await storage(Number(values.storage));
  top.close();
  rx.server.close();
  process.exit(0);
}

if (values.instructions) {
  await instructions(Number(values.instructions));
  top.close();
  rx.server.close();
  process.exit(0);
}

if (values['cost-model']) {
  console.log(`pipeline cost model: concurrency 10, ${SECONDS} s windows\n`);
  console.log(
    '| store | condition | full exec/s | CPU ms per exec | p50 / p99 ms | statements / transactions per exec |',
  );
  console.log('|---|---|---|---|---|---|');
  for (const kind of values.store.split(',')) await costModel(kind);
  top.close();
  rx.server.close();
  process.exit(0);
}

console.log(`pipeline: ${SECONDS} s windows, ${REPS} repetitions, medians (min–max)\n`);
console.log(
  '| store | conc | req/s | p50 / p99 ms (ceiling) | full exec/s | ceiling exec/s | % of ceiling | RSS idle / after set-up / peak MiB | CPU (cores) | CPU ms per exec: svc / PostgreSQL | statements / transactions per exec |',
);
console.log('|---|---|---|---|---|---|---|---|---|---|---|');
for (const kind of values.store.split(',')) {
  const svc = await startSvc(kind);
  const onPostgres = !kind.startsWith('sqlite') && kind !== 'split-sqlite';
  try {
    const { request } = await setUp(svc.url, receiverUrl);
    const pids = svc.processes.map((p) => p.pid as number);
    const rss = () => pids.reduce((a, p) => a + rssMiB(p), 0);
    await new Promise((r) => setTimeout(r, 1_000));
    const afterSetUp = rss();
    // Idle: once V8's memory reducer has given back the young generations (see IDLE_WAIT_MS).
    let idle = afterSetUp;
    for (let waited = 0; waited < IDLE_WAIT_MS; waited += IDLE_SAMPLE_MS) {
      await new Promise((r) => setTimeout(r, IDLE_SAMPLE_MS));
      idle = Math.min(idle, rss());
    }
    for (const connections of values.connections.split(',').map(Number)) {
      await measure(`${svc.url}${SUBMIT}`, request, connections, 3, rx.counts, pids); // warm-up
      await measure(top.url, request, connections, 2, rx.counts, []);
      const runs: Figures[] = [];
      const tops: Figures[] = [];
      for (let i = 0; i < REPS; i++) {
        runs.push(
          await measure(
            `${svc.url}${SUBMIT}`,
            request,
            connections,
            SECONDS,
            rx.counts,
            pids,
            svc.url,
            onPostgres,
          ),
        );
        tops.push(await measure(top.url, request, connections, SECONDS, rx.counts, []));
      }
      const pct = runs.map((r, i) => (100 * r.execs) / tops[i].execs);
      const m = (f: (x: Figures) => number, xs = runs) => median(xs.map(f));
      const perExec = (f: (x: Figures) => number) =>
        m((r) => (1000 * f(r)) / Math.max(1, r.execs)).toFixed(2);
      console.log(
        `| ${kind} | ${connections} | ${m((r) => r.rps).toFixed(0)} | ${m((r) => r.p50)} / ${m((r) => r.p99)} (${m((r) => r.p50, tops)} / ${m((r) => r.p99, tops)}) | ` +
          `**${m((r) => r.execs).toFixed(0)}** (${range(runs.map((r) => r.execs))}) | ${m((r) => r.execs, tops).toFixed(0)} | ` +
          `${median(pct).toFixed(1)}% (${range(pct, 1)}) | ${idle.toFixed(0)} / ${afterSetUp.toFixed(0)} / ${m((r) => r.rssPeak).toFixed(0)} | ${m((r) => r.cpu).toFixed(2)} | ` +
          `${perExec((r) => r.cpu)} / ${onPostgres ? perExec((r) => r.serverCpu) : '—'} | ` +
          `${m((r) => r.statements).toFixed(1)} / ${m((r) => r.transactions).toFixed(1)}${kind.startsWith('split') ? ' (serve)' : ''} |`,
      );
    }
  } finally {
    await svc.stop();
  }
}
console.log(`\nreceiver: ${JSON.stringify(rx.counts())}`);
top.close();
rx.server.close();
process.exit(0);
