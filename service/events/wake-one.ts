/**
 * Waiters that compete for the same thing, woken one at a time (issue 21, defect 1).
 *
 * The waits of one agent (MCP `wait_for_messages`, any number of them, in any requests) all want
 * the agent's unread messages, and a message is taken once: waking all of them for one message
 * means one useful read and a herd of useless ones (2,000 held waits woken by one append stalled
 * the server for seconds). A queue per agent wakes, for each event, only the oldest waiting member
 * that accepts it; a member that takes messages and leaves more behind (`has_more`) passes the wake
 * on. No event is lost on the way: when the members it would wake are all busy reading, the oldest
 * of them is told to read again before it sleeps.
 */
import type { EventHub, Subscription } from './hub.ts';
import type { StoredEvent } from './log.ts';

/** One waiter in a {@link WakeOneQueues} queue. */
export interface QueueMember {
  /**
   * Sleeps until an event this member accepts wakes it (true), `ms` pass or `signal` aborts
   * (false). Returns true at once when such an event came while the member was busy.
   */
  wait(ms: number, signal?: AbortSignal): Promise<boolean>;
  /**
   * Leaves the queue (idempotent). `passOn`: the member leaves work behind (it took only part of
   * what was there), so the next waiting member is woken to take the rest. A wake the member got
   * and did not use is passed on too.
   */
  leave(passOn?: boolean): void;
}

/** Queues of competing waiters, one per organization and topic. */
export interface WakeOneQueues {
  /**
   * Joins the queue of `topic` in `orgId` (the agent's, `recipientTopic(agentId)`), accepting the
   * events `accepts` says. Resolves once subscribed: events committed from then on wake a member;
   * a read that starts after the join sees every earlier one.
   */
  join(orgId: string, topic: string, accepts: (event: StoredEvent) => boolean): Promise<QueueMember>;
  /** Members in every queue (for tests and benchmarks). */
  size(): number;
}

type State = 'busy' | 'idle' | 'woken';

class Member implements QueueMember {
  state: State = 'busy';
  /** An event came for this member while it was busy: read again before sleeping. */
  dirty = false;
  left = false;
  #resolve: ((woken: boolean) => void) | undefined;
  readonly queue: Queue;
  readonly accepts: (event: StoredEvent) => boolean;

  constructor(queue: Queue, accepts: (event: StoredEvent) => boolean) {
    this.queue = queue;
    this.accepts = accepts;
  }

  /** Wakes an idle member: it stays 'woken' until its own code runs again, then reads ('busy'). */
  wake(): void {
    if (this.state !== 'idle') return;
    this.state = 'woken';
    this.#resolve?.(true);
  }

  wait(ms: number, signal?: AbortSignal): Promise<boolean> {
    if (this.left) return Promise.resolve(false);
    if (this.dirty) {
      this.dirty = false;
      return Promise.resolve(true);
    }
    if (ms <= 0 || signal?.aborted) return Promise.resolve(false);
    this.state = 'idle';
    const slept = new Promise<boolean>((resolve) => {
      const done = (woken: boolean) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', abort);
        this.#resolve = undefined;
        // Not woken: busy again at once, so an event from now on marks it dirty instead of waking it.
        if (!woken) this.state = 'busy';
        resolve(woken);
      };
      const abort = () => done(false);
      const timer = setTimeout(() => done(false), ms);
      signal?.addEventListener('abort', abort, { once: true });
      this.#resolve = done;
    });
    // Woken: 'woken' until the caller's code runs (a microtask later), so that the other events of
    // the same batch count on this member's coming read rather than waking another member.
    return slept.then((woken) => {
      if (woken && this.state === 'woken') this.state = 'busy';
      return woken;
    });
  }

  leave(passOn = false): void {
    if (this.left) return;
    this.left = true;
    // A wake delivered but not used (woken, then timed out or aborted before reading) is passed on.
    const unused = this.state === 'woken' || this.dirty;
    this.#resolve?.(false);
    this.queue.remove(this, passOn || unused);
  }
}

class Queue {
  readonly members: Member[] = [];
  subscription: Promise<Subscription> | undefined;

  readonly onEmpty: () => void;

  constructor(onEmpty: () => void) {
    this.onEmpty = onEmpty;
  }

  onEvents(events: readonly StoredEvent[]): void {
    for (const event of events) {
      const matching = this.members.filter((m) => !m.left && m.accepts(event));
      // A member woken and not yet reading will see this event too.
      if (matching.some((m) => m.state === 'woken')) continue;
      const idle = matching.find((m) => m.state === 'idle');
      if (idle) {
        idle.wake();
        continue;
      }
      const busy = matching.find((m) => m.state === 'busy');
      if (busy) busy.dirty = true;
    }
  }

  remove(member: Member, passOn: boolean): void {
    const index = this.members.indexOf(member);
    if (index >= 0) this.members.splice(index, 1);
    if (passOn) {
      const next = this.members.find((m) => m.state === 'idle');
      if (next) next.wake();
      else {
        const busy = this.members.find((m) => m.state === 'busy');
        if (busy) busy.dirty = true;
      }
    }
    if (this.members.length === 0) this.onEmpty();
  }
}

/** Creates the queues of one process over `hub`. */
export function createWakeOneQueues(hub: EventHub): WakeOneQueues {
  const queues = new Map<string, Queue>();
  return {
    async join(orgId, topic, accepts) {
      const key = `${orgId} ${topic}`;
      let queue = queues.get(key);
      if (!queue) {
        const created: Queue = new Queue(() => {
          if (queues.get(key) === created) queues.delete(key);
          void created.subscription?.then((s) => s.unsubscribe(), () => {});
        });
        created.subscription = hub.subscribe(orgId, topic, (events) => created.onEvents(events));
        queues.set(key, created);
        queue = created;
      }
      const member = new Member(queue, accepts);
      queue.members.push(member);
      try {
        await queue.subscription;
      } catch (error) {
        member.leave();
        throw error;
      }
      return member;
    },
    size() {
      let n = 0;
      for (const queue of queues.values()) n += queue.members.length;
      return n;
    },
  };
}
