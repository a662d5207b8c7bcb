import { EventEmitter } from 'node:events';

/**
 * Tells the event hub (events/hub.ts) that an organization's event log grew (key: the
 * organization id). Two implementations: the in-process one below (PGlite: one process owns the
 * database) and the LISTEN/NOTIFY one in `storage/pg-notifier.ts` (PostgreSQL: an announcement
 * in any process reaches the hubs of all). A listener may be called when nothing new is there
 * (e.g. after a reconnect); the hub then reads and finds nothing.
 */
export interface Notifier {
  /** Announces that organization `key`'s log grew; call after the commit. */
  publish(key: string): void;
  /** Calls `listener` on each announcement for `key` until the returned function is called. */
  subscribe(key: string, listener: () => void): () => void;
  /** Releases resources (listeners, connections). */
  close(): Promise<void>;
}

/** A {@link Notifier} for one process (PGlite): an event emitter keyed by organization id. */
export function createLocalNotifier(): Notifier {
  const emitter = new EventEmitter();
  // One listener per organization the hub follows: thousands are expected, not a leak.
  emitter.setMaxListeners(0);
  return {
    publish(key) {
      emitter.emit(key);
    },
    subscribe(key, listener) {
      emitter.on(key, listener);
      return () => emitter.off(key, listener);
    },
    async close() {
      emitter.removeAllListeners();
    },
  };
}
