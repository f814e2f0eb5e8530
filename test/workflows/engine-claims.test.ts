import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../../src/lib/clock.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { dialectName, sharedDatabase, type TestDatabase } from '../helpers/store.js';
import { type Api, api, job, publish, runsOf, workflow } from './helpers.js';

/**
 * When the workflow engine asks the store for due runs (docs/workflows.md "Durability", ClaimGate): a
 * step claims nothing unless something woke the engine for the store, a timer of its own is due, the
 * last claim came back full, or the poll interval passed. New runs of its own router never need a
 * claim: they are driven at once.
 * Two engines on one store and one manual clock, with a poll interval the test never reaches.
 */
const T0 = new Date('2026-01-01T00:00:00.000Z');
const LEASE_MS = 1_000;

describe(`the workflow engine asks the store only when it may hold due work (${dialectName})`, () => {
  const clock = manualClock(T0);
  let db: TestDatabase;
  let creator: TestApp;
  let other: TestApp;
  let a: Api;

  beforeAll(async () => {
    db = await sharedDatabase('svc-wf-claims-');
    const env = { SVC_WORKFLOW_POLL_INTERVAL_MS: '600000', SVC_WORKFLOW_LEASE_MS: String(LEASE_MS) };
    creator = await startTestApp({ databaseUrl: db.url, env, clock });
    other = await startTestApp({ databaseUrl: db.url, env, clock });
    a = await api(creator);
    // The set-up's own events (the test principal's user) go before the subscription exists.
    for (const app of [creator, other]) while (await job(app, 'outbox').run()) {}
  });
  afterAll(async () => {
    await other.close();
    await creator.close();
    await db.drop();
  });

  it('a due run another engine left in the store waits for a wake, then is taken', async () => {
    // The creator's first step asks the store (nothing due yet); its next ask is a poll interval away.
    await job(creator, 'workflows').run();
    const wf = await workflow(a, {
      nodes: [{ key: 'derive', type: 'COMPUTE', config: { logic: { var: 'event.subject' } } }],
    });

    // The other engine has no room (stopped): its router creates the run pending and due, for any engine.
    await job(other, 'workflows').stop?.();
    const left = await publish(other);
    while (await job(other, 'outbox').run()) {}

    // The creator routes an event of its own: its engine drives that run at once.
    const mine = await publish(creator);
    while (await job(creator, 'outbox').run()) {}
    const bySubject = async () =>
      Object.fromEntries((await runsOf(a, wf.id)).map((r) => [r.trigger_event.subject, r.status]));

    // Its step does not ask the store: the left-behind run waits.
    await job(creator, 'workflows').run();
    expect(await bySubject()).toEqual({
      [mine.subject as string]: 'completed',
      [left.subject as string]: 'running',
    });

    // A wake for the store (a resume, another process's commit): the next step claims it.
    creator.ctx.services.wakeups.wake('workflows');
    await job(creator, 'workflows').run();
    expect(await bySubject()).toEqual({
      [mine.subject as string]: 'completed',
      [left.subject as string]: 'completed',
    });
  });
});
