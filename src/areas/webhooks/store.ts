import { type Selectable, sql } from 'kysely';
import { updateActive } from '../../db/audit.js';
import type { Db, Dialect } from '../../db/store.js';
import { containsInsensitive, isoParam, type ListResult, type Page, paginate } from '../../http/list.js';
import { newId } from '../../lib/ids.js';
import type { CloudEvent } from '../events/cloudevent.js';
import { MAX_ATTEMPTS } from './backoff.js';
import type { Delivery, DeliveryAttempt, Webhook } from './schemas.js';
import type { WebhookDeliveryAttemptTable, WebhookDeliveryTable, WebhookTable } from './tables.js';

/** SQL of the webhooks area only. */
export type WebhookRow = Selectable<WebhookTable>;
export type PublicWebhookRow = Omit<WebhookRow, 'secret'>;
export type DeliveryRow = Selectable<WebhookDeliveryTable>;
/** A delivery with the body it sends (stored once per event in webhook_event). */
export type DeliveryWithPayload = DeliveryRow & { payload: string };
export type AttemptRow = Selectable<WebhookDeliveryAttemptTable>;

/** Every column but the secret: lists and reads can never leak it by accident. */
const PUBLIC_COLUMNS = [
  'id',
  'name',
  'url',
  'event_types',
  'description',
  'enabled',
  'secret_hint',
  'created_at',
  'updated_at',
  'updated_by',
  'deleted_at',
] as const;

export async function insertWebhook(db: Db, row: WebhookRow): Promise<void> {
  await db.insertInto('webhook').values(row).execute();
}

export async function findActiveWebhook(db: Db, id: string): Promise<PublicWebhookRow | undefined> {
  return db
    .selectFrom('webhook')
    .select(PUBLIC_COLUMNS)
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
}

export async function updateWebhook(
  db: Db,
  id: string,
  changes: Partial<Omit<WebhookRow, 'id' | 'created_at'>>,
): Promise<boolean> {
  return updateActive(db, 'webhook', id, changes);
}

export interface WebhookFilters {
  enabled?: boolean;
  name?: string;
  url?: string;
  search?: string;
}

export async function listWebhooks(
  db: Db,
  filters: WebhookFilters,
  page: Page,
): Promise<ListResult<PublicWebhookRow>> {
  let q = db.selectFrom('webhook').where('deleted_at', 'is', null);
  if (filters.enabled !== undefined) q = q.where('enabled', '=', filters.enabled ? 1 : 0);
  if (filters.name !== undefined) q = q.where(containsInsensitive('name', filters.name));
  if (filters.url !== undefined) q = q.where(containsInsensitive('url', filters.url));
  if (filters.search !== undefined) {
    const s = filters.search;
    q = q.where((eb) =>
      eb.or([
        containsInsensitive('name', s),
        containsInsensitive('url', s),
        containsInsensitive('description', s),
      ]),
    );
  }
  return paginate(q, page, (row: PublicWebhookRow) => row, PUBLIC_COLUMNS);
}

/** The dispatcher's read: enabled, active webhooks and the types they want. */
export async function subscribedWebhooks(db: Db): Promise<Pick<WebhookRow, 'id' | 'event_types'>[]> {
  return db
    .selectFrom('webhook')
    .select(['id', 'event_types'])
    .where('enabled', '=', 1)
    .where('deleted_at', 'is', null)
    .execute();
}

/**
 * The sender's read: url and secret of webhooks, soft-deleted ones included (their queue drains).
 * Made when attempts start, not when deliveries are claimed, so a rotated secret or changed url
 * applies at once.
 */
export async function webhooksForSending(db: Db, ids: readonly string[]): Promise<SendingTarget[]> {
  if (ids.length === 0) return [];
  return db.selectFrom('webhook').select(['id', 'url', 'secret']).where('id', 'in', ids).execute();
}

/**
 * Whether a stored `secret` is sealed (a Fernet token under the vault key) rather than the 64-hex
 * plaintext earlier versions stored. A token is base64url starting with `gAAAAA`; never 64 hex.
 */
export function isSealedSecret(stored: string): boolean {
  return !/^[0-9a-f]{64}$/.test(stored);
}

