import type { CloudEvent } from '../../src/areas/events/cloudevent.js';
import type { Clock } from '../../src/lib/clock.js';
import { newId } from '../../src/lib/ids.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { admin, type TestPrincipal } from '../helpers/auth.js';
import { wftestPluginDir } from './plugin.js';

/** Helpers of the workflow tests: everything goes through HTTP and the real outbox drain and engine. */

export type Headers = { authorization: string };
// biome-ignore lint/suspicious/noExplicitAny: response bodies are asserted field by field
export type Json = any;

export interface Api {
  t: TestApp;
  h: Headers;
  call(
    method: string,
    url: string,
    payload?: unknown,
    headers?: Headers,
  ): Promise<{ status: number; body: Json }>;
}

export async function api(t: TestApp, who?: TestPrincipal): Promise<Api> {
  const p = who ?? (await admin(t));
  // Creating users publishes svc.user.created: drain those before any test subscription exists.
  await settle(t);
  const call = async (method: string, url: string, payload?: unknown, headers: Headers = p.headers) => {
    const res = await t.app.inject({
      method: method as 'GET',
      url: `/api/v1${url}`,
      headers,
      ...(payload === undefined ? {} : { payload: payload as object }),
    });
    return { status: res.statusCode, body: res.body ? res.json() : undefined };
  };
  return { t, h: p.headers, call };
}

/** Creates a subscription on svc.user.created (the default) with a graph; answers ids by key. */
export async function workflow(
  a: Api,
  graph: { nodes: unknown[]; edges?: unknown[] },
  sub: Record<string, unknown> = {},
): Promise<{ id: string; nodeIds: Record<string, string>; edgeIds: string[] }> {
  const created = await a.call('POST', '/event_subscription', {
    name: `wf-${newId().slice(0, 6)}`,
    event_type: 'svc.user.created',
    ...sub,
  });
  if (created.status !== 200)
    throw new Error(`create subscription: ${created.status} ${JSON.stringify(created.body)}`);
  const put = await a.call('PUT', `/event_subscription/${created.body.id}/graph`, {
    nodes: graph.nodes,
    edges: graph.edges ?? [],
  });
  if (put.status !== 200) throw new Error(`put graph: ${put.status} ${JSON.stringify(put.body)}`);
  const nodeIds: Record<string, string> = {};
  for (const n of put.body.nodes) nodeIds[n.key] = n.id;
  return { id: created.body.id, nodeIds, edgeIds: put.body.edges.map((e: { id: string }) => e.id) };
}

/** Publishes a registered event (svc.user.created) carrying `extra` data, as an area would. */
export async function publish(t: TestApp, extra: Record<string, unknown> = {}): Promise<CloudEvent> {
  const userId = newId();
  return t.ctx.store.transaction((tx) =>
    t.ctx.services.events.publish(tx, {
      type: 'svc.user.created',
      source: '/api/v1/user',
      subject: userId,
      data: { user_id: userId, email: `${userId.slice(0, 8)}@example.test`, ...extra },
    }),
  );
}

/**
 * Publishes `count` svc.user.created events, `perTransaction` to a transaction, and settles after
 * each transaction: many runs made by the real outbox and engine, quickly (retention's tests).
 */
export async function publishMany(
  t: TestApp,
  count: number,
  perTransaction = 250,
  prefix = '',
): Promise<void> {
  for (let i = 0; i < count; i += perTransaction) {
    await t.ctx.store.transaction(async (tx) => {
      for (let j = i; j < Math.min(count, i + perTransaction); j++) {
        const id = `${prefix}${`${j}`.padStart(8, '0')}`;
        await t.ctx.services.events.publish(tx, {
          type: 'svc.user.created',
          source: '/api/v1/user',
          subject: id,
          data: { user_id: id, email: `u${id}@example.test` },
        });
      }
    });
    await settle(t);
  }
}

/** A worker job of the app by name (`outbox`, `workflows`), run step by step in tests. */
export function job(t: TestApp, name: string) {
  const j = t.ctx.services.jobs.find((x) => x.name === name);
  if (!j) throw new Error(`no ${name} job`);
  return j;
}

/** Runs the outbox drain and the workflows job until neither has anything left to do now. */
export async function settle(t: TestApp): Promise<void> {
  for (let round = 0; round < 100; round++) {
    let more = false;
    while (await job(t, 'outbox').run()) more = true;
    while (await job(t, 'workflows').run()) more = true;
    // A last step of each after the other (the router may have created runs, runs may publish).
    const a = await job(t, 'outbox').run();
    const b = await job(t, 'workflows').run();
    if (!more && !a && !b) return;
  }
  throw new Error('workflows did not settle');
}

export async function runsOf(a: Api, subscriptionId: string): Promise<Json[]> {
  const res = await a.call(
    'GET',
    `/workflow_run?event_subscription_id=${subscriptionId}&sort_dir=asc&limit=250`,
  );
  if (res.status !== 200) throw new Error(`list runs: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.runs;
}

/** The single run of a subscription and its nodes by key. */
export async function onlyRun(
  a: Api,
  subscriptionId: string,
): Promise<{ run: Json; nodes: Record<string, Json>; list: Json[] }> {
  const runs = await runsOf(a, subscriptionId);
  if (runs.length !== 1) throw new Error(`expected 1 run, found ${runs.length}`);
  const res = await a.call('GET', `/workflow_run/${runs[0].id}/node`);
  const nodes: Record<string, Json> = {};
  for (const n of res.body.nodes) nodes[n.node_key] = n;
  return { run: runs[0], nodes, list: res.body.nodes };
}

/** Creates an enabled instance of the plugin definition named `name`; answers its id. */
export async function pluginInstance(a: Api, name: string): Promise<string> {
  const defs = await a.call('GET', `/plugin_definition?name=${encodeURIComponent(name)}`);
  const def = defs.body.plugin_definitions?.[0];
  if (!def) throw new Error(`no plugin definition ${name}: ${JSON.stringify(defs.body)}`);
  const res = await a.call('POST', '/plugin_instance', {
    plugin_definition_id: def.id,
    display_name: name,
    enabled: true,
  });
  if (res.status !== 200) throw new Error(`plugin instance: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.id;
}

/** Steps of the run's nodes by key, for assertions. */
export async function nodesOf(a: Api, runId: string): Promise<Record<string, Json>> {
  const res = await a.call('GET', `/workflow_run/${runId}/node`);
  const nodes: Record<string, Json> = {};
  for (const n of res.body.nodes) nodes[n.node_key] = n;
  return nodes;
}

/**
 * The app every workflow suite starts from: the wftest plugin installed (one instance), an admin API
 * client, access tokens that outlive the hours a suite moves `clock` by.
 */
export async function startWorkflowApp(clock?: Clock): Promise<{ t: TestApp; a: Api; wftest: string }> {
  const t = await startTestApp({
    clock,
    env: { SVC_PLUGIN_DIR: wftestPluginDir(), SVC_ACCESS_TOKEN_TTL_SECONDS: '86400' },
  });
  const a = await api(t);
  return { t, a, wftest: await pluginInstance(a, 'wftest') };
}
