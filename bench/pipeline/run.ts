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
 *   npm run bench -- pipeline --instructions 1000 [--store sqlite] [--reps 3] [--counted-concurrency 1]   (callgrind.ts)
 *   npm run bench -- pipeline --storage 10000 [--store sqlite,postgres]   (bytes per execution, storage.ts)
 *   SVC_BENCH_BASELINE=<checkout> npm run bench -- pipeline --tracing [--store sqlite] [--connections 50]
 *     (tracing off, always_on and ratio 0.01 to a local OTLP receiver, and optionally another build)
 *
 * `sqlite` and `postgres` run `svc serve` as it starts by default (SVC_WORKER=auto: on a SQLite file
 * with two cores or more the worker in a worker thread, on PostgreSQL on the API's thread);
 * `<store>-thread` with SVC_WORKER=thread (the worker in a worker thread), `<store>-main` with
 * SVC_WORKER=main (the worker on the API's thread). `split` is PostgreSQL with
 * `svc serve SVC_WORKER=off` and one `svc worker`; `split-sqlite` the same on
 * one SQLite file (the worker woken by the file's write-ahead log). Prints figures; never fails.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { cpuSeconds, postgresCpuSeconds, rssMiB, storeActivity } from '../lib/process.js';
import { COUNTED_NODE_ARGS, startCounting, stopCounting, underCallgrind, WARM_UP } from './callgrind.js';
import { ceiling } from './ceiling.js';
import { BUILD, ROOT, receiver, SUBMIT, setUp, startSvc } from './harness.js';
import { perExecution, storeSizes } from './storage.js';

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
    // Submissions in flight while instructions are counted: 1 makes every execution its own batch.
    'counted-concurrency': { type: 'string', default: '10' },
    // Bytes stored per execution, table by table, over this many executions (storage.ts).
    storage: { type: 'string' },
    // What tracing costs: off, on (always_on) and sampled (0.01), side by side (tracingCost).
    tracing: { type: 'boolean', default: false },
  },
});
const SECONDS = Number(values.seconds);
const REQUEST_ONLY = values['request-only'];
const REPS = Number(values.reps);

