/**
 * The one reader of the event log per process (contract §9; docs/events.md, "Held waits"): every
 * waiter of the process — thread long polls, MCP `wait_for_messages`, event long polls, event
 * streams, the webhook dispatcher — subscribes here instead of querying on its own. When an
 * organization's log grows, the hub hands each subscriber the new events it asked for, read once
 * for all of them, so a wake costs one query however many wait.
 *
 * It is also where this process's events get their numbers: {@link EventHub.announce}, called
 * after a commit that wrote events, runs the sequencer (`acs_sequence_events`, migration
 * `0011_events`) for the organization, which numbers every committed event still without a seq
 * and returns them; the hub hands them out at once (no read), tells the other processes (the
 * {@link Notifier}: LISTEN/NOTIFY on PostgreSQL), whose hubs then read them, and calls its
 * {@link EventHub.onSequenced} listeners (the webhook dispatcher). Safety nets: every `sweepMs`
 * the hub numbers events that a process killed after its commit left without a seq, and every
 * `pollMs` it looks at the organizations it follows for events no announcement told of.
 *
 * Numbering waits for someone who wants the numbers. A numbering is a write with a durable commit
 * of its own (a number a reader has seen must survive a crash), and there was one per change:
 * with it put off, PostgreSQL's CPU during a 3,101-create apply fell from 4.4–4.7 s to 3.8–4.0 s
 * (docs/performance.md, "Then: fewer statements per create, and numbering when someone waits").
 * So when no subscriber of this process follows the organization, {@link EventHub.announce}
 * tells the other processes that unnumbered events wait ({@link unnumberedKey}; a hub that
 * follows the organization numbers them at once) and numbers them itself `coalesceMs` later, one
 * statement for every change of that window. Readers of the log number what they need first
 * ({@link EventHub.settle}), so nobody reads past an event that is only waiting for its number.
 */
import type { Notifier } from '../domain/notifier.ts';
import type { Queryable } from '../storage/db.ts';
import { eventColumns, headSeq, toEvent, type EventRow, type StoredEvent } from './log.ts';

/** Events numbered per statement of the sequencer; a burst takes more statements. */
const sequenceBatch = 500;

/**
 * The {@link Notifier} key that tells the other processes that `orgId` has committed events still
 * without a seq, numbered by their writer only `coalesceMs` later: a hub following the
 * organization numbers them on hearing it. (The plain key, the organization id, says that new
 * events were numbered.)
 */
export function unnumberedKey(orgId: string): string {
  return `unnumbered:${orgId}`;
}

/** A change this process committed under a topic, told to its {@link EventHub.onHint} listeners. */
export interface Hint {
  topic: string;
  /** What the writer knows of the change (the topic's owner defines it), e.g. the appended message. */
  detail?: unknown;
}

/** Receives, in seq order, the events of one organization that match a subscription's topic. */
export type EventListener = (events: readonly StoredEvent[]) => void;

/**
 * Topics narrow what a subscriber is handed, so that a wake does not walk every subscriber of a
 * busy organization: {@link threadTopic} (`thread.opened` and `message.created` of one thread),
 * {@link recipientTopic} (`message.created` to one participant, `thread.opened` with them),
 * {@link taskTopic} (`task.created` and `task.updated` of one task), or {@link allTopic} (every event).
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

/** The topic of one task's events (`task.created`, `task.updated`: contract §12), which carry the Task. */
export function taskTopic(taskId: string): string {
  return `task:${taskId}`;
}

/** The topics an event belongs to, besides {@link allTopic}. */
function topicsOf(event: StoredEvent): string[] {
  if (event.type === 'message.created') return [threadTopic(event.data.thread_id), recipientTopic(event.data.recipient_id)];
  if (event.type === 'thread.opened') return [threadTopic(event.data.thread_id), ...event.data.participants.map(recipientTopic)];
  if (event.type === 'task.created' || event.type === 'task.updated') return [taskTopic(event.data.task_id)];
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
  /** Statements that read new events (a wake by another process's announcement, a gap, a poll). */
  reads: number;
  /** Statements of the sequencer (one per announcement and organization, plus the batches of a burst). */
  sequencings: number;
  /** Events handed out (once per event, however many subscribers got it). */
  events: number;
  /** Hint listeners registered now ({@link EventHub.onHint}). */
  hintListeners: number;
}

