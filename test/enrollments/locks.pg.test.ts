import type pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { newId } from '../../src/lib/ids.js';
import type { TestApp } from '../helpers/app.js';
import { responder, type TestPrincipal } from '../helpers/auth.js';
import { describePg } from '../helpers/store.js';
import { call, lockWaiters, questionnaire, startWithRawSession } from './fixtures.js';

/**
 * PostgreSQL: creating an enrollment holds the questionnaires it checked until it commits, so an archive
 * cannot commit between the check and the insert. A test transaction holding an (uncommitted) open
 * enrollment of the same user and questionnaire pauses the create on the unique index, inside its write.
 */
// Needs PostgreSQL (row locks across sessions).
describePg('enrollment write transactions hold the questionnaires they checked (postgres)', () => {
  let t: TestApp;
  let boss: TestPrincipal;
  let raw: pg.Client;
  let close: () => Promise<void>;

  beforeAll(async () => {
    ({ t, boss, raw, close } = await startWithRawSession());
  });
  afterAll(() => close?.());

  it('an archive of the questionnaire waits until an in-flight enrollment has committed', async () => {
    const q = await questionnaire(t, boss);
    const r = await responder(t);
    const at = new Date().toISOString();
    const blocker = newId();
    await raw.query('begin');
    try {
      await raw.query(
        `insert into enrollment (id, user_id, status, consent_required, status_changed_at, created_by,
           created_at, updated_at) values ($1, $2, 'ENROLLED', 0, $3, $2, $3, $3)`,
        [blocker, r.userId, at],
      );
      await raw.query(
        `insert into enrollment_questionnaire (enrollment_id, questionnaire_id, position, user_id, open_key)
           values ($1, $2, 0, $3, 1)`,
        [blocker, q.id, r.userId],
      );
      const create = call(t, boss, 'POST', '/enrollment', { user_id: r.userId, questionnaire_ids: [q.id] });
      await lockWaiters(raw, 1); // the create, paused on the open-enrollment unique index
      const archive = call(t, boss, 'POST', `/questionnaire/${q.id}/archive`);
      const first = await Promise.race([
        archive.then(() => 'archive committed while the enrollment was in flight'),
        lockWaiters(raw, 2).then(() => 'archive waits for the enrollment'),
      ]);
      expect(first).toBe('archive waits for the enrollment');
      await raw.query('rollback');
      const [created, archived] = await Promise.all([create, archive]);
      expect(created.status).toBe(200);
      expect(created.body.questionnaire_ids).toEqual([q.id]);
      expect(archived.status).toBe(200);
    } finally {
      await raw.query('rollback').catch(() => {});
    }
  });
});
