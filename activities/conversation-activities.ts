/**
 * The activities of conversations: open a thread, send a message, wait for a reply. They are
 * what durable conversation workflows (pipelines, scheduled jobs) are made of.
 *
 * - Posts are idempotent by an `Idempotency-Key` (contract §1) that the caller derives from its
 *   workflow id and step, never from the attempt: a retried or replayed activity gets the stored
 *   answer and nothing is posted twice.
 * - Waiting long-polls the thread (`wait` up to 30 s, contract §5 "Thread page") in a loop and
 *   heartbeats its cursor (`next_after`); a retried attempt resumes from the last heartbeat's
 *   cursor, and a cancelled one stops at once (the poll in flight is aborted).
 * - The organization key comes from a keyring (`Connection.apiKeyEnv` then
 *   `apiKeyEnvFallbacks`): a 401 moves on to the next key, the key that worked is tried first
 *   next time, and when every key is refused the activity fails non-retryably (`keys_refused`,
 *   naming the variables, never a value) instead of retrying into a storm.
 */
import type { Message } from '../api/schemas.ts';
import { AcsClient, MAX_WAIT_SECONDS } from '../client/acs-client.ts';
import { AcsApiError } from '../client/errors.ts';
import { ToolkitError } from '../errors/catalogue.ts';
import { activityContext } from './activity-context.ts';
import type { Connection } from './connection.ts';
import { toApplicationFailure } from './failures.ts';

/** Dependencies of the conversation activities. */
export interface ConversationDeps {
  /** Environment that key variables resolve against (default `process.env`). */
  env?: NodeJS.ProcessEnv;
  /** `fetch` for the client; tests pass a counting or failing one. */
  fetch?: typeof fetch;
}


/**
 * Creates the conversation activities over their dependencies. Every activity raises
 * `ApplicationFailure`s typed by the stable codes (contract §2, `keys_refused`, `timed_out`).
 */
export function createConversationActivities(deps: ConversationDeps = {}) {
  const env = deps.env ?? process.env;
  // Index of the key that last worked, per service and keyring: later calls start there.
  const preferred = new Map<string, number>();

  /** Runs `fn` with a client on each key of the keyring in turn until one is not refused. */
  async function withKeyring<T>(connection: Connection, fn: (client: AcsClient) => Promise<T>): Promise<T> {
    const names = [connection.apiKeyEnv, ...(connection.apiKeyEnvFallbacks ?? [])];
    const ringId = `${connection.baseUrl}\u0000${names.join('\u0000')}`;
    const start = preferred.get(ringId) ?? 0;
    const refused: string[] = [];
    for (let k = 0; k < names.length; k++) {
      const i = (start + k) % names.length;
      const name = names[i]!;
      const apiKey = env[name];
      if (!apiKey) {
        refused.push(`${name} (not set)`);
        continue;
      }
      try {
        const result = await fn(new AcsClient({ baseUrl: connection.baseUrl, apiKey, ...(deps.fetch ? { fetch: deps.fetch } : {}) }));
        preferred.set(ringId, i);
        return result;
      } catch (error) {
        if (error instanceof AcsApiError && error.status === 401) {
          refused.push(`${name} (${error.code})`);
          continue;
        }
        throw error;
      }
    }
    throw new ToolkitError('keys_refused', `every organization key was refused: ${refused.join(', ')}`);
  }

  async function call<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (error) {
      throw toApplicationFailure(error);
    }
  }

  return {
    /**
     * Opens a thread on an edge with its first message (`POST /edges/{edge_id}/threads`).
     * Input: the edge, the sender (a participant of the edge), the content and subject, and the
     * `idempotencyKey` of this step. Output: the thread's id and its first message's id.
     * Errors: `not_a_participant`, `not_found`, `keys_refused`, `idempotency_key_mismatch`.
     */
    async openThread(input: {
      connection: Connection;
      edgeId: string;
      senderId: string;
      content: string;
      subject?: string;
      channel?: string;
      idempotencyKey: string;
    }): Promise<{ threadId: string; messageId: string }> {
      return call(() =>
        withKeyring(input.connection, async (client) => {
          const thread = await client.openThread(
            input.edgeId,
            { sender_agent_id: input.senderId, content: input.content, ...(input.subject ? { subject: input.subject } : {}), ...(input.channel ? { channel: input.channel } : {}) },
            { idempotencyKey: input.idempotencyKey },
          );
          const first = await client.getThread(thread.thread_id, { limit: 1 });
          return { threadId: thread.thread_id, messageId: first.messages[0]?.message_id ?? '' };
        }),
      );
    },

    /**
     * Appends a message to a thread (`POST /threads/{thread_id}/messages`) under the step's
     * `idempotencyKey`. Output: the message's id. Errors: `not_a_participant`, `not_found`,
     * `keys_refused`, `idempotency_key_mismatch`.
     */
    async sendMessage(input: { connection: Connection; threadId: string; senderId: string; content: string; idempotencyKey: string }): Promise<{ messageId: string }> {
      return call(() =>
        withKeyring(input.connection, async (client) => {
          const message = await client.appendMessage(input.threadId, { sender_agent_id: input.senderId, content: input.content }, { idempotencyKey: input.idempotencyKey });
          return { messageId: message.message_id };
        }),
      );
    },

    /**
     * Waits for the first message from `fromId` in a thread after the message `after`, long
     * polling up to 30 s at a time until `deadline` (ms since the epoch). Heartbeats the cursor
     * after every poll; a retried attempt resumes from the last heartbeat's cursor. Output: the
     * message. Errors: `timed_out` (non-retryable) at the deadline, `keys_refused`, `not_found`;
     * a cancelled activity stops during its poll.
     */
    async waitForMessage(input: { connection: Connection; threadId: string; after: string | null; fromId: string; deadline: number }): Promise<Message> {
      const context = activityContext();
      const resumed = context?.info.heartbeatDetails as { after?: string | null } | undefined;
      let after = resumed && 'after' in resumed ? (resumed.after ?? null) : input.after;
      return call(async () => {
        for (;;) {
          const left = input.deadline - Date.now();
          if (left <= 0) throw new ToolkitError('timed_out', `no message from ${input.fromId} in thread ${input.threadId} before the deadline`);
          const wait = Math.min(MAX_WAIT_SECONDS, Math.ceil(left / 1000));
          let page;
          try {
            page = await withKeyring(input.connection, (client) =>
              client.getThread(input.threadId, { after, wait }, context ? { signal: context.cancellationSignal } : undefined),
            );
          } catch (error) {
            // A cancelled activity reports its cancellation, not the aborted request.
            if (context?.cancellationSignal.aborted) throw context.cancellationSignal.reason;
            throw error;
          }
          const reply = page.messages.find((m) => m.sender_id === input.fromId);
          if (reply) return reply;
          after = page.next_after ?? after;
          context?.heartbeat({ after });
        }
      });
    },
  };
}

/** The conversation activities, as workflows see them (`import type` only). */
export type ConversationActivities = ReturnType<typeof createConversationActivities>;
