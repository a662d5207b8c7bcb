/**
 * `@a2a-js/sdk`'s `TaskStore` over the service's tasks (contract §12; A2A v1.0 §3.1.3–§3.1.4,
 * `GetTask` and `ListTasks`): the tasks an A2A caller sees at an agent's endpoint are those it
 * asked of that agent on their edge (requester: the caller, assignee: the agent), read through the
 * domain's participant-scoped operations (domain/tasks.ts), with the thread's messages as their
 * history.
 *
 * The domain is the only writer: a task changes by its operations (created by a message, moved by
 * the assignee's turns, canceled by its requester), each writing `task.updated` in its
 * transaction. So `save`, which the SDK calls with its own merge of the events it saw, writes
 * nothing: every event the executor hands the SDK was read from storage after it was written.
 * Within a streaming send, `load` answers with what the stream shows of its task instead of
 * reading it again (call-context.ts `StreamView`).
 */
import type { ListTasksRequest, ListTasksResponse, Task as A2aTask } from '@a2a-js/sdk';
import type { ServerCallContext, TaskStore } from '@a2a-js/sdk/server';
import { RequestMalformedError } from '@a2a-js/sdk/errors';
import type { Task } from '../../api/tasks.ts';
import { ServiceError } from '../../errors/catalogue.ts';
import type { DomainDeps } from '../domain/caller.ts';
import { isUuid } from '../domain/ids.ts';
import { getTaskAsParticipant, listTaskHistoryAsParticipant, listTasksAsParticipant } from '../domain/tasks.ts';
import { reachableCall, streamView, type ReachableCall, type StreamView } from './call-context.ts';
import { fromA2aState, toA2aTask } from './task-mapping.ts';

/** The most messages of a task's thread returned as its history (the latest ones). */
export const maxHistory = 200;

/** What the store needs: the domain and the URL the server is reached at (attachment URLs). */
export interface StoreEnv {
  deps: DomainDeps;
  publicUrl: () => string;
}

/**
 * The task `taskId` when it is one the call's caller asked of the agent it calls (else undefined,
 * as for an id that does not exist). Errors: storage errors only.
 */
export async function callersTask(env: StoreEnv, call: ReachableCall, taskId: string): Promise<Task | undefined> {
  if (!isUuid(taskId)) return undefined;
  try {
    const task = await getTaskAsParticipant(env.deps, call.participant, taskId.toLowerCase());
    return task.requester_id === call.participant.agentId && task.assignee_id === call.agentId ? task : undefined;
  } catch (error) {
    if (error instanceof ServiceError && error.code === 'not_found') return undefined;
    throw error;
  }
}

/**
 * A2A's Task of `task` (one of the call's caller, as {@link callersTask} read it) with its history,
 * the thread's latest {@link maxHistory} messages, read now. Errors: storage errors; `not_found`
 * (ServiceError) when the task is no longer there.
 */
export async function withHistory(env: StoreEnv, call: ReachableCall, task: Task): Promise<A2aTask> {
  const history = await listTaskHistoryAsParticipant(env.deps, call.participant, task.task_id, maxHistory);
  return toA2aTask(task, history, env.publicUrl());
}

/** The TaskStore of the A2A server (see the module's comment). */
export class DomainTaskStore implements TaskStore {
  readonly #env: StoreEnv;

  constructor(env: StoreEnv) {
    this.#env = env;
  }

  /**
   * A2A's Task of `taskId` with its history (the thread's latest {@link maxHistory} messages), or
   * undefined when the caller may not see it (not its task at this agent, not on its edge, no such
   * task): the SDK answers `TaskNotFoundError` then. In a streaming send that has shown its task,
   * a copy of what it showed, not read again (call-context.ts `StreamView`).
   */
  async load(taskId: string, context: ServerCallContext): Promise<A2aTask | undefined> {
    let call: ReachableCall;
    try {
      call = reachableCall(context);
    } catch {
      return undefined;
    }
    const view = streamView(context, taskId);
    if (view) return structuredClone(view.shown);
    return (await this.read(call, taskId))?.shown;
  }

