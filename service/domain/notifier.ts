import { EventEmitter } from 'node:events';

/**
 * Tells waiting readers that a thread got a new message (key: the thread id), or that a thread
 * was opened with a participant (key: {@link participantTopic}). Two implementations: the in-process
 * one below (PGlite: one process owns the database) and the LISTEN/NOTIFY one in
 * `storage/pg-notifier.ts` (PostgreSQL: appends through any process wake waiters in all).
 * A listener may be called without a new message (e.g. after a reconnect); it must re-read.
 */
export interface Notifier {
  /** Announces that `threadId` has a new message; call after the append committed. */
  publish(threadId: string): void;
  /** Calls `listener` on each new message of `threadId` until the returned function is called. */
  subscribe(threadId: string, listener: () => void): () => void;
  /** Releases resources (listeners, connections). */
  close(): Promise<void>;
}

/**
 * The notifier key that wakes a participant's waiters when a thread is opened with them (MCP
 * `wait_for_messages` on all threads subscribes to it, since it cannot know the new thread's id).
 * Thread ids are the keys of appends; this prefix keeps the two apart.
 */
export function participantTopic(participantId: string): string {
  return `participant:${participantId}`;
}

/** A {@link Notifier} for one process (PGlite): an event emitter keyed by thread id. */
export function createLocalNotifier(): Notifier {
  const emitter = new EventEmitter();
  // Every long poll adds a listener; hundreds of waiters on one thread are expected, not a leak.
  emitter.setMaxListeners(0);
  return {
    publish(threadId) {
      emitter.emit(threadId);
    },
    subscribe(threadId, listener) {
      emitter.on(threadId, listener);
      return () => emitter.off(threadId, listener);
    },
    async close() {
      emitter.removeAllListeners();
    },
  };
}
