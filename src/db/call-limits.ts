import type { SelectQueryBuilder } from 'kysely';
import { newId } from '../lib/ids.js';
import { takeLocks } from './locks.js';
import type { Database } from './schema.js';
import type { Db } from './store.js';

/**
 * The limits of outbound calls (docs/plugins.md "Limits", docs/webhooks.md "Rate limit"): a plugin
 * instance's `rate_limit` and `max_concurrency`, a webhook's `rate_limit`. One mechanism for both
 * areas, kept in the store so that every process shares it. A scope (`plugin:<id>`, `webhook:<id>`)
 * has rows of three kinds in `call_limit_entry` (migration 0023):
 *
 * - `start`: a start counted by a rate limit, at the time it started; `turn`: the reserved start of
 *   a caller that waits, at the time the window lets it start. A sliding window: at most `limit`
 *   starts and turns in any `period_ms`. Turns are appended in arrival order, so waiting callers start
 *   first come, first served and spaced as the limit allows, without asking again meanwhile.
 * - `call`: a call in flight, counted by `max_concurrency` until it ends or its lease passes (a
 *   process that died mid-call frees its slot when the lease ends).
 * - `waiter`: a caller waiting for a concurrency slot, in arrival order. A slot that frees is for the
 *   first waiters; the process that frees it wakes them (`release` answers them), and a waiter asks
 *   again after `CONCURRENCY_POLL_MS` at the latest. A waiter that stops asking expires.
 *
 * Each decision takes the scope's lock (src/db/locks.ts) in a short write transaction.
 */

export interface CallLimitTable {
  id: string;
  /** `plugin:<instance id>` or `webhook:<webhook id>`. */
  scope: string;
  kind: 'start' | 'turn' | 'call' | 'waiter';
  /** Who the entry is for: an attempt's idempotency key, a delivery's id. */
  holder: string;
  /** start, call: when it started; turn: when it may start; waiter: when it began to wait. */
  at: string;
  /** When the entry counts for nothing any more (the prune job deletes it after). */
  until: string;
}

export interface CallLimitTables {
  call_limit_entry: CallLimitTable;
}

export interface CallLimits {
  rate_limit?: { limit: number; period_ms: number } | null;
  max_concurrency?: number | null;
}

export const hasLimits = (l: CallLimits): boolean => Boolean(l.rate_limit) || Boolean(l.max_concurrency);

/** A concurrency waiter asks again after this long at the latest (a freed slot wakes it sooner). */
export const CONCURRENCY_POLL_MS = 2_000;
/** A waiter that has not asked again this long after its poll was due no longer holds its place. */
const WAITER_GRACE_MS = 10_000;

export type Admission =
  | {
      go: true /** The call's concurrency slot, to `release` after it (null: no max_concurrency). */;
      callId: string | null;
    }
  | { go: false; limit: 'rate_limit' | 'max_concurrency' /** When to ask again. */; retryAt: Date };

export interface AdmitOptions {
  /**
   * `wait`: a refused caller keeps its place (a reservation, a waiter row) and asks again at
   * `retryAt`; `ask`: a refused caller leaves nothing behind (a manual invoke answered 429).
   */
  mode: 'wait' | 'ask';
  /** How long a concurrency slot is held at most: the call's deadline and a margin. */
  leaseMs: number;
}

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * Whether `holder` may call now under `limits`, recording the start (and the slot) when it may.
 * Runs in the caller's write transaction.
 */
