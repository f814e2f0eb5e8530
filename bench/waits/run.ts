/**
 * WAIT_EVENT's figures (docs/performance.md "WAIT_EVENT"), each next to a ceiling measured in the
 * same run:
 *
 * 1. What handling an event costs with 0, 10,000 and 100,000 runs waiting: EVENTS payments that
 *    match no wait, through `POST /event`, each running a subscription's http ACTION; executions/s as
 *    a ratio of the rate with none waiting (the ceiling).
 * 2. Resuming: RESUME runs waiting, each resumed by its own payment; resumed runs/s (counted when
 *    the ACTION after the wait reaches the receiver), next to the rate of new runs of the same graph
 *    without the wait (the ceiling).
 *
 *   npm run build && npm run bench -- waits [--store sqlite|postgres] [--events 5000] [--resume 10000]
 *     [--waiting 0,10000,100000]
 */
import { parseArgs } from 'node:util';
import { type Call, client, counter, postEvents, until } from '../lib/api.js';
import { startSvc } from '../pipeline/harness.js';

const { values } = parseArgs({
  options: {
    store: { type: 'string', default: 'sqlite' },
    events: { type: 'string', default: '5000' },
    resume: { type: 'string', default: '10000' },
    waiting: { type: 'string', default: '0,10000,100000' },
  },
});
const EVENTS = Number(values.events);
const RESUME = Number(values.resume);
const WAITING = (values.waiting ?? '').split(',').map(Number);
const ORDER = 'com.example.order.created';
const PAID = 'com.example.payment.received';

/** The http instance calling `url`, and both event types. */
async function setUp(call: Call, url: string) {
  await call('POST', '/event_definition', { event_type: ORDER });
  await call('POST', '/event_definition', { event_type: PAID });
  const defs = await call('GET', '/plugin_definition?name=http');
  const instance = await call('POST', '/plugin_instance', {
    plugin_definition_id: defs.plugin_definitions[0].id,
    display_name: 'receiver',
    enabled: true,
  });
  const notify = {
    key: 'notify',
    type: 'ACTION',
    config: {
      plugin_instance_id: instance.id,
      plugin_action: 'request',
      input_mapping: { method: 'POST', url, body: { order: { var: 'event.data.order' } } },
    },
  };
  /** A subscription on `type` whose graph is `nodes`, then the ACTION. */
  return async (type: string, nodes: unknown[]) => {
    const sub = await call('POST', '/event_subscription', { name: type, event_type: type });
    const edges = nodes.length > 0 ? [{ from_node_id: 'wait', to_node_id: 'notify' }] : [];
    await call('PUT', `/event_subscription/${sub.id}/graph`, { nodes: [...nodes, notify], edges });
    return sub.id as string;
  };
}

const WAIT = {
  key: 'wait',
  type: 'WAIT_EVENT',
  config: {
    event_type: PAID,
    correlation: { run: { var: 'event.data.order' }, event: { var: 'event.data.order' } },
    timeout_ms: 86_400_000,
  },
};
const event = (type: string, prefix: string) => (i: number) => ({
  specversion: '1.0',
  id: `${type}:${prefix}-${i}`,
  source: 'https://shop.example.com',
  type,
  data: { order: `${prefix}-${i}` },
});

/** Waits until `count` runs of `id` are running (waiting), polling the run list's total. */
async function waitingRuns(call: Call, id: string, count: number) {
  const running = async () =>
    (await call('GET', `/workflow_run?event_subscription_id=${id}&status=running&limit=1`)).total as number;
  await until(async () => (await running()) >= count, 1_800_000);
}

/** Executions/s of EVENTS unmatched payments with `waiting` runs waiting. */
async function handling(waiting: number): Promise<number> {
  const rx = await counter();
  const svc = await startSvc(values.store as string);
  try {
    const call = await client(svc.url);
    const subscription = await setUp(call, rx.url);
    const waits = await subscription(ORDER, [WAIT]);
    await subscription(PAID, []);
    await postEvents(call, waiting, event(ORDER, 'o'));
    if (waiting > 0) await waitingRuns(call, waits, waiting);
    const t0 = performance.now();
    await postEvents(call, EVENTS, event(PAID, 'nobody'));
    await until(() => rx.count() >= EVENTS, 600_000);
    return EVENTS / ((performance.now() - t0) / 1000);
  } finally {
    await svc.stop();
    rx.close();
  }
}

/** Resumed runs/s of RESUME waiting runs, and new runs/s of the same graph without the wait. */
async function resuming(): Promise<{ resumed: number; fresh: number }> {
  const rx = await counter();
  const svc = await startSvc(values.store as string);
  try {
    const call = await client(svc.url);
    const subscription = await setUp(call, rx.url);
    const waits = await subscription(ORDER, [WAIT]);
    await postEvents(call, RESUME, event(ORDER, 'o'));
    await waitingRuns(call, waits, RESUME);
    let t0 = performance.now();
    await postEvents(call, RESUME, event(PAID, 'o'));
    await until(() => rx.count() >= RESUME, 1_800_000);
    const resumed = RESUME / ((performance.now() - t0) / 1000);
    // The ceiling: the same ACTION started by new events, in the same process.
    await subscription(PAID, []);
    t0 = performance.now();
    await postEvents(call, RESUME, event(PAID, 'new'));
    await until(() => rx.count() >= 2 * RESUME, 1_800_000);
    return { resumed, fresh: RESUME / ((performance.now() - t0) / 1000) };
  } finally {
    await svc.stop();
    rx.close();
  }
}

const rates = new Map<number, number>();
for (const w of WAITING) {
  rates.set(w, await handling(w));
  console.log(`waiting ${w}: ${(rates.get(w) as number).toFixed(0)} unmatched events/s`);
}
const base = rates.get(WAITING[0]) as number;
console.log(
  `\n${values.store}: ${EVENTS} events matching no wait, executions/s and ratio to ${WAITING[0]} waiting:`,
);
for (const [w, rate] of rates)
  console.log(`  ${String(w).padStart(7)} waiting  ${rate.toFixed(0)}/s  ${(rate / base).toFixed(2)}x`);
const { resumed, fresh } = await resuming();
console.log(
  `\n${values.store}: ${RESUME} runs waiting, each resumed by its own event\n` +
    `  new runs of the same ACTION (ceiling) ${fresh.toFixed(0)}/s\n` +
    `  resumed runs                          ${resumed.toFixed(0)}/s = ${((100 * resumed) / fresh).toFixed(0)}% (target >= 2,000/s on SQLite)`,
);
