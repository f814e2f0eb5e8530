import { iso } from '../../lib/clock.js';

/** What each area's prune shares: rules grouped into statements, and a rule's cutoff. */

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
