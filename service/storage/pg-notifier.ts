import { EventEmitter } from 'node:events';
import pg from 'pg';
import type { Notifier } from '../domain/notifier.ts';

/**
 * The channel on which a process announces that an organization's event log grew; the payload is
 * the organization id. Announced by the writing process after its transaction committed
 * ({@link createPgNotifier}'s `publish`), so never for a rolled-back change.
 */
export const EVENTS_CHANNEL = 'acs_events';

/** Options of {@link createPgNotifier}; the delays are in milliseconds. */
export interface PgNotifierOptions {
  /** First reconnect delay after the LISTEN connection drops; doubles up to `maxRetryMs`. Default 100. */
  retryMs?: number;
  /** Longest reconnect delay. Default 5000. */
  maxRetryMs?: number;
  /** Told about connection losses and reconnects (never about payloads); default silent. */
  log?: (message: string) => void;
}

// Announcements not yet sent are kept while the connection is down, up to this many organizations.
const maxPendingKeys = 100_000;

/**
 * A {@link Notifier} for several acs-server processes on one PostgreSQL database: one dedicated
 * `pg` client per process LISTENs on {@link EVENTS_CHANNEL}, and an in-process emitter fans
 * each notification out to the process's event hub, which reads the organization's new events once
 * for all its waiters, so thousands of held long polls
 * share one connection and nothing polls.
 *
 * `publish` (called once an append committed) wakes this process's waiters at once and sends a
 * NOTIFY on the same connection for the other processes; this process ignores its own
 * notifications when they come back. The NOTIFY is not sent from inside the appending
 * transaction (it was, by an insert trigger, until migration `0007_append_function`): a
 * transaction that notifies holds a cluster-wide lock from before its commit until after it, so
 * every append waited for the previous one's commit and fsync, and appends did not scale with
 * clients (docs/performance.md). One NOTIFY statement is in flight at a time; organizations published
 * meanwhile go out together in the next. If the process dies between an append's commit and its
 * NOTIFY, waiters in other processes see the message when their wait ends (at most 30 s) rather
 * than at once.
 *
 * When the connection drops it is re-established with backoff; announcements made meanwhile are
 * sent once it is back, and every current waiter is woken once, since notifications sent
 * meanwhile by other processes are lost and the waiters must re-read.
 *
 * Input: a connection URL. Resolves once LISTEN is in place.
 * Errors: rejects when the first connection or LISTEN fails.
 */
export async function createPgNotifier(databaseUrl: string, options: PgNotifierOptions = {}): Promise<Notifier> {
  const emitter = new EventEmitter();
  // One listener per organization the hub follows: thousands are expected, not a leak.
  emitter.setMaxListeners(0);
  const retryMs = options.retryMs ?? 100;
  const maxRetryMs = options.maxRetryMs ?? 5000;
  const log = options.log ?? (() => {});
  let closed = false;
  let client: pg.Client | undefined;
  let retryTimer: NodeJS.Timeout | undefined;
  let delay = retryMs;
  // Organizations published but not yet announced to the other processes, and the NOTIFY in flight.
  const pending = new Set<string>();
  let sending: Promise<void> | undefined;

  const wakeAll = () => {
    for (const name of emitter.eventNames()) emitter.emit(name);
  };

  /** Sends one NOTIFY per pending organization in one statement, unless one is already in flight. */
  function flush(): void {
    const target = client;
    if (sending || closed || target === undefined || pending.size === 0) return;
    const keys = [...pending];
    pending.clear();
    sending = target.query(`SELECT pg_notify($1, key) FROM unnest($2::text[]) AS key`, [EVENTS_CHANNEL, keys]).then(
      () => {
        sending = undefined;
        flush();
      },
      () => {
        sending = undefined;
        // Most likely the connection dropped: keep them for the reconnect (which flushes), or
        // for the next publish if the connection is still there.
        for (const key of keys) if (pending.size < maxPendingKeys) pending.add(key);
        log('notifier: NOTIFY failed; will retry');
      },
    );
  }

  async function connect(): Promise<pg.Client> {
    const next = new pg.Client({ connectionString: databaseUrl });
    // Without an error listener a dropped connection would crash the process.
    next.on('error', () => {});
    try {
      await next.connect();
      // This process's own announcements come back on its LISTEN: its waiters were woken at publish.
      const own = (await next.query<{ pid: number }>(`SELECT pg_backend_pid() AS pid`)).rows[0]!.pid;
      next.on('notification', (message) => {
        if (message.channel === EVENTS_CHANNEL && message.payload && message.processId !== own) emitter.emit(message.payload);
      });
      await next.query(`LISTEN ${EVENTS_CHANNEL}`);
    } catch (error) {
      await next.end().catch(() => {});
      throw error;
    }
    next.once('end', () => {
      if (closed || client !== next) return;
      client = undefined;
      log('notifier: LISTEN connection lost; reconnecting');
      scheduleReconnect();
    });
    return next;
  }

  function scheduleReconnect(): void {
    if (closed || retryTimer) return;
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      connect().then(
        (next) => {
          if (closed) {
            void next.end().catch(() => {});
            return;
          }
          client = next;
          delay = retryMs;
          log('notifier: LISTEN connection re-established');
          wakeAll();
          flush();
        },
        () => {
          delay = Math.min(delay * 2, maxRetryMs);
          scheduleReconnect();
        },
      );
    }, delay);
    retryTimer.unref();
  }

  client = await connect();

  return {
    publish(key) {
      if (pending.size < maxPendingKeys) pending.add(key);
      // At once, not after the response of the request that committed: the other processes' waiters
      // need not wait for it. While one NOTIFY is in flight, the organizations announced meanwhile
      // wait and go out together in the next.
      flush();
    },
    subscribe(key, listener) {
      emitter.on(key, listener);
      return () => emitter.off(key, listener);
    },
    async close() {
      // Appends committed before the close are still announced to the other processes, unless
      // the connection hangs: then the close does not wait for more than a couple of seconds.
      const drained = (async () => {
        flush();
        while (sending !== undefined) {
          await sending;
          flush();
        }
      })();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([drained, new Promise((resolve) => (timer = setTimeout(resolve, 2_000)))]);
      clearTimeout(timer);
      closed = true;
      if (retryTimer) clearTimeout(retryTimer);
      const last = client;
      client = undefined;
      emitter.removeAllListeners();
      await last?.end().catch(() => {});
    },
  };
}
