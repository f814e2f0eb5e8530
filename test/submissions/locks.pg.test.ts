import type pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { call, enrolled, lockWaiters, questionnaire, startWithRawSession } from '../enrollments/fixtures.js';
import type { TestApp } from '../helpers/app.js';
import { responder, type TestPrincipal } from '../helpers/auth.js';
import { describePg } from '../helpers/store.js';

/**
 * PostgreSQL: a submission holds the rows its checks read (the questionnaire, the enrollment) until it
 * commits, so an archive cannot commit between its check and its insert. A test transaction holding the
 * enrollment row pauses the submission inside its write, and shows the archive waiting for it.
 */
// Needs PostgreSQL (row locks across sessions).
describePg('submission write transactions hold what they checked (postgres)', () => {
  let t: TestApp;
  let boss: TestPrincipal;
  let raw: pg.Client;
  let close: () => Promise<void>;

  beforeAll(async () => {
    ({ t, boss, raw, close } = await startWithRawSession());
  });
  afterAll(() => close?.());

  // Remembered: the process has read the questionnaire before (src/areas/questionnaires/held.ts), so
  // the submission holds it with a check sent with its next statement instead of reading it.
  for (const remembered of [false, true]) {
    it(`an archive of the questionnaire waits until an in-flight submission has committed (${remembered ? 'remembered' : 'read'})`, async () => {
      const q = await questionnaire(t, boss, { config: { allow_multiple_submissions: true } });
      const r = await responder(t);
      const e = await enrolled(t, boss, r.userId, [q.id]);
      if (remembered) {
        const earlier = { questionnaire_id: q.id, answers: {}, enrollment_id: e.id };
        expect((await call(t, r, 'POST', '/questionnaire_submission', earlier)).status).toBe(200);
      }
      await raw.query('begin');
      try {
        await raw.query('select id from enrollment where id = $1 for update', [e.id]);
        const submit = call(t, r, 'POST', '/questionnaire_submission', {
          questionnaire_id: q.id,
          answers: {},
          enrollment_id: e.id,
        });
        await lockWaiters(raw, 1); // the submission, paused inside its write
        const archive = call(t, boss, 'POST', `/questionnaire/${q.id}/archive`);
        const first = await Promise.race([
          archive.then(() => 'archive committed while the submission was in flight'),
          lockWaiters(raw, 2).then(() => 'archive waits for the submission'),
        ]);
        expect(first).toBe('archive waits for the submission');
        await raw.query('commit');
        const [submitted, archived] = await Promise.all([submit, archive]);
        expect(submitted.status).toBe(200);
        expect(archived.status).toBe(200);
        // The submission was accepted while the questionnaire was PUBLISHED: it precedes the archive.
        expect(submitted.body.created_at <= archived.body.archived_at).toBe(true);
      } finally {
        await raw.query('rollback').catch(() => {});
      }
    });
  }
});