/** Every webhook's stored secret, deleted ones included (key rotation, sealing at start-up). */
export async function allSecrets(db: Db): Promise<Array<{ id: string; secret: string }>> {
  return db.selectFrom('webhook').select(['id', 'secret']).execute();
}

export async function setSecret(db: Db, id: string, secret: string): Promise<void> {
  await db.updateTable('webhook').set({ secret }).where('id', '=', id).execute();
}

/** What an attempt needs of its webhook, read when attempts start (see webhooksForSending). */
export type SendingTarget = Pick<WebhookRow, 'id' | 'url' | 'secret'>;

/** Stores events' bodies once each (an event handed over again changes nothing). */
export async function insertEvents(
  db: Db,
  events: readonly { eventId: string; payload: string }[],
): Promise<void> {
  // Bounded chunks keep each statement under SQLite's host-parameter limit.
  for (let i = 0; i < events.length; i += 500) {
    await db
      .insertInto('webhook_event')
      .values(events.slice(i, i + 500).map((e) => ({ event_id: e.eventId, payload: e.payload })))
      .onConflict((oc) => oc.column('event_id').doNothing())
      .execute();
  }
}

/** The bodies of these events, by event id. */
export async function payloadsOf(db: Db, eventIds: readonly string[]): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const unique = [...new Set(eventIds)];
  for (let i = 0; i < unique.length; i += 500) {
    const rows = await db
      .selectFrom('webhook_event')
      .select(['event_id', 'payload'])
      .where('event_id', 'in', unique.slice(i, i + 500))
      .execute();
    for (const r of rows) out.set(r.event_id, r.payload);
  }
  return out;
}

async function withPayloads(db: Db, rows: DeliveryRow[]): Promise<DeliveryWithPayload[]> {
  const payloads = await payloadsOf(
    db,
    rows.map((r) => r.event_id),
  );
  return rows.map((r) => ({ ...r, payload: payloads.get(r.event_id) ?? '{}' }));
}

/** Inserts deliveries, ignoring any (webhook, event) pair that already has one. Returns how many were new. */
export async function insertDeliveries(db: Db, rows: DeliveryRow[]): Promise<number> {
  let inserted = 0;
  // Bounded chunks keep each statement under SQLite's host-parameter limit.
  for (let i = 0; i < rows.length; i += 200) {
    const res = await db
      .insertInto('webhook_delivery')
      .values(rows.slice(i, i + 200))
      .onConflict((oc) => oc.columns(['webhook_id', 'event_id']).doNothing())
      .executeTakeFirst();
    inserted += Number(res.numInsertedOrUpdatedRows ?? 0);
  }
  return inserted;
}

export interface DeliveryFilters {
  status?: DeliveryRow['status'];
  event_type?: string;
  http_status?: number;
  http_status_gte?: number;
  http_status_lte?: number;
  delivered_at_gte?: string;
  delivered_at_lte?: string;
}

export async function listDeliveries(
  db: Db,
  webhookId: string,
  filters: DeliveryFilters,
  page: Page,
): Promise<ListResult<DeliveryWithPayload>> {
  let q = db.selectFrom('webhook_delivery').where('webhook_id', '=', webhookId);
  if (filters.status) q = q.where('status', '=', filters.status);
  if (filters.event_type !== undefined) q = q.where('event_type', '=', filters.event_type);
  if (filters.http_status !== undefined) q = q.where('http_status', '=', filters.http_status);
  if (filters.http_status_gte !== undefined) q = q.where('http_status', '>=', filters.http_status_gte);
  if (filters.http_status_lte !== undefined) q = q.where('http_status', '<=', filters.http_status_lte);
  if (filters.delivered_at_gte !== undefined)
    q = q.where('delivered_at', '>=', isoParam(filters.delivered_at_gte));
  if (filters.delivered_at_lte !== undefined)
    q = q.where('delivered_at', '<=', isoParam(filters.delivered_at_lte));
  const result = await paginate(q, page, (row: DeliveryRow) => row);
  return { items: await withPayloads(db, result.items), total: result.total };
}

