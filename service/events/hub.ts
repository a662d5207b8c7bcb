/**
 * The one reader of the event log per process (contract §9; docs/events.md, "One reader"): every
 * waiter of the process — thread long polls, MCP `wait_for_messages`, event long polls, event
 * streams, the webhook dispatcher — subscribes here instead of querying on its own. When an
 * organization's log grows, the hub reads the new events once and hands each subscriber the
 * events it asked for, so a wake costs one query however many wait.
 *
 * What wakes the hub: {@link EventHub.announce}, called by this process after a commit that wrote
 * events; the same announcement from other processes (the {@link Notifier}: LISTEN/NOTIFY on
 * PostgreSQL); and, as a safety net for an announcement that never came (a process killed between
 * its commit and its NOTIFY), a look at the organizations it follows every `pollMs`.
 */
import type { Notifier } from '../domain/notifier.ts';
import type { Queryable } from '../storage/db.ts';
import { eventColumns, headSeq, toEvent, type EventRow, type StoredEvent } from './log.ts';

/** Receives, in seq order, the events of one organization that match a subscription's topic. */
export type EventListener = (events: readonly StoredEvent[]) => void;

/**
 * Topics narrow what a subscriber is handed, so that a wake does not walk every subscriber of a
 * busy organization: {@link threadTopic} (`thread.opened` and `message.created` of one thread),
 * {@link recipientTopic} (`message.created` to one participant, `thread.opened` with them), or
 * {@link allTopic} (every event).
 */
export const allTopic = '*';
/** The topic of one thread's events. */
export function threadTopic(threadId: string): string {
  return `thread:${threadId}`;
}
/** The topic of the messages sent to one participant (and the threads opened with them). */
export function recipientTopic(participantId: string): string {
  return `recipient:${participantId}`;
}

/** The topics an event belongs to, besides {@link allTopic}. */
function topicsOf(event: StoredEvent): string[] {
  if (event.type === 'message.created') return [threadTopic(event.data.thread_id), recipientTopic(event.data.recipient_id)];
  if (event.type === 'thread.opened') return [threadTopic(event.data.thread_id), ...event.data.participants.map(recipientTopic)];
  return [];
}

/** A live subscription. */
export interface Subscription {
  /**
   * The seq the hub had read up to when the subscription began: every event after it reaches the
   * listener; events up to it were committed before, so a read that starts now sees them.
   */
  readonly head: number;
  /** Stops the listener (idempotent). */
  unsubscribe(): void;
}

/** Counters of what the hub did, for tests and benchmarks. */
export interface HubStats {
  /** Statements that read new events (one per wake and organization, plus the pages of a burst). */
  reads: number;
  /** Events handed out (once per event, however many subscribers got it). */
  events: number;
}

/** The reader of the event log of one process. */
export interface EventHub {
  /**
   * Announces that `orgId`'s log grew: call it after the commit. Wakes this process's reader at
   * once, tells the other processes, and calls the {@link onAnnounce} listeners.
   */
  announce(orgId: string): void;
  /**
   * Subscribes `listener` to `orgId`'s events of `topic` from now on. Resolves once the hub knows
   * where the log stands (one query when it followed no one of the organization yet).
   */
  subscribe(orgId: string, topic: string, listener: EventListener): Promise<Subscription>;
  /** Calls `listener` with the organization of every announcement made in this process. */
  onAnnounce(listener: (orgId: string) => void): () => void;
  /** What the hub did so far. */
  stats(): HubStats;
  /** Stops reading; subscriptions end. */
  close(): Promise<void>;
}

/** Options of {@link createEventHub}. */
export interface EventHubOptions {
  db: Queryable;
  notifier: Notifier;
  /** How often the organizations followed are checked for events no announcement told of; default 5,000 ms. */
  pollMs?: number;
  /** Told about failed reads (retried after a second); default silent. */
  log?: (message: string, error: unknown) => void;
}

interface Subscriber {
  topic: string;
  listener: EventListener;
}

interface OrgState {
  orgId: string;
  /** The newest seq read (and handed out). */
  head: number;
  /** Resolves once `head` is known. */
  ready: Promise<void>;
  subscribers: Map<string, Set<Subscriber>>;
  count: number;
  reading: boolean;
  again: boolean;
  retry: NodeJS.Timeout | undefined;
  stopListening: () => void;
}

/** Events read per statement; a longer burst takes more statements. */
const pageSize = 500;

