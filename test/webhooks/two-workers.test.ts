import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import { admin } from '../helpers/auth.js';
import { waitForOutput } from '../helpers/cli.js';
import { type SharedStore, startSharedStore } from '../helpers/shared-store.js';
import { dialectName } from '../helpers/store.js';
import { cloudEvent, createHook, dispatch, eventually, type Receiver, receiver } from './helpers.js';

describe(`two svc worker processes on one store (${dialectName})`, () => {
  let shared: SharedStore;
  let t: TestApp;
  let rx: Receiver;
  beforeAll(async () => {
    shared = await startSharedStore('svc-webhooks-two-', { SVC_ALLOW_PRIVATE_NETWORKS: 'true' });
    t = shared.t;
    rx = await receiver();
  });
  afterAll(async () => {
    await rx.close();
    await shared.close();
  });

  it('claims are exclusive: each of 400 deliveries is sent exactly once', { timeout: 120_000 }, async () => {
    const who = await admin(t);
    for (let i = 0; i < 4; i++) {
      await createHook(t, who.headers, { name: `h${i}`, url: rx.url, event_types: ['svc.folder.created'] });
    }
    // Both workers run and poll before any delivery exists, so their claims really race.
    rx.reply = { status: 200, delayMs: 20 };
    const output: string[] = [];
    const children: ChildProcess[] = [];
    for (let i = 0; i < 2; i++) {
      const child = shared.worker({
        SVC_ALLOW_PRIVATE_NETWORKS: 'true',
        SVC_WEBHOOK_RETRY_INTERVAL_MS: '50',
        SVC_WEBHOOK_TIMEOUT_MS: '30000',
      });
      children.push(child);
      child.stdout?.on('data', (d) => output.push(String(d)));
      child.stderr?.on('data', (d) => output.push(String(d)));
      await waitForOutput(child, /worker started/, 60_000);
    }
    for (let i = 0; i < 100; i++) await dispatch(t, cloudEvent('svc.folder.created'));
    await eventually(async () => {
      const rows = await t.ctx.store.db.selectFrom('webhook_delivery').select('status').execute();
      return rows.every((r) => r.status === 'SUCCESS');
    }, 60_000);
    const ids = rx.received.map((r) => r.headers['webhook-id'] as string);
    expect(new Set(ids).size).toBe(400);
    expect(ids).toHaveLength(400);
    const rows = await t.ctx.store.db.selectFrom('webhook_delivery').select(['attempts']).execute();
    expect(rows.every((r) => r.attempts === 1)).toBe(true);
    const attempts = await t.ctx.store.db
      .selectFrom('webhook_delivery_attempt')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    expect(Number(attempts.n)).toBe(400);
    for (const c of children) c.kill('SIGTERM');
    const codes = await Promise.all(
      children.map((c) => new Promise((r) => c.once('exit', (code) => r(code)))),
    );
    expect(codes).toEqual([0, 0]);
    // No claim or write failed on either side (e.g. SQLITE_BUSY under two writers).
    expect(
      output
        .join('')
        .split('\n')
        .filter((l) => /"level":(50|60)/.test(l)),
    ).toEqual([]);
  });
});