/** The reader of the event log of one process. */
export interface EventHub {
  /**
   * Announces that `orgId`'s log grew: call it after the commit. Numbers the new events (the
   * sequencer), hands them to this process's subscribers, tells the other processes, and calls
   * the {@link onSequenced} listeners. Returns at once; the work runs in the background: at once
   * when a subscriber of this process follows `orgId`, otherwise after `coalesceMs` (with the other
   * processes told at once, so that one whose subscribers follow `orgId` numbers them first).
   * `hints` (changes under topics such as {@link threadTopic}, with what their writer knows of
   * them) go to this process's {@link onHint} listeners first, synchronously; when one had a
   * listener, the numbering starts two turns of the event loop later (`setImmediate`), after the
   * woken waiters and the writer's own answer are on their way, and `true` is returned.
   */
  announce(orgId: string, hints?: readonly Hint[]): boolean;
  /**
   * Calls `listener` with the `detail` of each hint under `topic` of `orgId` that this process
   * announces ({@link announce}), synchronously, before the change's events are numbered:
   * a hint that lets a waiter of this process read at once instead of after the sequencer's round
   * trip. Hints are not events: they come only from this process, carry what their writer chose
   * (the topic's owner knows its shape) and no seq; a waiter that finds nothing new after one keeps
   * waiting for the events. Returns the unsubscribe.
   */
  onHint(orgId: string, topic: string, listener: (detail: unknown) => void): () => void;
  /**
   * Numbers every event of `orgId` committed before this call (joining or following a numbering
   * under way) and resolves then: a read of the log after it sees the caller's own writes.
   * Errors: rejects with the storage's error.
   */
  settle(orgId: string): Promise<void>;
  /**
   * Subscribes `listener` to `orgId`'s events of `topic` from now on. Resolves once the hub knows
   * where the log stands: when it followed no one of the organization yet, it first numbers what
   * is committed (a writer may have put that off) and then reads the head, so every event
   * committed before the call is at or below {@link Subscription.head}.
   */
  subscribe(orgId: string, topic: string, listener: EventListener): Promise<Subscription>;
  /** Calls `listener` with the events this process numbered (in seq order, per organization). */
  onSequenced(listener: (orgId: string, events: readonly StoredEvent[]) => void): () => void;
  /**
   * Tells every process that what `key` names changed: this process's {@link onSignal} listeners
   * at once (synchronously), the other processes through the notifier (a NOTIFY only where one of
   * them follows the key). A signal carries nothing: its listeners read what changed. For what is
   * not in the event log, such as the live items of a thread's stream (events/deltas.ts).
   */
  signal(key: string): void;
  /** Calls `listener` on each {@link signal} of `key`, from this process or another. Returns the unsubscribe. */
  onSignal(key: string, listener: () => void): () => void;
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
  /** How often events left without a seq (their writer died after its commit) are numbered; default 1,000 ms. */
  sweepMs?: number;
  /**
   * How long the numbering of an announcement that no subscriber of this process waits for is
   * put off, so that the changes of that window are numbered by one statement; default 25 ms. 0
   * numbers every announcement at once.
   */
  coalesceMs?: number;
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
  const sequencedListeners = new Set<(orgId: string, events: readonly StoredEvent[]) => void>();
  const hints = new Map<string, Set<(detail: unknown) => void>>();
  const signalListeners = new Map<string, Set<() => void>>();
  const sequencing = new Map<string, { again: boolean; next: Array<(error?: unknown) => void> }>();
  const stats = { reads: 0, sequencings: 0, events: 0 };
  const coalesceMs = options.coalesceMs ?? 25;
  /** Organizations whose numbering is put off, with the timer that will run it. */
  const deferred = new Map<string, NodeJS.Timeout>();
  let closed = false;

