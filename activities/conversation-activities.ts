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
 *   `apiKeyEnvFallbacks`, `activities/keyring.ts`): a 401 moves on to the next key, the key that
 *   worked is tried first next time, and when every key is refused the activity fails
 *   non-retryably (`keys_refused`, naming the variables, never a value; a keyring of one
 *   variable fails with the service's `invalid_api_key`) instead of retrying into a storm.
 */
import { createHash } from 'node:crypto';
import type { Message } from '../api/schemas.ts';
import type { Task } from '../api/tasks.ts';
import { AcsClient, MAX_WAIT_SECONDS } from '../client/acs-client.ts';
import { AcsApiError } from '../client/errors.ts';
import { participantNames } from '../client/team-names.ts';
import { ApplicationFailure } from '@temporalio/common';
import { edgeKey } from '../definitions/pipeline-graph.ts';
import { ToolkitError } from '../errors/catalogue.ts';
import { activityContext } from './activity-context.ts';
import type { Connection } from './connection.ts';
import { toApplicationFailure } from './failures.ts';
import { FINAL_TASK_STATES } from '../workflows/task-states.ts';
import { createKeyring } from './keyring.ts';
import { PipelineStepKinds, type ActivityMetrics, type PipelineStepKind, type PipelineStepOutcome } from './activity-metrics.ts';

/** How often a waiting activity heartbeats while a poll is in flight (ms). */
export const HEARTBEAT_EVERY_MS = 2_000;

/** Longest hold of one poll of a task's thread while `awaitTask` waits (s): a change of the task without a message is seen within it. */
export const TASK_POLL_MAX_SECONDS = 10;

/** A team as a pipeline needs it: participant and edge ids by name. */
export interface ResolvedTeam {
  teamId: string;
  /** Participant name → id (agents and humans). */
  participants: Record<string, string>;
  /** {@link edgeKey} of two participant names → edge id. */
  edges: Record<string, string>;
  /** Names of the team's humans (absent in runs recorded before it was read). */
  humans?: string[];
  /** The organization's id (absent in runs recorded before waits could be pushed). */
  orgId?: string;
  /** What push waits need, as the worker that read the team found it (absent: runs recorded before; they poll). */
  waits?: TeamWaits;
}

/** Whether a run on a team can wait by push (see `WaitModes`, definitions/pipeline-limits.ts). */
export interface TeamWaits {
  /** The organization has an enabled webhook that delivers `message.created` (or `message.*`). */
  webhook: boolean;
  /** The worker registered the search attribute a waiting run lists its threads in (`worker/search-attributes.ts`). */
  registered: boolean;
}

/** Where a step writes: a new thread on an edge, or an existing thread. */
export type ConverseTarget = { edgeId: string; subject?: string } | { threadId: string };

/** Input of `converse`: one step's message and, optionally, the wait for the reply. */
export interface ConverseInput {
  connection: Connection;
  /** The run's business key (the workflow id): with `stepId`, it makes the `Idempotency-Key`. */
  runKey: string;
  stepId: string;
  target: ConverseTarget;
  senderId: string;
  content: string;
  /** Wait for the first message from this participant after the one sent. */
  awaitFromId?: string;
  /** When to give up waiting (ms since the epoch); required with `awaitFromId`. */
  deadline?: number;
}

/** Input of `readReply`: the first message from `fromId` in a thread after the message `after`. */
export interface ReadReplyInput {
  connection: Connection;
  threadId: string;
  after: string;
  fromId: string;
}

/** A reply a step waited for. */
export interface StepReply {
  messageId: string;
  senderId: string;
  content: string;
}

/** Output of `converse`. */
export interface ConverseResult {
  threadId: string;
  messageId: string;
  reply: StepReply | null;
}

/**
 * Input of `createStepTask` and `awaitTask`'s caller: a task step (`task: true`, contract §12)
 * asks on the edge `edgeId` as `requesterId` (the step's `from`; the other end is the assignee).
 */
export interface TaskStepInput {
  connection: Connection;
  /** The run's business key: with `stepId`, it makes the `Idempotency-Key` of the task's creation. */
  runKey: string;
  stepId: string;
  edgeId: string;
  requesterId: string;
  /** The task's title (the step's subject); absent: the service takes the content's first line. */
  title?: string;
  /** The text part the task is asked with (the step's content). */
  content: string;
  /** Wait until the task is final, until this time (ms since the epoch); absent: the step does not wait. */
  deadline?: number;
}

/** A task as a pipeline step needs it: where it is, its state, and what its artifacts hold. */
export interface TaskStepResult {
  taskId: string;
  threadId: string;
  /** The task's state (`submitted` … `completed`, `failed`, `canceled`, `rejected`: A2A's spelling). */
  state: string;
  /** The text parts of its artifacts, in order, joined by blank lines; null when there is none. */
  text: string | null;
  /** The first data part of its artifacts (any JSON), when there is one. */
  data?: unknown;
  /** The content of its status message (why it failed, what it asks), null when none. */
  message: string | null;
}

/** Input of `awaitTask`: the task of a step, its thread (read for news), and the deadline. */
export interface AwaitTaskInput {
  connection: Connection;
  taskId: string;
  threadId: string;
  /** When to give up (ms since the epoch). */
  deadline: number;
}

/** Input of `cancelStepTask`: a task step's task that its run no longer waits for. */
export interface CancelStepTaskInput {
  connection: Connection;
  taskId: string;
}

/** Output of `cancelStepTask`: the task, and whether this call canceled it. */
export interface CancelStepTaskResult {
  taskId: string;
  /** True: the task is `canceled` now; false: it was final already (409 `task_final`), and nothing changed. */
  canceled: boolean;
}

/** A task as {@link TaskStepResult} (the texts of its artifacts, its first data part). */
export function taskStepResult(task: Task): TaskStepResult {
  const parts = task.artifacts.flatMap((artifact) => artifact.parts);
  const texts = parts.flatMap((part) => ('text' in part ? [part.text] : []));
  const data = parts.find((part) => 'data' in part) as { data: unknown } | undefined;
  return {
    taskId: task.task_id,
    threadId: task.thread_id,
    state: task.state,
    text: texts.length > 0 ? texts.join('\n\n') : null,
    ...(data ? { data: data.data } : {}),
    message: task.status_message?.content ?? null,
  };
}

/**
 * What `converse` heartbeats: the sent message and the wait's cursor, and the step it is for
 * (`teamctl runs show` reads the thread of a waiting step from it, as soon as the message is sent).
 */
export interface ConverseCursor {
  threadId: string;
  messageId: string;
  after: string | null;
  /** The step's key (absent in heartbeats of activities started before it was added). */
  stepId?: string;
}

/**
 * The `Idempotency-Key` of a pipeline step: a digest of the run's business key and the step id
 * (1–255 characters as contract §1 wants, whatever the lengths of the names).
 */
export function stepIdempotencyKey(runKey: string, stepId: string): string {
  return `teamctl-step-${createHash('sha256').update(`${runKey}\u0000${stepId}`).digest('hex')}`;
}

/** Dependencies of the conversation activities. */
export interface ConversationDeps {
  /** Environment that key variables resolve against (default `process.env`). */
  env?: NodeJS.ProcessEnv;
  /** `fetch` for the client; tests pass a counting or failing one. */
  fetch?: typeof fetch;
  /**
   * Whether this worker registered the search attribute of push waits (`teamctl worker` sets it
   * once it made sure the attribute exists); `resolveTeam` reports it to the run. Default false.
   */
  pushWaits?: boolean;
  /** A worker's metrics (`teamctl worker --metrics-listen`): each step activity is counted as it ends. */
  metrics?: ActivityMetrics;
}


/**
 * Creates the conversation activities over their dependencies. Every activity raises
 * `ApplicationFailure`s typed by the stable codes (contract §2, `keys_refused`,
 * `unresolved_secret` when no variable of the keyring is set, `timed_out`).
 */
export function createConversationActivities(deps: ConversationDeps = {}) {
  const env = deps.env ?? process.env;
  // The keyring of every call (activities/keyring.ts): a 401 moves on to the next key.
  const withKeyring = createKeyring(env, (baseUrl, _name, apiKey) => new AcsClient({ baseUrl, apiKey, ...(deps.fetch ? { fetch: deps.fetch } : {}) }));

  async function call<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (error) {
      throw toApplicationFailure(error);
    }
  }

  /**
   * Runs the step activity `fn` of `kind` and counts how it ended (`outcome` of its result, or of
   * its failure: `timed_out`, `cancelled`, else `failed`); the result or failure is passed on.
   */
  async function counted<T>(kind: PipelineStepKind, fn: () => Promise<T>, outcome: (result: T) => PipelineStepOutcome): Promise<T> {
    if (!deps.metrics) return fn();
    try {
      const result = await fn();
      deps.metrics.pipelineStep(kind, outcome(result));
      return result;
    } catch (error) {
      const type = error instanceof ApplicationFailure ? error.type : undefined;
      deps.metrics.pipelineStep(kind, type === 'timed_out' ? 'timed_out' : activityContext()?.cancellationSignal.aborted ? 'cancelled' : 'failed');
      throw error;
    }
  }
  const replyOutcome = (reply: unknown, awaited: boolean): PipelineStepOutcome => (reply ? 'replied' : awaited ? 'waiting' : 'sent');

  /**
   * Long-polls a thread (up to 30 s per request) for the first message from `fromId` after
   * `after`, until `deadline`. Under Temporal it heartbeats `details(cursor)` after each poll and
   * every {@link HEARTBEAT_EVERY_MS} while one is in flight: a cancellation arrives with a
   * heartbeat's answer, so a waiting activity learns of it within seconds, not at the end of its
   * poll (the poll is then aborted). Errors: `timed_out` at the deadline, the client's errors.
   */
  async function waitFor(
    input: { connection: Connection; threadId: string; after: string | null; fromId: string; deadline: number },
    details: (after: string | null) => unknown,
  ): Promise<Message> {
    const context = activityContext();
    let after = input.after;
    const beat = context ? setInterval(() => context.heartbeat(details(after)), HEARTBEAT_EVERY_MS) : undefined;
    try {
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
        context?.heartbeat(details(after));
      }
    } finally {
      if (beat) clearInterval(beat);
    }
  }

  /**
   * Sends a step's message — a new thread on an edge or a message in a thread — under the
   * `Idempotency-Key` of the run's business key and the step id, with `expects_reply` when the
   * step awaits the answer. Output: the cursor after it (`after` = the message sent).
   */
  async function send(input: ConverseInput): Promise<ConverseCursor> {
    const idempotencyKey = stepIdempotencyKey(input.runKey, input.stepId);
    // A step that awaits the reply says so: the thread shows whose answer it awaits, and a
    // provider agent the step speaks as leaves that answer to the run (contract addition).
    const expects = input.awaitFromId !== undefined ? { expects_reply: true } : {};
    const sent = await withKeyring(input.connection, async (client) => {
      if ('edgeId' in input.target) {
        const thread = await client.openThread(
          input.target.edgeId,
          { sender_agent_id: input.senderId, content: input.content, ...(input.target.subject ? { subject: input.target.subject } : {}), ...expects },
          { idempotencyKey },
        );
        const first = await client.getThread(thread.thread_id, { limit: 1 });
        const messageId = first.messages[0]!.message_id;
        return { threadId: thread.thread_id, messageId, after: messageId };
      }
      const message = await client.appendMessage(input.target.threadId, { sender_agent_id: input.senderId, content: input.content, ...expects }, { idempotencyKey });
      return { threadId: input.target.threadId, messageId: message.message_id, after: message.message_id };
    });
    return { ...sent, stepId: input.stepId };
  }

  /** The first message from `fromId` after `after`, reading pages without waiting; null when none. */
  async function firstReply(input: ReadReplyInput): Promise<StepReply | null> {
    let after: string | null = input.after;
    for (;;) {
      const page = await withKeyring(input.connection, (client) => client.getThread(input.threadId, { after, limit: 200 }));
      const reply = page.messages.find((m) => m.sender_id === input.fromId);
      if (reply) return { messageId: reply.message_id, senderId: reply.sender_id, content: reply.content };
      if (!page.has_more) return null;
      after = page.next_after;
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
      const after = resumed && 'after' in resumed ? (resumed.after ?? null) : input.after;
      return call(() => waitFor({ ...input, after }, (cursor) => ({ after: cursor })));
    },

    /**
     * Reads a team of an organization by names (`GET /organizations`, `/teams`, the team graph).
     * Output: the team id, participant ids by name, edge ids by {@link edgeKey} of their two
     * participants' names, the names of its humans, the organization's id, and what push waits
     * need (an enabled webhook delivering `message.created`; this worker's search attribute).
     * Errors: `not_applied` (no such organization or team), `keys_refused`.
     */
    async resolveTeam(input: { connection: Connection; organization: string; team: string }): Promise<ResolvedTeam> {
      return call(() =>
        withKeyring(input.connection, async (client) => {
          const org = (await client.listOrganizations()).find((o) => o.org_name === input.organization);
          if (!org) throw new ToolkitError('not_applied', `no organization named "${input.organization}" is reachable with this key; run apply first`);
          const team = (await client.listTeams(org.org_id)).find((t) => t.team_name === input.team);
          if (!team) throw new ToolkitError('not_applied', `organization ${input.organization} has no team named "${input.team}"; run apply first`);
          const graph = await client.getTeam(team.team_id);
          const names = participantNames(graph);
          const edges: Record<string, string> = {};
          for (const edge of graph.edges) {
            const [a, b] = edge.participants.map((id) => names.get(id));
            if (a !== undefined && b !== undefined) edges[edgeKey(a, b)] = edge.edge_id;
          }
          return {
            teamId: team.team_id,
            participants: Object.fromEntries([...names].map(([id, name]) => [name, id])),
            edges,
            humans: graph.humans.map((h) => h.name),
            orgId: org.org_id,
            waits: { webhook: await deliversMessages(client, org.org_id), registered: deps.pushWaits === true },
          };
        }),
      );
    },

    /**
     * One step of a pipeline: sends its message — a new thread on an edge
     * (`POST /edges/{edge_id}/threads`) or a message in a thread (`POST /threads/{id}/messages`)
     * — with an `Idempotency-Key` made from the run's business key and the step id, never the
     * attempt (contract §1), then waits for the first message from `awaitFromId` after it.
     * Heartbeats `{ threadId, messageId, after, stepId }`: a retried attempt (a worker died, a poll
     * failed) does not send again and resumes waiting at the last cursor, so no message is ever
     * sent twice, even after the service's 24 h idempotency window. Output: the thread, the sent
     * message and the reply (null when none is awaited). Errors: `timed_out` (non-retryable) at
     * `deadline`, with details `[{ threadId, messageId }]` of the message sent;
     * `not_a_participant`, `not_found`, `keys_refused`; a cancelled activity stops within a
     * heartbeat and sends nothing more.
     */
    async converse(input: ConverseInput): Promise<ConverseResult> {
      const context = activityContext();
      const resumed = context?.info.heartbeatDetails as ConverseCursor | undefined;
      return counted(PipelineStepKinds.converse, () => call(async () => {
        let sent: ConverseCursor;
        if (resumed?.messageId) {
          sent = resumed;
        } else {
          sent = await send(input);
          context?.heartbeat(sent);
        }
        if (input.awaitFromId === undefined) return { threadId: sent.threadId, messageId: sent.messageId, reply: null };
        let reply: Message;
        try {
          reply = await waitFor(
            { connection: input.connection, threadId: sent.threadId, after: sent.after, fromId: input.awaitFromId, deadline: input.deadline ?? Date.now() },
            (after) => ({ ...sent, after }),
          );
        } catch (error) {
          // The message went out: the failure says where, so the run can show the step's thread.
          if (error instanceof ToolkitError && error.code === 'timed_out') {
            throw ApplicationFailure.create({ type: error.code, message: error.message, nonRetryable: true, details: [{ threadId: sent.threadId, messageId: sent.messageId }] });
          }
          throw error;
        }
        return { threadId: sent.threadId, messageId: sent.messageId, reply: { messageId: reply.message_id, senderId: reply.sender_id, content: reply.content } };
      }), (result) => replyOutcome(result.reply, false));
    },

    /**
     * One step's message, sent as `converse` sends it (the same `Idempotency-Key`, so either may
     * follow the other without a second post) and, when it awaits a reply, one read of the thread
     * after it: a reply already there is returned, so a wait that starts after this never misses
     * one. It never waits. Used where the run itself waits (push waits on Temporal, the event stream
     * of the local engine): a short call that holds no slot while the person thinks. Output: the
     * thread, the message sent and the reply or null. Errors: `not_a_participant`, `not_found`,
     * `keys_refused`.
     */
    async sendStep(input: ConverseInput): Promise<ConverseResult> {
      return counted(PipelineStepKinds.send, () => call(async () => {
        const sent = await send(input);
        const reply = input.awaitFromId === undefined ? null : await firstReply({ connection: input.connection, threadId: sent.threadId, after: sent.messageId, fromId: input.awaitFromId });
        return { threadId: sent.threadId, messageId: sent.messageId, reply };
      }), (result) => replyOutcome(result.reply, false));
    },

    /**
     * A task step's task (contract §12 `POST /edges/{edge_id}/tasks`): asked by `requesterId` of
     * the edge's other participant, its title the step's subject, its one part the content as
     * text, under the `Idempotency-Key` of the run's business key and the step id (a retried or
     * replayed call gets the same task, nothing is asked twice). Then, when the step waits, one
     * read of the task (it may be final already: an agent that answered at once). Output:
     * {@link TaskStepResult}. Errors: `not_a_participant`, `not_found`, `keys_refused`,
     * `idempotency_key_mismatch`, `invalid_request`.
     */
    async createStepTask(input: TaskStepInput): Promise<TaskStepResult> {
      return call(() =>
        withKeyring(input.connection, async (client) => {
          const created = await client.createTask(
            input.edgeId,
            { requester_id: input.requesterId, parts: [{ text: input.content }], ...(input.title ? { title: input.title.slice(0, 200) } : {}) },
            { idempotencyKey: stepIdempotencyKey(input.runKey, input.stepId) },
          );
          // The stored answer of a repeated creation is the task as it was then: read it as it is now.
          return taskStepResult(input.deadline === undefined ? created : await client.getTask(created.task_id));
        }),
      );
    },

    /**
     * Waits until a task is final (completed, failed, canceled, rejected), until `deadline`: reads
     * the task, then long-polls its thread and reads the task again after each poll, the poll's
     * hold backing off from 1 s to {@link TASK_POLL_MAX_SECONDS} while the thread stays silent. A
     * reply or a change of state with a message posts to the thread and wakes the poll at once; a
     * change without one (an artifact then a bare status, a cancel) is seen within
     * {@link TASK_POLL_MAX_SECONDS} s. (The service has no long poll of a task itself.) Under Temporal it
     * heartbeats its cursor `{ after }` (a retried attempt, a worker that died, resumes there) and
     * learns of a cancellation with a heartbeat's answer (the poll is then aborted). Output:
     * {@link TaskStepResult} of the final task. Errors: `timed_out` (non-retryable, details
     * `[{ threadId }]`) at the deadline, `not_found`, `keys_refused`.
     */
    async awaitTask(input: AwaitTaskInput): Promise<TaskStepResult> {
      const context = activityContext();
      const resumed = context?.info.heartbeatDetails as { after?: string | null } | undefined;
      let after: string | null = resumed?.after ?? null;
      let pause = 1;
      const signal = context ? { signal: context.cancellationSignal } : undefined;
      const beat = context ? setInterval(() => context.heartbeat({ after }), HEARTBEAT_EVERY_MS) : undefined;
      try {
        return await call(async () => {
          for (;;) {
            const task = await withKeyring(input.connection, (client) => client.getTask(input.taskId, signal));
            if (FINAL_TASK_STATES.includes(task.state)) return taskStepResult(task);
            const left = input.deadline - Date.now();
            if (left <= 0) {
              throw ApplicationFailure.create({
                type: 'timed_out',
                message: `task ${input.taskId} was not done before the deadline (it is ${task.state})`,
                nonRetryable: true,
                details: [{ threadId: input.threadId, taskId: input.taskId }],
              });
            }
            try {
              const wait = Math.min(pause, MAX_WAIT_SECONDS, Math.ceil(left / 1000));
              const page = await withKeyring(input.connection, (client) => client.getThread(input.threadId, { after, wait }, signal));
              after = page.next_after ?? after;
              // News in the thread: look again soon; silence: back off, up to the cap.
              pause = page.messages.length > 0 ? 1 : Math.min(pause * 2, TASK_POLL_MAX_SECONDS);
            } catch (error) {
              // A cancelled activity reports its cancellation, not the aborted request.
              if (context?.cancellationSignal.aborted) throw context.cancellationSignal.reason;
              throw error;
            }
            context?.heartbeat({ after });
          }
        });
      } finally {
        if (beat) clearInterval(beat);
      }
    },

    /**
     * Cancels a task step's task that its run no longer waits for — the run was cancelled, or the
     * step's `timeout` passed — as its requester (contract §12 `POST /tasks/{task_id}/cancel`), so
     * that its assignee stops working on it. A task that is final already (409 `task_final`: it was
     * completed, failed, canceled or rejected meanwhile) is left as it is. Its callers, both
     * engines, take it as best effort: they log its failure and the run ends as it would have.
     * Output: {@link CancelStepTaskResult}. Errors: `not_found`, `forbidden`, `keys_refused`, the
     * service's 5xx and network errors (retryable).
     */
    async cancelStepTask(input: CancelStepTaskInput): Promise<CancelStepTaskResult> {
      return call(() =>
        withKeyring(input.connection, async (client) => {
          try {
            await client.cancelTask(input.taskId);
            return { taskId: input.taskId, canceled: true };
          } catch (error) {
            if (error instanceof AcsApiError && error.code === 'task_final') return { taskId: input.taskId, canceled: false };
            throw error;
          }
        }),
      );
    },

    /**
     * The reconcile read of a waiting step: the first message from `fromId` in a thread after the
     * message `after`, read page by page without waiting; null when there is none yet. Output:
     * the reply or null. Errors: `not_found`, `invalid_cursor`, `keys_refused`.
     */
    async readReply(input: ReadReplyInput): Promise<StepReply | null> {
      return counted(PipelineStepKinds.read_reply, () => call(() => firstReply(input)), (reply) => replyOutcome(reply, true));
    },
  };
}

/** The conversation activities, as workflows see them (`import type` only). */
export type ConversationActivities = ReturnType<typeof createConversationActivities>;

/**
 * Whether an organization has an enabled webhook that delivers `message.created` (by its type or
 * `message.*`): what `auto` needs to wait by push. A service without webhooks (404 on the route)
 * has none.
 */
async function deliversMessages(client: AcsClient, orgId: string): Promise<boolean> {
  try {
    const hooks = await client.listWebhooks(orgId);
    return hooks.some((h) => h.status === 'enabled' && h.events.some((e) => e === 'message.created' || e === 'message.*'));
  } catch (error) {
    if (error instanceof AcsApiError && (error.code === 'route_not_found' || error.status === 404)) return false;
    throw error;
  }
}
