import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import { admin } from '../helpers/auth.js';
import { waitForOutput } from '../helpers/cli.js';
import { type SharedStore, startSharedStore } from '../helpers/shared-store.js';
import { dialectName } from '../helpers/store.js';
import { cloudEvent, createHook, dispatch, eventually, type Receiver, receiver } from './helpers.js';

const BURST = 600;

describe(`webhook sender survives kill -9 (${dialectName})`, () => {
  let shared: SharedStore;
  let t: TestApp;
  let rx: Receiver;

  beforeAll(async () => {
    shared = await startSharedStore('svc-webhooks-crash-', { SVC_ALLOW_PRIVATE_NETWORKS: 'true' });
    t = shared.t;
    rx = await receiver();
  });
  afterAll(async () => {
    await rx.close();
    await shared.close();
  });

  function worker(): ChildProcess {
    return shared.worker({
      SVC_ALLOW_PRIVATE_NETWORKS: 'true',
      SVC_WEBHOOK_TIMEOUT_MS: '1000',
      SVC_WEBHOOK_BACKOFF_BASE_SECONDS: '1',
      SVC_WEBHOOK_RETRY_INTERVAL_MS: '200',
    });
  }

  async function statuses(): Promise<Record<string, number>> {
    const rows = await t.ctx.store.db
      .selectFrom('webhook_delivery')
      .select(['status', (eb) => eb.fn.countAll<number>().as('n')])
      .groupBy('status')
      .execute();
    return Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]));
  }

  it('kill -9 during a burst, restart: every delivery ends in a final state, none lost', {
    timeout: 180_000,
  }, async () => {
    const who = await admin(t);
    // The test app only writes deliveries; the CLI worker processes send them.
    await createHook(t, who.headers, { name: 'burst', url: rx.url, event_types: ['svc.folder.created'] });
    const ids: string[] = [];
    for (let i = 0; i < BURST; i++) {
      const e = cloudEvent('svc.folder.created');
      ids.push(e.id);
      await dispatch(t, e);
    }
    expect(await statuses()).toEqual({ PENDING: BURST });

    rx.reply = 'hold';
    const first = worker();
    await waitForOutput(first, /worker started/, 60_000);
    // Let a good part of the burst out, then kill mid-flight: held requests are unanswered attempts.
    await eventually(async () => rx.heldCount() >= 100, 60_000);
    rx.release({ status: 200 });
    rx.reply = 'hold';
    await eventually(async () => rx.heldCount() >= 20, 60_000);
    first.kill('SIGKILL');
    await new Promise((r) => first.once('exit', r));
    const afterKill = await statuses();
    expect(afterKill.PENDING ?? 0).toBeGreaterThan(0);
    rx.release({ status: 200 });
    rx.reply = { status: 200 };

    const second = worker();
    await waitForOutput(second, /worker started/, 60_000);
    // Leases of the killed worker expire after timeout + 5 s; then everything goes out.
    await eventually(async () => (await statuses()).PENDING === undefined, 120_000);
    expect(await statuses()).toEqual({ SUCCESS: BURST });

    // None lost: every event reached the receiver, under its stable delivery id.
    const receivedEvents = new Set(rx.received.map((r) => JSON.parse(r.body).id));
    for (const id of ids) expect(receivedEvents.has(id)).toBe(true);
    const rows = await t.ctx.store.db.selectFrom('webhook_delivery').select(['id', 'event_id']).execute();
    for (const r of rx.received) {
      expect(rows.find((d) => d.id === r.headers['webhook-id'])?.event_id).toBe(JSON.parse(r.body).id);
    }
    // The attempts cut off by the kill are in the log as INTERRUPTED, and counted.
    const interrupted = await t.ctx.store.db
      .selectFrom('webhook_delivery_attempt')
      .selectAll()
      .where('outcome', '=', 'INTERRUPTED')
      .execute();
    expect(interrupted.length).toBeGreaterThan(0);
    for (const a of interrupted) expect(a.error).toMatch(/^interrupted: /);

    // A graceful stop exits cleanly.
    second.kill('SIGTERM');
    const code = await new Promise<number | null>((r) => second.once('exit', (c) => r(c)));
    expect(code).toBe(0);
  });
});
