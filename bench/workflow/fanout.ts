/**
 * Fan-out latency (#15 "Speed"): a run of COMPUTE -> 4 parallel http ACTIONs against a local receiver
 * that answers after 20 ms -> JOIN ALL -> END, next to its ceiling measured in the same run: the same
 * graph with one branch. Ready branches run side by side, so the fan-out run should take about as long
 * as the one-branch run (goal: <= 1.5x), not four times as long.
 *
 * One run at a time through the real path (publish -> outbox drain -> router -> engine -> plugin ->
 * persisted states); the wall time is the run's own persisted started_at -> completed_at, and beside it
 * the time from publish until the run is seen completed. Medians and min-max over the rounds,
 * alternating the two graphs so load drifts hit both alike.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createWorker } from '../../src/app/runtime.js';
import type { AppContext } from '../../src/app/types.js';
import { newId } from '../../src/lib/ids.js';
import { median } from '../lib/load.js';

export const RECEIVER_DELAY_MS = 20;

export interface FanOutResult {
  /** Persisted run wall times (ms), one branch and four. */
  single: number[];
  fan: number[];
  /** Publish until the run is seen completed (ms). */
  singleEndToEnd: number[];
  fanEndToEnd: number[];
}

function graph(branches: number, instanceId: string, url: string) {
  const actions = Array.from({ length: branches }, (_, i) => ({
    key: `call${i + 1}`,
    type: 'ACTION',
    config: {
      plugin_instance_id: instanceId,
      plugin_action: 'request',
      input_mapping: {
        method: 'POST',
        url: `${url}/branch/${i + 1}`,
        body: { eachKey: { n: { var: 'nodes.start.output.result' } } },
      },
    },
  }));
  return {
    nodes: [
      { key: 'start', type: 'COMPUTE', config: { logic: { var: 'event.data.n' } } },
      ...actions,
      { key: 'join', type: 'JOIN', config: { mode: 'ALL' } },
      { key: 'end', type: 'END' },
    ],
    edges: [
      ...actions.map((a) => ({ from_node_id: 'start', to_node_id: a.key })),
      ...actions.map((a) => ({ from_node_id: a.key, to_node_id: 'join' })),
      { from_node_id: 'join', to_node_id: 'end' },
    ],
  };
}

/** Measures `rounds` runs of each graph; `ctx` must allow private networks (the receiver is local). */
export async function measureFanOut(ctx: AppContext, rounds: number): Promise<FanOutResult> {
  const receiver = createServer((req, res) => {
    req.resume();
    setTimeout(() => {
      res.setHeader('content-type', 'application/json');
      res.end('{"ok":true}');
    }, RECEIVER_DELAY_MS);
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;

  const defs = await ctx.services.plugins.listDefinitions(
    { limit: 1, offset: 0, sort_by: 'name', sort_dir: 'asc' },
    { name: 'http' },
  );
  const http = await ctx.services.plugins.createInstance('bench', {
    plugin_definition_id: defs.items[0].id,
    display_name: 'bench receiver',
    enabled: true,
  });
  const subscriptionOf = async (shape: string, branches: number) => {
    const sub = await ctx.services.subscriptions.create('bench', {
      name: `fan-out ${shape}`,
      event_type: 'svc.user.created',
      condition_jsonlogic: { '==': [{ var: 'event.data.shape' }, shape] },
    });
    await ctx.services.subscriptions.putGraph('bench', sub.id, graph(branches, http.id, url));
  };
  await subscriptionOf('one', 1);
  await subscriptionOf('four', 4);

  const worker = createWorker(ctx);
  worker.start();
  const result: FanOutResult = { single: [], fan: [], singleEndToEnd: [], fanEndToEnd: [] };
  const once = async (shape: 'one' | 'four') => {
    const id = newId();
    const t0 = performance.now();
    const event = await ctx.store.transaction((tx) =>
      ctx.services.events.publish(tx, {
        type: 'svc.user.created',
        source: '/api/v1/user',
        subject: id,
        data: { user_id: id, email: `${id.slice(0, 8)}@bench.test`, n: 1, shape },
      }),
    );
    for (;;) {
      const run = await ctx.store.db
        .selectFrom('workflow_run')
        .select(['status', 'started_at', 'completed_at', 'error'])
        .where('event_id', '=', event.id)
        .executeTakeFirst();
      if (run && run.status !== 'running') {
        if (run.status !== 'completed') throw new Error(`fan-out run ${run.status}: ${run.error}`);
        const wall = Date.parse(run.completed_at as string) - Date.parse(run.started_at as string);
        (shape === 'one' ? result.single : result.fan).push(wall);
        (shape === 'one' ? result.singleEndToEnd : result.fanEndToEnd).push(performance.now() - t0);
        return;
      }
      if (performance.now() - t0 > 30_000) throw new Error('fan-out run did not finish');
      await new Promise((r) => setTimeout(r, 1));
    }
  };
  // Warm-up (connections, plan cache, JIT), then alternating rounds.
  await once('one');
  await once('four');
  result.single.length = result.fan.length = result.singleEndToEnd.length = result.fanEndToEnd.length = 0;
  for (let i = 0; i < rounds; i++) {
    await once('one');
    await once('four');
  }
  await worker.stop();
  await new Promise((r) => receiver.close(r));
  return result;
}

const range = (xs: number[]) => `${Math.min(...xs).toFixed(0)}-${Math.max(...xs).toFixed(0)}`;

export function printFanOut(name: string, r: FanOutResult): void {
  const ratio = median(r.fan) / median(r.single);
  console.log(
    `${name.padEnd(12)}${`${median(r.single).toFixed(0)} ms (${range(r.single)})`.padStart(22)}${`${median(r.fan).toFixed(0)} ms (${range(r.fan)})`.padStart(22)}${`${ratio.toFixed(2)}x`.padStart(10)}${`${median(r.singleEndToEnd).toFixed(0)} / ${median(r.fanEndToEnd).toFixed(0)} ms`.padStart(22)}`,
  );
}
