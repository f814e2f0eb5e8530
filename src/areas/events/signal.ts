import { randomUUID } from 'node:crypto';
import { type FSWatcher, watch } from 'node:fs';
import { basename, dirname } from 'node:path';
import { sql } from 'kysely';
import type pg from 'pg';
import type { Logger } from 'pino';
import { pgDriver } from '../../db/pg-driver.js';
import { CONNECT_TIMEOUT_MS, type Store, sqliteFile } from '../../db/store.js';
import type { Wakeups } from '../../worker/wakeups.js';

/** The PostgreSQL channel every process's outbox drain listens on. */
export const OUTBOX_CHANNEL = 'svc_outbox';
export const OUTBOX_JOB = 'outbox';

/**
 * "An event was committed": wakes the outbox drain of this process at once and, on PostgreSQL, every
 * other process's drain through NOTIFY. On a SQLite file, `svc worker` (beside `svc serve
 * SVC_WORKER=off`) learns of other processes' commits by watching the write-ahead log, which every
 * commit appends to (docs/events.md).
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

export function createOutboxSignal(deps: {
  store: Store;
  wakeups: Wakeups;
  log: Logger;
  /** SQLite: watch for other processes' commits (a `svc worker`); PostgreSQL always listens. */
  watchOtherProcesses: boolean;
}): OutboxSignal {
  const { store, wakeups, log } = deps;
  const wakeLocal = () => wakeups.wake(OUTBOX_JOB);
  if (store.dialect !== 'postgres') {
    return deps.watchOtherProcesses
      ? sqliteSignal(store.url, wakeLocal, log)
      : { wake: wakeLocal, listen() {}, close: async () => {} };
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
    const c = new (pgDriver().Client)({
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

/**
 * SQLite, in a process that runs the worker alone: the API's commits, made in other processes, reach
 * it through the file system (inotify on Linux): the write-ahead log `<db>-wal` changes on every
 * commit. The folder is watched, not the file, so the log may come and go. This process's own writes
 * wake it too: a drain step that finds nothing costs one query, and wakes that arrive while a step
 * runs collapse into one more step. (A process that also serves the API is woken by its own commits
 * and does not watch.) An in-memory database is one connection's own: nothing to watch.
 */
function sqliteSignal(url: string, wakeLocal: () => void, log: Logger): OutboxSignal {
  const path = sqliteFile(url);
  let watcher: FSWatcher | undefined;
  return {
    wake: wakeLocal,
    listen() {
      if (watcher || path === null) return;
      const wal = `${basename(path)}-wal`;
      try {
        watcher = watch(dirname(path), { persistent: false }, (_event, name) => {
          if (name === wal) wakeLocal();
        });
        watcher.on('error', (err) => {
          // The drain's interval is the safety net; a lost watch only delays other processes' events.
          log.warn({ err }, 'outbox: watching the SQLite log failed; other processes are polled');
          watcher?.close();
          watcher = undefined;
        });
      } catch (err) {
        log.warn({ err }, 'outbox: cannot watch the SQLite log; other processes are polled');
      }
    },
    async close() {
      watcher?.close();
      watcher = undefined;
    },
  };
}