export async function findDelivery(
  db: Db,
  webhookId: string,
  id: string,
): Promise<DeliveryWithPayload | undefined> {
  const row = await db
    .selectFrom('webhook_delivery')
    .selectAll()
    .where('id', '=', id)
    .where('webhook_id', '=', webhookId)
    .executeTakeFirst();
  return row ? (await withPayloads(db, [row]))[0] : undefined;
}

export async function attemptsOf(db: Db, deliveryId: string): Promise<AttemptRow[]> {
  return db
    .selectFrom('webhook_delivery_attempt')
    .selectAll()
    .where('delivery_id', '=', deliveryId)
    .orderBy('sequence', 'asc')
    .execute();
}

export async function listAttempts(db: Db, deliveryId: string, page: Page): Promise<ListResult<AttemptRow>> {
  const q = db.selectFrom('webhook_delivery_attempt').where('delivery_id', '=', deliveryId);
  return paginate(q, page, (row: AttemptRow) => row);
}

/**
 * SPEC "POST retry": back to PENDING, attempts 0, due now, error cleared. The lease is left alone:
 * an attempt in flight keeps it, so nobody else can start a second send of this delivery meanwhile;
 * the bumped generation tells that attempt it was superseded.
 */
export async function resetDelivery(db: Db, id: string, now: string): Promise<void> {
  await db
    .updateTable('webhook_delivery')
    .set((eb) => ({
      status: 'PENDING',
      attempts: 0,
      next_attempt_at: now,
      error: null,
      updated_at: now,
      generation: eb('generation', '+', 1),
    }))
    .where('id', '=', id)
    .execute();
}

// ---------------------------------------------------------------- the sender's claim and completion

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
 */
export async function releaseUnsent(db: Db, ids: readonly string[], token: string): Promise<void> {
  for (let i = 0; i < ids.length; i += 500) {
    await db
      .updateTable('webhook_delivery')
      .set((eb) => ({
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
  for (let i = 0; i < rows.length; i += 200) {
    await db
      .insertInto('webhook_delivery_attempt')
      .values(rows.slice(i, i + 200))
      .execute();
  }
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
  for (let i = 0; i < round.length; i += 200) {
    const rows = round.slice(i, i + 200).map(
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

// ---- rows as the API shows them

export function toWebhook(row: PublicWebhookRow): Webhook {
  return {
    id: row.id,
    name: row.name,
    url: row.url,
    event_types: JSON.parse(row.event_types) as string[],
    description: row.description,
    enabled: row.enabled === 1,
    secret_hint: row.secret_hint,
    created_at: row.created_at,
    updated_at: row.updated_at,
    updated_by: row.updated_by,
    deleted_at: row.deleted_at,
  };
}

/** A new delivery of `event` to one webhook, due now. */
export function deliveryRow(webhookId: string, event: CloudEvent, now: string, id = newId()): DeliveryRow {
  return {
    id,
    webhook_id: webhookId,
    event_id: event.id,
    event_type: event.type,
    status: 'PENDING',
    http_status: null,
    response_body: null,
    error: null,
    attempts: 0,
    max_attempts: MAX_ATTEMPTS,
    next_attempt_at: now,
    delivered_at: null,
    created_at: now,
    updated_at: now,
    locked_until: null,
    locked_by: null,
    locked_at: null,
    generation: 0,
    total_attempts: 0,
  };
}

export function toDelivery(row: DeliveryWithPayload): Delivery {
  return {
    id: row.id,
    webhook_id: row.webhook_id,
    event_id: row.event_id,
    event_type: row.event_type,
    payload: JSON.parse(row.payload) as Record<string, unknown>,
    status: row.status,
    http_status: row.http_status,
    response_body: row.response_body,
    error: row.error,
    attempts: row.attempts,
    max_attempts: row.max_attempts,
    next_attempt_at: row.next_attempt_at,
    delivered_at: row.delivered_at,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

export function toAttempt(row: AttemptRow): DeliveryAttempt {
  return {
    id: row.id,
    delivery_id: row.delivery_id,
    attempt: row.attempt,
    sequence: row.sequence,
    outcome: row.outcome,
    started_at: row.started_at,
    finished_at: row.finished_at,
    duration_ms: row.duration_ms,
    url: row.url,
    http_status: row.http_status,
    response_body: row.response_body,
    error: row.error,
    signed_at: row.signed_at,
  };
}
