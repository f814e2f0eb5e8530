/**
 * Flow control's figures (docs/performance.md "Flow control"), each next to a ceiling measured in
 * the same run:
 *
 * 1. Throughput with `concurrency {limit: 50, key: event.data.customer}` over 1,000 customers, as a
 *    ratio of the same workflow without flow control: events posted through `POST /event` batches,
 *    counted when their run's ACTION reaches the receiver. Rounds alternate the two; medians.
 * 2. The cost of starting a waiting run with 10, 1,000 and 100,000 runs waiting: one queue
 *    (`concurrency {limit: 1}`) whose runs each wait for the one before; the rate at which the
 *    next ones start, as a ratio of the rate with 10 waiting.
 *
 *   npm run build && npm run bench -- flow [--store sqlite|postgres] [--events 20000] [--rounds 3]
 *     [--waiting 10,1000,100000]
 */
import { parseArgs } from 'node:util';
import pg from 'pg';
import { type Call, client, postEvents, counter as receiver, until } from '../lib/api.js';
import { median } from '../lib/load.js';
import { cpuSeconds, postgresCpuSeconds, storeActivity } from '../lib/process.js';
import { startSvc } from '../pipeline/harness.js';

const { values } = parseArgs({
  options: {
    store: { type: 'string', default: 'sqlite' },
    events: { type: 'string', default: '20000' },
    rounds: { type: 'string', default: '3' },
    waiting: { type: 'string', default: '10,1000,100000' },
  },
});
const EVENTS = Number(values.events);
const ROUNDS = Number(values.rounds);
const WAITING = (values.waiting ?? '').split(',').map(Number);
const TYPE = 'com.example.order.created';
const CUSTOMERS = 1_000;

/** A subscription on TYPE: COMPUTE, then an http ACTION to `url`; answers its id. */
async function subscription(call: Call, url: string, flow: unknown) {
  await call('POST', '/event_definition', { event_type: TYPE });
  const defs = await call('GET', '/plugin_definition?name=http');
  const instance = await call('POST', '/plugin_instance', {
    plugin_definition_id: defs.plugin_definitions[0].id,
    display_name: 'receiver',
    enabled: true,
  });
  const sub = await call('POST', '/event_subscription', {
    name: 'orders',
    event_type: TYPE,
    flow_control: flow,
  });
  await call('PUT', `/event_subscription/${sub.id}/graph`, {
    nodes: [
      { key: 'derive', type: 'COMPUTE', config: { logic: { total: { var: 'event.data.total' } } } },
      {
        key: 'call',
        type: 'ACTION',
        config: {
          plugin_instance_id: instance.id,
          plugin_action: 'request',
          input_mapping: { method: 'POST', url, body: { var: 'nodes.derive.output' } },
        },
      },
    ],
    edges: [{ from_node_id: 'derive', to_node_id: 'call' }],
  });
  return sub.id as string;
}

/** Posts `total` orders numbered from `from`, one of CUSTOMERS customers each. */
const post = (call: Call, from: number, total: number) =>
  postEvents(call, total, (i) => ({
    specversion: '1.0',
    id: `order-${from + i}`,
    source: 'https://shop.example.com/orders',
    type: TYPE,
    data: { total: i, customer: `c${(from + i) % CUSTOMERS}` },
  }));

/** What one round costs per execution: svc's CPU, the PostgreSQL server's, statements, transactions. */
interface Cost {
  cpuMs: number;
  serverMs: number;
  statements: number;
  transactions: number;
}

/** Executions per second of EVENTS events, with `flow` on the subscription, and their cost. */
async function throughput(flow: unknown): Promise<{ rate: number; cost: Cost }> {
  const rx = await receiver();
  const svc = await startSvc(values.store as string);
  const onPostgres = values.store === 'postgres';
  try {
    const call = await client(svc.url);
    await subscription(call, rx.url, flow);
    const pid = svc.processes[0].pid as number;
    const [cpu0, server0, activity0] = [
      cpuSeconds(pid),
      onPostgres ? postgresCpuSeconds() : 0,
      await storeActivity(svc.url),
    ];
    const t0 = performance.now();
    await post(call, 0, EVENTS);
    await until(() => rx.count() >= EVENTS, 600_000);
    const rate = EVENTS / ((performance.now() - t0) / 1000);
    const activity = await storeActivity(svc.url);
    const per = (x: number) => x / EVENTS;
    return {
      rate,
      cost: {
        cpuMs: per(1000 * (cpuSeconds(pid) - cpu0)),
        serverMs: onPostgres ? per(1000 * (postgresCpuSeconds() - server0)) : 0,
        statements: per(activity.statements - activity0.statements),
        transactions: per(activity.transactions - activity0.transactions),
      },
    };
  } finally {
    await svc.stop();
    rx.close();
  }
}