if (!existsSync(join(BUILD, 'dist/cli/svc.js'))) {
  console.error('bench/pipeline runs the built CLI: npm run build first');
  process.exit(2);
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
  const svc = await startSvc(kind, { requestOnly: REQUEST_ONLY });
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
 * at `--counted-concurrency` (10) counted after WARM_UP uncounted ones (set-up, JIT warm-up), REPS
 * times. At concurrency 1 no two executions share a batch, so the count repeats from run to run: the
 * way to compare two builds' cost per execution within a few per cent (SVC_BENCH_BUILD).
 */
async function instructions(n: number) {
  const inFlight = Number(values['counted-concurrency']);
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
    await preload(url, request, n, inFlight);
    let sum = 0;
    for (const pid of pids) sum += await stopCounting(pid, dir);
    return sum / n;
  };
  console.log(
    `pipeline instructions: ${n} executions at concurrency ${inFlight} counted by callgrind, ${REPS} repetitions\n`,
  );
  console.log(
    '| store | svc: instructions per exec (millions) | ceiling: instructions per exec (millions) | svc / ceiling | statements / transactions per exec |',
  );
  console.log('|---|---|---|---|---|');
  try {
    for (const kind of values.store.split(',')) {
      const svc = await startSvc(kind, { wrap: underCallgrind(dir) });
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
    const svc = await startSvc(kind, { requestOnly: REQUEST_ONLY });
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

/**
 * What tracing costs (docs/observability.md "Cost"): svc with tracing off, on with every trace
 * sampled, and on with a ratio of 0.01, each exporting OTLP/HTTP protobuf to a local receiver that
 * accepts and counts the bytes; with SVC_BENCH_BASELINE=<checkout>, that checkout's build too (tracing
 * off against a build without it). All run at once, idle but for the one measured: each repetition
 * measures every variant and the ceiling in turn, in an order rotated between repetitions, and the
 * ratios are taken within a repetition, so the machine's drift cancels.
 */
async function tracingCost(kind: string, connections: number) {
  let exported = 0;
  const sink = http.createServer((req, res) => {
    req.on('data', (c: Buffer) => (exported += c.length));
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end());
  });
  await new Promise<void>((r) => sink.listen(0, '127.0.0.1', r));
  const otlp = `http://127.0.0.1:${(sink.address() as AddressInfo).port}`;
  const on = { OTEL_EXPORTER_OTLP_ENDPOINT: otlp, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf' };
  const variants = [
    ...(process.env.SVC_BENCH_BASELINE
      ? [{ name: 'baseline build, no tracing', env: {}, build: process.env.SVC_BENCH_BASELINE }]
      : []),
    { name: 'tracing off', env: {} },
    { name: 'tracing on, always_on', env: { ...on, OTEL_TRACES_SAMPLER: 'always_on' } },
    {
      name: 'tracing on, ratio 0.01',
      env: { ...on, OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.01' },
    },
  ];
  const running = [];
  try {
    for (const v of variants) {
      const svc = await startSvc(kind, { env: v.env, ...('build' in v ? { build: v.build } : {}) });
      running.push(svc);
      const { request } = await setUp(svc.url, receiverUrl);
      await measure(`${svc.url}${SUBMIT}`, request, connections, 3, rx.counts, []); // warm-up
      Object.assign(v, { svc, request, pids: svc.processes.map((p) => p.pid as number), rows: [] });
    }
    const all = variants as Array<
      (typeof variants)[number] & {
        svc: (typeof running)[number];
        request: { headers: Record<string, string>; body: string };
        pids: number[];
        rows: Array<Figures & { bytes: number; ceiling: number }>;
      }
    >;
    for (let rep = 0; rep < REPS; rep++) {
      const ceilingFigures = await measure(top.url, all[0].request, connections, SECONDS, rx.counts, []);
      for (let i = 0; i < all.length; i++) {
        const v = all[(i + rep) % all.length];
        const bytes0 = exported;
        const f = await measure(
          `${v.svc.url}${SUBMIT}`,
          v.request,
          connections,
          SECONDS,
          rx.counts,
          v.pids,
          v.svc.url,
        );
        // Spans still batched are exported within OTEL_BSP_SCHEDULE_DELAY (5 s): counted with the window.
        await new Promise((r) => setTimeout(r, 5_500));
        v.rows.push({
          ...f,
          bytes: (exported - bytes0) / Math.max(1, f.execs * f.wall),
          ceiling: ceilingFigures.execs,
        });
      }
    }
    const off = all.find((v) => v.name === 'tracing off') as (typeof all)[number];
    console.log(
      `\n| store | conc | variant | full exec/s | % of tracing off | % of ceiling | CPU ms per exec | OTLP bytes per exec |`,
    );
    console.log('|---|---|---|---|---|---|---|---|');
    for (const v of all) {
      const execs = v.rows.map((r) => r.execs);
      const vsOff = v.rows.map((r, i) => (100 * r.execs) / off.rows[i].execs);
      const vsTop = v.rows.map((r) => (100 * r.execs) / r.ceiling);
      console.log(
        `| ${kind} | ${connections} | ${v.name} | **${median(execs).toFixed(0)}** (${range(execs)}) | ` +
          `${median(vsOff).toFixed(1)}% (${range(vsOff, 1)}) | ${median(vsTop).toFixed(1)}% (${range(vsTop, 1)}) | ` +
          `${median(v.rows.map((r) => (1000 * r.cpu) / Math.max(1, r.execs))).toFixed(2)} | ${median(v.rows.map((r) => r.bytes)).toFixed(0)} |`,
      );
    }
  } finally {
    for (const svc of running) await svc.stop();
    sink.close();
  }
}

if (values.tracing) {
  console.log(`pipeline tracing cost: ${SECONDS} s windows, ${REPS} repetitions, medians (min–max)`);
  for (const kind of values.store.split(','))
    for (const connections of values.connections.split(',').map(Number)) await tracingCost(kind, connections);
  top.close();
  rx.server.close();
  process.exit(0);
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
  const svc = await startSvc(kind, { requestOnly: REQUEST_ONLY });
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
