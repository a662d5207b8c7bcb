import { EventEmitter } from 'node:events';
import pg from 'pg';
import type { Notifier } from '../domain/notifier.ts';

/**
 * The channel on which a process announces that an organization's event log grew; the payload is
 * the organization id. Announced by the writing process after its transaction committed
 * ({@link createPgNotifier}'s `publish`), so never for a rolled-back change.
 */
export const EVENTS_CHANNEL = 'acs_events';

/**
 * The channel on which processes tell each other which keys they follow, so that a key nobody
 * elsewhere follows costs no NOTIFY: `+key` (this process now has listeners for it), `-key` (no
 * more), `?` (a process (re)connected: every process announces all its keys again).
 */
export const FOLLOWS_CHANNEL = 'acs_follows';

/** The `application_name` of each process's LISTEN connection (so operators can tell it in `pg_stat_activity`). */
export const NOTIFIER_APPLICATION_NAME = 'acs-server notifier';

/** Options of {@link createPgNotifier}; the delays are in milliseconds. */
export interface PgNotifierOptions {
  /** First reconnect delay after the LISTEN connection drops; doubles up to `maxRetryMs`. Default 100. */
  retryMs?: number;
  /** Longest reconnect delay. Default 5000. */
  maxRetryMs?: number;
  /** Told about connection losses and reconnects (never about payloads); default silent. */
  log?: (message: string) => void;
  /**
   * After each (re)connect, for this long every key is announced, followed elsewhere or not, while
   * the other processes answer with what they follow. Default 2000.
   */
  warmUpMs?: number;
  /** How often the followers of processes whose connection is gone (kill -9) are forgotten. Default 60,000. */
  sweepMs?: number;
}

// Announcements not yet sent are kept while the connection is down, up to this many organizations.
const maxPendingKeys = 100_000;

/** The PostgreSQL {@link Notifier}, which can also say whom it would tell. */
export interface PgNotifier extends Notifier {
  /** Whether `publish(key)` sends a NOTIFY now: another process follows `key`, or the warm-up after a (re)connect lasts. */
  followedElsewhere(key: string): boolean;
}

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
 * A NOTIFY is sent only for a key some other process follows: processes tell each other on
 * {@link FOLLOWS_CHANNEL} which keys they have listeners for. A NOTIFY is a transaction with a
 * commit of its own, heard by every listening connection, and at one client it cost an append ~5%
 * of its rate while nobody elsewhere was waiting (docs/performance.md). For `warmUpMs` after
 * each (re)connect every key is announced, while the others answer its `?`. A follower that
 * starts following while a writer has not heard so yet may miss an announcement; its hub's
 * periodic look at the log (events/hub.ts, `pollMs`) finds what it missed. Followers of a
 * process whose connection is gone are dropped every `sweepMs`.
 *
 * When the connection drops it is re-established with backoff; announcements made meanwhile are
 * sent once it is back, and every current waiter is woken once, since notifications sent
 * meanwhile by other processes are lost and the waiters must re-read.
 *
 * Input: a connection URL. Resolves once LISTEN is in place.
 * Errors: rejects when the first connection or LISTEN fails.
 */
