import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../events/helpers.js';
import { SvcProcess } from '../helpers/process.js';
import { dialectName, sharedDatabase, type TestDatabase } from '../helpers/store.js';

const EMAIL = 'thread-admin@example.test';
const PASSWORD = 'thread-admin-password';
const TYPE = 'com.example.ping';
const EVENTS = 30;

/**
 * A package plugin whose actions end the thread they run in the first time (a marker file
 * remembers): `crash_once` exits, `exhaust_once` fills the thread's heap until V8 stops it.
 */
const CRASH_PLUGIN = `
import { existsSync, writeFileSync } from 'node:fs';
import { getHeapStatistics } from 'node:v8';
export default {
  manifest: {
    name: 'crasher',
    version: '1.0.0',
    instance_config_schema: { type: 'object' },
    actions: [
      { name: 'crash_once', title: 'crash once', input_schema: {}, output_schema: {}, idempotent: true, timeout_seconds: 10 },
      { name: 'exhaust_once', title: 'exhaust once', input_schema: {}, output_schema: {}, idempotent: true, timeout_seconds: 30 },
    ],
  },
  handlers: {
    crash_once: ({ input }) => {
      if (existsSync(input.marker)) return { survived: true };
      writeFileSync(input.marker, 'crashed');
      process.exit(3);
    },
    exhaust_once: ({ input }) => {
      if (existsSync(input.marker)) return { survived: true };
      writeFileSync(input.marker, String(getHeapStatistics().heap_size_limit));
      const kept = [];
      for (;;) kept.push(new Array(1_000_000).fill(kept.length));
    },
  },
};
`;

/**
 * `svc serve` with SVC_WORKER=thread: the API on the main thread, the worker (drain, engine) in a
 * worker thread on a connection of its own. With the drain and the engine's polls set to ten
 * minutes, only the wakes the API forwards to the thread explain prompt progress. Events go in over
 * HTTP and out as the workflow's HTTP calls to a local receiver; /metrics counts the thread's work.
 * A thread that dies (here a plugin ends it) is started again and finishes the run it held.
 */
