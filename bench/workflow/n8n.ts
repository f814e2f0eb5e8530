/**
 * The n8n side of the workflow benchmark: the same 5-node graph as an n8n workflow (Webhook -> Set
 * "score" -> Switch "route" -> Set "high" | Set "low" -> Merge "join"), triggered over HTTP, every
 * execution saved in n8n's default SQLite database. Executions completed per second, from the first
 * request to the `stoppedAt` of the last execution.
 *
 * n8n is not a dependency of svc: point BENCH_N8N_BIN at an n8n installed elsewhere (see
 * docs/workflows.md, "Throughput"). Every setting below can be overridden from the environment.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { type AddressInfo, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import SQLite from 'better-sqlite3';
import { median } from '../lib/load.js';

const run = promisify(execFile);

/**
 * n8n settings: as fast as n8n reasonably goes on one machine, with every execution saved (svc persists
 * every run and node). Each can be overridden by setting the same variable in the environment.
 */
export const N8N_SETTINGS: Record<string, string> = {
  // One `n8n start` process runs the webhook and the executions (no Redis queue mode: svc runs
  // in one process too, and queue mode on a 2-core machine only adds a hop).
  EXECUTIONS_MODE: 'regular',
  // Save every execution with its full data (all node outputs), as svc persists every run and node.
  EXECUTIONS_DATA_SAVE_ON_SUCCESS: 'all',
  EXECUTIONS_DATA_SAVE_ON_ERROR: 'all',
  // n8n's default: the execution is saved once at its end, not after every node (saving after every
  // node would be closer to svc's per-node persistence, and slower).
  EXECUTIONS_DATA_SAVE_ON_PROGRESS: 'false',
  // No pruning while measuring (the default prunes above 10 000 executions); svc prunes nothing either.
  EXECUTIONS_DATA_PRUNE: 'false',
  // No cap on concurrent production executions (n8n's default, -1).
  N8N_CONCURRENCY_PRODUCTION_LIMIT: '-1',
  // SQLite, n8n's default database, through its pooled driver: pool size > 0 opens the file in WAL
  // mode (as svc does) with that many read connections; 0 is the legacy single connection without WAL.
  // Of 0, 2 and 4, 2 was the fastest here.
  DB_TYPE: 'sqlite',
  DB_SQLITE_POOL_SIZE: '2',
  // No network calls and no background work unrelated to executing workflows.
  N8N_DIAGNOSTICS_ENABLED: 'false',
  N8N_PERSONALIZATION_ENABLED: 'false',
  N8N_VERSION_NOTIFICATIONS_ENABLED: 'false',
  N8N_TEMPLATES_ENABLED: 'false',
  N8N_HIRING_BANNER_ENABLED: 'false',
  // Insights write per-execution analytics rows (insights_raw): not part of running or saving a
  // workflow, and svc has no equivalent.
  N8N_DISABLED_MODULES: 'insights',
  // The workflow has no Code node, so no task runner process is needed (disabled is 1.123's default).
  N8N_RUNNERS_ENABLED: 'false',
  // Expressions evaluated in-process. 1.123's default is `vm`, which evaluates every expression in a
  // V8 isolate (isolated-vm) and measured ~8x slower here; `legacy` is the documented opt-out, and
  // closer to svc, which evaluates JSONLogic in-process.
  N8N_EXPRESSION_ENGINE: 'legacy',
  // Logs at warn, as svc runs in the benchmark.
  N8N_LOG_LEVEL: 'warn',
  NODE_ENV: 'production',
  N8N_ENFORCE_SETTINGS_FILE_PERMISSIONS: 'false',
};