export async function admit(
  db: Db,
  scope: string,
  limits: CallLimits,
  holder: string,
  now: Date,
  options: AdmitOptions,
): Promise<Admission> {
  await takeLocks(db, [`limit:${scope}`]);
  const nowMs = now.getTime();
  const nowIso = iso(nowMs);
  const wait = options.mode === 'wait';
  const max = limits.max_concurrency ?? null;
  let waiter: { id: string; at: string } | undefined;
  if (max !== null) {
    waiter = await db
      .selectFrom('call_limit_entry')
      .select(['id', 'at'])
      .where('scope', '=', scope)
      .where('kind', '=', 'waiter')
      .where('holder', '=', holder)
      .executeTakeFirst();
    const inFlight = await countOf(db, scope, CALLS, (q) => q.where('until', '>', nowIso));
    const ahead = await countOf(db, scope, WAITERS, (q) => {
      const live = q.where('until', '>', nowIso).where('holder', '!=', holder);
      return waiter === undefined
        ? live
        : live.where((eb) =>
            eb.or([
              eb('at', '<', waiter?.at as string),
              eb.and([eb('at', '=', waiter?.at as string), eb('id', '<', waiter?.id as string)]),
            ]),
          );
    });
    if (inFlight + ahead >= max) {
      const retryAt = nowMs + CONCURRENCY_POLL_MS;
      if (wait) {
        const until = iso(retryAt + WAITER_GRACE_MS);
        if (waiter === undefined) await insertEntry(db, scope, 'waiter', holder, nowIso, until);
        else await db.updateTable('call_limit_entry').set({ until }).where('id', '=', waiter.id).execute();
      }
      return { go: false, limit: 'max_concurrency', retryAt: new Date(retryAt) };
    }
  }
  const rate = limits.rate_limit ?? null;
  if (rate !== null) {
    const turn = await rateTurn(db, scope, rate, holder, nowMs);
    if (turn.at > nowMs) {
      if (wait && turn.reserve) {
        await insertEntry(db, scope, 'turn', holder, iso(turn.at), iso(turn.at + rate.period_ms));
      }
      // A waiter keeps its place in the concurrency queue while it waits for the window.
      if (wait && waiter !== undefined) {
        await db
          .updateTable('call_limit_entry')
          .set({ until: iso(turn.at + CONCURRENCY_POLL_MS + WAITER_GRACE_MS) })
          .where('id', '=', waiter.id)
          .execute();
      }
      return { go: false, limit: 'rate_limit', retryAt: new Date(turn.at) };
    }
    if (turn.own !== undefined) {
      await db
        .updateTable('call_limit_entry')
        .set({ kind: 'start', at: nowIso, until: iso(nowMs + rate.period_ms) })
        .where('id', '=', turn.own)
        .execute();
    } else await insertEntry(db, scope, 'start', holder, nowIso, iso(nowMs + rate.period_ms));
  }
  if (max === null) return { go: true, callId: null };
  if (waiter !== undefined) await db.deleteFrom('call_limit_entry').where('id', '=', waiter.id).execute();
  const callId = await insertEntry(db, scope, 'call', holder, nowIso, iso(nowMs + options.leaseMs));
  return { go: true, callId };
}

/**
 * When `holder` may start under a rate limit: now, or the time its reservation holds, or the end of
 * the line (after every start and reservation, once the window has room). `reserve`: the time is
 * new and must be recorded; `own`: the holder's reservation that is due now.
 */
async function rateTurn(
  db: Db,
  scope: string,
  rate: { limit: number; period_ms: number },
  holder: string,
  nowMs: number,
): Promise<{ at: number; reserve: boolean; own?: string }> {
  const nowIso = iso(nowMs);
  const reservation = await db
    .selectFrom('call_limit_entry')
    .select(['id', 'at'])
    .where('scope', '=', scope)
    .where('kind', '=', 'turn')
    .where('holder', '=', holder)
    .executeTakeFirst();
  if (reservation !== undefined) {
    const at = Date.parse(reservation.at);
    if (at > nowMs) return { at, reserve: false };
    // Its turn came (or passed: the holder came late). The window is counted at the start as it is
    // now; a late start whose window filled meanwhile goes to the end of the line again.
    const started = await countOf(db, scope, STARTS, (q) =>
      q
        .where('at', '>', iso(nowMs - rate.period_ms))
        .where('at', '<=', nowIso)
        .where('id', '!=', reservation.id),
    );
    if (started < rate.limit) return { at: nowMs, reserve: false, own: reservation.id };
    await db.deleteFrom('call_limit_entry').where('id', '=', reservation.id).execute();
  }
  // The latest `limit` starts and reservations: a new start follows them all (first come, first
  // served) and is at least a period after the limit-th latest.
  const latest = await db
    .selectFrom('call_limit_entry')
    .select('at')
    .where('scope', '=', scope)
    .where('kind', 'in', STARTS)
    .where('at', '>', iso(nowMs - rate.period_ms))
    .orderBy('at', 'desc')
    .limit(rate.limit)
    .execute();
  let at = nowMs;
  if (latest.length > 0) at = Math.max(at, Date.parse(latest[0]?.at as string));
  if (latest.length >= rate.limit) {
    at = Math.max(at, Date.parse(latest[rate.limit - 1]?.at as string) + rate.period_ms);
  }
  // A caller first in line with room in the window starts at once, and it is not a reservation.
  return { at, reserve: at > nowMs };
}

