/**
 * WAIT_EVENT's figures (docs/performance.md "WAIT_EVENT"), each next to a ceiling measured in the
 * same run:
 *
 * 1. What handling an event costs with 0, 10,000 and 100,000 runs waiting: EVENTS payments that
 *    match no wait, through `POST /event`, each running a subscription's http ACTION; executions/s as
 *    a ratio of the rate with none waiting (the ceiling), all in one warmed-up process, the waiting
 *    runs added between the levels.
 * 2. Resuming: RESUME runs waiting, each resumed by its own payment; resumed runs/s (counted when
 *    the ACTION after the wait reaches the receiver), next to the rate of new runs of the same graph
 *    without the wait (the ceiling).
 *
 *    With `--after compute` the node after the wait is a COMPUTE instead (resumed runs counted as
 *    completed runs), next to new runs of that COMPUTE: the engine's own cost, no call out.
 *
 *   npm run build && npm run bench -- waits [--store sqlite|postgres] [--events 5000] [--resume 10000]
 *     [--waiting 0,10000,100000] [--after http|compute] [--only handling|resume]
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
    after: { type: 'string', default: 'http' },
    only: { type: 'string' },
    rounds: { type: 'string', default: '5' },
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
  const compute = {
    key: 'notify',
    type: 'COMPUTE',
    config: { logic: { order: { var: 'event.data.order' } } },
  };
  /** A subscription on `type` whose graph is `nodes`, then the ACTION (or, with --after compute, a COMPUTE). */
  return async (type: string, nodes: unknown[]) => {
    const sub = await call('POST', '/event_subscription', { name: type, event_type: type });
    const edges = nodes.length > 0 ? [{ from_node_id: 'wait', to_node_id: 'notify' }] : [];
    const last = values.after === 'compute' ? compute : notify;
    await call('PUT', `/event_subscription/${sub.id}/graph`, { nodes: [...nodes, last], edges });
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

const ROUNDS = Number(values.rounds);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/**
 * Executions/s of EVENTS unmatched payments, ROUNDS times at each count of runs waiting, in one svc
 * (one process and one store, warmed up first), the waiting runs added between the levels.
 */
async function handling(levels: readonly number[]): Promise<Map<number, number[]>> {
  const rx = await counter();
  const svc = await startSvc(values.store as string);
  const out = new Map<number, number[]>();
  try {
    const call = await client(svc.url);
    const subscription = await setUp(call, rx.url);
    const waits = await subscription(ORDER, [WAIT]);
    await subscription(PAID, []);
    let sent = 0;
    const round = async (tag: string) => {
      const t0 = performance.now();
      await postEvents(call, EVENTS, event(PAID, tag));
      sent += EVENTS;
      await until(() => rx.count() >= sent, 600_000);
      return EVENTS / ((performance.now() - t0) / 1000);
    };
    // Warm-up rounds (JIT, caches, the file's first growth): not counted.
    for (let r = 0; r < 3; r++) await round(`warm${r}`);
    let waiting = 0;
    for (const level of levels) {
      if (level > waiting) {
        await postEvents(call, level - waiting, (i) => event(ORDER, 'o')(waiting + i));
        await waitingRuns(call, waits, level);
        waiting = level;
      }
      const rates: number[] = [];
      for (let r = 0; r < ROUNDS; r++) rates.push(await round(`nobody${level}-${r}`));
      out.set(level, rates);
      console.log(`waiting ${level}: ${rates.map((x) => x.toFixed(0)).join(', ')} unmatched events/s`);
    }
    return out;
  } finally {
    await svc.stop();
    rx.close();
  }
}

/** Runs of subscription `id` that completed. */
const completed = async (call: Call, id: string) =>
  (await call('GET', `/workflow_run?event_subscription_id=${id}&status=completed&limit=1`)).total as number;

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
    // The node after the wait: an http ACTION counted by the receiver, or a COMPUTE, its run's completion.
    const done = async (id: string, count: number) =>
      values.after === 'compute' ? (await completed(call, id)) >= count : rx.count() >= count;
    let t0 = performance.now();
    await postEvents(call, RESUME, event(PAID, 'o'));
    await until(() => done(waits, RESUME), 1_800_000);
    const resumed = RESUME / ((performance.now() - t0) / 1000);
    // The ceiling: the same node started by new events, in the same process.
    const fresh = await subscription(PAID, []);
    t0 = performance.now();
    await postEvents(call, RESUME, event(PAID, 'new'));
    await until(
      () => (values.after === 'compute' ? done(fresh, RESUME) : done(fresh, 2 * RESUME)),
      1_800_000,
    );
    return { resumed, fresh: RESUME / ((performance.now() - t0) / 1000) };
  } finally {
    await svc.stop();
    rx.close();
  }
}

const rates = values.only === 'resume' ? new Map<number, number[]>() : await handling(WAITING);
if (values.only !== 'resume') {
  const base = median(rates.get(WAITING[0]) as number[]);
  console.log(
    `\n${values.store}: ${EVENTS} events matching no wait, executions/s (median of ${ROUNDS}, min-max) and ratio to ${WAITING[0]} waiting (target within 10%):`,
  );
  for (const [w, rs] of rates)
    console.log(
      `  ${String(w).padStart(7)} waiting  ${median(rs).toFixed(0)}/s (${Math.min(...rs).toFixed(0)}-${Math.max(...rs).toFixed(0)})  ${(median(rs) / base).toFixed(2)}x`,
    );
}
if (values.only !== 'handling') {
  const { resumed, fresh } = await resuming();
  const what = values.after === 'compute' ? 'COMPUTE' : 'ACTION';
  console.log(
    `\n${values.store}: ${RESUME} runs waiting, each resumed by its own event, then a${what === 'ACTION' ? 'n' : ''} ${what}\n` +
      `  new runs of the same ${what} (ceiling) ${fresh.toFixed(0)}/s\n` +
      `  resumed runs ${' '.repeat(what.length + 14)}${resumed.toFixed(0)}/s = ${((100 * resumed) / fresh).toFixed(0)}% (target >= 2,000/s on SQLite)`,
  );
}