/** Creates the hub of one process over `db`, woken through `notifier` (announcements are keyed by organization id). */
export function createEventHub(options: EventHubOptions): EventHub {
  const { db, notifier } = options;
  const log = options.log ?? (() => {});
  const orgs = new Map<string, OrgState>();
  const announceListeners = new Set<(orgId: string) => void>();
  const stats: HubStats = { reads: 0, events: 0 };
  let closed = false;

  const poll = setInterval(() => void pollFollowed(), options.pollMs ?? 5_000);
  poll.unref();

  /** Reads what no announcement told of: one statement for every organization followed. */
  async function pollFollowed(): Promise<void> {
    const followed = [...orgs.values()];
    if (followed.length === 0 || closed) return;
    try {
      const rows = await db.query<{ org_id: string; last_seq: string }>(`SELECT org_id, last_seq FROM event_counters WHERE org_id = ANY($1::uuid[])`, [
        followed.map((s) => s.orgId),
      ]);
      for (const row of rows) {
        const state = orgs.get(row.org_id);
        if (state && Number(row.last_seq) > state.head) void read(state);
      }
    } catch (error) {
      log('events: the periodic look at the log failed', error);
    }
  }

  function follow(orgId: string): OrgState {
    const existing = orgs.get(orgId);
    if (existing) return existing;
    const state: OrgState = {
      orgId,
      head: 0,
      ready: Promise.resolve(),
      subscribers: new Map(),
      count: 0,
      reading: false,
      again: false,
      retry: undefined,
      stopListening: () => {},
    };
    // Listen before asking where the log stands: an event committed after the question is
    // announced to this listener, and one committed before is counted in the answer.
    state.stopListening = notifier.subscribe(orgId, () => void read(state));
    state.ready = headSeq(db, orgId).then((head) => {
      state.head = Math.max(state.head, head);
    });
    orgs.set(orgId, state);
    return state;
  }

  function unfollowIfIdle(state: OrgState): void {
    if (state.count > 0 || orgs.get(state.orgId) !== state) return;
    orgs.delete(state.orgId);
    state.stopListening();
    if (state.retry) clearTimeout(state.retry);
  }

  /** Reads the events after `state.head` and hands them out; one read at a time per organization. */
  async function read(state: OrgState): Promise<void> {
    if (state.reading) {
      state.again = true;
      return;
    }
    state.reading = true;
    try {
      await state.ready;
      do {
        state.again = false;
        for (;;) {
          if (closed || orgs.get(state.orgId) !== state) return;
          stats.reads += 1;
          const rows = await db.query<EventRow>(`SELECT ${eventColumns} FROM events WHERE org_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, [
            state.orgId,
            state.head,
            pageSize,
          ]);
          if (rows.length > 0) {
            const events = rows.map(toEvent);
            state.head = events.at(-1)!.seq;
            stats.events += events.length;
            dispatch(state, events);
          }
          if (rows.length < pageSize) break;
        }
      } while (state.again);
    } catch (error) {
      if (closed) return;
      log('events: reading the log failed; retrying in a second', error);
      state.retry ??= setTimeout(() => {
        state.retry = undefined;
        void read(state);
      }, 1_000);
    } finally {
      state.reading = false;
    }
  }

  function dispatch(state: OrgState, events: StoredEvent[]): void {
    const batches = new Map<Subscriber, StoredEvent[]>();
    const add = (topic: string, event: StoredEvent) => {
      for (const subscriber of state.subscribers.get(topic) ?? []) {
        const batch = batches.get(subscriber);
        if (batch) batch.push(event);
        else batches.set(subscriber, [event]);
      }
    };
    for (const event of events) {
      add(allTopic, event);
      for (const topic of topicsOf(event)) add(topic, event);
    }
    for (const [subscriber, batch] of batches) {
      try {
        subscriber.listener(batch);
      } catch (error) {
        log('events: a subscriber failed', error);
      }
    }
  }

  return {
    announce(orgId) {
      // The notifier wakes this process's subscription (and, on PostgreSQL, the other processes').
      notifier.publish(orgId);
      for (const listener of announceListeners) {
        try {
          listener(orgId);
        } catch (error) {
          log('events: an announcement listener failed', error);
        }
      }
    },
    async subscribe(orgId, topic, listener) {
      if (closed) throw new Error('the event hub is closed');
      const state = follow(orgId);
      const subscriber: Subscriber = { topic, listener };
      let set = state.subscribers.get(topic);
      if (!set) state.subscribers.set(topic, (set = new Set()));
      set.add(subscriber);
      state.count += 1;
      let active = true;
      const unsubscribe = () => {
        if (!active) return;
        active = false;
        set.delete(subscriber);
        if (set.size === 0 && state.subscribers.get(topic) === set) state.subscribers.delete(topic);
        state.count -= 1;
        unfollowIfIdle(state);
      };
      try {
        await state.ready;
      } catch (error) {
        unsubscribe();
        // A failed first look is not kept: the next subscriber asks again.
        if (orgs.get(orgId) === state && state.count === 0) orgs.delete(orgId);
        throw error;
      }
      return { head: state.head, unsubscribe };
    },
    onAnnounce(listener) {
      announceListeners.add(listener);
      return () => announceListeners.delete(listener);
    },
    stats: () => ({ ...stats }),
    async close() {
      closed = true;
      clearInterval(poll);
      for (const state of orgs.values()) {
        state.stopListening();
        if (state.retry) clearTimeout(state.retry);
      }
      orgs.clear();
      announceListeners.clear();
    },
  };
}
