import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, expect, it } from 'vitest';
import { eventually } from '../events/helpers.js';
import { startTestApp } from '../helpers/app.js';
import { SvcProcess } from '../helpers/process.js';
import { ownerOfLoopbackPort } from '../helpers/socket-owner.js';
import { describePg, freshDatabase } from '../helpers/store.js';
import { api, nodesOf, pluginInstance, publish, runsOf, workflow } from '../workflows/helpers.js';

/**
 * A plugin instance's `rate_limit` and `max_concurrency` (docs/plugins.md "Limits") hold across two
 * real `svc worker` processes on one PostgreSQL database: the receiver behind the instance never
 * sees more calls in a window, or at once, than the instance allows, whichever process calls it.
 */
describePg('plugin instance limits with two `svc worker` processes', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  const RATE = { limit: 4, period_ms: 1000 };
  const MAX_CONCURRENCY = 2;
  const HOLD_MS = 100;
  const EVENTS = 12;

  it('every call across both processes keeps to the rate and the concurrency; none counts an attempt for its wait', async () => {
    const db = await freshDatabase();
    cleanups.push(() => db.drop());
    const t = await startTestApp({ databaseUrl: db.url, env: { SVC_ALLOW_PRIVATE_NETWORKS: 'true' } });
    cleanups.push(() => t.close());

    const arrivals: number[] = [];
    let inFlight = 0;
    let most = 0;
    // Which processes made the calls: the owner of each request's connection, asked while it is open.
    const callers = new Set<number>();
    let workerPids: number[] = [];
    const server: Server = createServer((req, res) => {
      arrivals.push(Date.now());
      const owner = ownerOfLoopbackPort(req.socket.remotePort!, workerPids);
      if (owner !== undefined) callers.add(owner);
      inFlight++;
      most = Math.max(most, inFlight);
      res.on('close', () => inFlight--);
      setTimeout(
        () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'),
        HOLD_MS,
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanups.push(async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    });
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

    const env = { SVC_ALLOW_PRIVATE_NETWORKS: 'true', SVC_WORKFLOW_POLL_INTERVAL_MS: '100' };
    const workers = [0, 1].map(() => {
      const w = new SvcProcess('worker', db.url, env);
      cleanups.push(() => w.stop());
      return w;
    });
    await Promise.all(workers.map((w) => w.said('outbox: listening for notifications')));
    workerPids = workers.map((w) => w.pid);

    const a = await api(t);
    const http = await pluginInstance(a, 'http');
    const patched = await a.call('PATCH', `/plugin_instance/${http}`, {
      rate_limit: RATE,
      max_concurrency: MAX_CONCURRENCY,
    });
    expect(patched.status).toBe(200);
    const wf = await workflow(a, {
      nodes: [
        {
          key: 'call',
          type: 'ACTION',
          config: {
            plugin_instance_id: http,
            plugin_action: 'request',
            input_mapping: { method: 'POST', url: { cat: [`${base}/`, { var: 'event.data.n' }] } },
          },
        },
      ],
    });

    for (let n = 0; n < EVENTS; n++) await publish(t, { n });
    const completed = async () =>
      (await runsOf(a, wf.id)).filter((r: { status: string }) => r.status === 'completed').length;
    await eventually(async () => (await completed()) === EVENTS, 60_000, `${EVENTS} runs completed`);

    expect(arrivals).toHaveLength(EVENTS);
    expect(most).toBeLessThanOrEqual(MAX_CONCURRENCY);
    // In any window of period_ms, at most `limit` calls were let through: exactly so by the starts
    // the processes recorded when they admitted each call, and so at the receiver but for the time a
    // request takes to leave its process (a process's first request loads its HTTP client).
    const starts = (
      await t.ctx.store.db
        .selectFrom('call_limit_entry')
        .select('at')
        .where('scope', '=', `plugin:${http}`)
        .where('kind', '=', 'start')
        .execute()
    )
      .map((e) => new Date(e.at).getTime())
      .sort((x, y) => x - y);
    expect(starts).toHaveLength(EVENTS);
    const sorted = [...arrivals].sort((x, y) => x - y);
    for (let i = 0; i + RATE.limit < EVENTS; i++) {
      expect(starts[i + RATE.limit] - starts[i]).toBeGreaterThanOrEqual(RATE.period_ms);
      expect(sorted[i + RATE.limit] - sorted[i]).toBeGreaterThanOrEqual(RATE.period_ms - 350);
    }
    // 12 calls at 4 a second take at least two windows.
    expect(starts[EVENTS - 1] - starts[0]).toBeGreaterThanOrEqual(2 * RATE.period_ms);
    // Waiting for the limit counted no attempt: each node was invoked once.
    for (const run of await runsOf(a, wf.id)) {
      const nodes = await nodesOf(a, run.id);
      expect(nodes.call).toMatchObject({ status: 'completed', attempts: 1 });
      expect(nodes.call).not.toHaveProperty('waiting_for_limit');
    }
    expect(callers.size).toBe(2);
    expect(workers.every((w) => w.alive)).toBe(true);
  }, 120_000);
});