export async function createPgNotifier(databaseUrl: string, options: PgNotifierOptions = {}): Promise<PgNotifier> {
  const emitter = new EventEmitter();
  // One listener per organization the hub follows: thousands are expected, not a leak.
  emitter.setMaxListeners(0);
  const retryMs = options.retryMs ?? 100;
  const maxRetryMs = options.maxRetryMs ?? 5000;
  const warmUpMs = options.warmUpMs ?? 2_000;
  const log = options.log ?? (() => {});
  // Who else follows what: key → backend pids of the other processes' LISTEN connections.
  const followers = new Map<string, Set<number>>();
  // Until then every key is announced (after a (re)connect, while the others answer).
  let warmUntil = 0;
  // This process's keys whose following changed since they were last announced, and whether to ask.
  const changedFollows = new Set<string>();
  let askFollows = false;
  let announcing: Promise<void> | undefined;
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

  /** Every key this process follows is to be announced again (after a `?`, a (re)connect, a close). */
  const changeAllFollows = () => {
    for (const key of emitter.eventNames()) if (typeof key === 'string') changedFollows.add(key);
  };

  const followedElsewhere = (key: string) => Date.now() < warmUntil || (followers.get(key)?.size ?? 0) > 0;

  /**
   * Announces on {@link FOLLOWS_CHANNEL} the current state of each key whose following changed
   * (not each change: PostgreSQL drops a repeated payload within one transaction), and the `?`
   * after a (re)connect, in one statement, unless one is already in flight.
   */
  function announceFollows(): void {
    const target = client;
    if (announcing || closed || target === undefined || (changedFollows.size === 0 && !askFollows)) return;
    const payloads = [...changedFollows].map((key) => `${emitter.listenerCount(key) > 0 ? '+' : '-'}${key}`);
    if (askFollows) payloads.push('?');
    changedFollows.clear();
    askFollows = false;
    announcing = target.query(`SELECT pg_notify($1, p) FROM unnest($2::text[]) WITH ORDINALITY AS t(p, n) ORDER BY n`, [FOLLOWS_CHANNEL, payloads]).then(
      () => {
        announcing = undefined;
        announceFollows();
      },
      () => {
        announcing = undefined;
        // The reconnect announces every key and asks again.
      },
    );
  }

  /** What another process announced on {@link FOLLOWS_CHANNEL}. */
  function heardFollows(pid: number, payload: string): void {
    if (payload === '?') {
      changeAllFollows();
      announceFollows();
      return;
    }
    const key = payload.slice(1);
    if (payload.startsWith('+')) {
      const pids = followers.get(key) ?? new Set<number>();
      pids.add(pid);
      followers.set(key, pids);
    } else if (payload.startsWith('-')) {
      const pids = followers.get(key);
      pids?.delete(pid);
      if (pids?.size === 0) followers.delete(key);
    }
  }

  /** Forgets the follows of processes whose LISTEN connection is gone (killed without a `-`). */
  async function sweepFollowers(): Promise<void> {
    const target = client;
    if (closed || target === undefined || followers.size === 0) return;
    const known = new Set<number>();
    for (const pids of followers.values()) for (const pid of pids) known.add(pid);
    try {
      const alive = new Set(
        (await target.query<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE pid = ANY($1::int[])`, [[...known]])).rows.map((row) => row.pid),
      );
      for (const [key, pids] of followers) {
        for (const pid of pids) if (!alive.has(pid)) pids.delete(pid);
        if (pids.size === 0) followers.delete(key);
      }
    } catch {
      // The connection is down: the next sweep looks again.
    }
  }
  const sweep = setInterval(() => void sweepFollowers(), options.sweepMs ?? 60_000);
  sweep.unref();

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
    const next = new pg.Client({ connectionString: databaseUrl, application_name: NOTIFIER_APPLICATION_NAME });
    // Without an error listener a dropped connection would crash the process.
    next.on('error', () => {});
    try {
      await next.connect();
      // This process's own announcements come back on its LISTEN: its waiters were woken at publish.
      const own = (await next.query<{ pid: number }>(`SELECT pg_backend_pid() AS pid`)).rows[0]!.pid;
      next.on('notification', (message) => {
        if (message.processId === own || !message.payload) return;
        if (message.channel === EVENTS_CHANNEL) emitter.emit(message.payload);
        else if (message.channel === FOLLOWS_CHANNEL) heardFollows(message.processId, message.payload);
      });
      await next.query(`LISTEN ${FOLLOWS_CHANNEL}`);
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
          joined();
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

  /**
   * After a (re)connect: announce every key for a while, tell the others what this process
   * follows (under its new connection's pid) and ask what they follow (missed meanwhile).
   */
  function joined(): void {
    warmUntil = Date.now() + warmUpMs;
    changeAllFollows();
    askFollows = true;
    announceFollows();
  }

  client = await connect();
  joined();

  return {
    followedElsewhere,
    publish(key) {
      if (!followedElsewhere(key)) return;
      if (pending.size < maxPendingKeys) pending.add(key);
      // At once, not after the response of the request that committed: the other processes' waiters
      // need not wait for it. While one NOTIFY is in flight, the organizations announced meanwhile
      // wait and go out together in the next.
      flush();
    },
    subscribe(key, listener) {
      emitter.on(key, listener);
      if (emitter.listenerCount(key) === 1) {
        changedFollows.add(key);
        announceFollows();
      }
      return () => {
        emitter.off(key, listener);
        if (emitter.listenerCount(key) === 0) {
          changedFollows.add(key);
          announceFollows();
        }
      };
    },
    async close() {
      // Appends committed before the close are still announced to the other processes, unless
      // the connection hangs: then the close does not wait for more than a couple of seconds.
      // The others stop notifying this process: each key it follows is announced as `-`.
      changeAllFollows();
      emitter.removeAllListeners();
      const drained = (async () => {
        flush();
        announceFollows();
        while (sending !== undefined || announcing !== undefined) {
          await (sending ?? announcing);
          flush();
          announceFollows();
        }
      })();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([drained, new Promise((resolve) => (timer = setTimeout(resolve, 2_000)))]);
      clearTimeout(timer);
      closed = true;
      clearInterval(sweep);
      if (retryTimer) clearTimeout(retryTimer);
      const last = client;
      client = undefined;
      await last?.end().catch(() => {});
    },
  };
}