describe(`svc serve with its worker in a thread (${dialectName})`, () => {
  let database: TestDatabase;
  let serve: SvcProcess;
  let receiver: http.Server;
  const received: number[] = [];
  let token = '';
  const plugins = mkdtempSync(join(tmpdir(), 'svc-thread-plugins-'));
  const call = async (method: string, path: string, body?: unknown, type = 'application/json') => {
    const res = await fetch(`${serve.address}/api/v1${path}`, {
      method,
      headers: { 'content-type': type, authorization: `Bearer ${token}` },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = (await res.json()) as Record<string, unknown> & { id: string };
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
    return json;
  };

  beforeAll(async () => {
    database = await sharedDatabase('svc-thread-');
    receiver = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        received.push((JSON.parse(body) as { n: number }).n);
        res.end('{}');
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    mkdirSync(join(plugins, 'crasher'));
    writeFileSync(join(plugins, 'crasher', 'index.mjs'), CRASH_PLUGIN);
    serve = new SvcProcess('serve', database.url, {
      SVC_WORKER: 'thread',
      SVC_PLUGIN_DIR: plugins,
      SVC_WORKFLOW_LEASE_MS: '1000',
      SVC_OUTBOX_DRAIN_INTERVAL_MS: '600000',
      SVC_WORKFLOW_POLL_INTERVAL_MS: '600000',
      SVC_ALLOW_PRIVATE_NETWORKS: 'true',
      SVC_BOOTSTRAP_ADMIN_EMAIL: EMAIL,
      SVC_BOOTSTRAP_ADMIN_PASSWORD: PASSWORD,
    });
    await serve.ready();
  }, 60_000);
  afterAll(async () => {
    await serve?.stop();
    await new Promise((r) => receiver?.close(r));
    await database?.drop();
    rmSync(plugins, { recursive: true, force: true });
  });

  const instanceOf = async (plugin: string) => {
    const defs = await call('GET', `/plugin_definition?name=${plugin}`);
    return call('POST', '/plugin_instance', {
      plugin_definition_id: (defs.plugin_definitions as Array<{ id: string }>)[0].id,
      display_name: plugin,
      enabled: true,
    });
  };

  it('says so, runs workflows woken across the threads and counts the thread on /metrics', async () => {
    expect(serve.output).toContain('worker: worker thread');
    const login = await call('POST', '/auth/login/credentials', { email: EMAIL, password: PASSWORD });
    token = login.access_token as string;
    await call('POST', '/event_definition', { event_type: TYPE });
    const instance = await instanceOf('http');
    const sub = await call('POST', '/event_subscription', { name: 'ping', event_type: TYPE });
    const { port } = receiver.address() as AddressInfo;
    await call('PUT', `/event_subscription/${sub.id}/graph`, {
      nodes: [
        {
          id: 'double',
          key: 'double',
          type: 'COMPUTE',
          config: { logic: { '*': [{ var: 'event.data.n' }, 2] } },
        },
        {
          id: 'send',
          key: 'send',
          type: 'ACTION',
          config: {
            plugin_instance_id: instance.id,
            plugin_action: 'request',
            input_mapping: {
              method: 'POST',
              url: `http://127.0.0.1:${port}/`,
              body: { eachKey: { n: { var: 'nodes.double.output.result' } } },
            },
          },
        },
      ],
      edges: [{ from_node_id: 'double', to_node_id: 'send' }],
    });
    // Let the thread's start-up steps pass: from here only a forwarded wake moves anything.
    await new Promise((r) => setTimeout(r, 500));
    const batch = Array.from({ length: EVENTS }, (_, n) => ({
      specversion: '1.0',
      id: `ping-${n}`,
      source: '/tests/thread',
      type: TYPE,
      data: { n },
    }));
    await call('POST', '/event', batch, 'application/cloudevents-batch+json');
    await eventually(
      async () => received.length >= EVENTS,
      20_000,
      `${EVENTS} calls received:\n${serve.output.slice(-3000)}`,
    );
    expect(received.sort((x, y) => x - y)).toEqual(Array.from({ length: EVENTS }, (_, n) => 2 * n));

    let metrics = '';
    const value = (name: string) =>
      metrics
        .split('\n')
        .filter((l) => l.startsWith(name))
        .reduce((sum, l) => sum + Number(l.split(' ').at(-1)), 0);
    // The drain runs only in the thread: its settlements reach /metrics all the same. A task is
    // settled after its run's first write, in a batch of its own, so the last settlements may
    // follow the last calls (seen on a loaded CI machine): read until they are all there.
    await eventually(
      async () => {
        metrics = await (await fetch(`${serve.address}/metrics`)).text();
        return value('svc_outbox_tasks_settled_total') >= EVENTS;
      },
      20_000,
      `${EVENTS} outbox settlements on /metrics`,
    );
    expect(value('svc_outbox_tasks_settled_total')).toBeGreaterThanOrEqual(EVENTS);
    // The process's own series once, not once per thread.
    expect(metrics.match(/^process_cpu_user_seconds_total /gm)).toHaveLength(1);
  });

  /** A subscription whose one node is `action` of the crasher, and its event sent; returns the subscription. */
  const runOnce = async (action: string, marker: string) => {
    const instance = await instanceOf('crasher');
    const type = `com.example.${action}`;
    await call('POST', '/event_definition', { event_type: type });
    const sub = await call('POST', '/event_subscription', { name: action, event_type: type });
    await call('PUT', `/event_subscription/${sub.id}/graph`, {
      nodes: [
        {
          id: 'boom',
          key: 'boom',
          type: 'ACTION',
          config: {
            plugin_instance_id: instance.id,
            plugin_action: action,
            input_mapping: { marker: { preserve: marker } },
          },
        },
      ],
      edges: [],
    });
    await call(
      'POST',
      '/event',
      { specversion: '1.0', id: `${action}-1`, source: '/tests/thread', type, data: {} },
      'application/cloudevents+json',
    );
    return sub;
  };

  /** The subscription's one run completes, with the output of the attempt after the thread's restart. */
  const completesAfterRestart = async (sub: { id: string }) => {
    const run = await eventually(
      async () => {
        const runs = await call('GET', `/workflow_run?event_subscription_id=${sub.id}`);
        const [only] = runs.runs as Array<{ id: string; status: string }>;
        return only?.status === 'completed' && only;
      },
      20_000,
      'the crashed run completed',
    );
    const nodes = await call('GET', `/workflow_run/${run.id}/node`);
    expect((nodes.nodes as Array<{ output: unknown }>)[0].output).toEqual({ survived: true });
  };

  it('a thread that dies is started again, and the run it held completes', async () => {
    const sub = await runOnce('crash_once', join(plugins, 'crashed'));
    await serve.said('worker thread ended; starting it again', 20_000);
    expect(serve.output).toMatch(/"code":3,"restart_in_ms":1000/);
    expect(serve.alive).toBe(true);
    expect((await fetch(`${serve.address}/healthz`)).status).toBe(200);
    await completesAfterRestart(sub);
  });

  it('a thread that runs out of heap ends alone (its 512 MiB limit), is started again and completes the run', async () => {
    const before = serve.output.length;
    const marker = join(plugins, 'exhausted');
    const sub = await runOnce('exhaust_once', marker);
    await serve.said('ERR_WORKER_OUT_OF_MEMORY', 30_000, before);
    await serve.said('worker thread ended; starting it again', 20_000, before);
    // The thread's heap limit, as the plugin read it: 512 MiB of old generation and the young one's
    // 48 (V8's default is 4 GiB on a machine with this much memory).
    const limitMiB = Number(readFileSync(marker, 'utf8')) / 2 ** 20;
    expect(limitMiB).toBeGreaterThanOrEqual(512);
    expect(limitMiB).toBeLessThan(600);
    // Only the thread ended: the process, with the API, carries on.
    expect(serve.alive).toBe(true);
    expect((await fetch(`${serve.address}/healthz`)).status).toBe(200);
    await completesAfterRestart(sub);
  }, 60_000);

  it('stops cleanly on SIGTERM, the thread with it', async () => {
    const before = serve.output.length;
    await serve.stop();
    expect(serve.output).toContain('shut down cleanly');
    expect(serve.child.exitCode).toBe(0);
    expect(serve.output.slice(before)).not.toMatch(/"level":50/);
  });
});
