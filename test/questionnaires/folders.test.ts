import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { admin, principal } from '../helpers/auth.js';
import { dialectName } from '../helpers/store.js';
import { type Api, api, events, type Json, ok, tickingClock } from './helpers.js';

describe(`folders and the folder tree (${dialectName})`, () => {
  let t: TestApp;
  let a: Api;
  let adminId: string;
  beforeAll(async () => {
    t = await startTestApp({ clock: tickingClock() });
    const p = await admin(t);
    adminId = p.userId;
    a = api(t, p.headers);
  });
  afterAll(() => t.close());

  const folder = async (name: string, parent_id?: string, extra: Record<string, unknown> = {}) =>
    ok(await a.post('/folder', { name, ...(parent_id ? { parent_id } : {}), ...extra }));

  it('creates, reads, renames and reconfigures folders, with events', async () => {
    const root = await folder('Cardiology', undefined, { description: 'Heart', config: { locale: 'fr' } });
    expect(root).toMatchObject({
      name: 'Cardiology',
      description: 'Heart',
      parent_id: null,
      config: { locale: 'fr' },
      created_by: adminId,
      updated_by: adminId,
      deleted_at: null,
    });
    const child = await folder('Arrhythmia', root.id);
    expect(child.parent_id).toBe(root.id);
    expect(ok(await a.get(`/folder/${child.id}`))).toEqual(child);
    const renamed = ok(await a.patch(`/folder/${child.id}`, { name: 'Arrhythmias', config: { a: 1 } }));
    expect(renamed).toMatchObject({ name: 'Arrhythmias', config: { a: 1 }, parent_id: root.id });
    const created = (await events(t, 'svc.folder.created')).find((e) => e.subject === child.id);
    expect(created).toMatchObject({
      source: '/api/v1/folder',
      data: { folder_id: child.id, name: 'Arrhythmia', parent_id: root.id },
    });
    const updated = (await events(t, 'svc.folder.updated')).filter((e) => e.subject === child.id);
    expect(updated.map((e) => e.data)).toEqual([
      { folder_id: child.id, name: 'Arrhythmias', parent_id: root.id, changed_fields: ['name', 'config'] },
    ]);
    // A PATCH that changes nothing is not an update.
    ok(await a.patch(`/folder/${child.id}`, { name: 'Arrhythmias' }));
    expect((await events(t, 'svc.folder.updated')).filter((e) => e.subject === child.id)).toHaveLength(1);
  });

  it('rejects bad input and unknown folders', async () => {
    for (const body of [
      {},
      { name: '' },
      { name: 'x', parent_id: 5 },
      { name: 'x', config: [] },
      { name: 'x', extra: 1 },
    ]) {
      const res = await a.post('/folder', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.code).toBe('VALIDATION_ERROR');
    }
    expect(await a.post('/folder', { name: 'x', parent_id: 'missing' })).toMatchObject({
      status: 404,
      body: { code: 'FOLDER.NOT_FOUND' },
    });
    expect((await a.get('/folder/missing')).body.code).toBe('FOLDER.NOT_FOUND');
    const f = await folder('Bad patch');
    expect((await a.patch(`/folder/${f.id}`, {})).status).toBe(400);
    expect((await a.patch(`/folder/${f.id}`, { parent_id: 'missing' })).status).toBe(404);
    expect((await a.patch('/folder/missing', { name: 'y' })).status).toBe(404);
  });

  it('never moves a folder under itself or a descendant (FOLDER.CYCLE)', async () => {
    const top = await folder('Top');
    const mid = await folder('Mid', top.id);
    const leaf = await folder('Leaf', mid.id);
    for (const target of [top.id, mid.id, leaf.id]) {
      const res = await a.patch(`/folder/${top.id}`, { parent_id: target });
      expect(res.status, target).toBe(400);
      expect(res.body).toMatchObject({
        code: 'FOLDER.CYCLE',
        details: { folder_id: top.id, parent_id: target },
      });
    }
    expect((await a.patch(`/folder/${mid.id}`, { parent_id: leaf.id })).body.code).toBe('FOLDER.CYCLE');
    // Legal moves: a leaf up to the root, then the old parent under it.
    expect(ok(await a.patch(`/folder/${leaf.id}`, { parent_id: null })).parent_id).toBeNull();
    expect(ok(await a.patch(`/folder/${mid.id}`, { parent_id: leaf.id })).parent_id).toBe(leaf.id);
    const moved = (await events(t, 'svc.folder.updated')).filter((e) => e.subject === mid.id).at(-1);
    expect(moved!.data).toMatchObject({
      changed_fields: ['parent_id'],
      parent_id: leaf.id,
      previous_parent_id: top.id,
    });
  });

  it('trees are at most 100 levels deep, on create and on move (FOLDER.TOO_DEEP)', async () => {
    const chain = [await folder('L1')];
    for (let level = 2; level <= 100; level++) chain.push(await folder(`L${level}`, chain.at(-1)!.id));
    const tooDeep = await a.post('/folder', { name: 'L101', parent_id: chain[99].id });
    expect(tooDeep.status).toBe(400);
    expect(tooDeep.body).toMatchObject({ code: 'FOLDER.TOO_DEEP', details: { max_depth: 100, depth: 101 } });
    // A two-level subtree moved under level 99 would reach 101; under level 98 it fits exactly.
    const sub = await folder('Sub');
    await folder('SubChild', sub.id);
    const deepMove = await a.patch(`/folder/${sub.id}`, { parent_id: chain[98].id });
    expect(deepMove.body).toMatchObject({ code: 'FOLDER.TOO_DEEP', details: { depth: 101 } });
    expect(ok(await a.patch(`/folder/${sub.id}`, { parent_id: chain[97].id })).parent_id).toBe(chain[97].id);
    // The top of the chain can never be moved under its own deepest descendant: the walk up is whole.
    expect((await a.patch(`/folder/${chain[0].id}`, { parent_id: chain[99].id })).body.code).toBe(
      'FOLDER.CYCLE',
    );
  });

  it('concurrent opposite moves cannot make a cycle', async () => {
    const x = await folder('X');
    const y = await folder('Y');
    const [r1, r2] = await Promise.all([
      a.patch(`/folder/${x.id}`, { parent_id: y.id }),
      a.patch(`/folder/${y.id}`, { parent_id: x.id }),
    ]);
    expect([r1.status, r2.status].sort()).toEqual([200, 400]);
    const [fx, fy] = [ok(await a.get(`/folder/${x.id}`)), ok(await a.get(`/folder/${y.id}`))];
    expect(fx.parent_id === y.id && fy.parent_id === x.id).toBe(false);
  });

  it('deletes only empty folders', async () => {
    const parent = await folder('Parent');
    const sub = await folder('Sub', parent.id);
    const q = ok(await a.post('/questionnaire', { name: 'Inside', folder_id: sub.id }));
    expect(await a.delete(`/folder/${parent.id}`)).toMatchObject({
      status: 409,
      body: { code: 'FOLDER.NOT_EMPTY', details: { folders: 1, questionnaires: 0 } },
    });
    expect((await a.delete(`/folder/${sub.id}`)).body).toMatchObject({
      details: { folders: 0, questionnaires: 1 },
    });
    ok(await a.delete(`/questionnaire/${q.id}`));
    const deleted = ok(await a.delete(`/folder/${sub.id}`));
    expect(deleted.deleted_at).toMatch(/Z$/);
    expect((await a.get(`/folder/${sub.id}`)).status).toBe(404);
    expect((await a.delete(`/folder/${sub.id}`)).status).toBe(404);
    expect((await a.post('/folder', { name: 'x', parent_id: sub.id })).status).toBe(404);
    ok(await a.delete(`/folder/${parent.id}`));
    const [event] = (await events(t, 'svc.folder.deleted')).filter((e) => e.subject === sub.id);
    expect(event!.data).toEqual({
      folder_id: sub.id,
      name: 'Sub',
      parent_id: parent.id,
      deleted_at: deleted.deleted_at,
    });
  });

  it('lists with filters and the envelope', async () => {
    const base = await folder('Listing base');
    for (const name of ['b-one', 'a-two', 'c-three']) await folder(name, base.id);
    const page = ok(await a.get(`/folder?parent_id=${base.id}&limit=2`));
    expect(page).toMatchObject({ total: 3, limit: 2, offset: 0, has_next: true, has_previous: false });
    expect(page.folders.map((f: { name: string }) => f.name)).toEqual(['a-two', 'b-one']);
    const roots = ok(await a.get('/folder?root=true&limit=250'));
    expect(roots.folders.every((f: { parent_id: string | null }) => f.parent_id === null)).toBe(true);
    expect(ok(await a.get(`/folder?parent_id=${base.id}&search=THREE`)).total).toBe(1);
    expect((await a.get('/folder?sort_by=config')).body.details.allowed_values).toEqual([
      'name',
      'created_at',
      'updated_at',
    ]);
  });

  it('serves the tree at /folder/tree and /folder_tree, with questionnaire nodes on request', async () => {
    const t2 = await startTestApp();
    try {
      const b = api(t2, (await admin(t2)).headers);
      const top = ok(await b.post('/folder', { name: 'Studies' }));
      const s1 = ok(await b.post('/folder', { name: 'Study 1', parent_id: top.id }));
      const s2 = ok(await b.post('/folder', { name: 'Study 2', parent_id: top.id }));
      const deep = ok(await b.post('/folder', { name: 'Visit 1', parent_id: s1.id }));
      const draft = ok(
        await b.post('/questionnaire', {
          name: 'Draft',
          folder_id: deep.id,
          payload: { p: 1 },
          config: { c: 1 },
        }),
      );
      const live = ok(
        await b.post('/questionnaire', { name: 'Live', folder_id: s1.id, schedule_payload: { s: 1 } }),
      );
      ok(await b.post(`/questionnaire/${live.id}/publish`));
      const old = ok(await b.post('/questionnaire', { name: 'Old', folder_id: s2.id }));
      ok(await b.post(`/questionnaire/${old.id}/archive`));
      const loose = ok(await b.post('/questionnaire', { name: 'Loose' }));
      const gone = ok(await b.post('/questionnaire', { name: 'Gone', folder_id: s2.id }));
      ok(await b.delete(`/questionnaire/${gone.id}`));

      const plain = ok(await b.get('/folder/tree'));
      expect(plain.questionnaires).toBeUndefined();
      expect(plain.folders).toHaveLength(1);
      const studies = plain.folders[0];
      expect(studies).toMatchObject({ id: top.id, name: 'Studies' });
      expect(studies.questionnaires).toBeUndefined();
      expect(studies.children.map((c: { name: string }) => c.name)).toEqual(['Study 1', 'Study 2']);
      expect(studies.children[0].children.map((c: { id: string }) => c.id)).toEqual([deep.id]);
      expect(ok(await b.get('/folder_tree'))).toEqual(plain);

      const withQ = ok(await b.get('/folder_tree?include_questionnaires=true'));
      const names = (nodes: Json[]) => nodes.map((n) => n.name);
      const [study1, study2] = withQ.folders[0].children;
      expect(names(study1.questionnaires)).toEqual(['Live']);
      expect(names(study1.children[0].questionnaires)).toEqual(['Draft']);
      expect(names(study2.questionnaires)).toEqual([]); // archived left out, deleted never shown
      expect(withQ.questionnaires.map((q: Json) => q.id)).toEqual([loose.id]);
      const node = study1.children[0].questionnaires[0];
      expect(node).toMatchObject({ id: draft.id, status: 'DRAFT', folder_id: deep.id, metadata: {} });
      for (const field of ['payload', 'schedule_payload', 'config']) expect(node).not.toHaveProperty(field);
      expect(study1.questionnaires[0]).not.toHaveProperty('schedule_payload');

      const archived = ok(await b.get('/folder/tree?include_questionnaires=true&include_archived=true'));
      expect(names(archived.folders[0].children[1].questionnaires)).toEqual(['Old']);
      const published = ok(
        await b.get('/folder/tree?include_questionnaires=true&questionnaire_status_id=PUBLISHED'),
      );
      expect(names(published.folders[0].children[0].questionnaires)).toEqual(['Live']);
      expect(names(published.folders[0].children[0].children[0].questionnaires)).toEqual([]);
      expect(names(published.questionnaires)).toEqual([]);
      const onlyArchived = ok(
        await b.get('/folder/tree?include_questionnaires=true&questionnaire_status_id=ARCHIVED'),
      );
      expect(names(onlyArchived.folders[0].children[1].questionnaires)).toEqual(['Old']);

      const sub = ok(await b.get(`/folder/tree?root_id=${s1.id}`));
      expect(sub.folders.map((f: { id: string }) => f.id)).toEqual([s1.id]);
      expect(sub.folders[0].children.map((f: { id: string }) => f.id)).toEqual([deep.id]);
      expect((await b.get('/folder/tree?root_id=missing')).status).toBe(404);
      expect((await b.get('/folder/tree?questionnaire_status_id=LIVE')).status).toBe(400);
      expect((await b.get('/folder/tree?include_questionnaires=yes')).status).toBe(400);
      expect((await b.get('/folder/tree?depth=2')).status).toBe(400);

      // Questionnaire nodes need questionnaire:read as well as folder:read.
      const foldersOnly = api(t2, (await principal(t2, ['folder:read'])).headers);
      expect(await foldersOnly.get('/folder/tree?include_questionnaires=true')).toMatchObject({
        status: 403,
        body: { code: 'AUTH.FORBIDDEN', details: { required_scopes: ['questionnaire:read'] } },
      });
      expect((await foldersOnly.get('/folder/tree')).status).toBe(200);
    } finally {
      await t2.close();
    }
  });
});
