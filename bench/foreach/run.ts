/**
 * FOREACH's figures (docs/performance.md "FOREACH"), each next to a ceiling measured in the same run:
 *
 * 1. ITEMS items of an http action whose receiver answers after HOLD ms, at concurrency CONCURRENCY:
 *    the node's time (its started_at to completed_at) next to the ideal, ceil(ITEMS / CONCURRENCY)
 *    rounds of HOLD ms (target: within 2x), and next to a plain HTTP client making the same calls,
 *    CONCURRENCY at a time, to the same receiver (what the receiver and the loopback allow).
 * 2. The per-item overhead: the same FOREACH with a receiver that answers at once, node time per item
 *    (and the plain client's time per call beside it).
 *
 *   npm run build && npm run bench -- foreach [--store sqlite|postgres] [--items 1000]
 *     [--concurrency 50] [--hold 20] [--rounds 5]
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { type Call, client, until } from '../lib/api.js';
import { startSvc } from '../pipeline/harness.js';

const { values } = parseArgs({
  options: {
    store: { type: 'string', default: 'sqlite' },
    items: { type: 'string', default: '1000' },
    concurrency: { type: 'string', default: '50' },
    hold: { type: 'string', default: '20' },
    rounds: { type: 'string', default: '5' },
  },
});
const ITEMS = Number(values.items);
const CONCURRENCY = Number(values.concurrency);
const HOLD = Number(values.hold);
const ROUNDS = Number(values.rounds);
const TYPE = 'com.example.order.lines';

/** A receiver on 127.0.0.1 answering every request after `holdMs`. */
function receiver(holdMs: number) {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const answer = () => res.setHeader('content-type', 'application/json').end('{"ok":true}');
      if (holdMs > 0) setTimeout(answer, holdMs);
      else answer();
    });
  });
  return new Promise<{ url: string; close(): void }>((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
        close: () => {
          server.closeAllConnections();
          server.close();
        },
      }),
    ),
  );
}

/** The plain client's time for ITEMS calls, CONCURRENCY at a time (keep-alive, like svc's http action). */
async function plainCalls(url: string): Promise<number> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  let next = 0;
  const one = () =>
    new Promise<void>((resolve, reject) => {
      const req = http.request(`${url}line/${next}`, { method: 'POST', agent }, (res) => {
        res.resume();
        res.on('end', resolve);
      });
      req.on('error', reject);
      req.end('{}');
    });
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < ITEMS) {
        next++;
        await one();
      }
    }),
  );
  agent.destroy();
  return performance.now() - t0;
}

/** A subscription whose FOREACH calls `url` once per line; answers its id. */
async function setUp(call: Call, url: string): Promise<string> {
  await call('POST', '/event_definition', { event_type: TYPE });
  const defs = await call('GET', '/plugin_definition?name=http');
  const instance = await call('POST', '/plugin_instance', {
    plugin_definition_id: defs.plugin_definitions[0].id,
    display_name: 'erp',
    enabled: true,
  });
  const sub = await call('POST', '/event_subscription', { name: 'lines', event_type: TYPE });
  await call('PUT', `/event_subscription/${sub.id}/graph`, {
    nodes: [
      {
        key: 'each',
        type: 'FOREACH',
        config: {
          items: { var: 'event.data.lines' },
          concurrency: CONCURRENCY,
          max_items: Math.max(ITEMS, 1),
          action: {
            plugin_instance_id: instance.id,
            plugin_action: 'request',
            input_mapping: {
              method: 'POST',
              url: { cat: [url, 'line/', { var: 'index' }] },
              body: { preserve: {} },
            },
          },
        },
      },
    ],
    edges: [],
  });
  return sub.id;
}

/** One run of the FOREACH on ITEMS lines: the node's time, ms. */
async function once(call: Call, subscriptionId: string, round: number): Promise<number> {
  const lines = Array.from({ length: ITEMS }, (_, i) => ({ sku: `sku-${i}` }));
  await call(
    'POST',
    '/event',
    {
      specversion: '1.0',
      id: `lines-${round}`,
      source: 'https://shop.example.com',
      type: TYPE,
      data: { lines },
    },
    'application/cloudevents+json',
  );
  let node: { started_at: string; completed_at: string; status: string } | undefined;
  await until(async () => {
    const runs = (await call('GET', `/workflow_run?event_subscription_id=${subscriptionId}&limit=250`)).runs;
    const run = runs.find((r: { event_id: string }) => r.event_id === `lines-${round}`);
    if (!run || run.status === 'running') return false;
    if (run.status !== 'completed') throw new Error(`run ${run.id} ${run.status}: ${run.error}`);
    node = (await call('GET', `/workflow_run/${run.id}/node`)).nodes[0];
    return true;
  }, 600_000);
  const n = node as NonNullable<typeof node>;
  return Date.parse(n.completed_at) - Date.parse(n.started_at);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const span = (xs: number[]) => `${Math.min(...xs).toFixed(0)}-${Math.max(...xs).toFixed(0)}`;

/** ROUNDS runs of the FOREACH and of the plain client against a receiver holding `holdMs`. */
async function measure(holdMs: number): Promise<{ node: number[]; plain: number[] }> {
  const rx = await receiver(holdMs);
  const svc = await startSvc(values.store as string);
  try {
    const call = await client(svc.url);
    const id = await setUp(call, rx.url);
    await once(call, id, -1); // warm-up: plans, connections, JIT
    const node: number[] = [];
    const plain: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      node.push(await once(call, id, r));
      plain.push(await plainCalls(rx.url));
    }
    return { node, plain };
  } finally {
    await svc.stop();
    rx.close();
  }
}

const held = await measure(HOLD);
const ideal = Math.ceil(ITEMS / CONCURRENCY) * HOLD;
console.log(
  `${values.store}: FOREACH of ${ITEMS} items, a ${HOLD} ms http action, concurrency ${CONCURRENCY} (median of ${ROUNDS}, min-max)\n` +
    `  ideal (${Math.ceil(ITEMS / CONCURRENCY)} rounds x ${HOLD} ms)   ${ideal} ms\n` +
    `  plain HTTP client, same calls     ${median(held.plain).toFixed(0)} ms (${span(held.plain)})\n` +
    `  FOREACH node                      ${median(held.node).toFixed(0)} ms (${span(held.node)}) = ${(median(held.node) / ideal).toFixed(2)}x ideal (target <= 2x)`,
);
const quick = await measure(0);
console.log(
  `\n${values.store}: per-item overhead, a receiver that answers at once, concurrency ${CONCURRENCY}\n` +
    `  plain HTTP client   ${((1000 * median(quick.plain)) / ITEMS).toFixed(0)} us per call\n` +
    `  FOREACH node        ${((1000 * median(quick.node)) / ITEMS).toFixed(0)} us per item (${span(quick.node.map((x) => (1000 * x) / ITEMS))})`,
);
