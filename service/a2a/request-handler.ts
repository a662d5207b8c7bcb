/**
 * The A2A server's request handler (contract §12): `@a2a-js/sdk`'s `DefaultRequestHandler` — its
 * protocol logic (blocking and streaming sends, history length, list paging checks, errors) — with
 * what the service decides before it, and where the SDK's in-process model does not hold:
 *
 * - **An edge is the permission.** Every call is checked first: a caller that shares no edge with
 *   the agent gets `TaskNotFoundError`, whatever it asked, and nothing is written.
 * - **A message is taken before the SDK runs.** Its parts are read and checked (A2A v1.0 §4.1.6);
 *   then a message without a task creates the task on the edge (requester: the caller, assignee:
 *   the agent; its thread's first message made of the parts), and a message with one is posted to
 *   the task's thread as the caller (answering an input-required question, say). The domain's
 *   errors are A2A errors then, before the SDK made up a task of its own, and the message names
 *   the created task from there on (its `taskId`; its `contextId`, the thread).
 * - **Push-notification configs are webhooks of the task** (push-configs.ts): the SDK's
 *   create/get/list/delete methods load the task through the store (the edge check) and keep the
 *   configs in the service's webhooks; the webhook worker delivers them from the task's events.
 * - **Cancel and subscribe read storage**, not the SDK's in-process event buses: the task's turns
 *   may run in another process. `CancelTask` cancels through the domain (the requester cancels);
 *   `SubscribeToTask` watches the task's events (task-watch.ts).
 */
import type { AgentCard, CancelTaskRequest, Message as A2aMessage, SendMessageRequest, StreamResponse, SubscribeToTaskRequest, Task as A2aTask } from '@a2a-js/sdk';
import { DefaultRequestHandler, type ServerCallContext } from '@a2a-js/sdk/server';
import { RequestMalformedError, TaskNotCancelableError, TaskNotFoundError, UnsupportedOperationError } from '@a2a-js/sdk/errors';
import type { Task } from '../../api/tasks.ts';
import { ServiceError } from '../../errors/catalogue.ts';
import { createAttachment } from '../domain/attachments.ts';
import { cancelTaskAsParticipant, createTaskAsParticipant, isFinalTaskState, sendTaskMessageAsParticipant } from '../domain/tasks.ts';
import { domainCaller } from './a2a-caller.ts';
import { reachableCall, setCreatedInCall, setPreparedMessage, setStreamView, SendModes, type ReachableCall, type SendMode } from './call-context.ts';
import { DomainAgentExecutor, type ExecutorEnv } from './agent-executor.ts';
import { fromA2aParts, IncomingPartsError, toA2aState, withAttachments } from './task-mapping.ts';
import { DomainPushStore, webhookWorkerSends, type PushEnv } from './push-configs.ts';
import { callersTask, DomainTaskStore, withHistory } from './task-store.ts';
import { followTaskUpdates } from './task-watch.ts';
import { replyDeltasFromNow } from './reply-deltas.ts';

/** The thread channel of tasks asked over A2A (a thread's `channel`, contract §4). */
export const a2aChannel = 'a2a';

/** A domain error met while taking a message, as the A2A error a client understands. */
function asA2aError(error: unknown): unknown {
  if (!(error instanceof ServiceError)) return error;
  if (error.code === 'not_found') return new TaskNotFoundError(error.message);
  if (error.code === 'task_final') return new UnsupportedOperationError(`the task is final: ${error.message}`);
  if (error.code === 'invalid_request' || error.code === 'unknown_reference' || error.code === 'payload_too_large') return new RequestMalformedError(error.message);
  return error;
}

/** The request handler of the A2A server (see the module's comment). */
export class EdgeRequestHandler extends DefaultRequestHandler {
  readonly #env: ExecutorEnv;
  readonly #store: DomainTaskStore;

  /**
   * Over `env` (the domain, the public URL, the bound of a blocking send), with `card` as the
   * card the SDK checks requests against (its capabilities and protocol versions; each agent's own
   * card is served by the card route).
   */
  constructor(env: ExecutorEnv & PushEnv, card: AgentCard) {
    const store = new DomainTaskStore(env);
    // No in-process event bus outlives its call: a follow-up message, a subscription or a cancel
    // reads storage (the SDK would keep an input-required task's bus for a follow-up that may
    // never come here, or come to another process).
    // Push configs are webhooks of the task (push-configs.ts): the webhook worker sends, not the SDK.
    super(card, store, new DomainAgentExecutor(env), undefined, new DomainPushStore(env), webhookWorkerSends, undefined, undefined, { keepBusAliveStates: [] });
    this.#env = env;
    this.#store = store;
  }

