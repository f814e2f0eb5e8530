import type { Store } from '../../db/store.js';

/**
 * The maintenance lease: one row per job naming the worker that runs it and until when. Taking it
 * is one statement (an upsert that only overwrites a lease run out, or one's own), so two workers
 * can never both hold it.
 */
export async function takeLease(
  store: Store,
  job: string,
  holder: string,
  now: string,
  until: string,
): Promise<boolean> {
  const rows = await store.write((db) =>
    db
      .insertInto('maintenance_lease')
      .values({ job, holder, until })
      .onConflict((oc) =>
        oc
          .column('job')
          .doUpdateSet({ holder, until })
          .where((eb) =>
            eb.or([eb('maintenance_lease.until', '<=', now), eb('maintenance_lease.holder', '=', holder)]),
          ),
      )
      .returning('job')
      .execute(),
  );
  return rows.length > 0;
}
