import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import pg from 'pg';
import type { Logger } from 'pino';
import { CONNECT_TIMEOUT_MS, type Store } from '../../db/store.js';
import type { Wakeups } from '../../worker/wakeups.js';

/** The PostgreSQL channel every process's outbox drain listens on. */
export const OUTBOX_CHANNEL = 'svc_outbox';
export const OUTBOX_JOB = 'outbox';

/**
 * "An event was committed": wakes the outbox drain of this process at once and, on PostgreSQL, every
 * other process's drain through NOTIFY. On SQLite other processes only poll (docs/events.md).
 */
export interface OutboxSignal {
  /** Called after a publishing transaction commits. Never throws; never waits. */
  wake(): void;
  /** Starts LISTEN on a dedicated connection (PostgreSQL; a no-op on SQLite). Reconnects on error. */
  listen(): void;
  /** Stops listening and closes the connection. */
  close(): Promise<void>;
}

const RECONNECT_MIN_MS = 100;
const RECONNECT_MAX_MS = 5_000;

export function createOutboxSignal(deps: { store: Store; wakeups: Wakeups; log: Logger }): OutboxSignal {
  const { store, wakeups, log } = deps;
  const wakeLocal = () => wakeups.wake(OUTBOX_JOB);
  if (store.dialect !== 'postgres') {
    return { wake: wakeLocal, listen() {}, close: async () => {} };
  }
  // Our own notifications come back to our listener; the payload names the sender so we skip them.
  const origin = randomUUID();

  // NOTIFY goes out after commit through the pool, coalesced: while one is in flight, any number of
  // commits ask for exactly one more, sent after it. Under a burst of publishes that is one or two
  // NOTIFYs instead of one per event (each NOTIFY's commit takes PostgreSQL's global notify lock).
  let sending = false;
  let again = false;
  const notify = async (): Promise<void> => {
    sending = true;
    try {
      do {
        again = false;
        await sql`select pg_notify(${OUTBOX_CHANNEL}, ${origin})`.execute(store.db);
      } while (again);
    } catch (err) {
      // The drain's interval is the safety net; a lost NOTIFY only delays other processes.
      log.warn({ err }, 'outbox: NOTIFY failed');
    } finally {
      sending = false;
    }
  };

  let client: pg.Client | undefined;
  let closed = true;
  let retryMs = RECONNECT_MIN_MS;
  let retryTimer: NodeJS.Timeout | undefined;

  const connect = async (): Promise<void> => {
    if (closed) return;
    const c = new pg.Client({
      connectionString: store.url,
      application_name: 'svc-outbox-listener',
      keepAlive: true,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    });
    client = c;
    let failed = false;
    const onFailure = (err?: Error) => {
      if (failed) return;
      failed = true;
      if (client === c) client = undefined;
      c.removeAllListeners('notification');
      c.end().catch(() => {});
      if (closed) return;
      log.warn({ err, retry_in_ms: retryMs }, 'outbox: LISTEN connection lost; reconnecting');
      retryTimer = setTimeout(() => void connect(), retryMs);
      retryTimer.unref();
      retryMs = Math.min(retryMs * 2, RECONNECT_MAX_MS);
    };
    c.on('error', onFailure);
    c.on('end', () => onFailure());
    c.on('notification', (msg) => {
      if (msg.channel === OUTBOX_CHANNEL && msg.payload !== origin) wakeLocal();
    });
    try {
      await c.connect();
      await c.query(`LISTEN ${OUTBOX_CHANNEL}`);
    } catch (err) {
      onFailure(err as Error);
      return;
    }
    if (closed || failed) {
      await c.end().catch(() => {});
      return;
    }
    retryMs = RECONNECT_MIN_MS;
    log.info({ channel: OUTBOX_CHANNEL }, 'outbox: listening for notifications');
    // Whatever was published while we were not listening is due now.
    wakeLocal();
  };

  return {
    wake() {
      wakeLocal();
      if (sending) again = true;
      else void notify();
    },
    listen() {
      if (!closed) return;
      closed = false;
      void connect();
    },
    async close() {
      closed = true;
      clearTimeout(retryTimer);
      const c = client;
      client = undefined;
      if (c) {
        c.removeAllListeners();
        c.on('error', () => {});
        await c.end().catch(() => {});
      }
    },
  };
}