  /**
   * The task `taskId` of the call's caller at the agent it calls, as stored (`task`) and as A2A's
   * Task with its history (`shown`), read now — the shape a stream keeps as its view — or
   * undefined as for {@link load}. Errors: storage errors.
   */
  async read(call: ReachableCall, taskId: string): Promise<StreamView | undefined> {
    const task = await callersTask(this.#env, call, taskId);
    if (!task) return undefined;
    return { task, shown: await withHistory(this.#env, call, task) };
  }

  /** Writes nothing: the domain is the only writer of tasks (see the module's comment). */
  async save(_task: A2aTask, _context: ServerCallContext): Promise<void> {}

  /**
   * `ListTasks` (A2A v1.0 §3.1.4): the caller's tasks at this agent, newest first; `status`
   * filters by state (none has `auth-required`), `contextId` picks the task of that thread,
   * `pageSize` 1–100 (the SDK checks it; default 50), `pageToken` is the last task of the previous
   * page, `statusTimestampAfter` keeps tasks changed at or after it (from the page read), history
   * only when `historyLength` asks for it, artifacts only with `includeArtifacts`. `totalSize`
   * counts every task of the caller at this agent that the filters of state and context keep.
   * Errors: `TaskNotFoundError` (the caller may not reach the agent), `RequestMalformedError` (a
   * page token that is no task of this list).
   */
  async list(params: ListTasksRequest, context: ServerCallContext): Promise<ListTasksResponse> {
    const call = reachableCall(context);
    const pageSize = params.pageSize ?? 50;
    const state = params.status === 0 ? undefined : fromA2aState(params.status);
    const empty: ListTasksResponse = { tasks: [], nextPageToken: '', pageSize, totalSize: 0 };
    // A state no task of the service has (auth-required, unrecognized): none.
    if (params.status !== 0 && state === undefined) return empty;
    const query = (after: string | undefined, limit: number) =>
      listTasksAsParticipant(this.#env.deps, call.participant, { state, role: 'requester', peer_id: call.agentId, after, limit });
    let tasks: Task[];
    let nextPageToken = '';
    if (params.contextId) {
      // One task per thread: the one whose thread is the context, if it is the caller's.
      tasks = (await this.#all(query)).filter((task) => task.thread_id === params.contextId.toLowerCase());
    } else {
      if (params.pageToken && !isUuid(params.pageToken)) throw new RequestMalformedError('pageToken is not a page token of this list');
      let page;
      try {
        page = await query(params.pageToken || undefined, pageSize);
      } catch (error) {
        if (error instanceof ServiceError && error.code === 'invalid_cursor') throw new RequestMalformedError('pageToken is not a page token of this list');
        throw error;
      }
      tasks = page.tasks;
      if (tasks.length === pageSize && page.next_after) nextPageToken = page.next_after;
    }
    const totalSize = params.contextId ? tasks.length : nextPageToken === '' && !params.pageToken ? tasks.length : (await this.#all(query)).length;
    if (params.statusTimestampAfter) {
      const after = Date.parse(params.statusTimestampAfter);
      tasks = tasks.filter((task) => Date.parse(task.updated_at) >= after);
    }
    const historyLength = params.historyLength ?? 0;
    const publicUrl = this.#env.publicUrl();
    const out: A2aTask[] = [];
    for (const task of tasks) {
      const history = historyLength > 0 ? await listTaskHistoryAsParticipant(this.#env.deps, call.participant, task.task_id, Math.min(historyLength, maxHistory)) : [];
      const mapped = toA2aTask(task, history, publicUrl);
      if (!params.includeArtifacts) mapped.artifacts = [];
      out.push(mapped);
    }
    return { tasks: out, nextPageToken, pageSize, totalSize };
  }

  /** Every task of the query, page after page (for counting and for a context's task). */
  async #all(query: (after: string | undefined, limit: number) => Promise<{ tasks: Task[]; next_after: string | null }>): Promise<Task[]> {
    const all: Task[] = [];
    let after: string | undefined;
    for (;;) {
      const page = await query(after, 200);
      all.push(...page.tasks);
      if (page.tasks.length < 200 || !page.next_after) return all;
      after = page.next_after;
    }
  }
}
