import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { admin } from '../helpers/auth.js';
import { dialectName } from '../helpers/store.js';
import { type Api, api, type Json, ok, tickingClock } from './helpers.js';

const STATE_FIELDS = [
  'name',
  'description',
  'folder_id',
  'status',
  'deleted_at',
  'payload',
  'config',
  'schedule_payload',
  'metadata',
] as const;
const stateOf = (q: Record<string, unknown>) => Object.fromEntries(STATE_FIELDS.map((k) => [k, q[k]]));

describe(`questionnaire revisions and snapshots (${dialectName})`, () => {
  let t: TestApp;
  let a: Api;
  let b: Api;
  let adminId: string;
  let otherId: string;
  const clock = tickingClock();
  beforeAll(async () => {
    t = await startTestApp({ clock });
    const p = await admin(t);
    const p2 = await admin(t);
    adminId = p.userId;
    otherId = p2.userId;
    a = api(t, p.headers);
    b = api(t, p2.headers);
  });
  afterAll(() => t.close());

  const allRevisions = async (id: string) =>
    ok(await a.get(`/questionnaire/${id}/revision?sort_dir=asc&limit=250`)).revisions as Array<
      Record<string, Json>
    >;

  it('the snapshot at each revision is the state right after that change', async () => {
    const folder = ok(await a.post('/folder', { name: 'Snapshots' }));
    const states: Record<number, unknown> = {};
    const keep = (q: Record<string, Json>) => {
      states[q.revision_sequence] = stateOf(q);
    };
    const q = ok(await a.post('/questionnaire', { name: 'S', payload: { items: [{ id: 'a' }] } }));
    keep(q);
    keep(
      ok(
        await a.patch(`/questionnaire/${q.id}`, {
          payload: { items: [{ id: 'a' }, { id: 'b' }] },
          config: { c: 1 },
        }),
      ),
    );
    keep(ok(await b.patch(`/questionnaire/${q.id}`, { folder_id: folder.id, description: 'moved' })));
    keep(
      ok(
        await a.patch(`/questionnaire/${q.id}`, {
          schedule_payload: { every: 'P1D' },
          payload: { items: [] },
        }),
      ),
    );
    keep(ok(await a.post(`/questionnaire/${q.id}/publish`)));
    keep(ok(await a.delete(`/questionnaire/${q.id}`)));
    keep(ok(await b.post(`/questionnaire/${q.id}/restore`)));
    keep(ok(await a.post(`/questionnaire/${q.id}/archive`)));
    const revs = await allRevisions(q.id);
    expect(revs.map((r) => r.sequence)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(revs.map((r) => r.operation)).toEqual([
      'EDIT',
      'EDIT',
      'METADATA_EDIT',
      'EDIT',
      'PUBLISH',
      'DELETE',
      'RESTORE',
      'ARCHIVE',
    ]);
    for (const r of revs) {
      const snap = ok(await a.get(`/questionnaire/${q.id}/revision/${r.id}/snapshot`));
      expect(snap).toMatchObject({
        questionnaire_id: q.id,
        revision_id: r.id,
        sequence: r.sequence,
        operation: r.operation,
        lineage_root_id: q.id,
        created_at: r.created_at,
        created_by: r.created_by,
      });
      expect(snap.state, `snapshot at ${r.sequence}`).toEqual(states[r.sequence]);
    }
  });

  it('revision and snapshot of an unknown or foreign revision are QUESTIONNAIRE_REVISION_NOT_FOUND', async () => {
    const q1 = ok(await a.post('/questionnaire', { name: 'one' }));
    const q2 = ok(await a.post('/questionnaire', { name: 'two' }));
    const [r2] = await allRevisions(q2.id);
    for (const url of [
      `/questionnaire/${q1.id}/revision/${r2!.id}`,
      `/questionnaire/${q1.id}/revision/${r2!.id}/snapshot`,
      `/questionnaire/${q1.id}/revision/no-such-revision`,
      `/questionnaire/${q1.id}/revision/no-such-revision/snapshot`,
    ]) {
      const res = await a.get(url);
      expect(res.status, url).toBe(404);
      expect(res.body.code, url).toBe('QUESTIONNAIRE_REVISION_NOT_FOUND');
    }
    expect(ok(await a.get(`/questionnaire/${q2.id}/revision/${r2!.id}`))).toEqual(r2);
    const res = await a.get(`/questionnaire/no-such-q/revision/${r2!.id}`);
    expect(res).toMatchObject({ status: 404, body: { code: 'QUESTIONNAIRE.NOT_FOUND' } });
  });

  it('filters revisions by operation, created_by, date range and sequence, and sorts', async () => {
    const q = ok(await a.post('/questionnaire', { name: 'filters' }));
    ok(await b.patch(`/questionnaire/${q.id}`, { payload: { x: 1 } }));
    clock.advance(60_000);
    const middle = new Date(clock.now().getTime()).toISOString();
    ok(await a.patch(`/questionnaire/${q.id}`, { name: 'filters 2' }));
    ok(await b.post(`/questionnaire/${q.id}/publish`));
    const base = `/questionnaire/${q.id}/revision`;
    const ops = (res: { body: { revisions: Array<{ operation: string }> } }) =>
      res.body.revisions.map((r) => r.operation);
    expect(ops(await a.get(`${base}?operation=EDIT&sort_dir=asc`))).toEqual(['EDIT', 'EDIT']);
    expect(ops(await a.get(`${base}?created_by=${otherId}&sort_dir=asc`))).toEqual(['EDIT', 'PUBLISH']);
    expect(ops(await a.get(`${base}?created_by=${adminId}&sort_dir=asc`))).toEqual(['EDIT', 'METADATA_EDIT']);
    expect(ops(await a.get(`${base}?created_at_gte=${middle}&sort_dir=asc`))).toEqual([
      'METADATA_EDIT',
      'PUBLISH',
    ]);
    expect(ops(await a.get(`${base}?created_at_lte=${middle}&sort_dir=asc`))).toEqual(['EDIT', 'EDIT']);
    expect(ops(await a.get(`${base}?sequence_gte=2&sequence_lte=3&sort_dir=asc`))).toEqual([
      'EDIT',
      'METADATA_EDIT',
    ]);
    const desc = ok(await a.get(base));
    expect(desc.revisions.map((r: { sequence: number }) => r.sequence)).toEqual([4, 3, 2, 1]);
    expect(desc).toMatchObject({ total: 4, limit: 25, offset: 0, has_next: false, has_previous: false });
    const byTime = ok(await a.get(`${base}?sort_by=created_at&sort_dir=asc&limit=2&offset=1`));
    expect(byTime.revisions.map((r: { sequence: number }) => r.sequence)).toEqual([2, 3]);
    expect(byTime).toMatchObject({ total: 4, has_next: true, has_previous: true });
    expect((await a.get(`${base}?operation=CREATE`)).status).toBe(400);
    // Past the 32-bit column: a 400, not a store error.
    expect((await a.get(`${base}?sequence_gte=2147483648`)).status).toBe(400);
    expect(ops(await a.get(`${base}?sequence_lte=2147483647&sort_dir=asc`))).toHaveLength(4);
    expect(await a.get(`${base}?sort_by=diffs`)).toMatchObject({
      status: 400,
      body: { details: { field: 'sort_by', allowed_values: ['sequence', 'created_at'] } },
    });
    expect((await a.get(`${base}?created_at_gte=not-a-date`)).status).toBe(400);
  });

  it('keeps sequence strictly increasing under concurrent changes, losing none', async () => {
    const q = ok(await a.post('/questionnaire', { name: 'concurrent', payload: {} }));
    const n = 12;
    const results = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        (i % 2 === 0 ? a : b).patch(
          `/questionnaire/${q.id}`,
          i % 3 === 0 ? { metadata: { writer: i } } : { payload: { writer: i, [`k${i}`]: i } },
        ),
      ),
    );
    for (const r of results) expect(r.status).toBe(200);
    const revs = await allRevisions(q.id);
    const sequences = revs.map((r) => r.sequence);
    expect(new Set(sequences).size).toBe(sequences.length);
    expect(sequences).toEqual(Array.from({ length: sequences.length }, (_, i) => i + 1));
    // Every request changed something, so each has its own revision: 2..n+1 in some order.
    expect(revs).toHaveLength(n + 1);
    expect(results.map((r) => r.body.revision_sequence).sort((x, y) => x - y)).toEqual(sequences.slice(1));
    const current = ok(await a.get(`/questionnaire/${q.id}`));
    expect(current.revision_sequence).toBe(revs.length);
    const last = ok(await a.get(`/questionnaire/${q.id}/revision/${revs.at(-1)!.id}/snapshot`));
    expect(last.state).toEqual(stateOf(current));
    // Each response is the state its own revision recorded.
    for (const r of results) {
      const rev = revs.find((x) => x.sequence === r.body.revision_sequence)!;
      const snap = ok(await a.get(`/questionnaire/${q.id}/revision/${rev.id}/snapshot`));
      expect(snap.state).toEqual(stateOf(r.body));
    }
  });

  it('concurrent lifecycle actions take turns: one publish wins, the others are 409', async () => {
    const q = ok(await a.post('/questionnaire', { name: 'race' }));
    const results = await Promise.all(
      Array.from({ length: 6 }, () => a.post(`/questionnaire/${q.id}/publish`)),
    );
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    expect(results.filter((r) => r.status === 409)).toHaveLength(5);
    expect((await allRevisions(q.id)).map((r) => r.operation)).toEqual(['EDIT', 'PUBLISH']);
  });

  it('the store refuses a second revision with the same (questionnaire, sequence)', async () => {
    const q = ok(await a.post('/questionnaire', { name: 'unique' }));
    const [r1] = await allRevisions(q.id);
    const insert = t.ctx.store.db
      .insertInto('questionnaire_revision')
      .values({
        id: 'duplicate-revision',
        questionnaire_id: q.id,
        sequence: 1,
        operation: 'EDIT',
        lineage_root_id: q.id,
        status: 'DRAFT',
        diffs: JSON.stringify(r1!.diffs),
        created_at: r1!.created_at,
        created_by: adminId,
      })
      .execute();
    await expect(insert).rejects.toThrow(/unique|UNIQUE/);
  });

  it('property: after any sequence of changes, snapshot n equals the state after change n', async () => {
    const folders = [
      ok(await a.post('/folder', { name: 'P1' })).id,
      ok(await a.post('/folder', { name: 'P2' })).id,
    ];
    const key = fc
      .string({ minLength: 1, maxLength: 5 })
      .filter((k) => !['__proto__', 'constructor', 'prototype'].includes(k));
    const { value } = fc.letrec<{ value: unknown }>((tie) => ({
      value: fc.oneof(
        { depthSize: 'small', withCrossShrink: true },
        fc.constant(null),
        fc.boolean(),
        fc.integer({ min: -1000, max: 1000 }),
        fc.string({ maxLength: 6 }),
        fc.array(tie('value'), { maxLength: 4 }),
        fc.dictionary(key, tie('value'), { maxKeys: 4 }),
      ),
    }));
    const doc = fc.dictionary(key, value, { maxKeys: 5 });
    const command = fc.oneof(
      fc.record({
        kind: fc.constant('edit' as const),
        field: fc.constantFrom('payload', 'config', 'schedule_payload', 'metadata'),
        doc,
      }),
      fc.record({ kind: fc.constant('rename' as const), name: fc.string({ minLength: 1, maxLength: 10 }) }),
      fc.record({ kind: fc.constant('move' as const), folder: fc.constantFrom(0, 1, null) }),
      fc.constantFrom(
        { kind: 'publish' as const },
        { kind: 'archive' as const },
        { kind: 'delete' as const },
        { kind: 'restore' as const },
      ),
    );
    await fc.assert(
      fc.asyncProperty(doc, fc.array(command, { minLength: 1, maxLength: 8 }), async (initial, commands) => {
        const states = new Map<number, unknown>();
        const created = ok(await a.post('/questionnaire', { name: 'prop', payload: initial }));
        states.set(1, stateOf(created));
        const id = created.id;
        let deleted = false;
        const run = async (c: (typeof commands)[number]) => {
          switch (c.kind) {
            case 'edit':
              return a.patch(`/questionnaire/${id}`, { [c.field]: c.doc });
            case 'rename':
              return a.patch(`/questionnaire/${id}`, { name: c.name });
            case 'move':
              return a.patch(`/questionnaire/${id}`, {
                folder_id: c.folder === null ? null : folders[c.folder],
              });
            case 'delete':
              return a.delete(`/questionnaire/${id}`);
            default:
              return a.post(`/questionnaire/${id}/${c.kind}`);
          }
        };
        for (const c of [...commands, { kind: 'restore' as const }]) {
          const res = await run(c);
          // Invalid moves in the current state (409, or 404 while deleted) change nothing.
          if (res.status !== 200) {
            expect([404, 409]).toContain(res.status);
            continue;
          }
          deleted = res.body.deleted_at !== null;
          states.set(res.body.revision_sequence, stateOf(res.body));
        }
        expect(deleted).toBe(false);
        const revs = await allRevisions(id);
        expect(revs.map((r) => r.sequence)).toEqual([...states.keys()].sort((x, y) => x - y));
        for (const r of revs) {
          const snap = ok(await a.get(`/questionnaire/${id}/revision/${r.id}/snapshot`));
          expect(snap.state).toEqual(states.get(r.sequence));
        }
      }),
      { numRuns: 15 },
    );
  });
});
