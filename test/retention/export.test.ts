import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, spawnCli } from '../helpers/cli.js';
import { type SharedStore, startSharedStore } from '../helpers/shared-store.js';
import { dialectName } from '../helpers/store.js';
import { type Receiver, receiver } from '../webhooks/helpers.js';
import { type Api, api, type Json, publishMany, workflow } from '../workflows/helpers.js';

const RUNS = 2_000;
/** Each run's node holds this much text twice (its input and its output). */
const PAD = 'x'.repeat(15_000);

/**
 * `svc export runs|deliveries` (docs/reliability.md "Export") against a store another process
 * wrote: every line is the API's answer (runs with their nodes, deliveries with their attempt log),
 * `--since`/`--until` and the id filters select by creation, and memory stays level however many
 * records are written (the records here total far more than the process may grow by).
 */
describe(`svc export writes what the API answers, in constant memory (${dialectName})`, () => {
  let shared: SharedStore;
  let a: Api;
  let rx: Receiver;
  let big = '';
  let small = '';
  let hook = '';
  const env = () => ({
    SVC_DATABASE_URL: shared.database.url,
    SVC_DATA_DIR: shared.dir,
    SVC_LOG_LEVEL: 'info',
  });
  const lines = (text: string): Json[] =>
    text
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));

  beforeAll(async () => {
    shared = await startSharedStore('svc-export-', { SVC_ALLOW_PRIVATE_NETWORKS: 'true' });
    a = await api(shared.t);
    rx = await receiver();
    hook = (await a.call('POST', '/webhook', { name: 'rx', url: rx.url, event_types: ['svc.user.created'] }))
      .body.id;
    big = (
      await workflow(a, {
        nodes: [{ key: 'pad', type: 'COMPUTE', config: { logic: { cat: [PAD, { var: 'event.id' }] } } }],
      })
    ).id;
    small = (await workflow(a, { nodes: [{ key: 'one', type: 'COMPUTE', config: { logic: 1 } }] })).id;
    await publishMany(shared.t, RUNS);
    // A few deliveries sent, so they have attempts.
    await shared.t.ctx.services.webhookEngine.deliverDue();
  }, 300_000);
  afterAll(async () => {
    await rx.close();
    await shared.close();
  });

  it('writes each run as GET /workflow_run/{id} answers it, with its nodes; filters by subscription and time', async () => {
    const out = await runCli(['export', 'runs', '--subscription', small], env(), 120_000);
    expect(out.code).toBe(0);
    const runs = lines(out.stdout);
    expect(runs).toHaveLength(RUNS);
    for (const run of [runs[0], runs[RUNS - 1]]) {
      const { nodes, ...answer } = run;
      expect(answer).toEqual((await a.call('GET', `/workflow_run/${run.id}`)).body);
      expect(nodes).toEqual((await a.call('GET', `/workflow_run/${run.id}/node`)).body.nodes);
    }
    expect(runs.every((r) => r.event_subscription_id === small)).toBe(true);
    const created = runs.map((r) => r.created_at as string);
    expect([...created].sort()).toEqual(created);
    expect(out.stderr).toContain('"exported runs"');

    // [since, until): by creation time.
    const mid = created[Math.floor(RUNS / 2)];
    const later = lines(
      (await runCli(['export', 'runs', '--subscription', small, '--since', mid], env())).stdout,
    );
    expect(later).toHaveLength(created.filter((c) => c >= mid).length);
    const earlier = lines(
      (await runCli(['export', 'runs', '--subscription', small, '--until', mid], env())).stdout,
    );
    expect(earlier).toHaveLength(created.filter((c) => c < mid).length);
    expect(later.length + earlier.length).toBe(RUNS);
    const bad = await runCli(['export', 'runs', '--since', 'yesterday'], env());
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('--since must be an ISO 8601 time');
  }, 180_000);

  it('writes each delivery as GET /webhook/{id}/delivery/{id} answers it, attempts included', async () => {
    const out = await runCli(['export', 'deliveries', '--webhook', hook], env(), 120_000);
    expect(out.code).toBe(0);
    const deliveries = lines(out.stdout);
    expect(deliveries.length).toBeGreaterThanOrEqual(RUNS);
    const sent = deliveries.filter((d) => d.attempts_log.length > 0);
    expect(sent.length).toBeGreaterThan(0);
    for (const d of [deliveries[0], sent[0]])
      expect(d).toEqual((await a.call('GET', `/webhook/${hook}/delivery/${d.id}`)).body);
  }, 180_000);

  it('streams: a heap far smaller than the export writes it all', async () => {
    // The whole export is several times this heap: it fits only if records are written as read.
    const HEAP_MB = 48;
    const child = spawnCli(['export', 'runs', '--subscription', big], {
      ...env(),
      NODE_OPTIONS: `--max-old-space-size=${HEAP_MB}`,
    });
    let bytes = 0;
    let count = 0;
    child.stdout?.on('data', (d: Buffer) => {
      bytes += d.length;
      for (const c of d) if (c === 10) count++;
    });
    let stderr = '';
    child.stderr?.on('data', (d: Buffer) => (stderr += d));
    const code = await new Promise((r) => child.once('exit', r));
    expect(stderr).not.toContain('heap out of memory');
    expect(code).toBe(0);
    expect(count).toBe(RUNS);
    expect(bytes).toBeGreaterThan(RUNS * 2 * PAD.length);
    expect(bytes).toBeGreaterThan(HEAP_MB * 1_048_576);
  }, 180_000);
});