/** The benchmark graph as an n8n workflow (n8n 1.x node versions). */
export function n8nWorkflow(path: string) {
  const condition = (id: string, operation: 'gte' | 'lt') => ({
    conditions: {
      options: { caseSensitive: true, leftValue: '', typeValidation: 'strict', version: 2 },
      conditions: [
        { id, leftValue: '={{ $json.result }}', rightValue: 100, operator: { type: 'number', operation } },
      ],
      combinator: 'and',
    },
  });
  const set = (name: string, value: string, type: 'number' | 'string') => ({
    assignments: { assignments: [{ id: `${name}-a`, name: 'result', value, type }] },
    options: {},
  });
  const node = (i: number, name: string, type: string, typeVersion: number, parameters: object) => ({
    id: `5b7e0000-0000-4000-8000-00000000000${i}`,
    name,
    type: `n8n-nodes-base.${type}`,
    typeVersion,
    position: [i * 220, 0],
    parameters,
  });
  const to = (name: string, index = 0) => [{ node: name, type: 'main', index }];
  return {
    id: 'svcBenchWorkflow',
    name: 'svc workflow benchmark',
    active: false,
    settings: { executionOrder: 'v1', saveDataSuccessExecution: 'all', saveDataErrorExecution: 'all' },
    nodes: [
      {
        ...node(1, 'Webhook', 'webhook', 2, {
          httpMethod: 'POST',
          path,
          // Answer as soon as the request is received; the execution runs after the answer.
          responseMode: 'onReceived',
          options: {},
        }),
        webhookId: '5b7e0000-0000-4000-8000-0000000000ff',
      },
      // COMPUTE: an expression over the event data, like svc's JSONLogic COMPUTE.
      node(2, 'score', 'set', 3.4, set('score', '={{ $json.body.n * 2 }}', 'number')),
      // SWITCH: output 0 when result >= 100, output 1 when result < 100.
      node(3, 'route', 'switch', 3.2, {
        rules: { values: [condition('ge', 'gte'), condition('lt', 'lt')] },
        options: {},
      }),
      node(4, 'high', 'set', 3.4, set('high', "={{ 'high:' + $json.result }}", 'string')),
      node(5, 'low', 'set', 3.4, set('low', "={{ 'low:' + $json.result }}", 'string')),
      // JOIN ANY: Merge in "append" mode (its default) requires one input only, so it runs on whichever
      // branch arrived.
      node(6, 'join', 'merge', 3.2, {}),
    ],
    connections: {
      Webhook: { main: [to('score')] },
      score: { main: [to('route')] },
      route: { main: [to('high'), to('low')] },
      high: { main: [to('join', 0)] },
      low: { main: [to('join', 1)] },
    },
  };
}

export interface N8nResult {
  version: string;
  settings: Record<string, string>;
  rounds: number[];
  /** Executions completed per second, median of the rounds. */
  executionsPerSecond: number;
  /** Requests answered per second (webhook ingest only), median of the rounds. */
  acceptedPerSecond: number;
}

/** `count` distinct free local ports (all held open until each is known, so no two are the same). */
async function freePorts(count: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<Server>((resolve, reject) => {
          const server = createServer();
          server.once('error', reject);
          server.listen(0, '127.0.0.1', () => resolve(server));
        }),
    ),
  );
  const ports = servers.map((s) => (s.address() as AddressInfo).port);
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports;
}

/** POSTs one JSON body per item with at most `concurrency` requests in flight; answers non-2xx count. */
async function postAll(url: string, bodies: object[], concurrency: number): Promise<number> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const target = new URL(url);
  let next = 0;
  let failed = 0;
  const one = (body: object) =>
    new Promise<void>((resolve) => {
      const payload = JSON.stringify(body);
      const req = http.request(
        {
          host: target.hostname,
          port: target.port,
          path: target.pathname,
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) },
        },
        (res) => {
          res.resume();
          res.on('end', () => {
            if (!res.statusCode || res.statusCode >= 300) failed++;
            resolve();
          });
        },
      );
      req.on('error', () => {
        failed++;
        resolve();
      });
      req.end(payload);
    });
  const lane = async () => {
    while (next < bodies.length) await one(bodies[next++]);
  };
  await Promise.all(Array.from({ length: concurrency }, lane));
  agent.destroy();
  return failed;
}