/**
 * A call ended: its slot is free. Answers the holders of the waiters the free slots are now for
 * (the caller wakes them).
 */
export async function release(
  db: Db,
  scope: string,
  callId: string,
  limits: CallLimits,
  now: Date,
): Promise<string[]> {
  await takeLocks(db, [`limit:${scope}`]);
  await db.deleteFrom('call_limit_entry').where('id', '=', callId).execute();
  const max = limits.max_concurrency ?? null;
  if (max === null) return [];
  const nowIso = now.toISOString();
  const inFlight = await countOf(db, scope, CALLS, (q) => q.where('until', '>', nowIso));
  if (inFlight >= max) return [];
  const next = await db
    .selectFrom('call_limit_entry')
    .select('holder')
    .where('scope', '=', scope)
    .where('kind', '=', 'waiter')
    .where('until', '>', nowIso)
    .orderBy('at')
    .orderBy('id')
    .limit(max - inFlight)
    .execute();
  return next.map((r) => r.holder);
}

/**
 * A run ended or was cancelled: the places its attempts held in lines go (holders `<run id>:...`,
 * docs/plugins.md "Limits"); its calls in flight keep their slots until they end.
 */
export async function forgetRun(db: Db, runId: string): Promise<void> {
  await db
    .deleteFrom('call_limit_entry')
    .where('holder', 'like', `${runId}:%`)
    .where('kind', 'in', ['turn', 'waiter'])
    .execute();
}

/** Callers waiting now, by scope and limit: waiters and reservations still ahead (the metrics). */
export async function waitingCalls(
  db: Db,
  scopePrefix: string,
  now: Date,
): Promise<Array<{ scope: string; limit: 'rate_limit' | 'max_concurrency'; count: number }>> {
  const nowIso = now.toISOString();
  const rows = await db
    .selectFrom('call_limit_entry')
    .select(['scope', 'kind', (eb) => eb.fn.countAll<number | string>().as('n')])
    .where('scope', 'like', `${scopePrefix}%`)
    .where((eb) =>
      eb.or([
        eb.and([eb('kind', '=', 'waiter'), eb('until', '>', nowIso)]),
        eb.and([eb('kind', '=', 'turn'), eb('at', '>', nowIso)]),
      ]),
    )
    .groupBy(['scope', 'kind'])
    .execute();
  return rows.map((r) => ({
    scope: r.scope,
    limit: r.kind === 'waiter' ? 'max_concurrency' : 'rate_limit',
    count: Number(r.n),
  }));
}

/** Entries that count for nothing any more, oldest first, at most `limit` (the prune job's). */
export async function pruneEntries(db: Db, before: Date, limit: number): Promise<number> {
  const res = await db
    .deleteFrom('call_limit_entry')
    .where('id', 'in', (eb) =>
      eb
        .selectFrom('call_limit_entry')
        .select('id')
        .where('until', '<', before.toISOString())
        .orderBy('until')
        .limit(limit),
    )
    .executeTakeFirst();
  return Number(res.numDeletedRows);
}

type Kind = CallLimitTable['kind'];
type CountQuery = SelectQueryBuilder<Database, 'call_limit_entry', { n: number | string }>;
const STARTS: Kind[] = ['start', 'turn'];
const CALLS: Kind[] = ['call'];
const WAITERS: Kind[] = ['waiter'];

async function countOf(
  db: Db,
  scope: string,
  kinds: Kind[],
  filter: (q: CountQuery) => CountQuery,
): Promise<number> {
  const base = db
    .selectFrom('call_limit_entry')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('scope', '=', scope)
    .where('kind', 'in', kinds);
  const row = await filter(base).executeTakeFirst();
  return Number(row?.n ?? 0);
}

async function insertEntry(
  db: Db,
  scope: string,
  kind: Kind,
  holder: string,
  at: string,
  until: string,
): Promise<string> {
  const id = newId();
  await db.insertInto('call_limit_entry').values({ id, scope, kind, holder, at, until }).execute();
  return id;
}

/** When the oldest entry that counts for nothing any more stopped counting (null: none). */
export async function oldestSpentEntry(db: Db, now: Date): Promise<string | null> {
  const row = await db
    .selectFrom('call_limit_entry')
    .select('until')
    .where('until', '<', now.toISOString())
    .orderBy('until')
    .limit(1)
    .executeTakeFirst();
  return row?.until ?? null;
}
