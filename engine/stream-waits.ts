/**
 * How the local engine waits for replies: on one Server-Sent Events stream of the organization's
 * `message.created` events per run (contract §9), instead of one long poll per waiting step.
 *
 * The stream is opened at the run's first awaited step, before its message is sent, and kept
 * until the run ends; every waiting step of the run (parallel members, map items, sub-pipelines)
 * is woken from it. A step's reply is the first message of the awaited participant after its own
 * message, as a thread read says: on the stream, a message of that participant in the thread that
 * comes after the step's own message (the stream is in the log's order, which keeps a thread's
 * order), or that the service says answers it (`answers_message_id`). One the step cannot judge
 * (its own message was not seen on the stream) makes it read the thread. The step's send ends with
 * a read of the thread, and a read follows every `reconcileEvery` without news, so nothing is
 * missed while the stream reconnects.
 *
 * Against a service without events (the stream's route is 404), or once the stream fails for good
 * (a 4xx on reconnecting: the key revoked, the log expired), steps wait as before: one long poll
 * each (`converse`).
 */
import type { MessageCreatedData } from '../api/events.ts';
import type { z } from 'zod';
import type { Connection } from '../activities/connection.ts';
import type { ConversationActivities, ConverseInput, ConverseResult, ResolvedTeam, StepReply } from '../activities/conversation-activities.ts';
import { createKeyring } from '../activities/keyring.ts';
import { AcsClient } from '../client/acs-client.ts';
import { AcsApiError } from '../client/errors.ts';
import { DEFAULT_RECONCILE_EVERY } from '../definitions/pipeline-limits.ts';
import { parseDuration } from '../definitions/durations.ts';
import type { ExchangeOptions, PipelineActivities } from '../workflows/pipeline-orchestration.ts';
import { WaitKinds } from '../workflows/pipeline-orchestration.ts';
import { awaitReply, type WaitRequest } from '../workflows/reply-wait.ts';

/** The activities stream waits need besides the pipeline's own: the send with its read, and the read. */
export type StreamableActivities = PipelineActivities & Pick<ConversationActivities, 'sendStep' | 'readReply' | 'waitForMessage'>;

/** Message ids seen on the stream, remembered to tell whether a step's own message came by. */
const REMEMBERED_MESSAGES = 10_000;

type MessageData = z.infer<typeof MessageCreatedData>;

/** One step waiting on the stream. */
interface Waiter {
  threadId: string;
  sentId: string;
  fromId: string;
  /** The step's own message came by on the stream: the next message of `fromId` in the thread is the reply. */
  sentSeen: boolean;
  reply?: StepReply;
  read: boolean;
  wake?: () => void;
  /** The run's stream was closed (the run ended, or was cancelled): the wait ends without another read. */
  closed?: boolean;
}

/** The one stream of a run and the steps waiting on it. */
class RunStream {
  readonly #waiters = new Set<Waiter>();
  readonly #seen = new Set<string>();
  readonly #seenOrder: string[] = [];
  readonly #stop = new AbortController();
  /** The stream failed for good: the run's steps wait by long poll from now on. */
  broken = false;

  constructor(client: AcsClient, orgId: string) {
    void this.#follow(client, orgId);
  }

