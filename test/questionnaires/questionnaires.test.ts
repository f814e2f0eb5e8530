import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { admin } from '../helpers/auth.js';
import { dialectName } from '../helpers/store.js';
import { type Api, api, events, type Json, ok, tickingClock } from './helpers.js';

describe(`questionnaires (${dialectName})`, () => {
  let t: TestApp;
  let a: Api;
  let adminId: string;
  let headers: { authorization: string };
  beforeAll(async () => {
    t = await startTestApp({ clock: tickingClock() });
    const p = await admin(t);
    adminId = p.userId;
    headers = p.headers;
    a = api(t, p.headers);
  });
  afterAll(() => t.close());

  const create = async (body: Record<string, unknown> = {}) =>
    ok(await a.post('/questionnaire', { name: 'PHQ-9', ...body }));
  const revisions = async (id: string, query = '') =>
    ok(await a.get(`/questionnaire/${id}/revision?sort_dir=asc${query}`)).revisions as Array<
      Record<string, Json>
    >;

  it('creates a DRAFT with empty documents, revision 1 (EDIT) and a created event', async () => {
    const q = await create({ description: 'Depression screening', metadata: { instrument: 'phq9' } });
    expect(q).toMatchObject({
      name: 'PHQ-9',
      description: 'Depression screening',
      folder_id: null,
      status: 'DRAFT',
      payload: {},
      config: {},
      schedule_payload: {},
      metadata: { instrument: 'phq9' },
      lineage_root_id: q.id,
      forked_from_id: null,
      revision_sequence: 1,
      published_at: null,
      created_by: adminId,
      updated_by: adminId,
      deleted_at: null,
    });
    expect(q.created_at).toMatch(/Z$/);
    const [r1] = await revisions(q.id);
    expect(r1).toMatchObject({
      sequence: 1,
      operation: 'EDIT',
      created_by: adminId,
      lineage_root_id: q.id,
      status: 'DRAFT',
    });
    expect(r1!.diffs.metadata).toEqual([{ op: 'add', path: '/instrument', value: 'phq9' }]);
    expect(r1!.diffs.attributes).toContainEqual({ op: 'add', path: '/name', value: 'PHQ-9' });
    const [event] = (await events(t, 'svc.questionnaire.created')).filter((e) => e.subject === q.id);
    expect(event).toMatchObject({
      specversion: '1.0',
      source: '/api/v1/questionnaire',
      subject: q.id,
      data: {
        questionnaire_id: q.id,
        name: 'PHQ-9',
        status: 'DRAFT',
        folder_id: null,
        revision_id: r1!.id,
        sequence: 1,
        operation: 'EDIT',
      },
    });
  });

  it('rejects bad input with 400 and a missing folder with 404', async () => {
    for (const body of [
      {},
      { name: '' },
      { name: 'x', payload: [] },
      { name: 'x', config: 'nope' },
      { name: 'x', status: 'PUBLISHED' },
      { name: 'x', unknown: 1 },
    ]) {
      const res = await a.post('/questionnaire', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.code).toBe('VALIDATION_ERROR');
    }
    const res = await a.post('/questionnaire', { name: 'x', folder_id: 'no-such-folder' });
    expect(res.status).toBe(404);
    expect(res.body.code).toBe('FOLDER.NOT_FOUND');
    const missing = await a.get('/questionnaire/no-such-id');
    expect(missing).toMatchObject({ status: 404, body: { code: 'QUESTIONNAIRE.NOT_FOUND' } });
  });

  it('refuses text PostgreSQL cannot store and prototype keys with 400, never 500', async () => {
    const nul = String.fromCharCode(0);
    expect((await a.post('/questionnaire', { name: `a${nul}b` })).status).toBe(400);
    expect((await a.post('/questionnaire', { name: 'x', description: nul })).status).toBe(400);
    for (const url of [
      '/questionnaire/a%00b',
      '/questionnaire?search=%00',
      '/folder/a%00b',
      '/folder_permission?user_id=%00',
    ]) {
      const res = await a.get(url);
      expect(res.status, url).toBe(400);
      expect(res.body.code, url).toBe('VALIDATION_ERROR');
    }
    // The service refuses NUL everywhere, documents included (one rule for every field; docs/errors.md).
    expect((await a.post('/questionnaire', { name: 'x', payload: { [`k${nul}`]: 'v' } })).status).toBe(400);
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/questionnaire',
      headers: { ...headers, 'content-type': 'application/json' },
      payload: '{"name":"x","payload":{"__proto__":{"polluted":true}}}',
    });
    expect(res.statusCode).toBe(400);
  });

  it('edits content as EDIT, the rest as METADATA_EDIT, and a no-op writes nothing', async () => {
    const q = await create({ payload: { items: [{ id: 'q1' }] } });
    const edited = ok(
      await a.patch(`/questionnaire/${q.id}`, { payload: { items: [{ id: 'q1' }, { id: 'q2' }] } }),
    );
    expect(edited.revision_sequence).toBe(2);
    const renamed = ok(await a.patch(`/questionnaire/${q.id}`, { name: 'PHQ-9 (v2)', metadata: { a: 1 } }));
    expect(renamed).toMatchObject({ name: 'PHQ-9 (v2)', revision_sequence: 3, metadata: { a: 1 } });
    const before = (await events(t, 'svc.questionnaire.updated')).length;
    const same = ok(await a.patch(`/questionnaire/${q.id}`, { name: 'PHQ-9 (v2)', payload: edited.payload }));
    expect(same.revision_sequence).toBe(3);
    expect((await events(t, 'svc.questionnaire.updated')).length).toBe(before);
    const revs = await revisions(q.id);
    expect(revs.map((r) => r.operation)).toEqual(['EDIT', 'EDIT', 'METADATA_EDIT']);
    expect(revs[1]!.diffs.payload).toEqual([{ op: 'add', path: '/items/1', value: { id: 'q2' } }]);
    expect(revs[2]!.diffs.attributes).toEqual([{ op: 'replace', path: '/name', value: 'PHQ-9 (v2)' }]);
    const updated = (await events(t, 'svc.questionnaire.updated')).filter((e) => e.subject === q.id);
    expect(updated.map((e) => [e.data.operation, e.data.sequence])).toEqual([
      ['EDIT', 2],
      ['METADATA_EDIT', 3],
    ]);
  });

  it('rejects a stale base_sequence with 409 QUESTIONNAIRE.SEQUENCE_CONFLICT', async () => {
    const q = await create();
    ok(await a.patch(`/questionnaire/${q.id}`, { payload: { a: 1 }, base_sequence: 1 }));
    const stale = await a.patch(`/questionnaire/${q.id}`, { payload: { a: 2 }, base_sequence: 1 });
    expect(stale).toMatchObject({
      status: 409,
      body: { code: 'QUESTIONNAIRE.SEQUENCE_CONFLICT', details: { base_sequence: 1, revision_sequence: 2 } },
    });
    expect(ok(await a.get(`/questionnaire/${q.id}`)).payload).toEqual({ a: 1 });
  });

  it('follows the transition table: publish, archive, re-publish; content locked outside DRAFT', async () => {
    const q = await create({ payload: { items: [] } });
    const published = ok(await a.post(`/questionnaire/${q.id}/publish`));
    expect(published).toMatchObject({ status: 'PUBLISHED', published_by: adminId, revision_sequence: 2 });
    expect(published.published_at).toMatch(/Z$/);
    expect(await a.post(`/questionnaire/${q.id}/publish`)).toMatchObject({
      status: 409,
      body: { code: 'QUESTIONNAIRE.INVALID_STATE', details: { status: 'PUBLISHED' } },
    });
    const locked = await a.patch(`/questionnaire/${q.id}`, { payload: { items: [1] } });
    expect(locked).toMatchObject({ status: 409, body: { code: 'QUESTIONNAIRE.INVALID_STATE' } });
    const meta = ok(await a.patch(`/questionnaire/${q.id}`, { metadata: { reviewed: true } }));
    expect(meta).toMatchObject({ status: 'PUBLISHED', revision_sequence: 3 });
    const archived = ok(await a.post(`/questionnaire/${q.id}/archive`));
    expect(archived.status).toBe('ARCHIVED');
    expect(archived.archived_at).toMatch(/Z$/);
    expect((await a.post(`/questionnaire/${q.id}/archive`)).status).toBe(409);
    expect((await a.patch(`/questionnaire/${q.id}`, { config: { x: 1 } })).status).toBe(409);
    const again = ok(await a.post(`/questionnaire/${q.id}/publish`));
    expect(again).toMatchObject({ status: 'PUBLISHED', archived_at: null });
    const draft = await create();
    expect(ok(await a.post(`/questionnaire/${draft.id}/archive`)).status).toBe('ARCHIVED');

    const revs = await revisions(q.id);
    expect(revs.map((r) => [r.operation, r.status])).toEqual([
      ['EDIT', 'DRAFT'],
      ['PUBLISH', 'PUBLISHED'],
      ['METADATA_EDIT', 'PUBLISHED'],
      ['ARCHIVE', 'ARCHIVED'],
      ['PUBLISH', 'PUBLISHED'],
    ]);
    expect(revs[1]!.diffs.attributes).toEqual([{ op: 'replace', path: '/status', value: 'PUBLISHED' }]);
    const types = (await events(t)).filter((e) => e.subject === q.id).map((e) => e.type);
    expect(types).toEqual([
      'svc.questionnaire.created',
      'svc.questionnaire.published',
      'svc.questionnaire.updated',
      'svc.questionnaire.archived',
      'svc.questionnaire.published',
    ]);
  });

  it('a rejected change writes no revision and no event', async () => {
    const q = await create();
    ok(await a.post(`/questionnaire/${q.id}/publish`));
    const eventsBefore = (await events(t)).length;
    expect((await a.post(`/questionnaire/${q.id}/publish`)).status).toBe(409);
    expect((await a.patch(`/questionnaire/${q.id}`, { payload: { x: 1 } })).status).toBe(409);
    expect((await events(t)).length).toBe(eventsBefore);
    expect((await revisions(q.id)).length).toBe(2);
  });

  it('refuses to publish an answers_schema that cannot validate answers (422), nothing written', async () => {
    const q = await create({ payload: { answers_schema: { type: 'objekt' } } });
    const eventsBefore = (await events(t)).length;
    const res = await a.post(`/questionnaire/${q.id}/publish`);
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({
      code: 'QUESTIONNAIRE.ANSWERS_SCHEMA_INVALID',
      details: { questionnaire_id: q.id },
    });
    expect(res.body.message).toMatch(/^Cannot publish: payload.answers_schema cannot validate answers \(/);
    expect((await events(t)).length).toBe(eventsBefore);
    // Still a DRAFT: fix the schema, then publish.
    ok(await a.patch(`/questionnaire/${q.id}`, { payload: { answers_schema: { type: 'object' } } }));
    expect(ok(await a.post(`/questionnaire/${q.id}/publish`)).status).toBe('PUBLISHED');
  });

  it('soft-deletes, lists deleted ones, and restores', async () => {
    const q = await create({ name: 'To delete' });
    const deleted = ok(await a.delete(`/questionnaire/${q.id}`));
    expect(deleted.deleted_at).toMatch(/Z$/);
    expect((await a.get(`/questionnaire/${q.id}`)).status).toBe(404);
    expect((await a.get(`/questionnaire/${q.id}/revision`)).status).toBe(404);
    expect((await a.delete(`/questionnaire/${q.id}`)).status).toBe(404);
    expect((await a.patch(`/questionnaire/${q.id}`, { name: 'x' })).status).toBe(404);
    const active = ok(await a.get('/questionnaire?limit=250&search=To%20delete')).questionnaires;
    expect(active.map((x: { id: string }) => x.id)).not.toContain(q.id);
    const gone = ok(await a.get('/questionnaire/deleted?search=To%20delete'));
    expect(gone.questionnaires.map((x: { id: string }) => x.id)).toEqual([q.id]);
    expect(gone.questionnaires[0].deleted_at).toBe(deleted.deleted_at);

    const restored = ok(await a.post(`/questionnaire/${q.id}/restore`));
    expect(restored).toMatchObject({ deleted_at: null, revision_sequence: 3, status: 'DRAFT' });
    expect(ok(await a.get(`/questionnaire/${q.id}`)).id).toBe(q.id);
    expect(await a.post(`/questionnaire/${q.id}/restore`)).toMatchObject({
      status: 409,
      body: { code: 'QUESTIONNAIRE.INVALID_STATE' },
    });
    expect((await a.post('/questionnaire/no-such-id/restore')).status).toBe(404);
    const revs = await revisions(q.id);
    expect(revs.map((r) => r.operation)).toEqual(['EDIT', 'DELETE', 'RESTORE']);
    expect(revs[1]!.diffs.attributes).toEqual([
      { op: 'replace', path: '/deleted_at', value: deleted.deleted_at },
    ]);
    const types = (await events(t)).filter((e) => e.subject === q.id).map((e) => e.type);
    expect(types).toEqual([
      'svc.questionnaire.created',
      'svc.questionnaire.deleted',
      'svc.questionnaire.restored',
    ]);
  });

  it('restores into the root when its folder was deleted meanwhile', async () => {
    const folder = ok(await a.post('/folder', { name: 'Temporary' }));
    const q = await create({ folder_id: folder.id });
    ok(await a.delete(`/questionnaire/${q.id}`));
    ok(await a.delete(`/folder/${folder.id}`));
    const restored = ok(await a.post(`/questionnaire/${q.id}/restore`));
    expect(restored.folder_id).toBeNull();
    const last = (await revisions(q.id)).at(-1)!;
    expect(last.operation).toBe('RESTORE');
    expect(last.diffs.attributes).toContainEqual({ op: 'replace', path: '/folder_id', value: null });
  });

  it('forks into a new DRAFT of the same lineage, from now or from a past revision', async () => {
    const source = await create({ name: 'GAD-7', payload: { v: 1 }, config: { locale: 'de' } });
    ok(await a.patch(`/questionnaire/${source.id}`, { payload: { v: 2 } }));
    ok(await a.post(`/questionnaire/${source.id}/publish`));
    const fork = ok(await a.post(`/questionnaire/${source.id}/fork`));
    expect(fork).toMatchObject({
      name: 'GAD-7',
      status: 'DRAFT',
      payload: { v: 2 },
      config: { locale: 'de' },
      lineage_root_id: source.id,
      forked_from_id: source.id,
      forked_from_sequence: 3,
      revision_sequence: 1,
    });
    expect(fork.id).not.toBe(source.id);
    const [r1] = await revisions(fork.id);
    expect(r1).toMatchObject({ sequence: 1, operation: 'FORK', lineage_root_id: source.id });
    expect(r1!.diffs.payload).toEqual([{ op: 'add', path: '/v', value: 2 }]);
    const created = (await events(t, 'svc.questionnaire.created')).find((e) => e.subject === fork.id);
    expect(created!.data).toMatchObject({
      operation: 'FORK',
      forked_from_id: source.id,
      lineage_root_id: source.id,
    });

    const firstRevision = (await revisions(source.id))[0]!;
    const old = ok(
      await a.post(`/questionnaire/${fork.id}/fork`, {
        name: 'GAD-7 old',
        revision_id: (await revisions(fork.id))[0]!.id,
      }),
    );
    expect(old).toMatchObject({ lineage_root_id: source.id, forked_from_id: fork.id, payload: { v: 2 } });
    const fromPast = ok(
      await a.post(`/questionnaire/${source.id}/fork`, { revision_id: firstRevision.id, name: 'GAD-7 v1' }),
    );
    expect(fromPast).toMatchObject({ payload: { v: 1 }, forked_from_sequence: 1, name: 'GAD-7 v1' });

    const lineage = ok(
      await a.get(`/questionnaire?lineage_root_id=${source.id}&sort_by=created_at&sort_dir=asc`),
    );
    expect(lineage.questionnaires.map((x: { id: string }) => x.id)).toEqual([
      source.id,
      fork.id,
      old.id,
      fromPast.id,
    ]);
    expect(await a.post(`/questionnaire/${source.id}/fork`, { revision_id: 'nope' })).toMatchObject({
      status: 404,
      body: { code: 'QUESTIONNAIRE_REVISION_NOT_FOUND' },
    });
    expect((await a.post(`/questionnaire/${source.id}/fork`, { bogus: 1 })).status).toBe(400);
  });

  it('lists with filters, sorting and the envelope', async () => {
    const folder = ok(await a.post('/folder', { name: 'Listing' }));
    const ids: string[] = [];
    for (const name of ['Alpha list', 'Beta list', 'Gamma list']) {
      ids.push((await create({ name, folder_id: folder.id, description: `about ${name}` })).id);
    }
    ok(await a.post(`/questionnaire/${ids[1]}/publish`));
    const page = ok(await a.get(`/questionnaire?folder_id=${folder.id}&sort_by=name&sort_dir=asc&limit=2`));
    expect(page).toMatchObject({ total: 3, limit: 2, offset: 0, has_next: true, has_previous: false });
    expect(page.questionnaires.map((q: { name: string }) => q.name)).toEqual(['Alpha list', 'Beta list']);
    const next = ok(
      await a.get(`/questionnaire?folder_id=${folder.id}&sort_by=name&sort_dir=asc&limit=2&offset=2`),
    );
    expect(next).toMatchObject({ total: 3, has_next: false, has_previous: true });
    const published = ok(await a.get(`/questionnaire?folder_id=${folder.id}&status=PUBLISHED`));
    expect(published.questionnaires.map((q: { id: string }) => q.id)).toEqual([ids[1]]);
    const search = ok(await a.get(`/questionnaire?folder_id=${folder.id}&search=ABOUT%20GAMMA`));
    expect(search.total).toBe(1);
    const bad = await a.get('/questionnaire?sort_by=payload');
    expect(bad).toMatchObject({
      status: 400,
      body: { code: 'VALIDATION_ERROR', details: { field: 'sort_by' } },
    });
    expect(bad.body.details.allowed_values).toEqual([
      'name',
      'status',
      'created_at',
      'updated_at',
      'published_at',
    ]);
    expect((await a.get('/questionnaire?status=LIVE')).status).toBe(400);
    expect((await a.get('/questionnaire?limit=251')).status).toBe(400);
    expect((await a.get('/questionnaire?created_at_gte=yesterday')).status).toBe(400);
  });

  it('moves between folders as a METADATA_EDIT', async () => {
    const f1 = ok(await a.post('/folder', { name: 'From' }));
    const f2 = ok(await a.post('/folder', { name: 'To' }));
    const q = await create({ folder_id: f1.id });
    const moved = ok(await a.patch(`/questionnaire/${q.id}`, { folder_id: f2.id }));
    expect(moved.folder_id).toBe(f2.id);
    const last = (await revisions(q.id)).at(-1)!;
    expect(last).toMatchObject({ operation: 'METADATA_EDIT' });
    expect(last.diffs.attributes).toEqual([{ op: 'replace', path: '/folder_id', value: f2.id }]);
    expect((await a.patch(`/questionnaire/${q.id}`, { folder_id: 'missing' })).status).toBe(404);
    expect(ok(await a.patch(`/questionnaire/${q.id}`, { folder_id: null })).folder_id).toBeNull();
  });
});
