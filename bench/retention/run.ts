/**
 * Retention under load (docs/reliability.md "Retention"; docs/performance.md "Storage and retention"): the
 * pipeline benchmark's scenario (bench/pipeline/harness.ts) driven for `--minutes` at full speed
 * with every retention at 60 s, next to the same run with nothing removed, in one invocation.
 * Printed per store: the retained tables' size minute by minute (level from minute 2 on: within
 * ±10% of its median), executions/s and request p99 against the run without pruning, and the prune
 * rate: rows removed per second by one pass over `--prune-runs` finished executions.
 *
 *   npm run build && npm run bench -- retention [--store sqlite,postgres] [--minutes 10] [--connections 10]
 *     [--prune-runs 50000]
 */
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { receiver, SUBMIT, type SvcStore, setUp, startSvc } from '../pipeline/harness.js';
import { storeSizes } from '../pipeline/storage.js';

const { values } = parseArgs({
  options: {
    store: { type: 'string', default: 'sqlite,postgres' },
    minutes: { type: 'string', default: '10' },
    connections: { type: 'string', default: '10' },
    'prune-runs': { type: 'string', default: '50000' },
  },
});
const MINUTES = Number(values.minutes);
const CONNECTIONS = Number(values.connections);
const WINDOW_S = 10;
/** What retention removes; the submissions are the user's own and stay. */
const RETAINED = [
  'workflow_run',
  'workflow_run_node',
  'event_delivery_task',
  'webhook_delivery',
  'webhook_delivery_attempt',
  'webhook_event',
];
/** Every 5 s: at a 60 s period, what is kept varies by a twelfth between passes. */
const PRUNE_INTERVAL_MS = '5000';
const RETENTION_60S = {
  SVC_PRUNE_INTERVAL_MS: PRUNE_INTERVAL_MS,
  SVC_RETENTION_COMPLETED_RUNS_SECONDS: '60',
  SVC_RETENTION_FAILED_RUNS_SECONDS: '60',
  SVC_RETENTION_DELIVERIES_SECONDS: '60',
  SVC_RETENTION_OUTBOX_SECONDS: '60',
};
const KEEP_ALL = {
  SVC_RETENTION_COMPLETED_RUNS_SECONDS: '0',
  SVC_RETENTION_FAILED_RUNS_SECONDS: '0',
  SVC_RETENTION_DELIVERIES_SECONDS: '0',
  SVC_RETENTION_OUTBOX_SECONDS: '0',
};

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
const mib = (b: number) => (b / 1_048_576).toFixed(1);
const rx = receiver();
const receiverUrl = await rx.listen();

interface Window {
  execs: number;
  p99: number;
  /** Read at the end of each minute only (dbstat reads every page of the file). */
  sizes?: { retained: number; file: number; submissions: number };
}

/** `MINUTES` of load in WINDOW_S windows: executions/s, p99, and (`measure`) the store's sizes each minute. */
async function soak(kind: string, env: Record<string, string>, measure: boolean): Promise<Window[]> {
  const svc = await startSvc(kind, { env });
  try {
    const { request } = await setUp(svc.url, receiverUrl);
    const windows: Window[] = [];
    for (let w = 0; w < (MINUTES * 60) / WINDOW_S; w++) {
      const before = rx.counts().valid;
      const started = Date.now();
      const result = await autocannon({
        url: `${svc.url}${SUBMIT}`,
        method: 'POST',
        connections: CONNECTIONS,
        duration: WINDOW_S,
        ...request,
      });
      const seconds = (Date.now() - started) / 1000;
      const window: Window = { execs: (rx.counts().valid - before) / seconds, p99: result.latency.p99 };
      if (measure && (w + 1) % (60 / WINDOW_S) === 0) {
        const sizes = await storeSizes(svc.databaseUrl, { vacuum: false });
        window.sizes = {
          retained: RETAINED.reduce((sum, t) => sum + (sizes.get(t) ?? 0), 0),
          file: sizes.get('file') ?? 0,
          submissions: sizes.get('questionnaire_submission') ?? 0,
        };
      }
      windows.push(window);
    }
    return windows;
  } finally {
    await svc.stop();
  }
}