  const poll = setInterval(() => void pollFollowed(), options.pollMs ?? 5_000);
  poll.unref();
  const sweep = setInterval(() => void sweepUnsequenced(), options.sweepMs ?? 1_000);
  sweep.unref();

  /**
   * Numbers the events of `orgId` that have none yet; one run at a time per organization. `done`
   * (with the run's failure, if any) is called after a run that started after this call.
   */
  function sequence(orgId: string, done?: (error?: unknown) => void): void {
    // This run (or the one it joins) numbers what a put-off numbering would have.
    const putOff = deferred.get(orgId);
    if (putOff) {
      clearTimeout(putOff);
      deferred.delete(orgId);
    }
    const running = sequencing.get(orgId);
    if (running) {
      running.again = true;
      if (done) running.next.push(done);
      return;
    }
    const state = { again: true, next: done ? [done] : [] };
    sequencing.set(orgId, state);
    void (async () => {
      let failure: unknown;
      try {
        while (state.again && !closed) {
          state.again = false;
          const satisfied = state.next.splice(0);
          for (;;) {
            stats.sequencings += 1;
            const rows = await db.query<EventRow>(`SELECT ${eventColumns} FROM acs_sequence_events($1, $2)`, [orgId, sequenceBatch]);
            if (rows.length > 0) handOut(orgId, rows.map(toEvent).sort((a, b) => a.seq - b.seq));
            if (rows.length < sequenceBatch) break;
          }
          for (const callback of satisfied) callback();
        }
      } catch (error) {
        failure = error;
        if (!closed) log('events: numbering new events failed; the sweep retries', error);
      } finally {
        sequencing.delete(orgId);
        for (const callback of state.next.splice(0)) callback(failure ?? (closed ? new Error('the event hub is closed') : undefined));
      }
    })();
  }

  /**
   * Numbers `orgId`'s new events `coalesceMs` from the first announcement no subscriber of this
   * process waits for, and tells the other processes now that they are there.
   */
  function defer(orgId: string): void {
    notifier.publish(unnumberedKey(orgId));
    if (deferred.has(orgId)) return;
    const timer = setTimeout(() => {
      deferred.delete(orgId);
      if (!closed) sequence(orgId);
    }, coalesceMs);
    // The sweep numbers what a process that exits meanwhile leaves.
    timer.unref();
    deferred.set(orgId, timer);
  }

  /** What follows a numbering: the other processes are told, this one's subscribers and listeners get the events. */
  function handOut(orgId: string, events: StoredEvent[]): void {
    notifier.publish(orgId);
    const followed = orgs.get(orgId);
    if (followed) void followed.ready.then(() => take(followed, events), () => {});
    for (const listener of sequencedListeners) {
      try {
        listener(orgId, events);
      } catch (error) {
        log('events: a listener of numbered events failed', error);
      }
    }
  }

