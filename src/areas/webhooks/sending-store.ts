import { sql } from 'kysely';
import { batches } from '../../db/prepared.js';
import type { Db, Dialect } from '../../db/store.js';
import type { AttemptRow, DeliveryRow } from './delivery-store.js';

/**
 * The sender's side of `webhook_delivery`: claiming due deliveries under a lease, handing back unsent
 * ones, reaping the leases of dead workers, and writing attempt results and the attempt log.
 */
/** A delivery whose attempt died with its worker: the lease expired without a result. */
export interface Reaped {
  id: string;
  webhook_id: string;
  attempts: number;
  max_attempts: number;
  total_attempts: number;
  locked_at: string | null;
}

/** Nobody holds the row: its last attempt released its lease, or a dead one was reaped. */
const leaseFree = sql<boolean>`locked_until is null`;

/**
 * Releases expired leases of attempts whose worker died (crash, kill -9): their attempt was already
 * counted when it was claimed, so it stands as a failed attempt. Returns them for the attempt log.
 * Clearing `locked_by` makes this exclusive: a concurrent reaper's re-check finds it null.
 */
export async function reapExpiredLeases(db: Db, now: string, limit: number): Promise<Reaped[]> {
  return db
    .updateTable('webhook_delivery')
    .set({ locked_until: null, locked_by: null, locked_at: null })
    .where('id', 'in', (eb) =>
      eb
        .selectFrom('webhook_delivery')
        .select('id')
        .where('status', '=', 'PENDING')
        .where('locked_by', 'is not', null)
        .where('locked_until', '<=', now)
        .limit(limit),
    )
    .where('locked_by', 'is not', null)
    .where('locked_until', '<=', now)
    .returning(['id', 'webhook_id', 'attempts', 'max_attempts', 'total_attempts', 'locked_at'])
    .execute();
}

/**
 * Reaped deliveries that stay PENDING wait out the backoff of their interrupted attempt like any
 * failed one: `retries` maps each due time (from the one backoff rule) to the deliveries it applies to.
 */
export async function deferInterrupted(
  db: Db,
  retries: ReadonlyMap<string, readonly string[]>,
  now: string,
  error: string,
): Promise<void> {
  for (const [nextAttemptAt, ids] of retries) {
    for (let i = 0; i < ids.length; i += 500) {
      await db
        .updateTable('webhook_delivery')
        .set({ next_attempt_at: nextAttemptAt, error, updated_at: now })
        .where('id', 'in', ids.slice(i, i + 500))
        .where('status', '=', 'PENDING')
        .where(leaseFree)
        .execute();
    }
  }
}

/** Reaped deliveries whose interrupted attempt was their last become FAILED. */
export async function failExhausted(
  db: Db,
  ids: string[],
  now: string,
  error: string,
): Promise<DeliveryRow[]> {
  if (ids.length === 0) return [];
  return db
    .updateTable('webhook_delivery')
    .set({ status: 'FAILED', error, next_attempt_at: null, updated_at: now })
    .where('id', 'in', ids)
    .where('status', 'not in', ['SUCCESS', 'FAILED']) // not index-served: see claimDue
    .where(sql<boolean>`attempts >= max_attempts`)
    .where(leaseFree)
    .returningAll()
    .execute();
}

/**
 * Takes a lease on up to `limit` due deliveries, at most `perWebhook` slots per webhook, interleaving
 * webhooks (the first due delivery of each, then the second, ...) so one busy webhook cannot starve
 * the others. Claiming counts the attempt (attempts + 1) before it is made, so an attempt lost to a
 * crash still counts. One UPDATE statement: on SQLite a write from its first statement (no read
 * snapshot to go stale under another process); on PostgreSQL a row another claimer took meanwhile
 * fails the re-checked WHERE (READ COMMITTED re-evaluates it on the locked row) and is skipped.
 */
