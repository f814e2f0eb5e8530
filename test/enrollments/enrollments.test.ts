import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENROLLMENT_STATUSES, TRANSITIONS } from '../../src/areas/enrollments/transitions.js';
import { manualClock } from '../../src/lib/clock.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { admin, principal, responder, type TestPrincipal } from '../helpers/auth.js';
import { dialectName } from '../helpers/store.js';
import { call, grant, questionnaire } from './fixtures.js';

describe(`enrollments (${dialectName})`, () => {
  let t: TestApp;
  let boss: TestPrincipal;
  let provider: TestPrincipal;
  let reader: TestPrincipal;
  let q1: { id: string };
  let q2: { id: string };

  // Time moves only when a test says so: list order by created_at never depends on timing luck.
  const clock = manualClock(new Date());

  beforeAll(async () => {
    t = await startTestApp({ clock });
    boss = await admin(t);
    provider = await principal(t, ['enrollment:read', 'enrollment:write']);
    reader = await principal(t, ['enrollment:read']);
    // The provider may enroll into (EDIT) both; the reader may see (VIEW) them.
    q1 = await questionnaire(t, boss, { editors: [provider.userId], viewers: [reader.userId] });
    q2 = await questionnaire(t, boss, {
      status: 'DRAFT',
      editors: [provider.userId],
      viewers: [reader.userId],
    });
  });
  afterAll(() => t.close());

  const enroll = async (userId: string, body: Record<string, unknown> = {}) => {
    clock.advance(10);
    const res = await call(t, provider, 'POST', '/enrollment', {
      user_id: userId,
      questionnaire_ids: [q1.id],
      ...body,
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body;
  };

  describe('scopes', () => {
    it("needs credentials, then the scope of SPEC's table", async () => {
      expect((await call(t, null, 'GET', '/enrollment')).status).toBe(401);
      const r = await responder(t);
      const denied = await call(t, r, 'GET', '/enrollment');
      expect(denied.status).toBe(403);
      expect(denied.body).toMatchObject({
        code: 'AUTH.FORBIDDEN',
        details: { required_scopes: ['enrollment:read'] },
      });
      expect((await call(t, r, 'GET', '/enrollment_user')).status).toBe(403);
      expect((await call(t, reader, 'GET', '/enrollment')).status).toBe(200);
      expect((await call(t, reader, 'GET', '/enrollment_user')).status).toBe(200);
      const write = await call(t, reader, 'POST', '/enrollment', {
        user_id: r.userId,
        questionnaire_ids: [q1.id],
      });
      expect(write.status).toBe(403);
      expect(write.body.details.required_scopes).toEqual(['enrollment:write']);
    });

    it('write holders cannot read; DELETE takes enrollment:write or enrollment:delete', async () => {
      const writer = await principal(t, ['enrollment:write']);
      const deleter = await principal(t, ['enrollment:delete']);
      for (const who of [writer, deleter])
        await grant(t, boss, { questionnaire_id: q1.id, user_id: who.userId, level: 'EDIT' });
      const e1 = await enroll((await responder(t)).userId);
      const e2 = await enroll((await responder(t)).userId);
      expect((await call(t, writer, 'GET', `/enrollment/${e1.id}`)).status).toBe(403);
      expect((await call(t, reader, 'DELETE', `/enrollment/${e1.id}`)).status).toBe(403);
      expect((await call(t, deleter, 'PATCH', `/enrollment/${e1.id}`, { metadata: {} })).status).toBe(403);
      expect((await call(t, writer, 'DELETE', `/enrollment/${e1.id}`)).body).toEqual({
        message: 'Enrollment deleted',
      });
      expect((await call(t, deleter, 'DELETE', `/enrollment/${e2.id}`)).status).toBe(200);
    });
  });

  describe('create', () => {
    it('creates a PENDING_CONSENT enrollment with every field', async () => {
      const r = await responder(t);
      const res = await call(t, provider, 'POST', '/enrollment', {
        user_id: r.userId,
        questionnaire_ids: [q2.id, q1.id],
        consent_version: 'v1',
        starts_at: '2026-01-01T00:00:00Z',
        ends_at: '2026-12-31T00:00:00.000Z',
        schedule: { frequency: 'weekly' },
        metadata: { study: 'S-1' },
      });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        user_id: r.userId,
        questionnaire_ids: [q2.id, q1.id],
        status: 'PENDING_CONSENT',
        consent_required: true,
        consent_version: 'v1',
        consented_at: null,
        starts_at: '2026-01-01T00:00:00.000Z',
        ends_at: '2026-12-31T00:00:00.000Z',
        schedule: { frequency: 'weekly' },
        metadata: { study: 'S-1' },
        status_reason: null,
        created_by: provider.userId,
        updated_by: provider.userId,
        deleted_at: null,
      });
      expect(res.body.created_at).toMatch(/Z$/);
      const got = await call(t, reader, 'GET', `/enrollment/${res.body.id}`);
      expect(got.body).toEqual(res.body);
    });

    it('starts ENROLLED when consent was taken outside the app', async () => {
      const body = await enroll((await responder(t)).userId, { consent_required: false });
      expect(body).toMatchObject({ status: 'ENROLLED', consent_required: false, consented_at: null });
    });

    it('refuses bad input with clear 4xx', async () => {
      const r = await responder(t);
      const cases: Array<[Record<string, unknown>, number, string]> = [
        [{ user_id: r.userId, questionnaire_ids: [] }, 400, 'VALIDATION_ERROR'],
        [{ user_id: r.userId, questionnaire_ids: [q1.id, q1.id] }, 400, 'VALIDATION_ERROR'],
        [{ user_id: r.userId }, 400, 'VALIDATION_ERROR'],
        [{ user_id: r.userId, questionnaire_ids: [q1.id], colour: 'red' }, 400, 'VALIDATION_ERROR'],
        [{ user_id: r.userId, questionnaire_ids: [q1.id], starts_at: 'yesterday' }, 400, 'VALIDATION_ERROR'],
        [
          {
            user_id: r.userId,
            questionnaire_ids: [q1.id],
            starts_at: '2026-02-01T00:00:00Z',
            ends_at: '2026-01-01T00:00:00Z',
          },
          400,
          'VALIDATION_ERROR',
        ],
        [{ user_id: 'no-such-user', questionnaire_ids: [q1.id] }, 404, 'USER.NOT_FOUND'],
        [{ user_id: r.userId, questionnaire_ids: [q1.id, 'no-such-q'] }, 404, 'QUESTIONNAIRE.NOT_FOUND'],
      ];
      for (const [body, status, code] of cases) {
        const res = await call(t, provider, 'POST', '/enrollment', body);
        expect({ body, status: res.status, code: res.body.code }).toEqual({ body, status, code });
        expect(typeof res.body.message).toBe('string');
      }
      const missing = await call(t, provider, 'POST', '/enrollment', {
        user_id: r.userId,
        questionnaire_ids: ['nope'],
      });
      expect(missing.body.details).toMatchObject({ questionnaire_ids: ['nope'] });
      const ends = await call(t, provider, 'POST', '/enrollment', {
        user_id: r.userId,
        questionnaire_ids: [q1.id],
        starts_at: '2026-02-01T00:00:00Z',
        ends_at: '2026-01-01T00:00:00Z',
      });
      expect(ends.body.details).toMatchObject({ field: 'ends_at' });
    });

    it('a provider enrolls only into questionnaires their permissions let them see', async () => {
      const hidden = await questionnaire(t, boss);
      const r = await responder(t);
      const res = await call(t, provider, 'POST', '/enrollment', {
        user_id: r.userId,
        questionnaire_ids: [q1.id, hidden.id],
      });
      expect(res.status).toBe(404);
      expect(res.body).toMatchObject({
        code: 'QUESTIONNAIRE.NOT_FOUND',
        details: { questionnaire_ids: [hidden.id] },
      });
      // An unrestricted admin sees every questionnaire.
      const byAdmin = await call(t, boss, 'POST', '/enrollment', {
        user_id: r.userId,
        questionnaire_ids: [hidden.id],
      });
      expect(byAdmin.status).toBe(200);
      const e = await enroll(r.userId);
      const patch = await call(t, provider, 'PATCH', `/enrollment/${e.id}`, {
        questionnaire_ids: [hidden.id],
      });
      expect(patch.status).toBe(404);
    });

    it('refuses an archived questionnaire', async () => {
      const archived = await questionnaire(t, boss, { status: 'ARCHIVED', editors: [provider.userId] });
      const res = await call(t, provider, 'POST', '/enrollment', {
        user_id: (await responder(t)).userId,
        questionnaire_ids: [archived.id],
      });
      expect(res.status).toBe(409);
      expect(res.body).toMatchObject({
        code: 'QUESTIONNAIRE.INVALID_STATE',
        details: { questionnaire_ids: [archived.id] },
      });
    });

    it('allows one open enrollment per user and questionnaire; a closed one does not block', async () => {
      const r = await responder(t);
      const first = await enroll(r.userId);
      const dup = await call(t, provider, 'POST', '/enrollment', {
        user_id: r.userId,
        questionnaire_ids: [q2.id, q1.id],
      });
      expect(dup.status).toBe(409);
      expect(dup.body).toMatchObject({
        code: 'ENROLLMENT.ALREADY_ENROLLED',
        details: { conflicts: [{ questionnaire_id: q1.id, enrollment_id: first.id }] },
      });
      // Another questionnaire is fine; so is the same one for another user.
      await enroll(r.userId, { questionnaire_ids: [q2.id] });
      await enroll((await responder(t)).userId);
      const end = await call(t, provider, 'PATCH', `/enrollment/${first.id}`, {
        status: 'TERMINATED_BY_PROVIDER',
      });
      expect(end.status).toBe(200);
      const again = await enroll(r.userId);
      expect(again.status).toBe('PENDING_CONSENT');
    });

    it('concurrent duplicate enrollments: exactly one succeeds (unique index)', async () => {
      const r = await responder(t);
      const results = await Promise.all(
        [0, 1, 2].map(() =>
          call(t, provider, 'POST', '/enrollment', { user_id: r.userId, questionnaire_ids: [q1.id] }),
        ),
      );
      expect(results.map((x) => x.status).sort()).toEqual([200, 409, 409]);
      for (const x of results.filter((y) => y.status === 409))
        expect(x.body.code).toBe('ENROLLMENT.ALREADY_ENROLLED');
    });
  });

  describe('status transitions (provider, PATCH)', () => {
    /** An enrollment of a fresh responder brought into `status` through the API. */
    async function inStatus(status: string) {
      const r = await responder(t);
      const e = await enroll(r.userId, { consent_required: status === 'PENDING_CONSENT' });
      if (
        status === 'COMPLETED' ||
        status === 'TERMINATED_BY_PROVIDER' ||
        status === 'TERMINATED_BY_PATIENT'
      ) {
        const res = await call(t, provider, 'PATCH', `/enrollment/${e.id}`, { status });
        expect(res.status).toBe(200);
      }
      return e.id as string;
    }

    it('follows the documented table for every pair of statuses', async () => {
      for (const from of ENROLLMENT_STATUSES) {
        for (const to of ENROLLMENT_STATUSES) {
          if (from === to) continue;
          const id = await inStatus(from);
          const res = await call(t, provider, 'PATCH', `/enrollment/${id}`, {
            status: to,
            status_reason: 'because',
          });
          const allowed = TRANSITIONS[from][to]?.includes('provider') ?? false;
          expect({ from, to, status: res.status }).toEqual({ from, to, status: allowed ? 200 : 409 });
          if (allowed) {
            expect(res.body).toMatchObject({ status: to, status_reason: 'because' });
            expect(res.body.status_changed_at >= res.body.created_at).toBe(true);
          } else {
            expect(res.body.code).toBe('ENROLLMENT.INVALID_TRANSITION');
            expect(res.body.details).toMatchObject({ from, to });
            expect(Array.isArray(res.body.details.allowed)).toBe(true);
            expect((await call(t, reader, 'GET', `/enrollment/${id}`)).body.status).toBe(from);
          }
        }
      }
    });

    it('a provider cannot consent for the responder', async () => {
      const id = await inStatus('PENDING_CONSENT');
      const res = await call(t, provider, 'PATCH', `/enrollment/${id}`, { status: 'ENROLLED' });
      expect(res.status).toBe(409);
      expect(res.body.details.allowed.sort()).toEqual(['TERMINATED_BY_PATIENT', 'TERMINATED_BY_PROVIDER']);
    });

    it('setting the current status again changes nothing', async () => {
      const id = await inStatus('COMPLETED');
      const before = (await call(t, reader, 'GET', `/enrollment/${id}`)).body;
      const res = await call(t, provider, 'PATCH', `/enrollment/${id}`, { status: 'COMPLETED' });
      expect(res.status).toBe(200);
      expect(res.body).toEqual(before);
    });

    it('a closed enrollment can no longer be edited', async () => {
      const id = await inStatus('TERMINATED_BY_PROVIDER');
      const res = await call(t, provider, 'PATCH', `/enrollment/${id}`, { metadata: { late: true } });
      expect(res.status).toBe(409);
      expect(res.body).toMatchObject({
        code: 'ENROLLMENT.CLOSED',
        details: { status: 'TERMINATED_BY_PROVIDER' },
      });
    });

    it('concurrent status changes: exactly one applies', async () => {
      const id = await inStatus('ENROLLED');
      const results = await Promise.all([
        call(t, provider, 'PATCH', `/enrollment/${id}`, { status: 'COMPLETED' }),
        call(t, provider, 'PATCH', `/enrollment/${id}`, { status: 'TERMINATED_BY_PROVIDER' }),
      ]);
      expect(results.map((r) => r.status).sort()).toEqual([200, 409]);
      const winner = results.find((r) => r.status === 200)!.body.status;
      expect((await call(t, reader, 'GET', `/enrollment/${id}`)).body.status).toBe(winner);
    });
  });

  describe('update', () => {
    it('edits questionnaires, dates, schedule and metadata of an open enrollment', async () => {
      const r = await responder(t);
      const e = await enroll(r.userId);
      const res = await call(t, provider, 'PATCH', `/enrollment/${e.id}`, {
        questionnaire_ids: [q2.id],
        starts_at: '2026-03-01T00:00:00Z',
        ends_at: null,
        schedule: { frequency: 'daily' },
        metadata: null,
      });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        questionnaire_ids: [q2.id],
        starts_at: '2026-03-01T00:00:00.000Z',
        ends_at: null,
        schedule: { frequency: 'daily' },
        metadata: null,
        status: 'PENDING_CONSENT',
      });
      // q1 is free again for this user: the replaced questionnaire no longer counts as open.
      await enroll(r.userId);
    });

    it('refuses an empty patch, unknown fields and a window that ends before it starts', async () => {
      const e = await enroll((await responder(t)).userId, { starts_at: '2026-05-01T00:00:00Z' });
      expect((await call(t, provider, 'PATCH', `/enrollment/${e.id}`, {})).status).toBe(400);
      expect((await call(t, provider, 'PATCH', `/enrollment/${e.id}`, { user_id: 'x' })).status).toBe(400);
      const bad = await call(t, provider, 'PATCH', `/enrollment/${e.id}`, {
        ends_at: '2026-04-01T00:00:00Z',
      });
      expect(bad.status).toBe(400);
      expect(bad.body.details.field).toBe('ends_at');
      expect((await call(t, provider, 'PATCH', '/enrollment/nope', { metadata: {} })).body.code).toBe(
        'ENROLLMENT.NOT_FOUND',
      );
    });

    it('re-consent: consent_version changes only with consent pending', async () => {
      const r = await responder(t);
      const e = await enroll(r.userId, { consent_version: 'v1' });
      expect(
        (
          await call(t, r, 'POST', '/enrollment_consent', {
            enrollment_id: e.id,
            consent: true,
            consent_version: 'v1',
          })
        ).status,
      ).toBe(200);
      const refused = await call(t, provider, 'PATCH', `/enrollment/${e.id}`, { consent_version: 'v2' });
      expect(refused.status).toBe(409);
      expect(refused.body).toMatchObject({
        code: 'ENROLLMENT.INVALID_TRANSITION',
        details: { field: 'consent_version' },
      });
      const back = await call(t, provider, 'PATCH', `/enrollment/${e.id}`, {
        status: 'PENDING_CONSENT',
        consent_version: 'v2',
        status_reason: 'protocol amendment',
      });
      expect(back.status).toBe(200);
      expect(back.body).toMatchObject({
        status: 'PENDING_CONSENT',
        consent_version: 'v2',
        consented_at: null,
      });
      const old = await call(t, r, 'POST', '/enrollment_consent', {
        enrollment_id: e.id,
        consent: true,
        consent_version: 'v1',
      });
      expect(old.status).toBe(409);
      expect(old.body).toMatchObject({
        code: 'ENROLLMENT.CONSENT_VERSION_MISMATCH',
        details: { expected: 'v2', given: 'v1' },
      });
      const ok = await call(t, r, 'POST', '/enrollment_consent', {
        enrollment_id: e.id,
        consent: true,
        consent_version: 'v2',
      });
      expect(ok.body).toMatchObject({ status: 'ENROLLED', consent_version: 'v2' });
    });
  });

  describe('delete', () => {
    it('soft-deletes: gone from reads and lists, and the questionnaire is free again', async () => {
      const r = await responder(t);
      const e = await enroll(r.userId);
      expect((await call(t, provider, 'DELETE', `/enrollment/${e.id}`)).status).toBe(200);
      expect((await call(t, reader, 'GET', `/enrollment/${e.id}`)).status).toBe(404);
      expect((await call(t, provider, 'DELETE', `/enrollment/${e.id}`)).body.code).toBe(
        'ENROLLMENT.NOT_FOUND',
      );
      const list = await call(t, reader, 'GET', `/enrollment?user_id=${r.userId}`);
      expect(list.body.total).toBe(0);
      const row = await t.ctx.store.db
        .selectFrom('enrollment')
        .select('deleted_at')
        .where('id', '=', e.id)
        .executeTakeFirst();
      expect(row?.deleted_at).toMatch(/Z$/);
      await enroll(r.userId);
      expect(
        (await call(t, r, 'POST', '/enrollment_consent', { enrollment_id: e.id, consent: true })).status,
      ).toBe(404);
    });
  });

  describe('list', () => {
    it('filters, sorts and pages with the envelope', async () => {
      const r = await responder(t);
      const a = await enroll(r.userId);
      const b = await enroll(r.userId, { questionnaire_ids: [q2.id], consent_required: false });
      const all = await call(
        t,
        reader,
        'GET',
        `/enrollment?user_id=${r.userId}&sort_by=created_at&sort_dir=asc`,
      );
      expect(all.body).toMatchObject({
        total: 2,
        limit: 25,
        offset: 0,
        has_next: false,
        has_previous: false,
      });
      expect(all.body.enrollments.map((e: { id: string }) => e.id)).toEqual([a.id, b.id]);
      const page = await call(
        t,
        reader,
        'GET',
        `/enrollment?user_id=${r.userId}&limit=1&offset=1&sort_dir=asc`,
      );
      expect(page.body).toMatchObject({ total: 2, limit: 1, offset: 1, has_next: false, has_previous: true });
      expect(page.body.enrollments[0].id).toBe(b.id);
      const byStatus = await call(t, reader, 'GET', `/enrollment?user_id=${r.userId}&status=ENROLLED`);
      expect(byStatus.body.enrollments.map((e: { id: string }) => e.id)).toEqual([b.id]);
      const byQ = await call(t, reader, 'GET', `/enrollment?user_id=${r.userId}&questionnaire_id=${q1.id}`);
      expect(byQ.body.enrollments.map((e: { id: string }) => e.id)).toEqual([a.id]);
      const future = await call(
        t,
        reader,
        'GET',
        `/enrollment?user_id=${r.userId}&created_at_gte=2999-01-01T00:00:00Z`,
      );
      expect(future.body.total).toBe(0);
    });

    it('rejects an unknown sort column, status or parameter', async () => {
      const bad = await call(t, reader, 'GET', '/enrollment?sort_by=password');
      expect(bad.status).toBe(400);
      expect(bad.body.details).toMatchObject({ field: 'sort_by' });
      expect(bad.body.details.allowed_values).toContain('created_at');
      expect((await call(t, reader, 'GET', '/enrollment?status=ASLEEP')).status).toBe(400);
      expect((await call(t, reader, 'GET', '/enrollment?limit=251')).status).toBe(400);
      expect((await call(t, reader, 'GET', '/enrollment?colour=red')).status).toBe(400);
    });
  });

  describe('GET /enrollment_user', () => {
    it('lists each enrolled user once with counts, the latest status, email and name', async () => {
      const r = await responder(t);
      const first = await enroll(r.userId);
      await call(t, provider, 'PATCH', `/enrollment/${first.id}`, { status: 'TERMINATED_BY_PROVIDER' });
      const latest = await enroll(r.userId, { questionnaire_ids: [q1.id, q2.id], consent_required: false });
      const res = await call(t, reader, 'GET', `/enrollment_user?user_id=${r.userId}`);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        total: 1,
        limit: 25,
        offset: 0,
        has_next: false,
        has_previous: false,
      });
      expect(res.body.enrollment_users).toEqual([
        {
          user_id: r.userId,
          email: r.email,
          name: null,
          enrollment_count: 2,
          open_enrollment_count: 1,
          status_counts: {
            PENDING_CONSENT: 0,
            ENROLLED: 1,
            COMPLETED: 0,
            TERMINATED_BY_PROVIDER: 1,
            TERMINATED_BY_PATIENT: 0,
          },
          latest_enrollment_id: latest.id,
          latest_status: 'ENROLLED',
          last_enrolled_at: latest.created_at,
        },
      ]);
    });

    it('filters by status and questionnaire, sorts and pages', async () => {
      const q = await questionnaire(t, boss, { editors: [provider.userId], viewers: [reader.userId] });
      const users = [await responder(t), await responder(t), await responder(t)];
      await enroll(users[0].userId, { questionnaire_ids: [q.id] });
      await enroll(users[1].userId, { questionnaire_ids: [q.id], consent_required: false });
      await enroll(users[1].userId, { questionnaire_ids: [q2.id] });
      await enroll(users[2].userId, { questionnaire_ids: [q.id], consent_required: false });
      const byQ = await call(
        t,
        reader,
        'GET',
        `/enrollment_user?questionnaire_id=${q.id}&sort_by=user_id&sort_dir=asc`,
      );
      expect(byQ.body.total).toBe(3);
      const ids = users.map((u) => u.userId).sort();
      expect(byQ.body.enrollment_users.map((u: { user_id: string }) => u.user_id)).toEqual(ids);
      // Counts cover the matching enrollments only.
      expect(
        byQ.body.enrollment_users.every((u: { enrollment_count: number }) => u.enrollment_count === 1),
      ).toBe(true);
      const enrolled = await call(
        t,
        reader,
        'GET',
        `/enrollment_user?questionnaire_id=${q.id}&status=ENROLLED`,
      );
      expect(enrolled.body.total).toBe(2);
      const page = await call(
        t,
        reader,
        'GET',
        `/enrollment_user?questionnaire_id=${q.id}&sort_by=last_enrolled_at&sort_dir=desc&limit=1&offset=1`,
      );
      expect(page.body).toMatchObject({ total: 3, limit: 1, offset: 1, has_next: true, has_previous: true });
      expect(page.body.enrollment_users[0].user_id).toBe(users[1].userId);
      expect((await call(t, reader, 'GET', '/enrollment_user?sort_by=email')).status).toBe(400);
    });
  });
});