  /**
   * `SendMessage` (A2A v1.0 §3.1.1): takes the message (see the module's comment), then lets the
   * SDK wait for the task to end or ask for input (at most the blocking bound), or answer at once
   * with `returnImmediately`. Output: the Task. Errors: `TaskNotFoundError` (no edge; a `taskId`
   * that is not the caller's task at this agent), `UnsupportedOperationError` (a final task),
   * `RequestMalformedError` (parts the service cannot take, a `contextId` not the task's).
   */
  override async sendMessage(params: SendMessageRequest, context: ServerCallContext): Promise<A2aMessage | A2aTask> {
    const mode = params.configuration?.returnImmediately ? SendModes.return : SendModes.block;
    await this.#take(params, context, mode);
    const result = await super.sendMessage(params, context);
    if (mode !== SendModes.return || !('status' in result)) return result;
    // Answered from the first event: read it again from storage, whose history is the thread's.
    const stored = await this.#store.load(result.id, context);
    if (!stored) return result;
    const length = params.configuration?.historyLength;
    if (length !== undefined) stored.history = length <= 0 ? [] : stored.history.slice(-length);
    return stored;
  }

  /** `SendStreamingMessage` (A2A v1.0 §3.1.2): takes the message, then streams the task until it ends or asks for input. Errors as {@link sendMessage}. */
  override async *sendMessageStream(params: SendMessageRequest, context: ServerCallContext): AsyncGenerator<StreamResponse, void, undefined> {
    await this.#take(params, context, SendModes.stream);
    yield* super.sendMessageStream(params, context);
  }

