import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../../src/lib/clock.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { admin, apiKey, principal, responder, type TestPrincipal } from '../helpers/auth.js';
import { dialectName } from '../helpers/store.js';
import { call, questionnaire } from './fixtures.js';

describe(`enrollment consent and fetch (${dialectName})`, () => {
  let t: TestApp;
  let boss: TestPrincipal;
  let provider: TestPrincipal;
  let q1: { id: string; name: string };
  let q2: { id: string; name: string };
  const clock = manualClock(new Date());

  beforeAll(async () => {
    t = await startTestApp({ clock });
    boss = await admin(t);
    provider = await principal(t, ['enrollment:read', 'enrollment:write']);
    q1 = await questionnaire(t, boss, {
      editors: [provider.userId],
      payload: { items: [{ id: 'mood', type: 'scale' }] },
    });
    q2 = await questionnaire(t, boss, { editors: [provider.userId] });
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

  describe('POST /enrollment_consent', () => {
    it('needs a signed-in caller but no scope', async () => {
      const res = await call(t, null, 'POST', '/enrollment_consent', { enrollment_id: 'x', consent: true });
      expect(res.status).toBe(401);
      expect(res.body.code).toBe('AUTH.UNAUTHENTICATED');
    });

    it('the responder consents: PENDING_CONSENT -> ENROLLED, with the time of consent', async () => {
      const r = await responder(t);
      const e = await enroll(r.userId, { consent_version: 'v3', metadata: { internal: 'note' } });
      clock.advance(1000);
      const res = await call(t, r, 'POST', '/enrollment_consent', {
        enrollment_id: e.id,
        consent: true,
        consent_version: 'v3',
      });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ id: e.id, status: 'ENROLLED', consent_version: 'v3' });
      expect(res.body.consented_at).toBe(clock.now().toISOString());
      expect(res.body.status_changed_at).toBe(clock.now().toISOString());
      // The responder's view leaves out provider-side fields.
      expect(res.body).not.toHaveProperty('metadata');
      expect(res.body).not.toHaveProperty('created_by');
      const seen = await call(t, provider, 'GET', `/enrollment/${e.id}`);
      expect(seen.body).toMatchObject({
        status: 'ENROLLED',
        updated_by: r.userId,
        metadata: { internal: 'note' },
      });
      // Repeating the consent is a no-op.
      const again = await call(t, r, 'POST', '/enrollment_consent', {
        enrollment_id: e.id,
        consent: true,
        consent_version: 'v3',
      });
      expect(again.status).toBe(200);
      expect(again.body.consented_at).toBe(res.body.consented_at);
    });

    it('needs the current consent document version when the enrollment names one', async () => {
      const r = await responder(t);
      const e = await enroll(r.userId, { consent_version: 'v3' });
      const none = await call(t, r, 'POST', '/enrollment_consent', { enrollment_id: e.id, consent: true });
      expect(none.status).toBe(409);
      expect(none.body).toMatchObject({
        code: 'ENROLLMENT.CONSENT_VERSION_MISMATCH',
        details: { expected: 'v3', given: null },
      });
    });

    it('declining ends the enrollment as TERMINATED_BY_PATIENT with the reason', async () => {
      const r = await responder(t);
      const e = await enroll(r.userId);
      const res = await call(t, r, 'POST', '/enrollment_consent', {
        enrollment_id: e.id,
        consent: false,
        reason: 'not interested',
      });
      expect(res.body).toMatchObject({
        status: 'TERMINATED_BY_PATIENT',
        status_reason: 'not interested',
        consented_at: null,
      });
      expect(
        (await call(t, r, 'POST', '/enrollment_consent', { enrollment_id: e.id, consent: false })).status,
      ).toBe(200);
      const late = await call(t, r, 'POST', '/enrollment_consent', { enrollment_id: e.id, consent: true });
      expect(late.status).toBe(409);
      expect(late.body).toMatchObject({
        code: 'ENROLLMENT.INVALID_TRANSITION',
        details: { from: 'TERMINATED_BY_PATIENT', to: 'ENROLLED', allowed: [] },
      });
      // The questionnaire is free for a new enrollment.
      await enroll(r.userId);
    });

    it('withdrawing from an active enrollment', async () => {
      const r = await responder(t);
      const e = await enroll(r.userId, { consent_required: false });
      const res = await call(t, r, 'POST', '/enrollment_consent', { enrollment_id: e.id, consent: false });
      expect(res.body.status).toBe('TERMINATED_BY_PATIENT');
    });

    it('a completed enrollment cannot be withdrawn from or consented to', async () => {
      const r = await responder(t);
      const e = await enroll(r.userId, { consent_required: false });
      await call(t, provider, 'PATCH', `/enrollment/${e.id}`, { status: 'COMPLETED' });
      for (const consent of [true, false]) {
        const res = await call(t, r, 'POST', '/enrollment_consent', { enrollment_id: e.id, consent });
        expect(res.status).toBe(409);
        expect(res.body.code).toBe('ENROLLMENT.INVALID_TRANSITION');
      }
    });

    it("another user's enrollment is a 404, like a missing one", async () => {
      const r = await responder(t);
      const other = await responder(t);
      const e = await enroll(r.userId);
      const res = await call(t, other, 'POST', '/enrollment_consent', {
        enrollment_id: e.id,
        consent: false,
      });
      expect(res.status).toBe(404);
      expect(res.body.code).toBe('ENROLLMENT.NOT_FOUND');
      expect((await call(t, provider, 'GET', `/enrollment/${e.id}`)).body.status).toBe('PENDING_CONSENT');
      const missing = await call(t, r, 'POST', '/enrollment_consent', {
        enrollment_id: 'nope',
        consent: true,
      });
      expect(missing.status).toBe(404);
    });

    it('consent after the enrollment period ended is refused', async () => {
      const r = await responder(t);
      const ends = new Date(clock.now().getTime() + 60_000).toISOString();
      const e = await enroll(r.userId, { ends_at: ends });
      clock.advance(120_000);
      const res = await call(t, r, 'POST', '/enrollment_consent', { enrollment_id: e.id, consent: true });
      expect(res.status).toBe(409);
      expect(res.body).toMatchObject({ code: 'ENROLLMENT.NOT_ACTIVE', details: { ends_at: ends } });
      // Declining is still possible.
      expect(
        (await call(t, r, 'POST', '/enrollment_consent', { enrollment_id: e.id, consent: false })).status,
      ).toBe(200);
    });

    it('rejects a malformed body', async () => {
      const r = await responder(t);
      for (const body of [
        {},
        { enrollment_id: 'x' },
        { enrollment_id: 'x', consent: 'yes' },
        { enrollment_id: 'x', consent: true, extra: 1 },
      ]) {
        const res = await call(t, r, 'POST', '/enrollment_consent', body);
        expect(res.status).toBe(400);
        expect(res.body.code).toBe('VALIDATION_ERROR');
      }
    });

    it('an API key acts as its creator', async () => {
      const key = await apiKey(t, ['enrollment:read']);
      const e = await enroll(key.userId);
      const res = await call(t, key, 'POST', '/enrollment_consent', { enrollment_id: e.id, consent: true });
      expect(res.status).toBe(200);
      expect(res.body.status).toBe('ENROLLED');
    });
  });

  describe('GET /enrollment_fetch', () => {
    it("returns only the caller's enrollments, each with its questionnaires", async () => {
      const r = await responder(t);
      const other = await responder(t);
      const a = await enroll(r.userId, { questionnaire_ids: [q2.id, q1.id], schedule: { every: 'P1D' } });
      await enroll(other.userId);
      const res = await call(t, r, 'GET', '/enrollment_fetch');
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        total: 1,
        limit: 25,
        offset: 0,
        has_next: false,
        has_previous: false,
      });
      const [e] = res.body.enrollments;
      expect(e).toMatchObject({
        id: a.id,
        status: 'PENDING_CONSENT',
        schedule: { every: 'P1D' },
        questionnaire_ids: [q2.id, q1.id],
      });
      expect(e).not.toHaveProperty('metadata');
      expect(e.questionnaires.map((q: { id: string }) => q.id)).toEqual([q2.id, q1.id]);
      expect(e.questionnaires[1]).toMatchObject({
        id: q1.id,
        name: q1.name,
        status: 'PUBLISHED',
        payload: { items: [{ id: 'mood', type: 'scale' }] },
      });
      expect(e.questionnaires[1]).toHaveProperty('config');
      expect(e.questionnaires[1]).toHaveProperty('schedule_payload');
      // Nothing internal to the questionnaire record leaks (lineage, revision bookkeeping).
      expect(e.questionnaires[1]).not.toHaveProperty('lineage_root_id');
    });

    it('filters by status, pages, and leaves out deleted enrollments', async () => {
      const r = await responder(t);
      const a = await enroll(r.userId);
      const b = await enroll(r.userId, { questionnaire_ids: [q2.id], consent_required: false });
      const pending = await call(t, r, 'GET', '/enrollment_fetch?status=PENDING_CONSENT');
      expect(pending.body.enrollments.map((e: { id: string }) => e.id)).toEqual([a.id]);
      const page = await call(t, r, 'GET', '/enrollment_fetch?limit=1&sort_dir=desc');
      expect(page.body).toMatchObject({ total: 2, has_next: true });
      expect(page.body.enrollments[0].id).toBe(b.id);
      await call(t, provider, 'DELETE', `/enrollment/${a.id}`);
      const after = await call(t, r, 'GET', '/enrollment_fetch');
      expect(after.body.enrollments.map((e: { id: string }) => e.id)).toEqual([b.id]);
      expect((await call(t, r, 'GET', '/enrollment_fetch?user_id=someone-else')).status).toBe(400);
    });

    it('a deleted questionnaire drops out of the list; the enrollment stays', async () => {
      const q = await questionnaire(t, boss, { editors: [provider.userId] });
      const r = await responder(t);
      const e = await enroll(r.userId, { questionnaire_ids: [q.id, q1.id] });
      expect((await call(t, boss, 'DELETE', `/questionnaire/${q.id}`)).status).toBe(200);
      const res = await call(t, r, 'GET', '/enrollment_fetch');
      expect(res.body.enrollments[0]).toMatchObject({ id: e.id, questionnaire_ids: [q.id, q1.id] });
      expect(res.body.enrollments[0].questionnaires.map((x: { id: string }) => x.id)).toEqual([q1.id]);
    });

    it('a questionnaire that is not published is listed without its content', async () => {
      const draft = await questionnaire(t, boss, {
        status: 'DRAFT',
        editors: [provider.userId],
        payload: { items: [{ id: 'secret-draft-item' }] },
      });
      const r = await responder(t);
      await enroll(r.userId, { questionnaire_ids: [draft.id, q1.id] });
      const res = await call(t, r, 'GET', '/enrollment_fetch');
      const [d, live] = res.body.enrollments[0].questionnaires;
      expect(d).toMatchObject({
        id: draft.id,
        name: draft.name,
        status: 'DRAFT',
        payload: null,
        config: null,
        schedule_payload: null,
      });
      expect(live).toMatchObject({
        id: q1.id,
        status: 'PUBLISHED',
        payload: { items: [{ id: 'mood', type: 'scale' }] },
      });
      expect(JSON.stringify(res.body)).not.toContain('secret-draft-item');
    });

    it('needs a signed-in caller', async () => {
      expect((await call(t, null, 'GET', '/enrollment_fetch')).status).toBe(401);
    });
  });
});