  /** Numbers the events left without a seq a while ago (their writer died before numbering them). */
  async function sweepUnsequenced(): Promise<void> {
    if (closed) return;
    try {
      const rows = await db.query<{ org_id: string }>(
        `SELECT DISTINCT org_id FROM events WHERE seq IS NULL AND created_at < now() - interval '1 second' LIMIT 100`,
      );
      for (const row of rows) sequence(row.org_id);
    } catch (error) {
      if (!closed) log('events: looking for events without a seq failed', error);
    }
  }

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
    const stopReading = notifier.subscribe(orgId, () => void read(state));
    // Another process put off numbering what it wrote; this one has subscribers, so it numbers
    // now (one numbering runs at a time per organization, whoever starts it).
    const stopNumbering = notifier.subscribe(unnumberedKey(orgId), () => void sequence(orgId));
    state.stopListening = () => {
      stopReading();
      stopNumbering();
    };
    // What is committed now is numbered before the head is read, so that it is at or below the
    // head: a writer (of this process or another) may have put its numbering off.
    state.ready = new Promise<void>((resolve, reject) => sequence(orgId, (error) => (error === undefined ? resolve() : reject(error))))
      .then(() => headSeq(db, orgId))
      .then((head) => {
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
          // What storage holds after the head is the log as it is (events retention deleted skipped).
          if (rows.length > 0) take(state, rows.map(toEvent), true);
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

  /**
   * Hands out `events` (in seq order) that follow `state.head` without a gap, and moves the head.
   * Events at or before the head were handed out already (a read and a numbering overlapped); a
   * gap means events numbered by another process not read yet: a read fetches them all. A `read`
   * result is taken whole: it is what storage holds after the head.
   */
  function take(state: OrgState, events: StoredEvent[], fromRead = false): void {
    const fresh = events.filter((event) => event.seq > state.head);
    if (fresh.length === 0) return;
    if (!fromRead && fresh[0]!.seq !== state.head + 1) {
      void read(state);
      return;
    }
    state.head = fresh.at(-1)!.seq;
    stats.events += fresh.length;
    dispatch(state, fresh);
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
    announce(orgId, told) {
      if (closed) return false;
      let hinted = false;
      for (const hint of told ?? []) {
        for (const listener of hints.get(`${orgId} ${hint.topic}`) ?? []) {
          hinted = true;
          try {
            listener(hint.detail);
          } catch (error) {
            log('events: a hint listener failed', error);
          }
        }
      }
      if (!hinted) {
        if (coalesceMs > 0 && !orgs.has(orgId)) defer(orgId);
        else sequence(orgId);
        return false;
      }
      // On a database with one connection (PGlite) the numbering runs in this thread: it waits
      // until the waiters the hint woke and the writer (which yields one turn) have answered.
      setImmediate(() => setImmediate(() => !closed && sequence(orgId)));
      return true;
    },
    onHint(orgId, topic, listener) {
      const key = `${orgId} ${topic}`;
      let set = hints.get(key);
      if (!set) hints.set(key, (set = new Set()));
      set.add(listener);
      return () => {
        set.delete(listener);
        if (set.size === 0 && hints.get(key) === set) hints.delete(key);
      };
    },
    settle(orgId) {
      if (closed) return Promise.reject(new Error('the event hub is closed'));
      return new Promise<void>((resolve, reject) => sequence(orgId, (error) => (error === undefined ? resolve() : reject(error))));
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
    onSequenced(listener) {
      sequencedListeners.add(listener);
      return () => sequencedListeners.delete(listener);
    },
    signal(key) {
      for (const listener of [...(signalListeners.get(key) ?? [])]) listener();
      notifier.publish(key);
    },
    onSignal(key, listener) {
      let set = signalListeners.get(key);
      if (!set) {
        set = new Set();
        signalListeners.set(key, set);
      }
      set.add(listener);
      // The notifier tells of other processes' signals; this process's own reach the set directly.
      const stopRemote = notifier.subscribe(key, listener);
      return () => {
        stopRemote();
        set.delete(listener);
        if (set.size === 0 && signalListeners.get(key) === set) signalListeners.delete(key);
      };
    },
    stats: () => ({ ...stats, hintListeners: [...hints.values()].reduce((n, set) => n + set.size, 0) }),
    async close() {
      // What this process put off is numbered before it stops, so a graceful stop leaves nothing
      // for another process's sweep.
      await Promise.all(
        [...deferred.keys()].map(
          (orgId) =>
            new Promise<void>((resolve) => sequence(orgId, () => resolve())),
        ),
      );
      closed = true;
      clearInterval(poll);
      clearInterval(sweep);
      for (const state of orgs.values()) {
        state.stopListening();
        if (state.retry) clearTimeout(state.retry);
      }
      orgs.clear();
      hints.clear();
      sequencedListeners.clear();
    },
  };
}
