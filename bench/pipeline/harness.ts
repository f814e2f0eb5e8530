/**
 * What the pipeline benchmarks share: the receiver that counts valid executions, `svc serve` (and
 * `svc worker`) started as users run them on a fresh store, and the scenario set up over the API
 * (run.ts measures it; bench/retention runs it for minutes with and without pruning).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createPostgresDatabase } from '../../test/helpers/database.js';
import { COUNTED_NODE_ARGS } from './callgrind.js';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/**
 * The checkout whose built `dist/` the benchmarks run: this one, or with SVC_BENCH_BUILD another
 * (a `git worktree` of an older commit, `npm ci` run in it) to compare two builds under one harness.
 */
export const BUILD = process.env.SVC_BENCH_BUILD ?? ROOT;
const ANSWERS = { score: 7, q1: 'yes', q2: 3, q3: ['a', 'b'], comment: 'fine' };
const PG_BASE = process.env.SVC_BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const EMAIL = 'bench-admin@example.test';
export const PASSWORD = 'bench-admin-password-1';
export const SUBMIT = '/api/v1/questionnaire_submission';

export interface SvcOptions {
  /** A command line prefix svc runs under (callgrind.ts). */
  wrap?: string[];
  /** The request stage alone: SVC_WORKER=off and no worker. */
  requestOnly?: boolean;
  /** Settings on top of the benchmark's. */
  env?: Record<string, string>;
  /** Start on this store again (a previous Svc's `store`) instead of a fresh one. */
  store?: SvcStore;
  /** Leave the store in place on stop (to start on it again). */
  keepStore?: boolean;
  /** Keep what the processes write (their log lines: one per request at info, so not under load). */
  captureOutput?: boolean;
  /** Run this checkout's built `dist/` instead of BUILD's (two builds compared in one invocation). */
  build?: string;
}

export interface SvcStore {
  databaseUrl: string;
  dir: string;
  drop(): Promise<void>;
}

/** The receiver: counts POSTs whose body is what the graph computes. */
export function receiver() {
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

export async function freePort(): Promise<number> {
  const s = http.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

export interface Svc {
  url: string;
  databaseUrl: string;
  store: SvcStore;
  /** What the processes wrote (stdout and stderr), for their log lines. */
  output(): string;
  processes: ChildProcess[];
  stop(): Promise<void>;
}

export async function startSvc(variant: string, options: SvcOptions = {}): Promise<Svc> {
  const wrap = options.wrap ?? [];
  // `<store>-thread` / `<store>-main`: SVC_WORKER=thread / main instead of the default (auto).
  const place = /-(thread|main)$/.exec(variant)?.[1];
  const kind = place ? variant.slice(0, -place.length - 1) : variant;
  const store = options.store ?? (await freshStore(kind));
  const { databaseUrl, dir } = store;
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
    ...options.env,
  };
  // e.g. SVC_BENCH_NODE_ARGS='--cpu-prof --cpu-prof-dir=/tmp/prof' to profile svc under the load.
  const nodeArgs = (process.env.SVC_BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
  // Under callgrind: no V8 background threads (compilers, GC helpers), whose share varies run to run.
  if (wrap.length > 0) nodeArgs.push(...COUNTED_NODE_ARGS);
  const [command, ...prefix] = [...wrap, process.execPath];
  const run = (role: string, extra: Record<string, string> = {}) =>
    spawn(command, [...prefix, ...nodeArgs, 'dist/cli/svc.js', role], {
      cwd: options.build ?? BUILD,
      env: { ...env, ...extra },
      stdio: options.captureOutput ? ['ignore', 'pipe', 'pipe'] : 'ignore',
    });
  const split = kind === 'split' || kind === 'split-sqlite';
  const processes = [
    run('serve', split || options.requestOnly ? { SVC_WORKER: 'off' } : place ? { SVC_WORKER: place } : {}),
  ];
  let output = '';
  const collect = (p: ChildProcess) => {
    p.stdout?.on('data', (d: Buffer) => (output += d));
    p.stderr?.on('data', (d: Buffer) => (output += d));
  };
  collect(processes[0]);
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
  if (split) {
    processes.push(run('worker'));
    collect(processes[1]);
  }
  return {
    url,
    databaseUrl,
    store,
    output: () => output,
    processes,
    async stop() {
      for (const p of processes) p.kill('SIGTERM');
      await Promise.all(
        processes.map((p) => new Promise((r) => (p.exitCode === null ? p.once('exit', r) : r(null)))),
      );
      if (!options.keepStore) await store.drop();
    },
  };
}

async function freshStore(kind: string): Promise<SvcStore> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-'));
  const removeDir = async () => rmSync(dir, { recursive: true, force: true });
  if (kind === 'sqlite' || kind === 'split-sqlite')
    return { databaseUrl: `sqlite:${dir}/svc.db`, dir, drop: removeDir };
  const database = await createPostgresDatabase(PG_BASE, 'svc_bench');
  return {
    databaseUrl: database.url,
    dir,
    async drop() {
      await database.drop();
      await removeDir();
    },
  };
}

/** Sets up the scenario over the API; answers the respondent's headers and the submission body. */
export async function setUp(base: string, receiverUrl: string) {
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
