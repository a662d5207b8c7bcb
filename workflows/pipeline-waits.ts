/**
 * Waits that hold nothing (issue 19): how a pipeline run on Temporal waits for a reply in the
 * workflow itself instead of in an activity. No activity slot, no connection: a waiting step is a
 * `condition` with a timer in the workflow's state, which a worker need not even keep in memory.
 *
 * What wakes a waiting step:
 *
 * - **The `message` signal** ({@link messageSignal}), sent by `teamctl worker --events-listen`
 *   (`worker/events-listener.ts`) when the organization's webhook delivers a `message.created` of
 *   a thread the run waits on. The run lists those threads, with whom it waits for in each, in the
 *   search attribute {@link AWAITING_THREADS} (`THREAD_ID:PARTICIPANT_ID`), which the listener
 *   looks up. A signal whose message `answers_message_id` names the step's own message *is* the
 *   reply (the service says so: the first message of the awaited participant after it); any other
 *   message of that participant in the thread (a late duplicate, a reply to an older message, a
 *   service that does not say what a message answers) only makes the step read its thread.
 *   Signals are idempotent by event id.
 * - **A reconcile read** (`readReply`, a local activity): every `reconcileEvery` of waiting, and at
 *   the deadline, the step reads its thread for the first message of the awaited participant after
 *   its own. The send itself (`sendStep`) ends with such a read, so a reply written before the
 *   wait began is never missed. Correctness never depends on a delivery arriving: a lost one
 *   delays the step by at most `reconcileEvery`.
 *
 * Deterministic: every decision depends on the history only (signals, timers, local activities'
 * results). The search attribute is upserted only when the set of awaited threads changed, and
 * emptied only when the run moves on to a durable wait of another kind (a sleep, a sub-pipeline),
 * so a loop waiting again and again on one thread upserts once.
 */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { condition, defineSignal, setHandler, upsertSearchAttributes } from '@temporalio/workflow';
import type { StepReply } from '../activities/conversation-activities.ts';
import { awaitReply, type WaitRequest } from './reply-wait.ts';

/** The search attribute (KeywordList) listing `THREAD_ID:PARTICIPANT_ID` of every reply a run waits for. */
export const AWAITING_THREADS_NAME = 'TeamctlAwaitingThreads';
export const AWAITING_THREADS = defineSearchAttributeKey(AWAITING_THREADS_NAME, SearchAttributeType.KEYWORD_LIST);

/** The value of {@link AWAITING_THREADS} for a wait: the thread and whom it waits for there. */
export function awaitingKey(threadId: string, fromId: string): string {
  return `${threadId}:${fromId}`;
}

/** The payload of the `message` signal: what the listener passes on of a `message.created` event. */
export interface MessageSignal {
  /** The event's id (the webhook delivery's `webhook-id`): signals are idempotent by it. */
  event_id: string;
  thread_id: string;
  message_id: string;
  sender_id: string;
  content: string;
  /** The message it answers, as the service says (absent: a service that does not say). */
  answers_message_id?: string | null;
}

/** Signal sent to a waiting run by `teamctl worker --events-listen`. */
export const messageSignal = defineSignal<[MessageSignal]>('message');

/** Event ids remembered for idempotency (a redelivery comes within the webhook's retries). */
const REMEMBERED_EVENTS = 512;

/** One step waiting for its reply. */
interface Waiter {
  threadId: string;
  /** The step's own message: the reply is the first message of `fromId` after it. */
  sentId: string;
  fromId: string;
  reply?: StepReply;
  /** A signal the step cannot judge by itself arrived: read the thread. */
  read: boolean;
}

export type { WaitRequest } from './reply-wait.ts';

/**
 * The push waits of one workflow run: registers the `message` signal's handler (call it once,
 * at the start of the workflow, in every run, so a signal is never left unhandled) and waits.
 */
export class PushWaits {
  readonly #waiters = new Set<Waiter>();
  readonly #seen = new Set<string>();
  readonly #seenOrder: string[] = [];
  /** What the search attribute holds now (sorted), as this run last upserted it. */
  #listed: string[] = [];

  constructor() {
    setHandler(messageSignal, (message) => this.#receive(message));
  }

  #receive(message: MessageSignal): void {
    if (this.#seen.has(message.event_id)) return;
    this.#seen.add(message.event_id);
    this.#seenOrder.push(message.event_id);
    if (this.#seenOrder.length > REMEMBERED_EVENTS) this.#seen.delete(this.#seenOrder.shift()!);
    for (const waiter of this.#waiters) {
      if (waiter.reply || waiter.threadId !== message.thread_id || waiter.fromId !== message.sender_id) continue;
      if (message.answers_message_id === waiter.sentId) waiter.reply = { messageId: message.message_id, senderId: message.sender_id, content: message.content };
      else waiter.read = true;
    }
  }

  /** Upserts the search attribute when the awaited threads differ from what it lists. */
  #sync(): void {
    const wanted = [...new Set([...this.#waiters].map((w) => awaitingKey(w.threadId, w.fromId)))].sort();
    if (wanted.length === this.#listed.length && wanted.every((v, i) => v === this.#listed[i])) return;
    upsertSearchAttributes([{ key: AWAITING_THREADS, value: wanted.length > 0 ? wanted : null }]);
    this.#listed = wanted;
  }

  /**
   * Before a durable wait of another kind (a sleep, a sub-pipeline): the search attribute stops
   * listing threads no step waits on, so their messages stop waking the run.
   */
  settle(): void {
    if (this.#listed.length > 0) this.#sync();
  }

  /**
   * Waits for the reply of `request`: a `message` signal that names it, else what a reconcile read
   * finds (every `reconcileEveryMs`, at once after a signal it cannot judge, and at the deadline).
   * Output: the reply. Errors: `timed_out` (non-retryable, with details `[{ threadId, messageId }]`)
   * when none came by the deadline; the cancellation of the run.
   */
  async wait(request: WaitRequest): Promise<StepReply> {
    const waiter: Waiter = { threadId: request.threadId, sentId: request.sentId, fromId: request.fromId, read: false };
    this.#waiters.add(waiter);
    this.#sync();
    try {
      return await awaitReply(waiter, request, (ms) => condition(() => waiter.reply !== undefined || waiter.read, ms), Date.now);
    } finally {
      this.#waiters.delete(waiter);
    }
  }
}
