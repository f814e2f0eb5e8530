import { createHmac } from 'node:crypto';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { standardWebhooksSecret } from '../../src/areas/webhooks/signing.js';
import { outboxEvents } from '../events/helpers.js';
import type { TestApp } from '../helpers/app.js';
import type { TestPrincipal } from '../helpers/auth.js';
import { dialectName } from '../helpers/store.js';
import {
  cloudEvent,
  createHook,
  deliveries,
  delivery,
  dispatch,
  type Receiver,
  startWebhookApp,
  type WebhookApp,
} from './helpers.js';

const S = 1000;
describe(`webhook delivery (${dialectName})`, () => {
  let app: WebhookApp;
  let t: TestApp;
  let who: TestPrincipal;
  let rx: Receiver;
  let clock: WebhookApp['clock'];
  beforeEach(async () => {
    app = await startWebhookApp({ SVC_WEBHOOK_TIMEOUT_MS: '400' });
    ({ t, who, rx, clock } = app);
  });
  afterEach(() => app.close());
  const engine = () => t.ctx.services.webhookEngine;

  it('down, then 500, then hang past the timeout, then recovered: SUCCESS, webhook-id stable, none lost', async () => {
    const hook = await createHook(t, who.headers, { name: 'r', url: rx.url, event_types: ['*'] });
    await rx.down();
    const events = Array.from({ length: 6 }, () => cloudEvent());
    for (const e of events) await dispatch(t, e);
    const all = await deliveries(t, who.headers, hook.id);
    expect(all).toHaveLength(6);
    expect(all.every((d) => d.status === 'PENDING' && d.attempts === 0)).toBe(true);

    // Attempt 1: nobody listens.
    const t0 = clock.now().getTime();
    await engine().deliverDue();
    for (const d of await deliveries(t, who.headers, hook.id)) {
      expect(d).toMatchObject({ status: 'PENDING', attempts: 1, http_status: null });
      expect(d.error).toMatch(/ECONNREFUSED/);
      expect(d.next_attempt_at).toBe(new Date(t0 + 30 * S).toISOString());
    }
    // Not due before the backoff has passed.
    clock.advance(29 * S);
    await engine().deliverDue();
    expect((await deliveries(t, who.headers, hook.id)).every((d) => d.attempts === 1)).toBe(true);

    // Attempt 2: 500.
    await rx.up();
    rx.reply = { status: 500, body: 'boom' };
    clock.advance(1 * S);
    const t1 = clock.now().getTime();
    await engine().deliverDue();
    for (const d of await deliveries(t, who.headers, hook.id)) {
      expect(d).toMatchObject({ status: 'PENDING', attempts: 2, http_status: 500, response_body: 'boom' });
      expect(d.error).toBe('HTTP 500');
      expect(d.next_attempt_at).toBe(new Date(t1 + 60 * S).toISOString());
    }

    // Attempt 3: the receiver hangs past SVC_WEBHOOK_TIMEOUT_MS.
    rx.reply = 'hang';
    clock.advance(60 * S);
    const t2 = clock.now().getTime();
    await engine().deliverDue();
    for (const d of await deliveries(t, who.headers, hook.id)) {
      expect(d).toMatchObject({ status: 'PENDING', attempts: 3, http_status: null });
      expect(d.error).toMatch(/timeout: no complete response within 400 ms/);
      expect(d.next_attempt_at).toBe(new Date(t2 + 120 * S).toISOString());
    }

    // Attempt 4: recovered.
    rx.reply = { status: 204 };
    clock.advance(120 * S);
    const t3 = clock.now().toISOString();
    await engine().deliverDue();
    const final = await deliveries(t, who.headers, hook.id);
    expect(final).toHaveLength(6);
    for (const d of final) {
      expect(d).toMatchObject({
        status: 'SUCCESS',
        attempts: 4,
        http_status: 204,
        error: null,
        next_attempt_at: null,
        delivered_at: t3,
      });
      // Attempts 2, 3 and 4 reached the receiver, all under the same webhook-id, each signed afresh.
      const got = rx.byDelivery(d.id);
      expect(got).toHaveLength(3);
      expect(new Set(got.map((r) => r.headers['webhook-id']))).toEqual(new Set([d.id]));
      expect(new Set(got.map((r) => r.headers['x-delivery-id']))).toEqual(new Set([d.id]));
      const stamps = got.map((r) => r.headers['webhook-timestamp']);
      expect(new Set(stamps).size).toBe(3);
      expect(new Set(got.map((r) => r.headers['x-signature'])).size).toBe(3);
      const detail = await delivery(t, who.headers, hook.id, d.id);
      expect(detail.attempts_log.map((a) => [a.attempt, a.outcome, a.http_status])).toEqual([
        [1, 'FAILED', null],
        [2, 'FAILED', 500],
        [3, 'FAILED', null],
        [4, 'SUCCESS', 204],
      ]);
    }
    // Every event reached the receiver (none lost), each under exactly one delivery id.
    const payloadIds = new Set(rx.received.map((r) => JSON.parse(r.body).id));
    expect(payloadIds).toEqual(new Set(events.map((e) => e.id)));
  });

  it('five failures end FAILED after 30, 60, 120, 240 s of backoff; nothing more is sent', async () => {
    const hook = await createHook(t, who.headers, { name: 'f', url: rx.url, event_types: ['*'] });
    rx.reply = { status: 503, body: 'x'.repeat(10_000) };
    await dispatch(t, cloudEvent());
    const waits: number[] = [];
    for (let attempt = 1; attempt <= 5; attempt++) {
      await engine().deliverDue();
      const [d] = await deliveries(t, who.headers, hook.id);
      expect(d?.attempts).toBe(attempt);
      if (attempt < 5) {
        expect(d?.status).toBe('PENDING');
        const wait = Date.parse(d?.next_attempt_at as string) - clock.now().getTime();
        waits.push(wait / S);
        clock.advance(wait);
      } else {
        expect(d).toMatchObject({
          status: 'FAILED',
          next_attempt_at: null,
          http_status: 503,
          error: 'HTTP 503',
        });
        expect(String(d?.response_body).length).toBe(4096);
        // The failure is published, with the last result, for alerts (docs/webhooks.md).
        const failures = (await outboxEvents(t, { type: 'svc.webhook.delivery_failed' })).filter(
          (e) => e.subject === d?.id,
        );
        expect(failures).toHaveLength(1);
        expect(failures[0]).toMatchObject({
          source: '/api/v1/webhook',
          data: {
            delivery_id: d?.id,
            webhook_id: hook.id,
            event_id: d?.event_id,
            event_type: d?.event_type,
            attempts: 5,
            error: 'HTTP 503',
            response_status: 503,
          },
        });
      }
    }
    expect(waits).toEqual([30, 60, 120, 240]);
    clock.advance(3600 * S);
    await engine().deliverDue();
    expect(rx.received).toHaveLength(5);
  });

  it('recover: every FAILED delivery created since a time is sent again', async () => {
    const hook = await createHook(t, who.headers, { name: 'rec', url: rx.url, event_types: ['*'] });
    rx.reply = { status: 503 };
    const before = clock.now().toISOString();
    await dispatch(t, cloudEvent());
    await dispatch(t, cloudEvent());
    for (let attempt = 1; attempt <= 5; attempt++) {
      await engine().deliverDue();
      clock.advance(3600 * S);
    }
    const failed = await deliveries(t, who.headers, hook.id);
    expect(failed.map((d) => d?.status)).toEqual(['FAILED', 'FAILED']);
    const recover = (since: string) =>
      t.app.inject({
        method: 'POST',
        url: `/api/v1/webhook/${hook.id}/recover`,
        headers: who.headers,
        payload: { since },
      });
    // None created since now.
    expect((await recover(clock.now().toISOString())).json()).toEqual({ recovered: 0 });
    rx.reply = { status: 200 };
    const res = await recover(before);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ recovered: 2 });
    await engine().deliverDue();
    const after = await deliveries(t, who.headers, hook.id);
    expect(after.map((d) => [d?.status, d?.attempts])).toEqual([
      ['SUCCESS', 1],
      ['SUCCESS', 1],
    ]);
    expect((await recover('yesterday')).statusCode).toBe(400);
  });

  it('signatures: the standardwebhooks library and X-Signature verify real deliveries', async () => {
    const hook = await createHook(t, who.headers, {
      name: 's',
      url: rx.url,
      event_types: ['svc.user.created'],
    });
    const event = cloudEvent('svc.user.created', { email: 'a@example.test', note: 'ünïcode ✓' });
    await dispatch(t, event);
    await engine().deliverDue();
    expect(rx.received).toHaveLength(1);
    const req = rx.received[0]!;
    const h = req.headers as Record<string, string>;
    expect(h['content-type']).toBe('application/cloudevents+json; charset=utf-8');
    expect(h['x-event-type']).toBe('svc.user.created');
    expect(h['x-webhook-id']).toBe(hook.id);
    expect(h['x-timestamp']).toBe(String(Math.floor(clock.now().getTime() / 1000)));
    expect(h['webhook-timestamp']).toBe(h['x-timestamp']);
    expect(JSON.parse(req.body)).toEqual(event);

    // Standard Webhooks: the library verifies with whsec_ + base64(secret).
    const wh = new StandardWebhook(standardWebhooksSecret(hook.secret));
    expect(wh.verify(req.body, h)).toEqual(event);
    expect(() => wh.verify(req.body.replace('a@example', 'b@example'), h)).toThrow();
    expect(() => new StandardWebhook(standardWebhooksSecret('0'.repeat(64))).verify(req.body, h)).toThrow();

    // svc's own: sha256= hex HMAC over "{X-Timestamp}.{raw body}", key = UTF-8 bytes of the secret.
    const expected = createHmac('sha256', Buffer.from(hook.secret, 'utf8'))
      .update(`${h['x-timestamp']}.${req.body}`)
      .digest('hex');
    expect(h['x-signature']).toBe(`sha256=${expected}`);
  });

  it('rotate_secret: the next attempt is signed with the new secret only', async () => {
    const hook = await createHook(t, who.headers, { name: 'rot', url: rx.url, event_types: ['*'] });
    rx.reply = { status: 500 };
    await dispatch(t, cloudEvent());
    await engine().deliverDue();
    const rotated = await t.app.inject({
      method: 'POST',
      url: `/api/v1/webhook/${hook.id}/rotate_secret`,
      headers: who.headers,
    });
    const secret = rotated.json().secret as string;
    rx.reply = { status: 200 };
    clock.advance(30 * S);
    await engine().deliverDue();
    const [first, second] = rx.received;
    const h = second!.headers as Record<string, string>;
    expect(new StandardWebhook(standardWebhooksSecret(secret)).verify(second!.body, h)).toBeTruthy();
    expect(() => new StandardWebhook(standardWebhooksSecret(hook.secret)).verify(second!.body, h)).toThrow();
    expect(
      new StandardWebhook(standardWebhooksSecret(hook.secret)).verify(first!.body, first!.headers as never),
    ).toBeTruthy();
  });

  it('redirects are not followed and count as failures', async () => {
    const hook = await createHook(t, who.headers, { name: 'redir', url: rx.url, event_types: ['*'] });
    rx.reply = (r) =>
      r.url === '/hook' ? { status: 302, headers: { location: '/elsewhere' } } : { status: 200 };
    await dispatch(t, cloudEvent());
    await engine().deliverDue();
    const [d] = await deliveries(t, who.headers, hook.id);
    expect(d).toMatchObject({ status: 'PENDING', http_status: 302, attempts: 1 });
    expect(d?.error).toMatch(/HTTP 302: redirects are not followed \(location: \/elsewhere\)/);
    expect(rx.received.map((r) => r.url)).toEqual(['/hook']);
  });

  it('soft-deleted webhook: queued deliveries keep retrying; no new deliveries', async () => {
    const hook = await createHook(t, who.headers, { name: 'gone', url: rx.url, event_types: ['*'] });
    rx.reply = { status: 500 };
    const first = cloudEvent();
    await dispatch(t, first);
    await engine().deliverDue();
    const del = await t.app.inject({
      method: 'DELETE',
      url: `/api/v1/webhook/${hook.id}`,
      headers: who.headers,
    });
    expect(del.statusCode).toBe(200);
    await dispatch(t, cloudEvent());
    rx.reply = { status: 200 };
    clock.advance(30 * S);
    await engine().deliverDue();
    expect(rx.received).toHaveLength(2);
    expect(rx.received.every((r) => JSON.parse(r.body).id === first.id)).toBe(true);
    const rows = await t.ctx.store.db
      .selectFrom('webhook_delivery')
      .select(['status', 'event_id'])
      .where('webhook_id', '=', hook.id)
      .execute();
    expect(rows).toEqual([{ status: 'SUCCESS', event_id: first.id }]);
  });

  it('manual retry: resets a FAILED delivery to PENDING (attempts 0, due now, error cleared) and sends again', async () => {
    const hook = await createHook(t, who.headers, { name: 'mr', url: rx.url, event_types: ['*'] });
    rx.reply = { status: 500 };
    await dispatch(t, cloudEvent());
    for (let i = 0; i < 5; i++) {
      await engine().deliverDue();
      clock.advance(240 * S);
    }
    const [failed] = await deliveries(t, who.headers, hook.id);
    expect(failed).toMatchObject({ status: 'FAILED', attempts: 5 });
    const res = await t.app.inject({
      method: 'POST',
      url: `/api/v1/webhook/${hook.id}/delivery/${failed?.id}/retry`,
      headers: who.headers,
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      id: failed?.id,
      status: 'PENDING',
      attempts: 0,
      error: null,
      next_attempt_at: clock.now().toISOString(),
    });
    rx.reply = { status: 200, body: 'thanks' };
    await engine().deliverDue();
    const done = await delivery(t, who.headers, hook.id, failed?.id as string);
    expect(done).toMatchObject({ status: 'SUCCESS', attempts: 1, response_body: 'thanks' });
    expect(done.attempts_log.map((a) => a.outcome)).toEqual([
      'FAILED',
      'FAILED',
      'FAILED',
      'FAILED',
      'FAILED',
      'SUCCESS',
    ]);
    expect(rx.byDelivery(failed?.id as string)).toHaveLength(6);
    const attempts = await t.app.inject({
      method: 'GET',
      url: `/api/v1/webhook/${hook.id}/delivery/${failed?.id}/attempt?limit=2`,
      headers: who.headers,
    });
    expect(attempts.json()).toMatchObject({ total: 6, has_next: true });
    expect(attempts.json().attempts[0].outcome).toBe('SUCCESS');
  });

  it('a manual retry while an attempt is in flight never sends twice at once', async () => {
    const hook = await createHook(t, who.headers, { name: 'race', url: rx.url, event_types: ['*'] });
    rx.reply = 'hold';
    await dispatch(t, cloudEvent());
    const [d] = await deliveries(t, who.headers, hook.id);
    const id = d?.id as string;
    await t.ctx.services.webhookEngine.job.run();
    await waitFor(() => rx.heldCount() === 1);
    // Retry during the attempt: reset at once, but the lease keeps a second send from starting.
    const retry = await t.app.inject({
      method: 'POST',
      url: `/api/v1/webhook/${hook.id}/delivery/${id}/retry`,
      headers: who.headers,
    });
    expect(retry.json()).toMatchObject({ status: 'PENDING', attempts: 0 });
    // Claim steps for longer than the batch wait (20 ms), so claims really run: none takes it.
    const end = Date.now() + 100;
    while (Date.now() < end) {
      await t.ctx.services.webhookEngine.job.run();
      await new Promise((r) => setTimeout(r, 5));
    }
    expect(rx.received).toHaveLength(1);
    // The attempt in flight fails: the retry then sends again, once.
    rx.reply = { status: 200 };
    rx.release({ status: 500 });
    await engine().deliverDue();
    expect(rx.received).toHaveLength(2);
    expect(rx.maxInFlight).toBe(1);
    const done = await delivery(t, who.headers, hook.id, id);
    expect(done).toMatchObject({ status: 'SUCCESS', attempts: 1 });
    expect(done.attempts_log.map((a) => a.outcome)).toEqual(['FAILED', 'SUCCESS']);

    // Same race, but the attempt in flight succeeds: SUCCESS, no extra send.
    rx.reply = 'hold';
    const again = await t.app.inject({
      method: 'POST',
      url: `/api/v1/webhook/${hook.id}/delivery/${id}/retry`,
      headers: who.headers,
    });
    expect(again.statusCode).toBe(200);
    await t.ctx.services.webhookEngine.job.run();
    await waitFor(() => rx.heldCount() === 1);
    await t.app.inject({
      method: 'POST',
      url: `/api/v1/webhook/${hook.id}/delivery/${id}/retry`,
      headers: who.headers,
    });
    rx.release({ status: 200 });
    await engine().deliverDue();
    expect(rx.received).toHaveLength(3);
    // The retry reset the count; the send that succeeded is the one attempt it ends with.
    expect(await delivery(t, who.headers, hook.id, id)).toMatchObject({ status: 'SUCCESS', attempts: 1 });
  });

  it('a lease that expires (its worker presumed dead) makes the delivery retryable; the late result cannot overwrite', async () => {
    const hook = await createHook(t, who.headers, { name: 'lease', url: rx.url, event_types: ['*'] });
    rx.reply = 'hold';
    await dispatch(t, cloudEvent());
    const [d] = await deliveries(t, who.headers, hook.id);
    const id = d?.id as string;
    await engine().job.run();
    await waitFor(() => rx.heldCount() === 1);
    // Past the lease (3 x timeout + 5 s): the next step reaps it; the interrupted attempt 1 counts
    // as failed, so the delivery is claimed again once its backoff (30 s) has passed, not before.
    clock.advance(3 * 400 + 5_000 + 1_000);
    const row = () =>
      t.ctx.store.db
        .selectFrom('webhook_delivery')
        .select(['locked_by', 'next_attempt_at'])
        .where('id', '=', id)
        .executeTakeFirstOrThrow();
    // (A step may wait up to 20 ms to gather a claim batch while an attempt is in flight.)
    await until(async () => {
      await engine().job.run();
      return (await row()).locked_by === null;
    });
    expect(await row()).toEqual({
      locked_by: null,
      next_attempt_at: new Date(clock.now().getTime() + 30 * S).toISOString(),
    });
    clock.advance(30 * S);
    // (A step may wait up to 20 ms to gather a claim batch while an attempt is in flight.)
    await until(async () => {
      await engine().job.run();
      return rx.heldCount() === 2;
    });
    expect(rx.byDelivery(id)).toHaveLength(2);
    rx.release({ status: 200 });
    await engine().deliverDue();
    const done = await delivery(t, who.headers, hook.id, id);
    expect(done).toMatchObject({ status: 'SUCCESS', attempts: 2 });
    expect(done.attempts_log.map((a) => [a.sequence, a.outcome])).toEqual(
      expect.arrayContaining([
        [1, 'INTERRUPTED'],
        [1, 'SUCCESS'],
        [2, 'SUCCESS'],
      ]),
    );
    expect(t.logText()).toContain('finished after its lease expired');
  });

  it('an interrupted attempt k waits base x 2^(k-1) like any failed attempt (CONTRACTS §7)', async () => {
    const hook = await createHook(t, who.headers, { name: 'reap', url: rx.url, event_types: ['*'] });
    for (let i = 0; i < 4; i++) {
      clock.advance(1);
      await dispatch(t, cloudEvent());
    }
    const ids = (
      await t.ctx.store.db
        .selectFrom('webhook_delivery')
        .select('id')
        .where('webhook_id', '=', hook.id)
        .orderBy('created_at')
        .execute()
    ).map((r) => r.id);
    // Delivery k had its attempt k claimed by a worker that died (kill -9): counted, lease left behind.
    const leaseMs = 3 * 400 + 5_000;
    const claimedAt = clock.now();
    for (const [i, id] of ids.entries()) {
      await t.ctx.store.db
        .updateTable('webhook_delivery')
        .set({
          attempts: i + 1,
          total_attempts: i + 1,
          locked_by: 'dead-worker:1',
          locked_at: claimedAt.toISOString(),
          locked_until: new Date(claimedAt.getTime() + leaseMs).toISOString(),
        })
        .where('id', '=', id)
        .execute();
    }
    clock.advance(leaseMs + S);
    const reapedAt = clock.now().getTime();
    await engine().deliverDue();
    // Reaped, and none sent: each waits the backoff of its interrupted attempt.
    expect(rx.received).toHaveLength(0);
    for (const [i, id] of ids.entries()) {
      const d = await delivery(t, who.headers, hook.id, id);
      expect(d).toMatchObject({ status: 'PENDING', attempts: i + 1 });
      expect(d.next_attempt_at).toBe(new Date(reapedAt + 30 * S * 2 ** i).toISOString());
      expect(d.error).toMatch(/^interrupted: /);
      expect(d.attempts_log.map((a) => [a.attempt, a.outcome])).toEqual([[i + 1, 'INTERRUPTED']]);
    }
    // Due when its backoff has passed and not a millisecond before.
    clock.advance(30 * S - 1);
    await engine().deliverDue();
    expect(rx.received).toHaveLength(0);
    clock.advance(1);
    await engine().deliverDue();
    expect(rx.received.map((r) => r.headers['webhook-id'])).toEqual([ids[0]]);
    clock.advance(30 * S);
    await engine().deliverDue();
    expect(rx.received.map((r) => r.headers['webhook-id'])).toEqual([ids[0], ids[1]]);
  });

  it('when the interrupted attempt was the 5th, the delivery ends FAILED', async () => {
    const hook = await createHook(t, who.headers, { name: 'last', url: rx.url, event_types: ['*'] });
    rx.reply = 'hold';
    await dispatch(t, cloudEvent());
    await t.ctx.store.db
      .updateTable('webhook_delivery')
      .set({ attempts: 4 })
      .where('webhook_id', '=', hook.id)
      .execute();
    await engine().job.run();
    await waitFor(() => rx.heldCount() === 1);
    clock.advance(3 * 400 + 5_000 + 1_000);
    await until(async () => {
      await engine().job.run();
      return (await deliveries(t, who.headers, hook.id))[0]?.status === 'FAILED';
    });
    rx.release({ status: 200 });
    await engine().deliverDue();
    const [d] = await deliveries(t, who.headers, hook.id);
    expect(d).toMatchObject({ status: 'FAILED', attempts: 5, next_attempt_at: null });
    expect(d?.error).toMatch(/^interrupted: /);
    expect(rx.received).toHaveLength(1);
    // Failed for good by the reaper: reported like a last failed attempt.
    const mine = (await outboxEvents(t, { type: 'svc.webhook.delivery_failed' })).filter(
      (e) => e.subject === d?.id,
    );
    expect(mine).toHaveLength(1);
    expect(mine[0].data).toMatchObject({ webhook_id: hook.id, attempts: 5, response_status: null });
    expect(mine[0].data.error).toMatch(/^interrupted: /);
  });

  it('delivery list: deliveries created in the same millisecond are newest first, in a stable order', async () => {
    const hook = await createHook(t, who.headers, { name: 'same-ms', url: rx.url, event_types: ['*'] });
    // The clock does not move: every delivery has the same created_at.
    const order: string[] = [];
    for (let i = 0; i < 30; i++) {
      const e = cloudEvent();
      order.push(e.id);
      await dispatch(t, e);
    }
    const all = await deliveries(t, who.headers, hook.id);
    expect(new Set(all.map((d) => d.created_at)).size).toBe(1);
    expect(all.map((d) => d.event_id)).toEqual([...order].reverse());
    const asc = await deliveries(t, who.headers, hook.id, '&sort_dir=asc');
    expect(asc.map((d) => d.event_id)).toEqual(order);
    // Pages neither overlap nor skip.
    const paged: string[] = [];
    for (let offset = 0; offset < 30; offset += 7) {
      const res = await t.app.inject({
        method: 'GET',
        url: `/api/v1/webhook/${hook.id}/delivery?limit=7&offset=${offset}`,
        headers: who.headers,
      });
      paged.push(...res.json().deliveries.map((d: { event_id: string }) => d.event_id));
    }
    expect(paged).toEqual([...order].reverse());
  });

  it('delivery list: newest first and every filter', async () => {
    const hook = await createHook(t, who.headers, { name: 'lf', url: rx.url, event_types: ['*'] });
    rx.reply = (r) => (JSON.parse(r.body).type === 'svc.user.created' ? { status: 200 } : { status: 404 });
    const order: string[] = [];
    for (const type of ['svc.user.created', 'svc.user.updated', 'svc.user.created', 'svc.user.updated']) {
      clock.advance(S);
      const e = cloudEvent(type);
      order.push(e.id);
      await dispatch(t, e);
    }
    await engine().deliverDue();
    const all = await deliveries(t, who.headers, hook.id);
    expect(all.map((d) => d.event_id)).toEqual([...order].reverse());
    const q = async (qs: string) => (await deliveries(t, who.headers, hook.id, qs)).length;
    expect(await q('&status=SUCCESS')).toBe(2);
    expect(await q('&status=PENDING')).toBe(2);
    expect(await q('&status=FAILED')).toBe(0);
    expect(await q('&event_type=svc.user.updated')).toBe(2);
    expect(await q('&http_status=404')).toBe(2);
    expect(await q('&http_status_gte=300')).toBe(2);
    expect(await q('&http_status_lte=299')).toBe(2);
    const now = clock.now().toISOString();
    expect(await q(`&delivered_at_gte=${now}`)).toBe(2);
    expect(await q(`&delivered_at_lte=${new Date(clock.now().getTime() - 1).toISOString()}`)).toBe(0);
    const bad = await t.app.inject({
      method: 'GET',
      url: `/api/v1/webhook/${hook.id}/delivery?status=DONE`,
      headers: who.headers,
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().details.allowed_values).toEqual(['PENDING', 'SUCCESS', 'FAILED']);
    const badDate = await t.app.inject({
      method: 'GET',
      url: `/api/v1/webhook/${hook.id}/delivery?delivered_at_gte=yesterday`,
      headers: who.headers,
    });
    expect(badDate.statusCode).toBe(400);
    // A delivery of another webhook is 404 under this one.
    const other = await createHook(t, who.headers, { name: 'other', url: rx.url, event_types: ['*'] });
    const res = await t.app.inject({
      method: 'GET',
      url: `/api/v1/webhook/${other.id}/delivery/${all[0]?.id}`,
      headers: who.headers,
    });
    expect(res.statusCode).toBe(404);
    expect(res.json().code).toBe('WEBHOOK.DELIVERY_NOT_FOUND');
    const retry = await t.app.inject({
      method: 'POST',
      url: `/api/v1/webhook/${other.id}/delivery/${all[0]?.id}/retry`,
      headers: who.headers,
    });
    expect(retry.statusCode).toBe(404);
  });
});

async function waitFor(check: () => boolean, ms = 5000): Promise<void> {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) throw new Error('condition not reached in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function until(check: () => Promise<boolean>, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}
