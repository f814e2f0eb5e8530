import { type CloudEvent, HTTP } from 'cloudevents';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { Webhook as SvixWebhook } from 'svix';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorker } from '../../src/app/runtime.js';
import { EVENT_DEFINITIONS } from '../../src/areas/events/definitions.js';
import type { Worker } from '../../src/worker/worker.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { admin, type TestPrincipal } from '../helpers/auth.js';
import { dialectName } from '../helpers/store.js';
import { eventually, type Receiver, receiver } from './helpers.js';

/**
 * What a receiver does with a delivery, done with the ecosystem's own libraries: the Standard Webhooks
 * and Svix verifiers take the `standard_webhooks_secret` as answered, and the CloudEvents SDK reads
 * every body. One event of every registered type goes through the real outbox, dispatcher and sender.
 */
describe(`webhook deliveries verified by standardwebhooks, svix and the CloudEvents SDK (${dialectName})`, () => {
  let t: TestApp;
  let who: TestPrincipal;
  let rx: Receiver;
  let worker: Worker;
  let hook: { id: string; secret: string; standard_webhooks_secret: string };
  beforeAll(async () => {
    t = await startTestApp({ env: { SVC_ALLOW_PRIVATE_NETWORKS: 'true' } });
    who = await admin(t);
    rx = await receiver();
    worker = createWorker(t.ctx);
    worker.start();
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/webhook',
      headers: who.headers,
      payload: { name: 'everything', url: rx.url, event_types: ['*'] },
    });
    expect(res.statusCode).toBe(200);
    hook = res.json();
  });
  afterAll(async () => {
    await worker.stop();
    await rx.close();
    await t.close();
  });

  const verifyAll = (body: string, headers: Record<string, string>) => {
    const standard = new StandardWebhook(hook.standard_webhooks_secret).verify(body, headers);
    const svix = new SvixWebhook(hook.standard_webhooks_secret).verify(body, headers);
    const event = HTTP.toEvent({ headers, body });
    return { standard, svix, event: (Array.isArray(event) ? event[0] : event) as CloudEvent<unknown> };
  };

  it('create answers the secret in both forms: 64 hex, and whsec_ + base64 of the same key', () => {
    expect(hook.secret).toMatch(/^[0-9a-f]{64}$/);
    expect(hook.standard_webhooks_secret).toBe(`whsec_${Buffer.from(hook.secret).toString('base64')}`);
  });

  it('every delivery of every event type verifies with both libraries and parses as a CloudEvent', async () => {
    const examples = EVENT_DEFINITIONS.map((d) => d.examples[0] as Record<string, unknown>);
    await t.ctx.store.transaction(async (tx) => {
      for (const e of examples) {
        await t.ctx.services.events.publish(tx, {
          type: e.type as string,
          source: e.source as string,
          subject: e.subject as string,
          data: e.data as Record<string, unknown>,
        });
      }
    });
    await eventually(async () => rx.received.length >= examples.length);
    expect(rx.received).toHaveLength(examples.length);
    for (const r of rx.received) {
      const headers = r.headers as Record<string, string>;
      const parsed = JSON.parse(r.body);
      const { standard, svix, event } = verifyAll(r.body, headers);
      expect(standard).toEqual(parsed);
      expect(svix).toEqual(parsed);
      expect(event.validate()).toBe(true);
      expect(event.id).toBe(parsed.id);
      expect(event.type).toBe(parsed.type);
      expect(event.data).toEqual(parsed.data);
      // A tampered body is refused by both.
      expect(() =>
        new StandardWebhook(hook.standard_webhooks_secret).verify(`${r.body} `, headers),
      ).toThrow();
      expect(() => new SvixWebhook(hook.standard_webhooks_secret).verify(`${r.body} `, headers)).toThrow();
    }
    expect(new Set(rx.received.map((r) => JSON.parse(r.body).type))).toEqual(
      new Set(EVENT_DEFINITIONS.map((d) => d.event_type)),
    );
  });

  it('POST /webhook/{id}/test sends a signed example of the chosen type to this webhook only', async () => {
    const before = rx.received.length;
    const res = await t.app.inject({
      method: 'POST',
      url: `/api/v1/webhook/${hook.id}/test`,
      headers: who.headers,
      payload: { event_type: 'svc.submission.created' },
    });
    expect(res.statusCode).toBe(200);
    const delivery = res.json();
    expect(delivery).toMatchObject({
      webhook_id: hook.id,
      event_type: 'svc.submission.created',
      attempts: 0,
    });
    expect(delivery.status).toBe('PENDING');
    const got = await eventually(async () =>
      rx.received.slice(before).find((r) => r.headers['webhook-id'] === delivery.id),
    );
    const { standard, event } = verifyAll(got.body, got.headers as Record<string, string>);
    expect(standard).toMatchObject({ type: 'svc.submission.created', svctest: true, id: delivery.event_id });
    expect(event.svctest).toBe(true);
    // Rotating answers both forms again, and the new key signs the next test.
    const rotated = await t.app.inject({
      method: 'POST',
      url: `/api/v1/webhook/${hook.id}/rotate_secret`,
      headers: who.headers,
    });
    expect(rotated.json().standard_webhooks_secret).toBe(
      `whsec_${Buffer.from(rotated.json().secret).toString('base64')}`,
    );
    hook = { ...hook, ...rotated.json() };
    const second = await t.app.inject({
      method: 'POST',
      url: `/api/v1/webhook/${hook.id}/test`,
      headers: who.headers,
    });
    expect(second.json().event_type).toBe('svc.user.created');
    const again = await eventually(async () =>
      rx.received.find((r) => r.headers['webhook-id'] === second.json().id),
    );
    expect(verifyAll(again.body, again.headers as Record<string, string>).svix).toMatchObject({
      svctest: true,
    });

    // A manual retry answers the reset delivery, though the running sender starts at once (#15).
    for (let i = 0; i < 5; i++) {
      const retried = await t.app.inject({
        method: 'POST',
        url: `/api/v1/webhook/${hook.id}/delivery/${second.json().id}/retry`,
        headers: who.headers,
      });
      expect(retried.json()).toMatchObject({ status: 'PENDING', attempts: 0, error: null });
    }

    // Unknown types and unknown webhooks are refused.
    const unknown = await t.app.inject({
      method: 'POST',
      url: `/api/v1/webhook/${hook.id}/test`,
      headers: who.headers,
      payload: { event_type: 'svc.submision.created' },
    });
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json().code).toBe('EVENT.UNKNOWN_TYPE');
    const missing = await t.app.inject({
      method: 'POST',
      url: '/api/v1/webhook/nope/test',
      headers: who.headers,
      payload: {},
    });
    expect(missing.statusCode).toBe(404);
  });
});