export async function claimDue(
  db: Db,
  opts: {
    now: string;
    leaseUntil: string;
    token: string;
    limit: number;
    perWebhookCap: number;
    /** Slots already used per webhook by this process. */
    inFlight: ReadonlyMap<string, number>;
    dialect: 'sqlite' | 'postgres';
  },
): Promise<DeliveryRow[]> {
  const { now } = opts;
  const busy = [...opts.inFlight].filter(([, n]) => n > 0);
  // Slots left per webhook: the cap minus what this process already sends to it.
  const cap =
    busy.length === 0
      ? sql<number>`cast(${opts.perWebhookCap} as integer)`
      : // Casts: PostgreSQL would otherwise type the untyped parameters of the CASE as text.
        sql<number>`case webhook_id ${sql.join(
          busy.map(([id, n]) => sql`when ${id} then cast(${Math.max(0, opts.perWebhookCap - n)} as integer)`),
          sql` `,
        )} else cast(${opts.perWebhookCap} as integer) end`;
  const saturated = busy.filter(([, n]) => n >= opts.perWebhookCap).map(([id]) => id);
  // The window looks at the earliest due rows only (an index range scan, not every due row), and
  // never at webhooks this process already sends to at full cap, so a backlog behind a slow endpoint
  // neither costs every claim a full scan nor hides the other webhooks' deliveries.
  const window = Math.min(Math.max(opts.limit * 2, 64), 4096);
  // PostgreSQL only: rows another worker's claim (or a result being written) holds are skipped, not
  // waited for. SQLite has one writer at a time and no row locks to skip.
  const skipLocked = opts.dialect === 'postgres' ? sql`for update skip locked` : sql``;
  const candidates = sql<{ id: string }>`
    select id from (
      select id, next_attempt_at,
             row_number() over (partition by webhook_id order by next_attempt_at, id) as rn, webhook_id
      from (
        select id, webhook_id, next_attempt_at from webhook_delivery
        where status = 'PENDING' and next_attempt_at <= ${now} and attempts < max_attempts and ${leaseFree}
          ${saturated.length > 0 ? sql`and webhook_id not in (${sql.join(saturated)})` : sql``}
        order by next_attempt_at
        limit ${window}
        ${skipLocked}
      ) early
    ) due
    where rn <= ${cap}
    order by rn, next_attempt_at, id
    limit ${opts.limit}`;
  return (
    db
      .updateTable('webhook_delivery')
      .set((eb) => ({
        attempts: eb('attempts', '+', 1),
        total_attempts: eb('total_attempts', '+', 1),
        locked_until: opts.leaseUntil,
        locked_by: opts.token,
        locked_at: now,
        updated_at: now,
      }))
      .where(sql<boolean>`id in (${candidates})`)
      // The re-check, phrased so no index serves it: SQLite would otherwise walk every PENDING row
      // through the status index instead of looking the few candidate ids up by primary key.
      .where('status', 'not in', ['SUCCESS', 'FAILED'])
      .where(sql<boolean>`attempts < max_attempts`)
      .where(leaseFree)
      .returningAll()
      .execute()
  );
}

/**
 * Claimed deliveries this worker never sent: lease released, the claim's attempt uncounted. A manual
 * retry may have reset `attempts` to 0 meanwhile (it leaves the lease alone, so nobody claimed since):
 * that 0 is the retry's fresh count and stays; only `total_attempts` gives the claim back then.
 * A delivery a webhook's rate_limit holds back is handed back the same way, due at its turn.
 */
export async function releaseUnsent(
  db: Db,
  ids: readonly string[],
  token: string,
  /** When they are due again (a webhook's rate_limit); absent: as they were. */
  nextAttemptAt?: string,
): Promise<void> {
  for (let i = 0; i < ids.length; i += 500) {
    await db
      .updateTable('webhook_delivery')
      .set((eb) => ({
        ...(nextAttemptAt === undefined ? {} : { next_attempt_at: nextAttemptAt }),
        attempts: eb
          .case()
          .when('attempts', '>', 0)
          .then(eb('attempts', '-', 1))
          .else(0)
          .end(),
        total_attempts: eb('total_attempts', '-', 1),
        locked_until: null,
        locked_by: null,
        locked_at: null,
      }))
      .where('id', 'in', ids.slice(i, i + 500))
      .where('locked_by', '=', token)
      .execute();
  }
}

export async function insertAttempts(db: Db, rows: AttemptRow[], dialect: Dialect): Promise<void> {
  if (rows.length === 0) return;
  if (dialect === 'postgres') {
    // PostgreSQL: one statement of fourteen array parameters, the same text for every batch size, so
    // it is parsed and planned once; a multi-row VALUES of thousands of parameters was planned anew.
    const col = <K extends keyof AttemptRow>(k: K) => rows.map((r) => r[k]);
    await sql`insert into webhook_delivery_attempt (id, delivery_id, webhook_id, attempt, sequence, outcome,
        started_at, finished_at, duration_ms, url, http_status, response_body, error, signed_at)
      select * from unnest(${col('id')}::text[], ${col('delivery_id')}::text[], ${col('webhook_id')}::text[],
        ${col('attempt')}::integer[], ${col('sequence')}::integer[], ${col('outcome')}::text[],
        ${col('started_at')}::text[], ${col('finished_at')}::text[], ${col('duration_ms')}::integer[],
        ${col('url')}::text[], ${col('http_status')}::integer[], ${col('response_body')}::text[],
        ${col('error')}::text[], ${col('signed_at')}::integer[])`.execute(db);
    return;
  }
  for (const batch of batches(db, rows, 200))
    await db.insertInto('webhook_delivery_attempt').values(batch).execute();
}

export interface Completion {
  id: string;
  token: string;
  generation: number;
  success: boolean;
  /** The delivery's state after this attempt when no retry superseded it. */
  changes: Pick<
    DeliveryRow,
    'status' | 'http_status' | 'response_body' | 'error' | 'next_attempt_at' | 'delivered_at' | 'updated_at'
  >;
}

