/**
 * What one A2A call carries through `@a2a-js/sdk`'s request handler, task store and agent
 * executor (contract §12): the authenticated caller as the SDK's `User` (its `ServerCallContext.user`),
 * the signal that ends the call's waits, and what the request handler prepared of an incoming
 * message (its parts in the service's form, and how long the call may wait for the task), and
 * what a stream has shown its client of the task (its first event).
 */
import type { Task as A2aTask } from '@a2a-js/sdk';
import type { ServerCallContext, User } from '@a2a-js/sdk/server';
import { TaskNotFoundError } from '@a2a-js/sdk/errors';
import type { Task } from '../../api/tasks.ts';
import type { TaskParticipant } from '../domain/tasks.ts';
import type { StreamPosition } from '../events/deltas.ts';
import type { A2aCaller } from './a2a-caller.ts';

/** The caller of an A2A call as the SDK sees it (A2A v1.0 §7, "Authentication and Authorization"). */
export class A2aUser implements User {
  readonly caller: A2aCaller;
  /** Aborted when the client goes away or the server stops: every wait of the call ends then. */
  readonly signal: AbortSignal;

  constructor(caller: A2aCaller, signal: AbortSignal) {
    this.caller = caller;
    this.signal = signal;
  }

  /** Always true: a call reaches the SDK only after its MCP key was checked (routes.ts). */
  get isAuthenticated(): boolean {
    return true;
  }

  /** The calling agent's id (the SDK scopes its in-process event buses by it). */
  get userName(): string {
    return this.caller.identity.agentId;
  }
}

/** A caller that shares an edge with the agent it calls: who it is as a task participant, and whom it calls. */
export interface ReachableCall {
  user: A2aUser;
  /** The calling agent, as the domain's participant-scoped operations take it (domain/tasks.ts). */
  participant: TaskParticipant;
  /** The agent called: the assignee of the caller's tasks at this endpoint. */
  agentId: string;
  edgeId: string;
}

/** What A2A says to a caller that may not reach the agent, worded the same whatever the reason (no edge, another team, no such agent). */
export const unreachableMessage = 'no agent or task with this id among the agents this key\'s agent shares an edge with';

/**
 * The call of `context` when its caller shares an edge with the agent it calls. Errors: the SDK's
 * `TaskNotFoundError` (A2A's error for an unknown task, JSON-RPC -32001, HTTP 404) otherwise, so
 * that a caller learns nothing of an agent it may not reach; nothing is written.
 */
export function reachableCall(context: ServerCallContext): ReachableCall {
  const user = context.user;
  if (!(user instanceof A2aUser) || user.caller.edgeId === null) throw new TaskNotFoundError(unreachableMessage);
  const { identity, agentId, edgeId } = user.caller;
  return { user, participant: { agentId: identity.agentId, orgId: identity.orgId }, agentId, edgeId };
}

/** How a `SendMessage` waits (A2A v1.0 §3.1.1): until the task is final or asks for input (`block`), not at all (`return`), or as a stream. */
export const SendModes = { block: 'block', return: 'return', stream: 'stream' } as const;
export type SendMode = (typeof SendModes)[keyof typeof SendModes];

/**
 * An incoming message as the request handler took it, for the executor: the task as it was before
 * the message (just created, or the task the message continues, read before the message was
 * posted to its thread), the send's mode, and where the thread's stream stood before it.
 */
export interface PreparedMessage {
  before: Task;
  mode: SendMode;
  /** The position of the task thread's stream before the message was posted: a stream's reply deltas are those after it (reply-deltas.ts). */
  streamFrom: StreamPosition;
}

const preparedKey = 'acs.prepared-message';

/** Keeps what the request handler prepared of the call's message, for the executor. */
export function setPreparedMessage(context: ServerCallContext, prepared: PreparedMessage): void {
  context.state.set(preparedKey, prepared);
}

/** What the request handler prepared of the call's message. Errors: throws (a bug) when it prepared nothing. */
export function preparedMessage(context: ServerCallContext): PreparedMessage {
  const prepared = context.state.get(preparedKey) as PreparedMessage | undefined;
  if (!prepared) throw new Error('A2A: the message reached the executor without being prepared by the request handler');
  return prepared;
}

const createdKey = 'acs.created-task';

/** Notes that this call's message created the task `taskId` (a push config given with it sees the task from its creation). */
export function setCreatedInCall(context: ServerCallContext, taskId: string): void {
  context.state.set(createdKey, taskId);
}

/** The task this call's message created, if it created one. */
export function createdInCall(context: ServerCallContext): string | undefined {
  return context.state.get(createdKey) as string | undefined;
}

/**
 * What a streaming send (`SendStreamingMessage`) shows its client of its task as the stream's first
 * event: the task as read (`task`) and A2A's Task made of it with its history (`shown`).
 *
 * Why the call keeps it: the SDK's request handler reads the task through the store (task-store.ts
 * `load`, with its history) for the request context, and again for each event it processes — its
 * result manager's merge, then the first event's payload — where the SDK's own stores keep the
 * task in memory. In a stream the result manager's copy is never shown (the client gets the
 * events, push notifications go out from storage through the webhook worker), and the first
 * event's payload is the task as the executor read it: so within the call the store answers these
 * reads with `shown` instead of reading the task and its thread again (three reads of the task
 * with its history before the first event, one for each later event and each chunk of a reply).
 * Blocking and immediate sends keep none: their answer is the result manager's copy, read from
 * storage.
 */
export interface StreamView {
  /** The task as read when `shown` was made (the executor compares its first read with it). */
  task: Task;
  /** A2A's Task of `task` with the thread's latest messages as its history; never changed in place (readers get copies). */
  shown: A2aTask;
}

const streamViewKey = 'acs.stream-view';

/** Keeps what the call's stream shows of its task (see {@link StreamView}); a later one replaces it. */
export function setStreamView(context: ServerCallContext, view: StreamView): void {
  context.state.set(streamViewKey, view);
}

/** What the call's stream shows of the task `taskId` (any case), if the call is a stream that has one (see {@link StreamView}). */
export function streamView(context: ServerCallContext, taskId: string): StreamView | undefined {
  const view = context.state.get(streamViewKey) as StreamView | undefined;
  return view && view.task.task_id === taskId.toLowerCase() ? view : undefined;
}
