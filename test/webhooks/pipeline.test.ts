import { createHmac } from 'node:crypto';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createWorker } from '../../src/app/runtime.js';
import { standardWebhooksSecret } from '../../src/areas/webhooks/signing.js';
import type { Worker } from '../../src/worker/worker.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { admin, type TestPrincipal } from '../helpers/auth.js';
import { dialectName } from '../helpers/store.js';
import { countingListener } from '../helpers/tcp-listener.js';
import {
  cloudEvent,
  createHook,
  deliveries,
  dispatch,
  eventually,
  type Receiver,
  receiver,
} from './helpers.js';

describe(`webhook pipeline (${dialectName})`, () => {
  let t: TestApp;
  let who: TestPrincipal;
  let rx: Receiver;
  let worker: Worker | undefined;
  beforeEach(async () => {
    t = await startTestApp({
      env: {
        SVC_ALLOW_PRIVATE_NETWORKS: 'true',
        SVC_WEBHOOK_TIMEOUT_MS: '15000',
        // Long intervals: anything delivered quickly got there through a wake-up, not a poll.
        SVC_OUTBOX_DRAIN_INTERVAL_MS: '600000',
        SVC_WEBHOOK_RETRY_INTERVAL_MS: '600000',
      },
    });
    who = await admin(t);
    rx = await receiver();
  });
  afterEach(async () => {
    await worker?.stop();
    worker = undefined;
    await rx.close();
    await t.close();
  });

  it('a real API change reaches the receiver through the outbox, the dispatcher and the sender', async () => {
    const hook = await createHook(t, who.headers, {
      name: 'users',
      url: rx.url,
      event_types: ['svc.user.created'],
    });
    worker = createWorker(t.ctx);
    worker.start();
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/user',
      headers: who.headers,
      payload: { email: 'hooked@example.test', password: 'a-long-password-123' },
    });
    expect(res.statusCode).toBe(200);
    const got = await eventually(async () =>
      rx.received.find((r) => JSON.parse(r.body).subject === res.json().id),
    );
    const event = JSON.parse(got.body);
    expect(event).toMatchObject({ specversion: '1.0', type: 'svc.user.created', subject: res.json().id });
    expect(
      new StandardWebhook(standardWebhooksSecret(hook.secret)).verify(got.body, got.headers as never),
    ).toEqual(event);
    const d = await eventually(async () =>
      (await deliveries(t, who.headers, hook.id, '&status=SUCCESS')).find((x) => x.event_id === event.id),
    );
    expect(d).toMatchObject({
      event_id: event.id,
      event_type: 'svc.user.created',
      http_status: 200,
      attempts: 1,
    });
    expect(d?.payload).toEqual(event);
  });

  it('the same event handed over again (outbox redelivery) never creates or sends a second delivery', async () => {
    const hook = await createHook(t, who.headers, { name: 'once', url: rx.url, event_types: ['*'] });
    const event = cloudEvent();
    await dispatch(t, event);
    await t.ctx.services.webhookEngine.deliverDue();
    // Redelivered, also concurrently.
    await Promise.all([dispatch(t, event), dispatch(t, event), dispatch(t, event)]);
    await t.ctx.services.webhookEngine.deliverDue();
    expect(await deliveries(t, who.headers, hook.id)).toHaveLength(1);
    expect(rx.received).toHaveLength(1);
  });

  it('routes by event_types and `*`; disabled and deleted webhooks get nothing new', async () => {
    const a = await createHook(t, who.headers, { name: 'a', url: rx.url, event_types: ['svc.user.created'] });
    const ab = await createHook(t, who.headers, {
      name: 'ab',
      url: rx.url,
      event_types: ['svc.user.created', 'svc.user.updated'],
    });
    const star = await createHook(t, who.headers, { name: 'star', url: rx.url, event_types: ['*'] });
    const off = await createHook(t, who.headers, {
      name: 'off',
      url: rx.url,
      event_types: ['*'],
      enabled: false,
    });
    const gone = await createHook(t, who.headers, { name: 'gone', url: rx.url, event_types: ['*'] });
    await t.app.inject({ method: 'DELETE', url: `/api/v1/webhook/${gone.id}`, headers: who.headers });
    await dispatch(t, cloudEvent('svc.user.created'));
    await dispatch(t, cloudEvent('svc.user.updated'));
    await dispatch(t, cloudEvent('svc.user.deleted'));
    const count = async (id: string) =>
      Number(
        (
          await t.ctx.store.db
            .selectFrom('webhook_delivery')
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .where('webhook_id', '=', id)
            .executeTakeFirstOrThrow()
        ).n,
      );
    expect(await count(a.id)).toBe(1);
    expect(await count(ab.id)).toBe(2);
    expect(await count(star.id)).toBe(3);
    expect(await count(off.id)).toBe(0);
    expect(await count(gone.id)).toBe(0);
    // Each event's body is stored once, however many webhooks it fans out to.
    const bodies = await t.ctx.store.db.selectFrom('webhook_event').select('event_id').execute();
    expect(bodies).toHaveLength(3);
    await t.ctx.services.webhookEngine.deliverDue();
    expect(rx.received).toHaveLength(6);
    expect(rx.received.map((r) => r.headers['x-webhook-id']).filter((id) => id === star.id)).toHaveLength(3);
  });

  it('one slow endpoint does not hold up the others, and gets at most its own share of slots', async () => {
    const slow = await receiver();
    try {
      slow.reply = 'hold';
      const s = await createHook(t, who.headers, {
        name: 'slow',
        url: slow.url,
        event_types: ['svc.folder.created'],
      });
      const fast = await createHook(t, who.headers, {
        name: 'fast',
        url: rx.url,
        event_types: ['svc.folder.created'],
      });
      for (let i = 0; i < 60; i++) await dispatch(t, cloudEvent('svc.folder.created'));
      worker = createWorker(t.ctx);
      worker.start();
      t.ctx.services.wakeups.wake('webhooks');
      // Every delivery of the fast webhook succeeds while the slow one's attempts are all still held.
      await eventually(
        async () => (await deliveries(t, who.headers, fast.id, '&status=SUCCESS')).length === 60,
      );
      // The slow webhook holds exactly its per-webhook cap of slots, no more.
      await eventually(async () => slow.heldCount() === 32);
      expect(slow.received).toHaveLength(32);
      expect((await deliveries(t, who.headers, s.id, '&status=SUCCESS')).length).toBe(0);
      // Released, the slow webhook drains too.
      slow.reply = { status: 200 };
      slow.release({ status: 200 });
      await eventually(async () => (await deliveries(t, who.headers, s.id, '&status=SUCCESS')).length === 60);
      expect(slow.maxInFlight).toBeLessThanOrEqual(32);
    } finally {
      await worker?.stop();
      worker = undefined;
      await slow.close();
    }
  });

  it('graceful close: attempts in flight finish and are recorded; claimed but unsent ones go back uncounted', async () => {
    const hooks = [];
    for (let i = 0; i < 5; i++) {
      hooks.push(
        await createHook(t, who.headers, { name: `g${i}`, url: rx.url, event_types: ['svc.folder.created'] }),
      );
    }
    for (let i = 0; i < 40; i++) await dispatch(t, cloudEvent('svc.folder.created'));
    rx.reply = 'hold';
    const engine = t.ctx.services.webhookEngine;
    await engine.job.run();
    // 5 webhooks x 32 claimed (the per-webhook cap), 128 of them sent (the pool), 32 waiting in memory.
    await eventually(async () => rx.heldCount() === 128);
    const closing = engine.close();
    await eventually(async () => {
      const rows = await t.ctx.store.db
        .selectFrom('webhook_delivery')
        .select('id')
        .where('locked_by', 'is', null)
        .where('attempts', '=', 0)
        .execute();
      return rows.length === 200 - 128;
    });
    rx.release({ status: 200 });
    await closing;
    const rows = await t.ctx.store.db.selectFrom('webhook_delivery').selectAll().execute();
    expect(rows.filter((r) => r.status === 'SUCCESS' && r.attempts === 1)).toHaveLength(128);
    const untouched = rows.filter((r) => r.status === 'PENDING');
    expect(untouched).toHaveLength(72);
    expect(
      untouched.every((r) => r.attempts === 0 && r.total_attempts === 0 && r.locked_until === null),
    ).toBe(true);
    expect(rx.received).toHaveLength(128);
  });

  it('a manual retry of a claimed, unsent delivery, then close: the retry keeps its fresh count', async () => {
    const hooks = [];
    for (let i = 0; i < 5; i++) {
      hooks.push(
        await createHook(t, who.headers, { name: `r${i}`, url: rx.url, event_types: ['svc.folder.created'] }),
      );
    }
    for (let i = 0; i < 40; i++) await dispatch(t, cloudEvent('svc.folder.created'));
    rx.reply = 'hold';
    const engine = t.ctx.services.webhookEngine;
    await engine.job.run();
    await eventually(async () => rx.heldCount() === 128);
    // One of the 32 claimed but still waiting in memory: retried by hand while this worker holds it.
    const sent = new Set(rx.received.map((r) => r.headers['x-delivery-id']));
    const buffered = (
      await t.ctx.store.db
        .selectFrom('webhook_delivery')
        .select(['id', 'webhook_id', 'attempts'])
        .where('locked_by', 'is not', null)
        .execute()
    ).filter((r) => !sent.has(r.id));
    expect(buffered).toHaveLength(32);
    const target = buffered[0];
    expect(target.attempts).toBe(1);
    const retried = await t.app.inject({
      method: 'POST',
      url: `/api/v1/webhook/${target.webhook_id}/delivery/${target.id}/retry`,
      headers: who.headers,
    });
    expect(retried.statusCode).toBe(200);
    const closing = engine.close();
    await eventually(async () => {
      const row = await t.ctx.store.db
        .selectFrom('webhook_delivery')
        .select('locked_by')
        .where('id', '=', target.id)
        .executeTakeFirstOrThrow();
      return row.locked_by === null;
    });
    rx.release({ status: 200 });
    await closing;
    const row = await t.ctx.store.db
      .selectFrom('webhook_delivery')
      .selectAll()
      .where('id', '=', target.id)
      .executeTakeFirstOrThrow();
    // The reset count is the retry's (0), not 0 - 1: the delivery keeps all max_attempts sends.
    expect(row).toMatchObject({ status: 'PENDING', attempts: 0, total_attempts: 0, locked_until: null });
  });

  it('rotate_secret and a url change apply to deliveries already claimed and waiting in memory', async () => {
    const rx2 = await receiver();
    try {
      const hooks = [];
      for (let i = 0; i < 5; i++) {
        hooks.push(await createHook(t, who.headers, { name: `buf${i}`, url: rx.url, event_types: ['*'] }));
      }
      for (let i = 0; i < 40; i++) await dispatch(t, cloudEvent());
      rx.reply = 'hold';
      const engine = t.ctx.services.webhookEngine;
      await engine.job.run();
      // 5 webhooks x 32 claimed (the per-webhook cap): 128 sent (the pool), 32 waiting in memory.
      await eventually(async () => rx.heldCount() === 128);
      const claimed = await t.ctx.store.db
        .selectFrom('webhook_delivery')
        .select('id')
        .where('locked_by', 'is not', null)
        .execute();
      expect(claimed).toHaveLength(160);
      const secrets = new Map<string, string>();
      for (const h of hooks) {
        const res = await t.app.inject({
          method: 'POST',
          url: `/api/v1/webhook/${h.id}/rotate_secret`,
          headers: who.headers,
        });
        secrets.set(h.id, res.json().secret);
      }
      const moved = hooks[0] as (typeof hooks)[number];
      const patched = await t.app.inject({
        method: 'PATCH',
        url: `/api/v1/webhook/${moved.id}`,
        headers: who.headers,
        payload: { url: rx2.url },
      });
      expect(patched.statusCode).toBe(200);
      const cut = rx.received.length;
      rx.reply = { status: 200 };
      rx.release({ status: 200 });
      await engine.deliverDue();
      const later = [...rx.received.slice(cut), ...rx2.received];
      expect(later).toHaveLength(200 - 128);
      // The 32 buffered ones are among them: every later attempt is signed with the new secret only.
      for (const r of later) {
        const h = r.headers as Record<string, string>;
        const hook = hooks.find((x) => x.id === h['x-webhook-id']) as (typeof hooks)[number];
        const fresh = secrets.get(hook.id) as string;
        expect(new StandardWebhook(standardWebhooksSecret(fresh)).verify(r.body, h)).toBeTruthy();
        expect(() => new StandardWebhook(standardWebhooksSecret(hook.secret)).verify(r.body, h)).toThrow();
        const expected = createHmac('sha256', fresh).update(`${h['x-timestamp']}.${r.body}`).digest('hex');
        expect(h['x-signature']).toBe(`sha256=${expected}`);
      }
      // Every later attempt of the moved webhook went to its new url.
      expect(rx.received.slice(cut).filter((r) => r.headers['x-webhook-id'] === moved.id)).toHaveLength(0);
      expect(rx2.received.length).toBeGreaterThan(0);
      expect(rx2.received.every((r) => r.headers['x-webhook-id'] === moved.id)).toBe(true);
    } finally {
      await rx2.close();
    }
  });

  it('the job is woken right after new deliveries are created (no waiting for the interval)', async () => {
    await createHook(t, who.headers, { name: 'wake', url: rx.url, event_types: ['svc.folder.created'] });
    worker = createWorker(t.ctx);
    worker.start();
    await dispatch(t, cloudEvent('svc.folder.created'));
    await eventually(async () => rx.received.length === 1, 5000);
  });
});