/**
 * Writes attempts' results and releases their leases, only where this worker still holds the lease.
 * When a manual retry superseded an attempt (generation moved on) only a success is kept; a failure
 * just releases the lease, leaving the reset delivery due at once.
 */
export async function completeAttempts(
  db: Db,
  batch: Completion[],
  dialect: Dialect,
): Promise<Array<'applied' | 'superseded' | 'lost'>> {
  const outcome = new Map<Completion, 'applied' | 'superseded' | 'lost'>();
  // Rounds of distinct deliveries: one delivery can have two results in a batch (a late one whose
  // lease was lost, and the current one), and RETURNING can name only the delivery, not the lease.
  let pending = batch;
  while (pending.length > 0) {
    const seen = new Set<string>();
    const round: Completion[] = [];
    const later: Completion[] = [];
    for (const c of pending) {
      if (seen.has(c.id)) later.push(c);
      else {
        seen.add(c.id);
        round.push(c);
      }
    }
    const applied = dialect === 'postgres' ? await applyRoundPg(db, round) : await applyRound(db, round);
    for (const c of round) outcome.set(c, applied.has(c.id) ? 'applied' : await completeSuperseded(db, c));
    pending = later;
  }
  return batch.map((c) => outcome.get(c) ?? 'lost');
}

const APPLY_SET = sql`status = r.status, http_status = r.http_status, response_body = r.response_body,
  error = r.error, next_attempt_at = r.next_attempt_at, delivered_at = r.delivered_at,
  updated_at = r.updated_at, locked_until = null, locked_by = null, locked_at = null`;
const APPLY_WHERE = sql`webhook_delivery.id = r.id and webhook_delivery.locked_by = r.token
  and webhook_delivery.generation = r.generation`;

/** SQLite: one statement per 200 results (UPDATE ... FROM a derived table): a statement per result
 * would spend more on SQL parsing than on the writes. */
async function applyRound(db: Db, round: Completion[]): Promise<Set<string>> {
  const applied = new Set<string>();
  for (const batch of batches(db, round, 200)) {
    const rows = batch.map(
      (c) =>
        sql`select ${c.id} as id, ${c.token} as token, ${c.generation} as generation,
          ${c.changes.status} as status, ${c.changes.http_status} as http_status,
          ${c.changes.response_body} as response_body, ${c.changes.error} as error,
          ${c.changes.next_attempt_at} as next_attempt_at, ${c.changes.delivered_at} as delivered_at,
          ${c.changes.updated_at} as updated_at`,
    );
    const result = await sql<{ id: string }>`
      update webhook_delivery set ${APPLY_SET}
      from (${sql.join(rows, sql` union all `)}) as r
      where ${APPLY_WHERE}
      returning webhook_delivery.id`.execute(db);
    for (const row of result.rows) applied.add(row.id);
  }
  return applied;
}

/** PostgreSQL: the whole round as ten array parameters, one statement text for every size (planned
 * once); a derived table of hundreds of UNION ALL branches took most of the write's time to plan. */
async function applyRoundPg(db: Db, round: Completion[]): Promise<Set<string>> {
  const col = <T>(f: (c: Completion) => T) => round.map(f);
  const result = await sql<{ id: string }>`
    update webhook_delivery set ${APPLY_SET}
    from unnest(${col((c) => c.id)}::text[], ${col((c) => c.token)}::text[],
      ${col((c) => c.generation)}::integer[], ${col((c) => c.changes.status)}::text[],
      ${col((c) => c.changes.http_status)}::integer[], ${col((c) => c.changes.response_body)}::text[],
      ${col((c) => c.changes.error)}::text[], ${col((c) => c.changes.next_attempt_at)}::text[],
      ${col((c) => c.changes.delivered_at)}::text[], ${col((c) => c.changes.updated_at)}::text[])
      as r(id, token, generation, status, http_status, response_body, error, next_attempt_at,
        delivered_at, updated_at)
    where ${APPLY_WHERE}
    returning webhook_delivery.id`.execute(db);
  return new Set(result.rows.map((r) => r.id));
}

/** The rare rest: a manual retry moved the generation on, or the lease was lost. */
async function completeSuperseded(db: Db, c: Completion): Promise<'superseded' | 'lost'> {
  const release = { locked_until: null, locked_by: null, locked_at: null };
  const set = c.success
    ? {
        status: c.changes.status,
        http_status: c.changes.http_status,
        response_body: c.changes.response_body,
        error: null,
        next_attempt_at: null,
        // The retry reset the count to 0; the attempt that succeeded is the one it ends with.
        attempts: 1,
        delivered_at: c.changes.delivered_at,
        updated_at: c.changes.updated_at,
        ...release,
      }
    : { http_status: c.changes.http_status, response_body: c.changes.response_body, ...release };
  const other = await db
    .updateTable('webhook_delivery')
    .set(set)
    .where('id', '=', c.id)
    .where('locked_by', '=', c.token)
    .executeTakeFirst();
  return Number(other.numUpdatedRows) > 0 ? 'superseded' : 'lost';
}
