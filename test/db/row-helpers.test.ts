import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ScheduleTable } from '../../src/areas/schedules/tables.js';
import {
  auditInsert,
  countWhere,
  findActive,
  findWhere,
  listActive,
  softDeleted,
  updateActive,
} from '../../src/db/audit.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { openStore, type Store, updatedAny } from '../../src/db/store.js';
import { type Page, whereEquals } from '../../src/http/list.js';
import { dialectName, freshDatabase, type TestDatabase } from '../helpers/store.js';

/**
 * The shared row helpers every store uses (findActive, updateActive and listActive in src/db/audit.ts,
 * whereEquals and the declared list filters in src/http/list.ts, updatedAny), on a real table of the
 * migrated schema.
 */
describe(`row helpers (${dialectName})`, () => {
  let db: TestDatabase;
  let store: Store;
  const at = '2026-01-02T03:04:05.678Z';
  const schedule = (id: string, over: Partial<ScheduleTable> = {}): ScheduleTable => ({
    id,
    name: `schedule ${id}`,
    description: null,
    cron: '0 * * * *',
    timezone: 'UTC',
    event_type: 'svc.test',
    data: '{}',
    enabled: 1,
    catch_up: 'none',
    next_fire_at: null,
    last_fired_at: null,
    last_error: null,
    ...auditInsert(at, null),
    ...over,
  });

  beforeAll(async () => {
    db = await freshDatabase();
    store = openStore(db.url);
    await migrateToLatest(store);
    await store.db
      .insertInto('schedule')
      .values([
        schedule('a'),
        schedule('b', { enabled: 0, event_type: 'svc.other' }),
        schedule('c', { event_type: 'svc.other', description: 'Nightly 100%_done report' }),
        schedule('gone', { deleted_at: at }),
      ])
      .execute();
  });
  afterAll(async () => {
    await store.close();
    await db.drop();
  });

  it('findActive answers the active row of an id, every column, and nothing for a deleted or missing one', async () => {
    expect(await findActive(store.db, 'schedule', 'a')).toEqual(schedule('a'));
    expect(await findActive(store.db, 'schedule', 'gone')).toBeUndefined();
    expect(await findActive(store.db, 'schedule', 'missing')).toBeUndefined();
  });

  it('findActive reads only the columns asked for, and a soft-deleted row when asked to', async () => {
    expect(await findActive(store.db, 'schedule', 'a', { columns: ['id', 'cron'] })).toEqual({
      id: 'a',
      cron: '0 * * * *',
    });
    expect(await findActive(store.db, 'schedule', 'gone', { orDeleted: true })).toEqual(
      schedule('gone', { deleted_at: at }),
    );
    expect(await findActive(store.db, 'schedule', 'missing', { orDeleted: true })).toBeUndefined();
  });

  it('findWhere and countWhere match every value given (null: is null), and refuse an undefined one', async () => {
    expect(await findWhere(store.db, 'schedule', { event_type: 'svc.other', enabled: 0 }, ['id'])).toEqual({
      id: 'b',
    });
    expect(await findWhere(store.db, 'schedule', { id: 'gone', deleted_at: null })).toBeUndefined();
    expect(await countWhere(store.db, 'schedule', { event_type: 'svc.other' })).toBe(2);
    expect(await countWhere(store.db, 'schedule', { description: null })).toBe(3);
    await expect(findWhere(store.db, 'schedule', { id: undefined })).rejects.toThrow(/would match every row/);
  });

  it('listActive pages the active rows passing the declared filters: equality, partial match, search', async () => {
    const page: Page = { limit: 2, offset: 0, sort_by: 'id', sort_dir: 'asc' };
    const ids = async (filters: Parameters<typeof listActive>[3], p = page) => {
      const result = await listActive(store.db, 'schedule', p, filters, (r) => r.id);
      return { ids: result.items, total: result.total };
    };
    // Deleted rows never count; the page holds `limit` rows, the total all of them.
    expect(await ids({})).toEqual({ ids: ['a', 'b'], total: 3 });
    expect(await ids({}, { ...page, offset: 2 })).toEqual({ ids: ['c'], total: 3 });
    expect(await ids({ equals: { event_type: 'svc.other', enabled: true } })).toEqual({
      ids: ['c'],
      total: 1,
    });
    // Partial matches ignore case; LIKE wildcards in the input match themselves only.
    expect(await ids({ contains: { name: 'SCHEDULE B' } })).toEqual({ ids: ['b'], total: 1 });
    expect(await ids({ contains: { description: '100%_D' } })).toEqual({ ids: ['c'], total: 1 });
    expect(await ids({ contains: { description: '100_' } })).toEqual({ ids: [], total: 0 });
    // Search: a match in any of its columns; a NULL column matches nothing.
    expect(await ids({ search: { value: 'nightly', in: ['name', 'description'] } })).toEqual({
      ids: ['c'],
      total: 1,
    });
    expect(await ids({ search: { value: 'schedule a', in: ['name', 'description'] } })).toEqual({
      ids: ['a'],
      total: 1,
    });
    // A value not given filters nothing.
    expect(await ids({ contains: { name: undefined }, search: { value: undefined, in: ['name'] } })).toEqual({
      ids: ['a', 'b'],
      total: 3,
    });
  });

  it('updatedAny tells whether a conditional update won', async () => {
    const disable = () =>
      store.db
        .updateTable('schedule')
        .set({ enabled: 0 })
        .where('id', '=', 'a')
        .where('enabled', '=', 1)
        .executeTakeFirst();
    expect(updatedAny(await disable())).toBe(true);
    expect(updatedAny(await disable())).toBe(false);
    expect(updatedAny(undefined)).toBe(false);
    await store.db.updateTable('schedule').set({ enabled: 1 }).where('id', '=', 'a').execute();
  });

  it('updateActive changes an active row only, and says whether it did', async () => {
    expect(await updateActive(store.db, 'schedule', 'c', softDeleted(at, 'admin'))).toBe(true);
    expect(await findActive(store.db, 'schedule', 'c')).toBeUndefined();
    // Deleted meanwhile: a second delete matches nothing.
    expect(await updateActive(store.db, 'schedule', 'c', softDeleted(at, 'admin'))).toBe(false);
  });

  it('whereEquals filters by each value given, booleans as 0/1, and by nothing for undefined or empty', async () => {
    const ids = async (filters: Parameters<typeof whereEquals>[1]) =>
      (await whereEquals(store.db.selectFrom('schedule').select('id'), filters).orderBy('id').execute()).map(
        (r) => r.id,
      );
    expect(await ids({ event_type: 'svc.other' })).toEqual(['b', 'c']);
    expect(await ids({ event_type: 'svc.other', enabled: false })).toEqual(['b']);
    expect(await ids({ enabled: true })).toEqual(['a', 'c', 'gone']);
    expect(await ids({ event_type: undefined, name: '' })).toEqual(['a', 'b', 'c', 'gone']);
  });
});
