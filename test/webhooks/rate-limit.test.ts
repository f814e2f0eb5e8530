import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import type { TestPrincipal } from '../helpers/auth.js';
import { dialectName } from '../helpers/store.js';
import {
  cloudEvent,
  createHook,
  deliveries,
  dispatch,
  type Receiver,
  startWebhookApp,
  type WebhookApp,
} from './helpers.js';

const S = 1000;

describe(`webhook rate_limit (${dialectName})`, () => {
  let app: WebhookApp;
  let t: TestApp;
  let who: TestPrincipal;
  let rx: Receiver;
  let clock: WebhookApp['clock'];
  beforeEach(async () => {
    app = await startWebhookApp({ SVC_WEBHOOK_TIMEOUT_MS: '2000' });
    ({ t, who, rx, clock } = app);
  });
  afterEach(() => app.close());
  const engine = () => t.ctx.services.webhookEngine;

  it('create, PATCH and the answer carry rate_limit; bad limits are 400', async () => {
    const hook = await createHook(t, who.headers, {
      name: 'r',
      url: rx.url,
      event_types: ['*'],
      rate_limit: { limit: 2, period_ms: 10 * S },
    });
    const read = await t.app.inject({
      method: 'GET',
      url: `/api/v1/webhook/${hook.id}`,
      headers: who.headers,
    });
    expect(read.json().rate_limit).toEqual({ limit: 2, period_ms: 10 * S });
    for (const bad of [{ limit: 0, period_ms: 1000 }, { limit: 1 }, { limit: 1, period_ms: 0 }, 'fast']) {
      const res = await t.app.inject({
        method: 'PATCH',
        url: `/api/v1/webhook/${hook.id}`,
        headers: who.headers,
        payload: { rate_limit: bad },
      });
      expect(res.statusCode, JSON.stringify(bad)).toBe(400);
      expect(res.json().code).toBe('VALIDATION_ERROR');
    }
    const cleared = await t.app.inject({
      method: 'PATCH',
      url: `/api/v1/webhook/${hook.id}`,
      headers: who.headers,
      payload: { rate_limit: null },
    });
    expect(cleared.statusCode).toBe(200);
    expect(cleared.json().rate_limit).toBeNull();
  });

  it('limit 2 per 10 s: five deliveries go out 2, 2, 1 at 0, 10 and 20 s, uncounted while they wait; none lost', async () => {
    const hook = await createHook(t, who.headers, {
      name: 'r',
      url: rx.url,
      event_types: ['*'],
      rate_limit: { limit: 2, period_ms: 10 * S },
    });
    const t0 = clock.now().getTime();
    for (let i = 0; i < 5; i++) await dispatch(t, cloudEvent());

    await engine().deliverDue();
    expect(rx.received).toHaveLength(2);
    let all = await deliveries(t, who.headers, hook.id);
    const waiting = all.filter((d) => d.status === 'PENDING');
    expect(waiting).toHaveLength(3);
    // Waiting for the limit is no attempt: nothing was sent for them.
    expect(waiting.every((d) => d.attempts === 0 && d.error === null)).toBe(true);
    const due = waiting
      .map((d) => new Date(d.next_attempt_at as string).getTime() - t0)
      .sort((a, b) => a - b);
    expect(due).toEqual([10 * S, 10 * S, 20 * S]);

    // Nothing more before the window has moved on.
    clock.advance(9 * S);
    await engine().deliverDue();
    expect(rx.received).toHaveLength(2);

    clock.advance(1 * S);
    await engine().deliverDue();
    expect(rx.received).toHaveLength(4);

    clock.advance(10 * S);
    await engine().deliverDue();
    expect(rx.received).toHaveLength(5);
    all = await deliveries(t, who.headers, hook.id);
    expect(all.every((d) => d.status === 'SUCCESS' && d.attempts === 1)).toBe(true);
    // Each delivery was sent once.
    expect(new Set(rx.received.map((r) => r.headers['webhook-id'])).size).toBe(5);
  });

  it('a webhook without a limit is not held back by another one that has it', async () => {
    const slow = await createHook(t, who.headers, {
      name: 'slow',
      url: rx.url,
      event_types: ['*'],
      rate_limit: { limit: 1, period_ms: 60 * S },
    });
    const free = await createHook(t, who.headers, { name: 'free', url: rx.url, event_types: ['*'] });
    for (let i = 0; i < 4; i++) await dispatch(t, cloudEvent());
    await engine().deliverDue();
    const slowSent = (await deliveries(t, who.headers, slow.id)).filter((d) => d.status === 'SUCCESS');
    const freeSent = (await deliveries(t, who.headers, free.id)).filter((d) => d.status === 'SUCCESS');
    expect(slowSent).toHaveLength(1);
    expect(freeSent).toHaveLength(4);
    expect(rx.received).toHaveLength(5);
  });
});