describe(`webhook SSRF re-check at send time (${dialectName})`, () => {
  it('refuses at connect time a target that became private (no DNS-rebinding bypass); the receiver is never hit', async () => {
    const t = await startTestApp({ env: { SVC_WEBHOOK_TIMEOUT_MS: '2000' } });
    const rx = await receiver();
    try {
      const who = await admin(t);
      const hook = await createHook(t, who.headers, {
        name: 'rebind',
        url: 'https://8.8.8.8/hook',
        event_types: ['*'],
      });
      // What a rebinding DNS answer amounts to: the stored https URL now leads to a loopback address.
      // Each URL is sent on its own (the url is read when an attempt starts).
      const urls = [`https://127.0.0.1:${rx.port}/hook`, `https://localhost:${rx.port}/hook`];
      for (const url of urls) {
        await t.ctx.store.db.updateTable('webhook').set({ url }).where('id', '=', hook.id).execute();
        await dispatch(t, cloudEvent());
        await t.ctx.services.webhookEngine.deliverDue();
      }
      const list = await deliveries(t, who.headers, hook.id);
      expect(list).toHaveLength(2);
      for (const d of list) {
        expect(d).toMatchObject({ status: 'PENDING', attempts: 1, http_status: null });
        expect(d.error).toMatch(/forbidden target: .*loopback address/);
      }
      const tried = await t.ctx.store.db
        .selectFrom('webhook_delivery_attempt')
        .select('url')
        .where('webhook_id', '=', hook.id)
        .execute();
      expect(tried.map((a) => a.url).sort()).toEqual([...urls].sort());
      expect(rx.received).toHaveLength(0);
      expect(rx.connections).toBe(0);
      // An http:// URL stored while private networks were allowed is refused too.
      await t.ctx.store.db
        .updateTable('webhook')
        .set({ url: `http://8.8.8.8:${rx.port}/hook` })
        .where('id', '=', hook.id)
        .execute();
      await dispatch(t, cloudEvent());
      await t.ctx.services.webhookEngine.deliverDue();
      const [latest] = await deliveries(t, who.headers, hook.id, '&sort_by=updated_at');
      expect(latest?.error).toMatch(/only https:\/\/ URLs are allowed/);
    } finally {
      await rx.close();
      await t.close();
    }
  });

  it('an https:// private IP literal is refused before any TCP connection is opened', async () => {
    const t = await startTestApp({ env: { SVC_WEBHOOK_TIMEOUT_MS: '2000' } });
    const listener = await countingListener();
    try {
      expect(t.ctx.config.allowPrivateNetworks).toBe(false);
      const who = await admin(t);
      const hook = await createHook(t, who.headers, {
        name: 'literal',
        url: 'https://8.8.8.8/hook',
        event_types: ['*'],
      });
      // Stored while private networks were allowed (or written behind the API's back): the send-time
      // guard alone stands between the sender and the listening port.
      for (const url of [
        `https://127.0.0.1:${listener.port}/hook`,
        `https://[::ffff:127.0.0.1]:${listener.port}/hook`,
      ]) {
        await t.ctx.store.db.updateTable('webhook').set({ url }).where('id', '=', hook.id).execute();
        await dispatch(t, cloudEvent());
        await t.ctx.services.webhookEngine.deliverDue();
      }
      const list = await deliveries(t, who.headers, hook.id);
      expect(list).toHaveLength(2);
      for (const d of list) expect(d.error).toMatch(/^forbidden target: Target \S+ is an? /);
      expect(listener.seen).toEqual({ connections: 0, bytes: 0 });
    } finally {
      await listener.close();
      await t.close();
    }
  });
});
