import { EventEmitter } from 'node:events';

/**
 * Tells the event hubs (events/hub.ts) of the other processes that an organization's event log
 * grew (key: the organization id); the announcing process hands the events to its own waiters
 * itself. Two implementations: the in-process one below (PGlite: one process owns the database,
 * there is nobody else to tell) and the LISTEN/NOTIFY one in `storage/pg-notifier.ts`
 * (PostgreSQL). A listener may be called when nothing new is there (e.g. after a reconnect); the
 * hub then reads and finds nothing.
 */
export interface Notifier {
  /** Tells the other processes that organization `key`'s log grew; call after the commit. */
  publish(key: string): void;
  /** Calls `listener` on each announcement for `key` until the returned function is called. */
  subscribe(key: string, listener: () => void): () => void;
  /** Releases resources (listeners, connections). */
  close(): Promise<void>;
}

/**
 * A {@link Notifier} for one process (PGlite): there are no other processes, so `publish` tells
 * nobody; subscriptions are kept (an event emitter keyed by organization id) for symmetry.
 */
export function createLocalNotifier(): Notifier {
  const emitter = new EventEmitter();
  // One listener per organization the hub follows: thousands are expected, not a leak.
  emitter.setMaxListeners(0);
  return {
    publish() {},
    subscribe(key, listener) {
      emitter.on(key, listener);
      return () => emitter.off(key, listener);
    },
    async close() {
      emitter.removeAllListeners();
    },
  };
}