  /**
   * `CancelTask` (A2A v1.0 §3.1.5): the caller, the task's requester, cancels it through the
   * domain (`task.updated`, whichever process runs its turns). Output: the Task, canceled (at once
   * when it was already). Errors: `TaskNotFoundError`, `TaskNotCancelableError` (final otherwise).
   */
  override async cancelTask(params: CancelTaskRequest, context: ServerCallContext): Promise<A2aTask> {
    const call = reachableCall(context);
    if (!params.id?.trim()) throw new RequestMalformedError('Task ID is required');
    const task = await callersTask(this.#env, call, params.id);
    if (!task) throw new TaskNotFoundError(`Task not found: ${params.id}`);
    if (task.state !== 'canceled') {
      if (isFinalTaskState(task.state)) throw new TaskNotCancelableError(`Task not cancelable: ${params.id} is ${task.state}`);
      try {
        await cancelTaskAsParticipant(this.#env.deps, call.participant, task.task_id);
      } catch (error) {
        // Final meanwhile: canceled by another call is what was asked; anything else is not cancelable.
        if (!(error instanceof ServiceError && error.code === 'task_final')) throw asA2aError(error);
      }
    }
    const stored = await this.#store.load(task.task_id, context);
    if (!stored) throw new TaskNotFoundError(`Task not found: ${params.id}`);
    if (stored.status?.state !== toA2aState('canceled')) throw new TaskNotCancelableError(`Task not cancelable: ${params.id}`);
    return stored;
  }

  /**
   * `SubscribeToTask` (A2A v1.0 §3.1.6): the task as stored, then its changes as status and
   * artifact updates until it is final (or the client goes away), with the reply being written as
   * chunks of its artifact from the thread's last message on (§13, reply-deltas.ts). Errors: `TaskNotFoundError`,
   * `UnsupportedOperationError` (the task is final already: nothing to follow).
   */
  override async *resubscribe(params: SubscribeToTaskRequest, context: ServerCallContext): AsyncGenerator<StreamResponse, void, undefined> {
    const call = reachableCall(context);
    if (!params.id?.trim()) throw new RequestMalformedError('Task ID is required');
    const read = await this.#store.read(call, params.id);
    if (!read) throw new TaskNotFoundError(`Task not found: ${params.id}`);
    const { task, shown: first } = read;
    if (isFinalTaskState(task.state)) throw new UnsupportedOperationError(`Task ${params.id} is in a terminal state (${task.state}) and cannot be subscribed to.`);
    yield { payload: { $case: 'task', value: first } };
    const load = async () => (await callersTask(this.#env, call, task.task_id)) ?? task;
    const deltasFrom = await replyDeltasFromNow(this.#env.deps.db, task.thread_id);
    const follow = { deps: this.#env.deps, orgId: call.participant.orgId, taskId: task.task_id, load, signal: call.user.signal, said: task, publicUrl: this.#env.publicUrl(), deltasFrom };
    for await (const update of followTaskUpdates(follow)) {
      if (update.kind === 'artifact') yield { payload: { $case: 'artifactUpdate', value: update.event } };
      if (update.kind !== 'status') continue;
      yield { payload: { $case: 'statusUpdate', value: update.event } };
      if (isFinalTaskState(update.task.state)) return;
    }
  }

  /**
   * Takes an incoming message (see the module's comment) and keeps, for the executor, the task as
   * it was before it and the send's mode. Everything that can be refused is checked before
   * anything is written; file parts' bytes are stored as attachments just before the task is
   * created or the message posted. Errors: as {@link sendMessage}.
   */
  async #take(params: SendMessageRequest, context: ServerCallContext, mode: SendMode): Promise<void> {
    const call = reachableCall(context);
    const message = params.message;
    if (!message) throw new RequestMalformedError('request.message is required.');
    if (!message.messageId) throw new RequestMalformedError('message.messageId is required.');
    let incoming;
    try {
      incoming = fromA2aParts(message.parts ?? []);
    } catch (error) {
      if (error instanceof IncomingPartsError) throw new RequestMalformedError(error.message);
      throw error;
    }
    let continued: Task | undefined;
    if (message.taskId) {
      continued = await callersTask(this.#env, call, message.taskId);
      if (!continued) throw new TaskNotFoundError(`Task not found: ${message.taskId}`);
      if (isFinalTaskState(continued.state)) throw new UnsupportedOperationError(`Task ${continued.task_id} is in a terminal state (${continued.state}) and cannot be modified.`);
      if (message.contextId && message.contextId.toLowerCase() !== continued.thread_id) {
        throw new RequestMalformedError(`contextId mismatch: message contextId '${message.contextId}' does not match task '${continued.task_id}' contextId '${continued.thread_id}'`);
      }
    }
    try {
      const parts = withAttachments(incoming, await this.#storeFiles(call, incoming.files));
      let before: Task;
      // Read before the message is posted, so a stream misses no delta of the reply to it.
      const streamFrom = continued ? await replyDeltasFromNow(this.#env.deps.db, continued.thread_id) : { after: 0, k: 0 };
      if (continued) {
        before = continued;
        await sendTaskMessageAsParticipant(this.#env.deps, call.participant, continued.task_id, { parts, expects_reply: true });
      } else {
        before = await createTaskAsParticipant(this.#env.deps, call.participant, { assignee_id: call.agentId, parts, channel: a2aChannel });
        setCreatedInCall(context, before.task_id);
        // From here on the message continues the task just created: the SDK loads it, not one of its own.
        message.taskId = before.task_id;
        // A stream shows the task as created (with its thread's first message) unless the executor
        // finds it changed: the SDK's loads of it during the call need not read it again.
        if (mode === SendModes.stream) setStreamView(context, { task: before, shown: await withHistory(this.#env, call, before) });
      }
      message.contextId = before.thread_id;
      setPreparedMessage(context, { before, mode, streamFrom });
    } catch (error) {
      throw asA2aError(error);
    }
  }

  /** Stores each file's bytes as an attachment of the caller's organization. Output: their ids, in order. */
  async #storeFiles(call: ReachableCall, files: ReturnType<typeof fromA2aParts>['files']): Promise<string[]> {
    const ids: string[] = [];
    for (const file of files) {
      const attachment = await createAttachment(this.#env.deps, domainCaller(call.user.caller), {
        filename: file.name.slice(0, 255),
        content_type: file.mediaType.slice(0, 255),
        data_base64: file.data.toString('base64'),
      });
      ids.push(attachment.attachment_id);
    }
    return ids;
  }
}
