import { iso } from '../../lib/clock.js';

/** What each area's prune shares: rules grouped into statements, a rule's cutoff, a pass's steps. */

/** Ids (subscriptions, webhooks) per statement: well inside both stores' limits on bound parameters. */
export const IDS_PER_STATEMENT = 500;

/**
 * Ids grouped by their retention in seconds, in groups of at most IDS_PER_STATEMENT, leaving out 0
 * (kept for ever): the records of one group are removed by one statement.
 */
export function groupsBySeconds(
  rules: Iterable<readonly [id: string, seconds: number]>,
): Array<[number, string[]]> {
  const bySeconds = new Map<number, string[]>();
  for (const [id, seconds] of rules) {
    if (seconds === 0) continue;
    const ids = bySeconds.get(seconds) ?? [];
    ids.push(id);
    bySeconds.set(seconds, ids);
  }
  const groups: Array<[number, string[]]> = [];
  for (const [seconds, ids] of bySeconds)
    for (let i = 0; i < ids.length; i += IDS_PER_STATEMENT)
      groups.push([seconds, ids.slice(i, i + IDS_PER_STATEMENT)]);
  return groups;
}

/** Records that finished before this (stored time) are past a retention of `seconds`. */
export const cutoffOf = (now: Date, seconds: number): string => iso(new Date(now.getTime() - seconds * 1000));

/** What a step of a pass removed: records of its kind, and rows per table (with what belongs to them). */
export interface Removed {
  records: number;
  rows: Record<string, number>;
}

/** One step of a pass: removes up to `limit` more records; fewer than `limit`: the pass is through. */
export type PruneStep = (limit: number) => Promise<Removed>;

/**
 * A pass over `statements` in order, as steps: each statement runs again until it removes nothing
 * (removing a record can make another due: a re-run's origin), then the next one. What a pass has
 * found empty is never asked again in it.
 */
export function stepsThrough<S>(
  statements: readonly S[],
  run: (statement: S, limit: number) => Promise<Removed>,
): PruneStep {
  let next = 0;
  return async (limit) => {
    const removed: Removed = { records: 0, rows: {} };
    while (next < statements.length && removed.records < limit) {
      const got = await run(statements[next], limit - removed.records);
      removed.records += got.records;
      for (const [table, rows] of Object.entries(got.rows))
        removed.rows[table] = (removed.rows[table] ?? 0) + rows;
      if (got.records === 0) next++;
    }
    return removed;
  };
}

/** A statement that found nothing due. */
export const nothingRemoved = (): Removed => ({ records: 0, rows: {} });