/**
 * Runs started per second from one queue with `waiting` runs in it (the next 200 of them), and the
 * queue's length when the timing began (runs start while the queue fills, so it holds a little less).
 */
async function startRate(waiting: number): Promise<{ rate: number; queued: number }> {
  const rx = await receiver();
  const svc = await startSvc(values.store as string);
  try {
    const call = await client(svc.url);
    const id = await subscription(call, rx.url, { concurrency: { limit: 1 } });
    // Statistics as autovacuum keeps them while the queue fills (this project's CI server runs
    // without autovacuum, and a table never analyzed is planned as if it were empty).
    const analyzer =
      values.store === 'postgres' ? new pg.Client({ connectionString: svc.databaseUrl }) : null;
    await analyzer?.connect();
    const analyze = async () => {
      await analyzer?.query('analyze workflow_run');
    };
    const every = setInterval(() => void analyze().catch(() => {}), 5_000);
    // One runs at a time: the rest of the events queue behind it, in order.
    const total = waiting + 201;
    const count = async (status = '') =>
      (await call('GET', `/workflow_run?event_subscription_id=${id}&limit=1${status}`)).total as number;
    try {
      await post(call, 0, total);
      // Every event has its run: one running or ended, the rest in the queue.
      while ((await count()) < total) await new Promise((r) => setTimeout(r, 200));
    } finally {
      clearInterval(every);
    }
    await analyze();
    await analyzer?.end();
    const queued = await count('&status=pending');
    // Time the next 200 starts (each waits for the one before).
    const from = rx.count();
    const t0 = performance.now();
    await until(() => rx.count() >= from + 200, 600_000);
    return { rate: 200 / ((performance.now() - t0) / 1000), queued };
  } finally {
    await svc.stop();
    rx.close();
  }
}

const FLOW = { concurrency: { limit: 50, key: { var: 'event.data.customer' } } };
const plain: number[] = [];
const shaped: number[] = [];
const costs: Record<'plain' | 'shaped', Cost[]> = { plain: [], shaped: [] };
for (let r = 0; r < ROUNDS; r++) {
  const without = await throughput(null);
  const withFlow = await throughput(FLOW);
  plain.push(without.rate);
  shaped.push(withFlow.rate);
  costs.plain.push(without.cost);
  costs.shaped.push(withFlow.cost);
  console.log(
    `round ${r + 1}: without ${plain[r].toFixed(0)}/s, concurrency 50 per customer ${shaped[r].toFixed(0)}/s`,
  );
}
const range = (xs: number[]) => `${Math.min(...xs).toFixed(0)}-${Math.max(...xs).toFixed(0)}`;
/** Medians of a round's cost per execution: CPU ms of svc / of the server, statements / transactions. */
const costLine = (cs: Cost[]) => {
  const m = (f: (c: Cost) => number, digits: number) => median(cs.map(f)).toFixed(digits);
  return `CPU ms ${m((c) => c.cpuMs, 2)} svc / ${m((c) => c.serverMs, 2)} server, statements ${m((c) => c.statements, 1)} / transactions ${m((c) => c.transactions, 2)} per execution`;
};
if (ROUNDS > 0)
  console.log(
    `\n${values.store}: ${EVENTS} events, ${CUSTOMERS} customers; executions/s median (min-max)\n` +
      `  without flow control (ceiling)        ${median(plain).toFixed(0)} (${range(plain)})\n` +
      `  concurrency {limit: 50, key: customer} ${median(shaped).toFixed(0)} (${range(shaped)})  = ${(
        (100 * median(shaped)) / median(plain)
      ).toFixed(0)}% of the ceiling (target >= 70%)\n` +
      `  without: ${costLine(costs.plain)}\n` +
      `  with:    ${costLine(costs.shaped)}`,
  );

const rates = new Map<number, number>();
for (const w of WAITING) {
  const { rate, queued } = await startRate(w);
  rates.set(w, rate);
  console.log(`waiting ${w}: ${rate.toFixed(1)} starts/s (${queued} in the queue when timed)`);
}
const base = rates.get(WAITING[0]) as number;
console.log(
  `\nstarting a waiting run, one queue (concurrency 1), starts/s and ratio to ${WAITING[0]} waiting:`,
);
for (const [w, rate] of rates)
  console.log(`  ${String(w).padStart(7)} waiting  ${rate.toFixed(1)}/s  ${(rate / base).toFixed(2)}x`);
