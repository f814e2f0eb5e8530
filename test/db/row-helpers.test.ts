import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ScheduleTable } from '../../src/areas/schedules/tables.js';
import { auditInsert, findActive, softDeleted, updateActive } from '../../src/db/audit.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { openStore, type Store } from '../../src/db/store.js';
import { whereEquals } from '../../src/http/list.js';
import { dialectName, freshDatabase, type TestDatabase } from '../helpers/store.js';

/**
 * The shared row helpers every store uses (findActive and updateActive in src/db/audit.ts,
 * whereEquals in src/http/list.ts), on a real table of the migrated schema.
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
        schedule('c', { event_type: 'svc.other' }),
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