  async #follow(client: AcsClient, orgId: string): Promise<void> {
    try {
      for await (const event of client.streamEvents(orgId, { types: ['message.created'], signal: this.#stop.signal })) {
        if (event.type === 'message.created') this.#receive(event.data);
      }
    } catch {
      // A refusal on reconnecting (events_expired, a revoked key): the waiting steps read their
      // threads now, and the run's later steps wait by long poll.
    }
    if (this.#stop.signal.aborted) return;
    this.broken = true;
    for (const waiter of this.#waiters) {
      waiter.read = true;
      waiter.wake?.();
    }
  }

  #receive(message: MessageData): void {
    this.#seen.add(message.message_id);
    this.#seenOrder.push(message.message_id);
    if (this.#seenOrder.length > REMEMBERED_MESSAGES) this.#seen.delete(this.#seenOrder.shift()!);
    for (const waiter of this.#waiters) {
      if (waiter.reply || waiter.threadId !== message.thread_id) continue;
      if (message.message_id === waiter.sentId) {
        waiter.sentSeen = true;
        continue;
      }
      if (message.sender_id !== waiter.fromId) continue;
      if (message.answers_message_id === waiter.sentId || waiter.sentSeen) waiter.reply = { messageId: message.message_id, senderId: message.sender_id, content: message.content };
      else waiter.read = true;
      waiter.wake?.();
    }
  }

  /**
   * Waits for a step's reply (see the module comment). Output: the reply. Errors: `timed_out`
   * (non-retryable, with details `[{ threadId, messageId }]`), the reads' errors.
   */
  async wait(request: WaitRequest): Promise<StepReply> {
    const waiter: Waiter = { threadId: request.threadId, sentId: request.sentId, fromId: request.fromId, sentSeen: this.#seen.has(request.sentId), read: this.broken };
    if (this.#stop.signal.aborted) throw new Error('the run ended: its event stream is closed');
    this.#waiters.add(waiter);
    const pause = (ms: number) =>
      waiter.reply || waiter.read || waiter.closed
        ? Promise.resolve(true)
        : new Promise<boolean>((resolve) => {
            const timer = setTimeout(() => {
              waiter.wake = undefined;
              resolve(false);
            }, ms);
            waiter.wake = () => {
              clearTimeout(timer);
              waiter.wake = undefined;
              resolve(true);
            };
          });
    // Once the stream is closed (the run is over: cancelled, or failed elsewhere) a wait reads no more.
    const read = () => (waiter.closed ? Promise.reject(new Error('the run ended: its event stream is closed')) : request.read());
    try {
      return await awaitReply(waiter, { ...request, read }, pause, Date.now);
    } finally {
      this.#waiters.delete(waiter);
    }
  }

  /** Ends the stream, and the waits still on it (a cancelled run's), without a further read. */
  close(): void {
    this.#stop.abort();
    for (const waiter of this.#waiters) {
      waiter.closed = true;
      waiter.wake?.();
    }
  }
}

/**
 * The activities of a local run with stream waits: `converse` of an awaited step sends with
 * `sendStep` and waits on the run's stream (opened on the first such step); the rest as given.
 * Input: the (retrying) activities, and the environment the organization key is read from (the
 * connection's keyring). Output: the activities and `close()`, which ends the stream (call it when
 * the run ends). Raises nothing itself.
 */
export function withStreamWaits(acts: StreamableActivities, env: NodeJS.ProcessEnv, fetchImpl?: typeof fetch): { acts: PipelineActivities; close(): void } {
  let orgId: string | undefined;
  let stream: Promise<RunStream | undefined> | undefined;
  const withKeyring = createKeyring(env, (baseUrl, _name, apiKey) => new AcsClient({ baseUrl, apiKey, ...(fetchImpl ? { fetch: fetchImpl } : {}) }));

  /** The run's stream, opened once; undefined when the service has no event log. */
  const open = (connection: Connection): Promise<RunStream | undefined> => {
    stream ??= (async () => {
      if (orgId === undefined) return undefined;
      const org = orgId;
      try {
        // A probe of the log on the keyring: the key that works, and whether there is a log at all.
        const client = await withKeyring(connection, async (c) => {
          await c.listEvents(org, { limit: 1, types: ['message.created'] });
          return c;
        });
        return new RunStream(client, org);
      } catch (error) {
        if (error instanceof AcsApiError && error.status === 404) return undefined;
        throw error;
      }
    })();
    return stream;
  };

  return {
    acts: {
      resolveTeam: async (input): Promise<ResolvedTeam> => {
        const team = await acts.resolveTeam(input);
        orgId ??= team.orgId;
        return team;
      },
      converse: async (input: ConverseInput, options: ExchangeOptions = {}): Promise<ConverseResult> => {
        if (input.awaitFromId === undefined) {
          const sent = await acts.sendStep(input);
          options.sent?.(sent.threadId);
          return sent;
        }
        const run = await open(input.connection);
        const sent = await acts.sendStep(input);
        options.sent?.(sent.threadId);
        if (sent.reply) return sent;
        const fromId = input.awaitFromId;
        if (!run || run.broken) {
          // No event log (or the stream failed for good): a long poll of the thread, as before streams.
          options.waiting?.(WaitKinds.poll);
          const message = await acts.waitForMessage({ connection: input.connection, threadId: sent.threadId, after: sent.messageId, fromId, deadline: input.deadline ?? Date.now() });
          return { ...sent, reply: { messageId: message.message_id, senderId: message.sender_id, content: message.content } };
        }
        options.waiting?.(WaitKinds.stream);
        const reply = await run.wait({
          threadId: sent.threadId,
          sentId: sent.messageId,
          fromId,
          deadline: input.deadline ?? Date.now(),
          reconcileEveryMs: options.reconcileEveryMs ?? parseDuration(DEFAULT_RECONCILE_EVERY)!,
          read: () => acts.readReply({ connection: input.connection, threadId: sent.threadId, after: sent.messageId, fromId }),
        });
        return { ...sent, reply };
      },
    },
    close: () => {
      void stream?.then((s) => s?.close(), () => undefined);
    },
  };
}