/** One pass over `runs` finished executions: svc started again on them with a retention of 1 s. */
async function pruneRate(kind: string, runs: number) {
  const filled = await startSvc(kind, { env: KEEP_ALL, keepStore: true });
  let store: SvcStore = filled.store;
  try {
    const { request } = await setUp(filled.url, receiverUrl);
    const before = rx.counts().valid;
    await autocannon({
      url: `${filled.url}${SUBMIT}`,
      method: 'POST',
      connections: 50,
      amount: runs,
      ...request,
    });
    while (rx.counts().valid - before < runs) await new Promise((r) => setTimeout(r, 100));
    await new Promise((r) => setTimeout(r, 2_000));
    await filled.stop();
    await new Promise((r) => setTimeout(r, 1_100));
    const pruning = await startSvc(kind, {
      store,
      captureOutput: true,
      env: { ...RETENTION_60S, SVC_RETENTION_COMPLETED_RUNS_SECONDS: '1', SVC_RETENTION_OUTBOX_SECONDS: '1' },
    });
    store = pruning.store;
    try {
      for (;;) {
        const line = pruning
          .output()
          .split('\n')
          .find((l) => l.includes('"prune pass"'));
        if (line) {
          const pass = JSON.parse(line) as {
            removed: Record<string, number>;
            ms: number;
            freed_pages: number;
            vacuum_ms: number;
          };
          const rows = Object.values(pass.removed).reduce((a, b) => a + b, 0);
          return {
            rows,
            ms: pass.ms,
            runs: pass.removed.workflow_run ?? 0,
            pages: pass.freed_pages,
            vacuumMs: pass.vacuum_ms,
          };
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    } finally {
      await pruning.stop();
    }
  } finally {
    await store.drop();
  }
}

console.log(
  `retention: ${MINUTES} min at concurrency ${CONNECTIONS}, ${WINDOW_S} s windows, every retention 60 s pruned every ${PRUNE_INTERVAL_MS} ms, next to the same run keeping everything\n`,
);
for (const kind of values.store.split(',')) {
  if (MINUTES === 0) {
    const rate = await pruneRate(kind, Number(values['prune-runs']));
    console.log(`${kind}: ${JSON.stringify(rate)}`);
    continue;
  }
  const pruned = await soak(kind, RETENTION_60S, true);
  const kept = await soak(kind, KEEP_ALL, false);
  const fromMinute2 = (ws: Window[]) => ws.slice((2 * 60) / WINDOW_S);
  const minutes = pruned.filter((w) => w.sizes).map((w) => w.sizes as NonNullable<Window['sizes']>);
  const level = minutes.slice(1).map((s) => s.retained);
  const mid = median(level);
  const spread = level.map((b) => (100 * (b - mid)) / mid);
  const execs = median(fromMinute2(pruned).map((w) => w.execs));
  const keptExecs = median(fromMinute2(kept).map((w) => w.execs));
  const p99 = median(pruned.map((w) => w.p99));
  const keptP99 = median(kept.map((w) => w.p99));
  console.log(`## ${kind}\n`);
  console.log(
    '| minute | retained tables MiB | submissions MiB | whole store MiB | store less submissions MiB |',
  );
  console.log('|---|---|---|---|---|');
  for (const [i, s] of minutes.entries())
    console.log(
      `| ${i + 1} | ${mib(s.retained)} | ${mib(s.submissions)} | ${mib(s.file)} | ${mib(s.file - s.submissions)} |`,
    );

  console.log(
    `\nfrom minute 2: retained tables **${mib(mid)} MiB**, ${Math.min(...spread).toFixed(1)}% to +${Math.max(...spread).toFixed(1)}% of it ` +
      `(the submissions, the user's own data, grow on); exec/s **${execs.toFixed(0)}** pruned vs ${keptExecs.toFixed(0)} kept ` +
      `(**${((100 * execs) / keptExecs).toFixed(1)}%**); p99 **${p99} ms** vs ${keptP99} ms (**${(p99 / Math.max(1, keptP99)).toFixed(2)}×**)`,
  );
  const rate = await pruneRate(kind, Number(values['prune-runs']));
  console.log(
    `prune rate: one pass removed ${rate.rows.toLocaleString('en')} rows (${rate.runs.toLocaleString('en')} runs) in ${rate.ms} ms: ` +
      `**${Math.round((1000 * rate.rows) / rate.ms).toLocaleString('en')} rows/s**; then ${rate.pages.toLocaleString('en')} free pages given back in ${rate.vacuumMs} ms\n`,
  );
}
rx.server.close();
process.exit(0);
