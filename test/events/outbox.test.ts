import { afterEach, describe, expect, it } from 'vitest';
import { createWorker } from '../../src/app/runtime.js';
import { validateCloudEvent } from '../../src/areas/events/cloudevent.js';
import type { EventHandler } from '../../src/areas/events/handlers.js';
import { createEventPublisher } from '../../src/areas/events/publish.js';
import { afterFailure } from '../../src/areas/events/retry.js';
import { AppError } from '../../src/http/errors.js';
import { manualClock } from '../../src/lib/clock.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { admin, principal } from '../helpers/auth.js';
import { dialectName } from '../helpers/store.js';
import {
  allTasks,
  anotherDrain,
  eventually,
  outboxJob,
  publishMany,
  recorder,
  userCreated,
} from './helpers.js';

const T0 = new Date('2026-01-01T00:00:00.000Z');
const at = (ms: number) => new Date(T0.getTime() + ms).toISOString();

describe(`outbox (${dialectName})`, () => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  /** An app on the test clock whose drain also calls `handlers` (after the areas' own). */
  async function start(env: Record<string, string> = {}, handlers: EventHandler[] = []) {
    const clock = manualClock(T0);
    t = await startTestApp({ clock, env, eventHandlers: handlers });
    return { t, clock };
  }

  /** GET /event_delivery_task as a holder of event_subscription:read (made once per app: it publishes user events). */
  const readers = new WeakMap<TestApp, Awaited<ReturnType<typeof principal>>>();
  async function listTasks(app: TestApp, query = '') {
    if (!readers.has(app)) readers.set(app, await principal(app, ['event_subscription:read']));
    const reader = readers.get(app)!;
    const res = await app.app.inject({
      method: 'GET',
      url: `/api/v1/event_delivery_task${query}`,
      headers: reader.headers,
    });
    expect(res.statusCode, res.body).toBe(200);
    return res.json();
  }

  describe('publish', () => {
    it('writes the task in the caller transaction: a rollback leaves no event', async () => {
      const { t } = await start();
      let rolledBack = '';
      const failed = t.ctx.store.transaction(async (tx) => {
        rolledBack = (await t.ctx.services.events.publish(tx, userCreated())).id;
        throw new Error('the change failed');
      });
      await expect(failed).rejects.toThrow('the change failed');
      expect(rolledBack).not.toBe('');
      expect(await allTasks(t)).toEqual([]);

      const input = userCreated(1);
      const event = await t.ctx.store.transaction((tx) => t.ctx.services.events.publish(tx, input));
      expect(event).toMatchObject({
        specversion: '1.0',
        type: 'svc.user.created',
        source: '/api/v1/user',
        subject: input.subject,
        time: T0.toISOString(),
        datacontenttype: 'application/json',
        data: input.data,
      });
      const body = await listTasks(t, '?sort_by=created_at&sort_dir=asc&limit=250');
      expect(body.tasks.map((task: { event_id: string }) => task.event_id)).not.toContain(rolledBack);
      expect(body.tasks.filter((task: { event_id: string }) => task.event_id === event.id)).toHaveLength(1);
      expect(body.tasks.find((task: { event_id: string }) => task.event_id === event.id)).toMatchObject({
        event_id: event.id,
        event_type: 'svc.user.created',
        cloudevent: event,
        target: 'local-handlers',
        status: 'PENDING',
        error: null,
        attempts: 0,
        max_attempts: 3,
        next_attempt_at: T0.toISOString(),
        locked_until: null,
        done_at: null,
        created_at: T0.toISOString(),
      });
    });

    it('outside production, rejects unregistered types and events that break their definition', async () => {
      const { t } = await start();
      const publish = (input: ReturnType<typeof userCreated>) =>
        t.ctx.store.transaction((tx) => t.ctx.services.events.publish(tx, input));
      const good = userCreated();
      const cases: Array<[ReturnType<typeof userCreated>, string, string]> = [
        [
          { ...good, type: 'svc.user.exploded' },
          'EVENT.UNKNOWN_TYPE',
          'Event type "svc.user.exploded" is not in the event registry',
        ],
        [
          { ...good, data: { user_id: good.subject } },
          'EVENT.INVALID',
          'Event data of svc.user.created does not match its schema',
        ],
        [
          { ...good, source: '/api/v1/folder' },
          'EVENT.INVALID',
          'Events of svc.user.created have source "/api/v1/user"',
        ],
        [
          { ...good, subject: 'someone-else' },
          'EVENT.INVALID',
          'The subject of svc.user.created must be {user_id} of its data',
        ],
      ];
      for (const [input, code, message] of cases) {
        const error = await publish(input).catch((e) => e);
        expect(error).toBeInstanceOf(AppError);
        expect(error).toMatchObject({ code, message, status: 400 });
      }
      const invalid = await publish({ ...good, data: { user_id: good.subject } }).catch((e) => e);
      expect(invalid.details.errors).toEqual([{ path: '/', message: "must have required property 'email'" }]);
      expect(await allTasks(t)).toEqual([]);
    });

    it('in production, publishes without the registry check', async () => {
      const { t } = await start({ NODE_ENV: 'production' });
      await t.ctx.store.transaction((tx) =>
        t.ctx.services.events.publish(tx, { ...userCreated(), type: 'svc.custom.thing' }),
      );
      expect((await allTasks(t)).map((r) => r.event_type)).toEqual(['svc.custom.thing']);
    });
  });

  describe('drain', () => {
    it('hands every event to every handler, then marks the tasks DONE', async () => {
      const a = recorder('a');
      const b = recorder('b');
      const { t } = await start({}, [a.handler, b.handler]);
      const events = await publishMany(t, 3);
      expect(await outboxJob(t).run()).toBe(false);
      expect(a.calls.map((e) => e.id).sort()).toEqual(events.map((e) => e.id).sort());
      expect(b.calls).toEqual(a.calls);
      expect(a.calls[0]).toEqual(events.find((e) => e.id === a.calls[0].id));
      const ids = new Set(events.map((e) => e.id));
      const mine = (await listTasks(t, '?limit=250')).tasks.filter((task: { event_id: string }) =>
        ids.has(task.event_id),
      );
      expect(mine).toHaveLength(3);
      for (const task of mine) {
        expect(task).toMatchObject({
          status: 'DONE',
          attempts: 1,
          done_at: T0.toISOString(),
          error: null,
          locked_until: null,
          locked_by: outboxJob(t).workerId,
        });
      }
      // Nothing is handled twice (the list's reader, made above, published its own user event meanwhile).
      expect(await outboxJob(t).run()).toBe(false);
      expect(a.calls.filter((e) => ids.has(e.id))).toHaveLength(3);
    });

    it('a handler failing twice then succeeding: retried after 5 s and 10 s, DONE with attempts 3', async () => {
      const flaky = recorder('flaky', (_e, call) => call <= 2);
      const { t, clock } = await start({}, [flaky.handler]);
      const [event] = await publishMany(t, 1);
      const job = outboxJob(t);
      const task = async () => (await allTasks(t))[0];

      await job.run();
      expect(await task()).toMatchObject({
        status: 'PENDING',
        attempts: 1,
        error: 'flaky: boom 1',
        next_attempt_at: at(5_000),
        locked_by: null,
        locked_until: null,
      });
      clock.advance(4_999);
      await job.run();
      expect(flaky.calls).toHaveLength(1);

      clock.advance(1);
      await job.run();
      expect(await task()).toMatchObject({
        status: 'PENDING',
        attempts: 2,
        error: 'flaky: boom 2',
        next_attempt_at: at(15_000),
      });
      clock.advance(9_999);
      await job.run();
      expect(flaky.calls).toHaveLength(2);

      clock.advance(1);
      await job.run();
      expect(flaky.calls.map((e) => e.id)).toEqual([event.id, event.id, event.id]);
      expect(await task()).toMatchObject({ status: 'DONE', attempts: 3, error: null, done_at: at(15_000) });
    });

    it('a handler that always fails: FAILED once max_attempts (3) are spent, never retried again', async () => {
      const broken = recorder('broken', () => true);
      const { t, clock } = await start({}, [broken.handler]);
      await publishMany(t, 1);
      const job = outboxJob(t);
      for (const wait of [0, 5_000, 10_000]) {
        clock.advance(wait);
        await job.run();
      }
      const [task] = await allTasks(t);
      expect(task).toMatchObject({ status: 'FAILED', attempts: 3, error: 'broken: boom 3', done_at: null });
      clock.advance(3_600_000);
      await job.run();
      expect(broken.calls).toHaveLength(3);
      const failed = await listTasks(t, '?status=FAILED');
      expect(failed.tasks.map((x: { id: string }) => x.id)).toEqual([task.id]);
    });

    it('a failing handler does not keep the others from the event; the retry calls every handler again', async () => {
      const once = recorder('once', (_e, call) => call === 1);
      const steady = recorder('steady');
      const { t, clock } = await start({}, [once.handler, steady.handler]);
      await publishMany(t, 1);
      await outboxJob(t).run();
      expect(steady.calls).toHaveLength(1);
      expect((await allTasks(t))[0]).toMatchObject({ status: 'PENDING', error: 'once: boom 1' });
      clock.advance(5_000);
      await outboxJob(t).run();
      expect(steady.calls).toHaveLength(2);
      expect((await allTasks(t))[0]).toMatchObject({ status: 'DONE', attempts: 2 });
    });

    it('hands the claimed batch over at once; a handler failing one event fails only that task', async () => {
      const batches: number[] = [];
      let middle = '';
      const { t } = await start({}, [
        {
          name: 'picky',
          handle: async (batch) => {
            batches.push(batch.length);
            return new Map(
              batch.filter((e) => e.id === middle).map((e) => [e.id, new Error('not this one')]),
            );
          },
        },
      ]);
      const events = await publishMany(t, 3);
      middle = events[1].id;
      await outboxJob(t).run();
      expect(batches).toEqual([3]);
      const byEvent = new Map((await allTasks(t)).map((task) => [task.event_id, task]));
      expect(byEvent.get(middle)).toMatchObject({ status: 'PENDING', error: 'picky: not this one' });
      for (const e of [events[0], events[2]]) expect(byEvent.get(e.id)).toMatchObject({ status: 'DONE' });
    });

    it('a handler that throws fails every task of the batch; the other handlers still get it', async () => {
      const steady = recorder('steady');
      const { t } = await start({}, [
        {
          name: 'down',
          handle: async () => {
            throw new Error('store unreachable');
          },
        },
        steady.handler,
      ]);
      await publishMany(t, 2);
      await outboxJob(t).run();
      expect(steady.calls).toHaveLength(2);
      for (const task of await allTasks(t)) {
        expect(task).toMatchObject({ status: 'PENDING', attempts: 1, error: 'down: store unreachable' });
      }
    });

    it('claims in batches: a step takes at most 100 tasks and says when more are waiting', async () => {
      const seen = recorder('seen');
      const { t } = await start({}, [seen.handler]);
      await publishMany(t, 230, 50);
      const job = outboxJob(t);
      expect(await job.run()).toBe(true);
      expect(seen.calls).toHaveLength(100);
      expect(await job.run()).toBe(true);
      expect(await job.run()).toBe(false);
      expect(seen.calls).toHaveLength(230);
      expect(new Set(seen.calls.map((e) => e.id)).size).toBe(230);
      expect((await listTasks(t, '?status=DONE&limit=1')).total).toBe(230);
    });

    it('a lease that runs out (crashed or stalled worker) is an interruption: retried at once by another worker, not counted', async () => {
      const { t, clock } = await start();
      let release!: () => void;
      const stuck = new Promise<void>((resolve) => {
        release = resolve;
      });
      const stalled = anotherDrain(t, [{ name: 'stalled', handle: () => stuck }], { workerId: 'worker-a' });
      const healthy = recorder('healthy');
      const rescuer = anotherDrain(t, [healthy.handler], { workerId: 'worker-b' });
      const [event] = await publishMany(t, 1);

      const stalledStep = stalled.run();
      await eventually(async () => (await allTasks(t))[0].status === 'IN_PROGRESS', 5_000, 'the claim');
      expect((await allTasks(t))[0]).toMatchObject({
        locked_by: 'worker-a',
        attempts: 1,
        locked_until: at(30_000),
      });

      // While the lease holds, nobody else gets the task.
      await rescuer.run();
      expect(healthy.calls).toHaveLength(0);

      clock.advance(30_000);
      await rescuer.run();
      // The reaper gave the attempt back and made the task due at once; the same step handled it.
      expect(healthy.calls.map((e) => e.id)).toEqual([event.id]);
      expect((await allTasks(t))[0]).toMatchObject({
        status: 'DONE',
        attempts: 1,
        interruptions: 1,
        locked_by: 'worker-b',
        done_at: at(30_000),
      });

      // The stalled worker finishing late changes nothing: its settle is fenced by its claim.
      release();
      await stalledStep;
      expect((await allTasks(t))[0]).toMatchObject({ status: 'DONE', attempts: 1, locked_by: 'worker-b' });
      await Promise.all([stalled.stop(), rescuer.stop()]);
    });

    it('an event that interrupts every worker (5 interruptions) then counts its attempts and ends FAILED; an operator retries it', async () => {
      const { t, clock } = await start();
      const [event] = await publishMany(t, 1);
      const mine = async () => (await allTasks(t)).find((x) => x.event_id === event.id)!;
      // A worker whose handler never finishes while the test runs: each claim's lease runs out, and the
      // next step's housekeeping reaps it (then claims the task again itself).
      let releaseAll!: () => void;
      const held = new Promise<void>((resolve) => {
        releaseAll = resolve;
      });
      // Its lease is an hour of the test clock, renewed every 20 real minutes: no heartbeat runs while
      // the test does (a renewal from a slow step would move the lease past the next clock advance).
      const hang = anotherDrain(t, [{ name: 'hang', handle: () => held }], {
        workerId: 'hangs',
        leaseMs: 3_600_000,
      });
      const steps: Promise<boolean>[] = [];
      for (let i = 0; i < 20; i++) {
        // A claim of this step: a new one (the previous claim may still read IN_PROGRESS until reaped).
        const before = await mine();
        const claims = (x: { attempts: number; interruptions: number }) => x.attempts + x.interruptions;
        const step = hang.run();
        steps.push(step);
        const claimed = eventually(async () => {
          const now = await mine();
          return now.status === 'FAILED' || (now.status === 'IN_PROGRESS' && claims(now) > claims(before));
        }, 5_000);
        await Promise.race([step, claimed]);
        if ((await mine()).status === 'FAILED') break;
        clock.advance(7_200_000);
      }
      releaseAll();
      await Promise.all(steps);
      await hang.stop();
      const final = await mine();
      expect(final).toMatchObject({ status: 'FAILED', interruptions: 5, attempts: 3 });
      expect(final.error).toContain('after 5 interruptions');

      // POST /event_delivery_task/{id}/retry: FAILED -> PENDING, counts reset; the drain delivers it.
      const who = await admin(t);
      const retried = await t.app.inject({
        method: 'POST',
        url: `/api/v1/event_delivery_task/${final.id}/retry`,
        headers: who.headers,
      });
      expect(retried.statusCode).toBe(200);
      expect(retried.json()).toMatchObject({ status: 'PENDING', attempts: 0, interruptions: 0, error: null });
      const healthy = recorder('healthy');
      const drain = anotherDrain(t, [healthy.handler]);
      await drain.run();
      expect(healthy.calls.map((e) => e.id)).toContain(event.id);
      expect(await mine()).toMatchObject({ status: 'DONE', attempts: 1 });
      await drain.stop();
      // Only FAILED tasks are retried; an unknown one is 404.
      const again = await t.app.inject({
        method: 'POST',
        url: `/api/v1/event_delivery_task/${final.id}/retry`,
        headers: who.headers,
      });
      expect(again.statusCode).toBe(409);
      expect(again.json()).toMatchObject({ code: 'EVENT.TASK_NOT_FAILED', details: { status: 'DONE' } });
      const missing = await t.app.inject({
        method: 'POST',
        url: '/api/v1/event_delivery_task/nope/retry',
        headers: who.headers,
      });
      expect(missing.statusCode).toBe(404);
    });

    it('the retry rule: 5 s x 2^(k-1) after failed attempt k, capped at 5 min; FAILED once attempts reach the maximum', () => {
      const now = new Date(T0);
      expect(afterFailure(1, 3, now)).toEqual({ status: 'PENDING', next_attempt_at: new Date(at(5_000)) });
      expect(afterFailure(2, 3, now)).toEqual({ status: 'PENDING', next_attempt_at: new Date(at(10_000)) });
      expect(afterFailure(3, 3, now)).toEqual({ status: 'FAILED' });
      expect(afterFailure(4, 3, now)).toEqual({ status: 'FAILED' });
      expect(afterFailure(9, 20, now)).toEqual({ status: 'PENDING', next_attempt_at: new Date(at(300_000)) });
    });
  });

  describe('end to end', () => {
    it('POST /user commits the user and its svc.user.created together; the drain hands it to the handlers', async () => {
      const seen = recorder('seen');
      const { t } = await start({}, [seen.handler]);
      const boss = await admin(t);
      const res = await t.app.inject({
        method: 'POST',
        url: '/api/v1/user',
        headers: boss.headers,
        payload: { email: 'grace@example.test', password: 'a-long-enough-password-1', name: 'Grace' },
      });
      expect(res.statusCode, res.body).toBe(200);
      const user = res.json();
      const tasks = await listTasks(t, '?status=PENDING&limit=250');
      const task = tasks.tasks.find(
        (x: { cloudevent: { subject: string } }) => x.cloudevent.subject === user.id,
      );
      expect(task.cloudevent).toMatchObject({
        type: 'svc.user.created',
        source: '/api/v1/user',
        subject: user.id,
        data: { user_id: user.id, email: 'grace@example.test' },
      });
      expect(validateCloudEvent(task.cloudevent).valid).toBe(true);
      await outboxJob(t).run();
      expect(seen.calls.filter((e) => e.subject === user.id)).toEqual([task.cloudevent]);
      const done = await listTasks(t, '?status=DONE&limit=250');
      expect(done.tasks.map((x: { id: string }) => x.id)).toContain(task.id);
    });
  });

  describe('tasks born claimed (docs/events.md)', () => {
    it('a task published while the drain runs here is written claimed by it and stepped from memory; no other drain can take it', async () => {
      const seen = recorder('seen');
      const { t } = await start({}, [seen.handler]);
      const job = outboxJob(t);
      job.start();
      const rival = recorder('rival');
      const other = anotherDrain(t, [rival.handler], { workerId: 'worker-b' });
      try {
        const events = await publishMany(t, 3);
        for (const row of await allTasks(t))
          expect(row).toMatchObject({
            status: 'IN_PROGRESS',
            attempts: 1,
            interruptions: 0,
            locked_by: job.workerId,
            locked_until: at(30_000),
          });
        // The store offers nothing due to anyone else while the lease holds.
        expect(await other.run()).toBe(false);
        expect(rival.calls).toHaveLength(0);

        expect(await job.run()).toBe(false);
        expect(seen.calls.map((e) => e.id)).toEqual(events.map((e) => e.id));
        for (const row of await allTasks(t))
          expect(row).toMatchObject({
            status: 'DONE',
            attempts: 1,
            interruptions: 0,
            done_at: T0.toISOString(),
          });
      } finally {
        await job.stop();
        await other.stop();
      }
    });

    it('a task that waited past half its lease is not stepped from memory: it is handed back at once, claimed again from the store and delivered once', async () => {
      const seen = recorder('seen');
      const { t, clock } = await start({}, [seen.handler]);
      const job = outboxJob(t);
      job.start();
      try {
        const [event] = await publishMany(t, 1);
        clock.advance(20_000);
        // Not started from memory: handed back, then claimed anew (a fresh lease) in the same step.
        await job.run();
        expect(seen.calls.map((e) => e.id)).toEqual([event.id]);
        expect((await allTasks(t))[0]).toMatchObject({ status: 'DONE', attempts: 1, interruptions: 0 });
        await job.run();
        expect(seen.calls).toHaveLength(1);
      } finally {
        await job.stop();
      }
    });

    it('with tasks in memory the store is asked only when woken: a due task another process wrote is then taken with them', async () => {
      const seen = recorder('seen');
      const { t, clock } = await start({}, [seen.handler]);
      const job = outboxJob(t);
      job.start();
      // Another process's publisher: its tasks are written due, for any drain to claim.
      const elsewhere = createEventPublisher({ clock, wake: () => {} });
      try {
        // On PostgreSQL the drain's LISTEN wakes it once connected (what was published meanwhile).
        if (dialectName === 'postgres')
          await eventually(
            async () => t.logs.some((l) => l.msg === 'outbox: listening for notifications'),
            5_000,
            'LISTEN',
          );
        // The first step does housekeeping, which always asks the store.
        await job.run();
        const [first] = await publishMany(t, 1);
        const other = await t.ctx.store.transaction((tx) => elsewhere.publish(tx, userCreated(9)));
        await job.run();
        expect(seen.calls.map((e) => e.id)).toEqual([first.id]);

        // Another process's NOTIFY (or its commit in the SQLite log) wakes this drain: it asks the store.
        const [second] = await publishMany(t, 1);
        t.ctx.services.wakeups.wake('outbox');
        await job.run();
        expect(seen.calls.map((e) => e.id)).toEqual([first.id, other.id, second.id]);
        expect((await allTasks(t)).every((r) => r.status === 'DONE' && r.attempts === 1)).toBe(true);
      } finally {
        await job.stop();
      }
    });

    it('stopping hands the tasks still in memory back, due and unattempted; after that, tasks are written due', async () => {
      const { t } = await start();
      const job = outboxJob(t);
      job.start();
      await publishMany(t, 2);
      await job.stop();
      for (const row of await allTasks(t))
        expect(row).toMatchObject({ status: 'PENDING', attempts: 0, locked_by: null, locked_until: null });
      await publishMany(t, 1);
      expect((await allTasks(t)).map((r) => r.status)).toEqual(['PENDING', 'PENDING', 'PENDING']);

      const rescue = recorder('rescue');
      const other = anotherDrain(t, [rescue.handler], { workerId: 'worker-b' });
      await other.run();
      expect(rescue.calls).toHaveLength(3);
      expect((await allTasks(t)).every((r) => r.status === 'DONE' && r.attempts === 1)).toBe(true);
      await other.stop();
    });

    it('a publish that took its lease before the drain stopped and commits after: its task is handed back at once, not at lease expiry', async () => {
      const { t } = await start();
      const job = outboxJob(t);
      job.start();
      let stopping: Promise<void> | undefined;
      await t.ctx.store.transaction(async (tx) => {
        await t.ctx.services.events.publish(tx, userCreated(1));
        // The drain stops while the publishing transaction is still open (not awaited here: on
        // SQLite its hand-back would queue behind this very transaction).
        stopping = job.stop();
      });
      await stopping;
      // Handed back by `started` after the commit, with the clock not moved: due now, unattempted.
      await eventually(
        async () => (await allTasks(t)).every((r) => r.status === 'PENDING'),
        5_000,
        'the hand-back',
      );
      expect(await allTasks(t)).toEqual([
        expect.objectContaining({ status: 'PENDING', attempts: 0, locked_by: null, locked_until: null }),
      ]);
      const rescue = recorder('rescue');
      const other = anotherDrain(t, [rescue.handler], { workerId: 'worker-b' });
      await other.run();
      expect(rescue.calls).toHaveLength(1);
      await other.stop();
    });
  });

  describe('worker', () => {
    it('processes an event as soon as its transaction commits, not at the next interval', async () => {
      // Real clock; the interval is 10 minutes, so only the wake-up after commit can explain a prompt delivery.
      let delivered!: (id: string) => void;
      const got = new Promise<string>((resolve) => {
        delivered = resolve;
      });
      t = await startTestApp({
        env: { SVC_OUTBOX_DRAIN_INTERVAL_MS: '600000' },
        eventHandlers: [{ name: 'probe', handle: async (events) => delivered(events[0].id) }],
      });
      const app = t;
      const worker = createWorker(app.ctx);
      worker.start();
      try {
        // Let the first (empty) step finish so the loop is asleep on its 10-minute interval.
        await new Promise((r) => setTimeout(r, 100));
        const [event] = await publishMany(app, 1);
        const deadline = new Promise<string>((_, reject) =>
          setTimeout(() => reject(new Error('not delivered')), 5_000),
        );
        expect(await Promise.race([got, deadline])).toBe(event.id);
        await eventually(async () => (await allTasks(app))[0].status === 'DONE', 5_000, 'DONE');
      } finally {
        await worker.stop();
      }
    });

    it('wakes itself when a retry comes due, not at the next interval', async () => {
      const flaky = recorder('flaky', (_e, call) => call === 1);
      t = await startTestApp({
        env: { SVC_OUTBOX_DRAIN_INTERVAL_MS: '600000' },
        eventHandlers: [flaky.handler],
      });
      const app = t;
      const worker = createWorker(app.ctx);
      worker.start();
      try {
        await publishMany(app, 1);
        // The first attempt fails; the retry is due 5 s later (retry.ts).
        const task = await eventually(
          async () => {
            const [row] = await allTasks(app);
            return row.status === 'DONE' && row;
          },
          15_000,
          'the retry',
        );
        expect(task).toMatchObject({ attempts: 2, status: 'DONE' });
        expect(flaky.calls).toHaveLength(2);
      } finally {
        await worker.stop();
      }
    });
  });
});
