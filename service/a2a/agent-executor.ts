/**
 * `@a2a-js/sdk`'s `AgentExecutor` over the service's tasks (contract §12; A2A v1.0 §3.1.1–§3.1.2,
 * `SendMessage` and `SendStreamingMessage`). The agent that does the work is not in this module:
 * a provider agent's turns (agent-loop/) or an external agent over MCP move the task; the request
 * handler (request-handler.ts) has already created the task or posted the caller's message before
 * the executor runs. The executor only tells the SDK what becomes of the task: it publishes the
 * task as stored (the first event, as the SDK requires), then each change the task's events wake
 * it for (task-watch.ts) as status and artifact updates, until the task is final or asks for
 * input, the call's wait is over, or the client goes away.
 */
import type { Task as A2aTask } from '@a2a-js/sdk';
import { AgentEvent, type AgentExecutor, type ExecutionEventBus, type RequestContext, type ServerCallContext } from '@a2a-js/sdk/server';
import type { Task } from '../../api/tasks.ts';
import { getTaskAsParticipant } from '../domain/tasks.ts';
import { preparedMessage, reachableCall, SendModes, setStreamView, streamView, type ReachableCall } from './call-context.ts';
import { toA2aTask } from './task-mapping.ts';
import { withHistory, type StoreEnv } from './task-store.ts';
import { answered, followTaskUpdates } from './task-watch.ts';

/** How long a blocking `SendMessage` waits for the task to end or ask for input before it answers with the task as it is (60 s: within the server's idle timeout of 120 s). */
export const defaultBlockingWaitMs = 60_000;

/** What the executor needs: the store's environment, and the bound of a blocking send's wait. */
export interface ExecutorEnv extends StoreEnv {
  blockingWaitMs: number;
}

/** The AgentExecutor of the A2A server (see the module's comment). */
export class DomainAgentExecutor implements AgentExecutor {
  readonly #env: ExecutorEnv;

  constructor(env: ExecutorEnv) {
    this.#env = env;
  }

  /**
   * Publishes the task as stored now, then, unless the send returns at once (`returnImmediately`),
   * its changes until it is final or asks for input (a change seen during the call): on a stream,
   * the assignee's reply as it is written (chunks of its artifact, reply-deltas.ts, §13); new
   * artifacts (whole) before the status that follows them. A blocking send stops waiting after
   * {@link ExecutorEnv.blockingWaitMs} (the SDK answers with the task as it is then); a stream
   * waits as long as its client stays. Errors: storage errors (the SDK turns them into a failed
   * stream; the stored task is not changed).
   */
  async execute(requestContext: RequestContext, eventBus: ExecutionEventBus): Promise<void> {
    const call = reachableCall(requestContext.context);
    const prepared = preparedMessage(requestContext.context);
    const { deps, publicUrl } = this.#env;
    const taskId = prepared.before.task_id;
    const load = () => getTaskAsParticipant(deps, call.participant, taskId);
    const url = publicUrl();
    if (prepared.mode === SendModes.return) {
      eventBus.publish(AgentEvent.task(toA2aTask(await load(), [], url)));
      return;
    }
    const signal = prepared.mode === SendModes.block ? AbortSignal.any([call.user.signal, AbortSignal.timeout(this.#env.blockingWaitMs)]) : call.user.signal;
    // A blocking send answers with the task at its end: only a stream shows the reply as it is written.
    const deltasFrom = prepared.mode === SendModes.stream ? prepared.streamFrom : undefined;
    let first = true;
    for await (const update of followTaskUpdates({ deps, orgId: call.participant.orgId, taskId, load, signal, said: prepared.before, publicUrl: url, deltasFrom })) {
      if (update.kind === 'snapshot') {
        // A stream's first event is the task with its history, kept for the SDK's loads during the
        // call; a blocking send's history is left to the store (the SDK reads it there for the answer).
        if (first) eventBus.publish(AgentEvent.task(prepared.mode === SendModes.stream ? await this.#shown(requestContext.context, call, update.task) : toA2aTask(update.task, [], url)));
        first = false;
      } else if (update.kind === 'artifact') {
        eventBus.publish(AgentEvent.artifactUpdate(update.event));
      } else {
        eventBus.publish(AgentEvent.statusUpdate(update.event));
        if (answered(update.task, true)) return;
      }
    }
  }

  /**
   * What a stream shows as its first event, kept as the call's view (call-context.ts
   * `StreamView`): the task as the request handler created it, with its first message as history,
   * when this call created it — the stream then always begins with the task as submitted, and a
   * turn that started meanwhile follows as a status update (the first read, `task`, is compared
   * with the task as created, not shown) — else `task` (a task the message continues) with its
   * history read now. Output: a copy. Errors: storage errors.
   */
  async #shown(context: ServerCallContext, call: ReachableCall, task: Task): Promise<A2aTask> {
    let view = streamView(context, task.task_id);
    if (!view) {
      view = { task, shown: await withHistory(this.#env, call, task) };
      setStreamView(context, view);
    }
    return structuredClone(view.shown);
  }

  /**
   * Not called: `CancelTask` goes to the domain through the request handler (request-handler.ts),
   * whichever process runs the task's turns. Does nothing.
   */
  async cancelTask(_taskId: string, _eventBus: ExecutionEventBus): Promise<void> {}
}
