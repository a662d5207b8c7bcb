import { EventEmitter } from 'node:events';
import pg from 'pg';
import type { Notifier } from '../domain/notifier.ts';

/**
 * The channel the `messages` insert trigger (migration `0005_storage`) notifies on; the payload
 * is the thread id. The trigger runs inside the appending transaction, so PostgreSQL delivers
 * the notification on commit and never for a rolled-back append.
 */
export const MESSAGES_CHANNEL = 'acs_thread_messages';

/** Options of {@link createPgNotifier}; the delays are in milliseconds. */
export interface PgNotifierOptions {
  /** First reconnect delay after the LISTEN connection drops; doubles up to `maxRetryMs`. Default 100. */
  retryMs?: number;
  /** Longest reconnect delay. Default 5000. */
  maxRetryMs?: number;
  /** Told about connection losses and reconnects (never about payloads); default silent. */
  log?: (message: string) => void;
}

/**
 * A {@link Notifier} for several acs-server processes on one PostgreSQL database: one dedicated
 * `pg` client per process LISTENs on {@link MESSAGES_CHANNEL}, and an in-process emitter fans
 * each notification out to the requests waiting on that thread, so thousands of held long polls
 * share one connection and nothing polls.
 *
 * `publish` does nothing: the insert trigger already announces every committed append, from
 * this process and from all others, and a second, local announcement would wake each waiter
 * twice. When the connection drops it is re-established with backoff; after each reconnect
 * every current waiter is woken once, since notifications sent meanwhile are lost and the
 * waiters must re-read.
 *
 * Input: a connection URL. Resolves once LISTEN is in place.
 * Errors: rejects when the first connection or LISTEN fails.
 */
export async function createPgNotifier(databaseUrl: string, options: PgNotifierOptions = {}): Promise<Notifier> {
  const emitter = new EventEmitter();
  // Every long poll adds a listener; thousands of waiters on one thread are expected, not a leak.
  emitter.setMaxListeners(0);
  const retryMs = options.retryMs ?? 100;
  const maxRetryMs = options.maxRetryMs ?? 5000;
  const log = options.log ?? (() => {});
  let closed = false;
  let client: pg.Client | undefined;
  let retryTimer: NodeJS.Timeout | undefined;
  let delay = retryMs;

  const wakeAll = () => {
    for (const name of emitter.eventNames()) emitter.emit(name);
  };

  async function connect(): Promise<pg.Client> {
    const next = new pg.Client({ connectionString: databaseUrl });
    // Without an error listener a dropped connection would crash the process.
    next.on('error', () => {});
    try {
      await next.connect();
      next.on('notification', (message) => {
        if (message.channel === MESSAGES_CHANNEL && message.payload) emitter.emit(message.payload);
      });
      await next.query(`LISTEN ${MESSAGES_CHANNEL}`);
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
    publish() {
      // The database trigger announces the append on commit (see above).
    },
    subscribe(threadId, listener) {
      emitter.on(threadId, listener);
      return () => emitter.off(threadId, listener);
    },
    async close() {
      closed = true;
      if (retryTimer) clearTimeout(retryTimer);
      const last = client;
      client = undefined;
      emitter.removeAllListeners();
      await last?.end().catch(() => {});
    },
  };
}
