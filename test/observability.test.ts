import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './helpers/app.js';
import { dialectName } from './helpers/store.js';
import { createHook, type Receiver, receiver } from './webhooks/helpers.js';
import { type Api, api, pluginInstance, publish, settle, workflow } from './workflows/helpers.js';

interface Family {
  name: string;
  help: string;
  type: string;
  metrics: Array<{ labels?: Record<string, string>; value?: string; count?: string; buckets?: object }>;
}

/** What promtool's `check metrics` lints: help text, `_total` only (and always) on counters, snake_case. */
function lint(families: Family[]): string[] {
  const problems: string[] = [];
  for (const f of families) {
    if (!f.help) problems.push(`${f.name}: no help text`);
    if (!/^[a-z_][a-z0-9_]*$/.test(f.name)) problems.push(`${f.name}: not snake_case`);
    if (f.type === 'COUNTER' && !f.name.endsWith('_total'))
      problems.push(`${f.name}: counter without _total`);
    if (f.type !== 'COUNTER' && f.name.endsWith('_total')) problems.push(`${f.name}: _total on a ${f.type}`);
  }
  return problems;
}

describe(`observability: /metrics and the log (${dialectName})`, () => {
  let t: TestApp;
  let a: Api;
  let rx: Receiver;
  beforeAll(async () => {
    t = await startTestApp({
      env: { SVC_ALLOW_PRIVATE_NETWORKS: 'true', SVC_WEBHOOK_BACKOFF_BASE_SECONDS: '0' },
    });
    a = await api(t);
    rx = await receiver();
  });
  afterAll(async () => {
    await rx.close();
    await t.close();
  });

  let text = '';
  const scrape = async (): Promise<Map<string, Family>> => {
    const res = await t.app.inject({ method: 'GET', url: '/metrics' });
    text = res.body;
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    const families = parsePrometheusTextFormat(res.body) as Family[];
    expect(lint(families)).toEqual([]);
    return new Map(families.map((f) => [f.name, f]));
  };
  const value = (f: Family | undefined, labels: Record<string, string> = {}) =>
    Number(
      f?.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v))?.value ??
        Number.NaN,
    );

  it('covers the pipeline: outbox, runs by subscription, node durations, webhook attempts, plugins', async () => {
    const sub = await workflow(a, {
      nodes: [
        { key: 'double', type: 'COMPUTE', config: { logic: { '*': [2, 21] } } },
        { key: 'end', type: 'END' },
      ],
      edges: [{ from_node_id: 'double', to_node_id: 'end' }],
    });
    rx.reply = { status: 500, body: 'down for maintenance' };
    const hook = await createHook(t, a.h, {
      name: 'failing',
      url: rx.url,
      event_types: ['svc.user.created'],
    });
    const core = await pluginInstance(a, 'core');
    expect(
      (await a.call('POST', `/plugin_instance/${core}/invoke`, { action: 'echo', payload: { x: 1 } })).status,
    ).toBe(200);
    await publish(t);
    // Before the drain: one task waiting, and its age is visible.
    const before = await scrape();
    expect(value(before.get('svc_outbox_backlog_tasks'))).toBeGreaterThanOrEqual(1);
    expect(value(before.get('svc_outbox_oldest_task_age_seconds'))).toBeGreaterThanOrEqual(0);

    await settle(t);
    await t.ctx.services.webhookEngine.deliverDue();
    // The delivery failed for good: its svc.webhook.delivery_failed event is drained too.
    await settle(t);
    const m = await scrape();
    expect(value(m.get('svc_outbox_backlog_tasks'))).toBe(0);
    expect(value(m.get('svc_outbox_oldest_task_age_seconds'))).toBe(0);
    expect(value(m.get('svc_outbox_tasks_settled_total'), { outcome: 'done' })).toBeGreaterThanOrEqual(1);
    expect(value(m.get('svc_workflow_runs_started_total'), { subscription_id: sub.id })).toBe(1);
    expect(
      value(m.get('svc_workflow_runs_finished_total'), { subscription_id: sub.id, status: 'completed' }),
    ).toBe(1);
    // The parser folds a histogram's labelled series into its buckets: its count is read from the text.
    expect(m.get('svc_workflow_node_duration_seconds')?.type).toBe('HISTOGRAM');
    expect(text).toContain('svc_workflow_node_duration_seconds_count{type="COMPUTE",status="completed"} 1\n');
    expect(value(m.get('svc_webhook_attempts_total'), { outcome: 'failed', attempt: '1' })).toBe(1);
    expect(m.get('svc_webhook_attempt_duration_seconds')?.type).toBe('HISTOGRAM');
    expect(
      value(m.get('svc_plugin_invocations_total'), { plugin: 'core', action: 'echo', outcome: 'ok' }),
    ).toBe(1);
    // The store's statements and transactions since it opened: the work above took several of each.
    expect(value(m.get('svc_store_statements_total'))).toBeGreaterThan(
      value(before.get('svc_store_statements_total')),
    );
    expect(value(m.get('svc_store_transactions_total'))).toBeGreaterThan(
      value(before.get('svc_store_transactions_total')),
    );
    // (The scrape's own gauges read the store after the counter was read.)
    expect(value(m.get('svc_store_statements_total'))).toBeLessThan(t.ctx.store.activity.statements);
    // HTTP and the process are there too; the three gauges promtool flags are gone.
    expect(m.has('http_requests_total')).toBe(true);
    expect(m.has('process_resident_memory_bytes')).toBe(true);
    expect(m.has('nodejs_active_handles_total')).toBe(false);

    // The failed attempt and the finished run are logged at info, with their ids and durations.
    const failed = t.logs.find((l) => l.msg === 'webhook attempt failed' && l.webhook_id === hook.id);
    expect(failed).toMatchObject({ level: 30, attempt: 1, http_status: 500 });
    expect(typeof failed?.delivery_id).toBe('string');
    expect(typeof failed?.duration_ms).toBe('number');
    const run = t.logs.find((l) => l.msg === 'workflow run completed' && l.subscription_id === sub.id);
    expect(run).toMatchObject({ level: 30, status: 'completed' });
    expect(typeof run?.run_id).toBe('string');
    expect(typeof run?.duration_ms).toBe('number');
  });

  it('one info line per API request; probes, /metrics and the docs page log at debug', async () => {
    const from = t.logs.length;
    for (const url of ['/healthz', '/readyz', '/metrics', '/docs/', '/docs/static/index.css']) {
      expect((await t.app.inject({ method: 'GET', url })).statusCode, url).toBe(200);
    }
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/user?search=secret', headers: a.h });
    expect(res.statusCode).toBe(200);
    const lines = t.logs.slice(from).filter((l) => l.level === 30);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      msg: 'request',
      method: 'GET',
      path: '/api/v1/user',
      status: 200,
    });
    expect(JSON.stringify(lines[0])).not.toContain('secret');
  });
});