/** One POST; answers the status code and body ('' when the connection failed). */
function probe(url: string, body: object): Promise<string> {
  return new Promise((resolve) => {
    const req = http.request(
      url,
      { method: 'POST', headers: { 'content-type': 'application/json' } },
      (res) => {
        let text = `${res.statusCode} `;
        res.setEncoding('utf8');
        res.on('data', (chunk) => {
          text += chunk;
        });
        res.on('end', () => resolve(text));
      },
    );
    req.on('error', () => resolve(''));
    req.end(JSON.stringify(body));
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** n8n stores timestamps in UTC as 'YYYY-MM-DD HH:MM:SS.SSS'. */
const utc = (s: string) => Date.parse(`${s.replace(' ', 'T')}Z`);

/** The node names in an execution's run data (n8n stores it in the `flatted` format). */
function ranNodes(data: string): string[] {
  const flat = JSON.parse(data) as unknown[];
  const ref = (v: unknown) => flat[Number(v)] as Record<string, unknown>;
  const resultData = ref((flat[0] as Record<string, unknown>).resultData);
  return Object.keys(ref(resultData.runData));
}

export async function measureN8n(
  bin: string,
  opts: { events: number; rounds: number; warmup: number; concurrency: number },
): Promise<N8nResult> {
  const version = (await run(bin, ['--version'])).stdout.trim();
  const folder = mkdtempSync(join(tmpdir(), 'svc-bench-n8n-'));
  const [port, brokerPort] = await freePorts(2);
  const settings: Record<string, string> = {};
  for (const [k, v] of Object.entries(N8N_SETTINGS)) settings[k] = process.env[k] ?? v;
  const env = {
    ...process.env,
    ...settings,
    N8N_USER_FOLDER: folder,
    N8N_PORT: String(port),
    N8N_LISTEN_ADDRESS: '127.0.0.1',
    N8N_RUNNERS_BROKER_PORT: String(brokerPort),
  };
  // cwd is the fresh folder: n8n loads a `.env` from its working directory.
  const cli = (...args: string[]) => run(bin, args, { env, cwd: folder });
  const path = 'svc-bench';
  writeFileSync(join(folder, 'workflow.json'), JSON.stringify(n8nWorkflow(path)));
  await cli('import:workflow', `--input=${join(folder, 'workflow.json')}`);
  await cli('update:workflow', '--id=svcBenchWorkflow', '--active=true');

  const logFile = join(folder, 'n8n.log');
  const log = openSync(logFile, 'a');
  const child: ChildProcess = spawn(bin, ['start'], { env, cwd: folder, stdio: ['ignore', log, log] });
  closeSync(log);
  let exited = false;
  child.once('exit', () => {
    exited = true;
  });
  const killChild = () => child.kill('SIGKILL');
  process.once('exit', killChild);
  let db: SQLite.Database | undefined;
  let ok = false;
  try {
    const url = `http://127.0.0.1:${port}/webhook/${path}`;
    const body = (n: number) => ({ user_id: `u${n}`, email: `u${n}@bench.test`, n: n % 100 });
    // Ready once the production webhook answers (each probe that succeeds is one execution).
    const readySince = performance.now();
    while (!(await probe(url, body(0))).includes('Workflow was started')) {
      if (exited) throw new Error(`n8n exited during start-up:\n${readFileSync(logFile, 'utf8')}`);
      if (performance.now() - readySince > 180_000) throw new Error('n8n webhook not registered in 180 s');
      await sleep(250);
    }
    db = new SQLite(join(folder, '.n8n', 'database.sqlite'), { readonly: true, fileMustExist: true });
    db.pragma('busy_timeout = 5000');
    const progress = db.prepare<[number], { done: number; failed: number; last: string | null }>(
      `select count(*) as done, coalesce(sum(status <> 'success'), 0) as failed, max(stoppedAt) as last
         from execution_entity where id > ? and stoppedAt is not null`,
    );
    const maxId = db.prepare<[], { id: number | null }>('select max(id) as id from execution_entity');

    /** Sends `count` events; answers executions/s and accepted/s, from first request to last stoppedAt. */
    const round = async (count: number) => {
      const base = maxId.get()?.id ?? 0;
      const bodies = Array.from({ length: count }, (_, i) => body(i));
      const started = Date.now();
      const failed = await postAll(url, bodies, opts.concurrency);
      const accepted = Date.now();
      if (failed) throw new Error(`${failed} of ${count} webhook requests failed`);
      for (;;) {
        const p = progress.get(base);
        if (p && p.failed > 0) throw new Error(`${p.failed} n8n executions did not succeed`);
        if (p && p.done >= count && p.last) {
          const seconds = (utc(p.last) - started) / 1000;
          return {
            base,
            perSecond: count / seconds,
            acceptedPerSecond: count / ((accepted - started) / 1000),
          };
        }
        if (exited) throw new Error('n8n exited');
        if (Date.now() - started > 600_000) throw new Error('n8n executions did not finish');
        await sleep(50);
      }
    };

    await round(opts.warmup);
    const rates: number[] = [];
    const accepted: number[] = [];
    for (let r = 0; r < opts.rounds; r++) {
      const { base, perSecond, acceptedPerSecond } = await round(opts.events);
      // Every execution saved, with the 5 nodes of one path in its run data.
      const rows = db
        .prepare<[number], { data: string }>(
          'select d.data from execution_data d join execution_entity e on e.id = d.executionId where e.id > ?',
        )
        .all(base);
      const bad = rows.filter((row) => {
        const nodes = ranNodes(row.data);
        return nodes.length !== 5 || !nodes.includes('join');
      });
      if (rows.length !== opts.events || bad.length)
        throw new Error(
          `expected ${opts.events} saved 5-node executions, found ${rows.length} (${bad.length} bad)`,
        );
      rates.push(perSecond);
      accepted.push(acceptedPerSecond);
      console.log(
        `  n8n round ${r + 1}: ${perSecond.toFixed(0)} executions/s (requests answered at ${acceptedPerSecond.toFixed(0)}/s)`,
      );
    }
    ok = true;
    return {
      version,
      settings,
      rounds: rates,
      executionsPerSecond: median(rates),
      acceptedPerSecond: median(accepted),
    };
  } finally {
    db?.close();
    if (!exited) {
      child.kill('SIGTERM');
      const deadline = Date.now() + 30_000;
      while (!exited && Date.now() < deadline) await sleep(100);
      if (!exited) killChild();
    }
    process.removeListener('exit', killChild);
    if (!ok) console.error(`  n8n failed: its user folder and log are kept in ${folder}`);
    else rmSync(folder, { recursive: true, force: true });
  }
}
