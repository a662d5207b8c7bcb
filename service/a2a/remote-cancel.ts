/**
 * Cancelling a remote A2A agent's task (contract §12, "A2A participants"): when the requester
 * cancels a task assigned to a remote A2A agent (domain/tasks.ts), the service sends the remote A2A
 * `CancelTask` for the remote's own task — the one `a2a_exchanges` names for the task's thread —
 * and follows that task no more. Best effort: it never blocks nor undoes the local cancel, a remote
 * that cannot be reached is retried with backoff at most {@link maxCancelAttempts} times, and
 * every outcome is logged (without header values: remote-client.ts redacts them). Two places send
 * it, so that whoever knows the remote's task id first does:
 *
 * - **An exchange in progress** (remote-runner.ts) watches its task and, once canceled, cuts its
 *   request or stream and sends `CancelTask` with the id it holds (the remote may have named its
 *   task in an event not stored yet); a work row claimed for a canceled task does the same with
 *   the stored id. A remote that cannot be reached is retried as its other calls are: the row is
 *   parked with the loop's backoff and the next claim tries again.
 * - **No exchange in progress** (the remote asked its question and waits for the requester, or
 *   its row is backing off): the process that canceled sends it ({@link createRemoteCanceller},
 *   told through `DomainDeps.onTaskCanceled`), retrying in that process. An exchange in progress
 *   when the cancel comes may settle a question instead of being cut (the cancel came as it
 *   parked); the canceller waits for its row's lease to go and reads the exchange again, so that
 *   question's task is still canceled at the remote.
 *
 * The remote's answer is noted on the exchange (its task's state); nothing is posted to the thread,
 * whose task is canceled already.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { TaskNotCancelableError, TaskNotFoundError } from '@a2a-js/sdk/errors';
import type { Task } from '../../api/tasks.ts';
import { a2aResource, openA2aSecrets } from '../domain/a2a-participant.ts';
import type { DomainDeps } from '../domain/caller.ts';
import type { Queryable } from '../storage/db.ts';
import type { LoopLogger } from '../agent-loop/work.ts';
import { fetchRemoteCard, isTransient, remoteClient, remoteErrorText, type RemoteAgent } from './remote-client.ts';
import type { ExchangeRow } from './remote-record.ts';
import { fromA2aState } from './task-mapping.ts';

/** How many times `CancelTask` is sent to a remote that cannot be reached, before it is given up (logged). */
export const maxCancelAttempts = 5;

/** Remote task states after which there is nothing to cancel. */
const overStates = new Set(['completed', 'failed', 'canceled', 'rejected']);

/**
 * The remote task an exchange still follows (its id), or undefined: none named yet, or over (a
 * final state seen). Input: the exchange as remote-record.ts `readExchange` reads it.
 */
export function liveRemoteTask(exchange: Pick<ExchangeRow, 'remote_task_id' | 'remote_state'> | undefined): string | undefined {
  if (!exchange || exchange.remote_task_id === null) return undefined;
  return exchange.remote_state !== null && overStates.has(exchange.remote_state) ? undefined : exchange.remote_task_id;
}

/** A remote A2A agent whose task on a thread is to be canceled, as stored (`participants.a2a`, its sealed headers). */
export interface RemoteAssignee {
  agentId: string;
  threadId: string;
  orgId: string;
  /** The agent's name, for the log. */
  name: string;
  /** `participants.a2a` (its URL), as stored. */
  a2a: unknown;
  /** `participants.a2a_secrets`: the sealed header values, or null. */
  a2aSecrets: string | null;
}

/** How a `CancelTask` ended: `done` (the remote answered — canceled, or no task of ours to cancel — or cannot be asked at all), or `unavailable` (retry later). */
export type RemoteCancelOutcome = 'done' | 'unavailable';

/** Notes on the exchange that its remote task `remoteTaskId` is in `state` now (its answer to the cancel): our message's answer is over. */
async function noteCanceled(db: Queryable, assignee: RemoteAssignee, remoteTaskId: string, state: string): Promise<void> {
  await db.query(
    `UPDATE a2a_exchanges SET remote_state = $4, message_id = NULL, updated_at = now() WHERE agent_id = $1 AND thread_id = $2 AND remote_task_id = $3`,
    [assignee.agentId, assignee.threadId, remoteTaskId, state],
  );
}

/** Forgets the exchange's remote task `remoteTaskId`: the remote has none of that id, or has it over already; nothing is followed. */
async function forgetRemoteTask(db: Queryable, assignee: RemoteAssignee, remoteTaskId: string): Promise<void> {
  await db.query(
    `UPDATE a2a_exchanges SET remote_task_id = NULL, remote_state = NULL, message_id = NULL, updated_at = now() WHERE agent_id = $1 AND thread_id = $2 AND remote_task_id = $3`,
    [assignee.agentId, assignee.threadId, remoteTaskId],
  );
}

/**
 * Sends A2A `CancelTask` for `remoteTaskId` to `assignee` (its card read again, the client of
 * remote-client.ts, so the URL rules and headers of its other calls apply), until `signal` aborts,
 * and notes the answer on the exchange: the state the remote says (canceled), or, when the remote
 * knows no such task or has it over already (`TaskNotFoundError`, `TaskNotCancelableError`), the
 * remote task forgotten. Output: {@link RemoteCancelOutcome}: `unavailable` when the remote is down,
 * slow or cut off (remote-client.ts `isTransient`; also when `signal` aborted), else `done` — an
 * answer A2A does not allow, a URL refused or headers that cannot be opened are logged and not
 * retried (they would fail the same). Errors: none (each is logged; the storage's too).
 */
export async function sendRemoteCancel(deps: DomainDeps, log: LoopLogger, assignee: RemoteAssignee, remoteTaskId: string, signal: AbortSignal): Promise<RemoteCancelOutcome> {
  const where = { agent_id: assignee.agentId, thread_id: assignee.threadId, org_id: assignee.orgId, agent: assignee.name, remote_task_id: remoteTaskId.slice(0, 200) };
  const a2a = a2aResource(assignee.a2a);
  if (!a2a) return 'done';
  let headers: Record<string, string>;
  try {
    headers = openA2aSecrets(deps.secrets, assignee.a2aSecrets);
  } catch {
    log.error(where, "the header values of the remote A2A agent cannot be decrypted with this process's encryption key (ACS_ENCRYPTION_KEY): its canceled task was not canceled there (CancelTask not sent)");
    return 'done';
  }
  const remote: RemoteAgent = { url: a2a.url, headers };
  const policy = deps.urls ?? { allowPrivate: false };
  try {
    try {
      const card = await fetchRemoteCard(remote, policy, signal);
      const client = await remoteClient(card.card, remote, policy, signal);
      const answer = await client.cancelTask({ tenant: '', id: remoteTaskId, metadata: undefined }, { signal });
      const state = (answer.status && fromA2aState(answer.status.state)) ?? 'canceled';
      await noteCanceled(deps.db, assignee, remoteTaskId, state);
      log.info({ ...where, remote_state: state }, 'remote A2A agent: its task was canceled with ours (CancelTask)');
      return 'done';
    } catch (error) {
      if (error instanceof TaskNotFoundError || error instanceof TaskNotCancelableError) {
        await forgetRemoteTask(deps.db, assignee, remoteTaskId);
        log.info({ ...where, reason: remoteErrorText(error, remote) }, 'remote A2A agent: nothing to cancel there (its task is unknown or over)');
        return 'done';
      }
      if (isTransient(error)) {
        log.warn({ ...where, reason: signal.aborted ? 'no answer in time' : remoteErrorText(error, remote) }, 'remote A2A agent unavailable: CancelTask not delivered yet');
        return 'unavailable';
      }
      log.warn({ ...where, reason: remoteErrorText(error, remote) }, 'remote A2A agent: CancelTask refused or not understood; its task is followed no more');
      return 'done';
    }
  } catch (error) {
    // Our storage, noting the answer: the remote was told; only the note is missing.
    log.error({ ...where, reason: (error as Error).message }, 'remote A2A agent: the answer to CancelTask could not be noted');
    return 'done';
  }
}

/** Whether the work row (`agentId`, `threadId`) is leased now (an exchange in progress). Errors: the storage's. */
async function isLeased(db: Queryable, agentId: string, threadId: string): Promise<boolean> {
  const rows = await db.query<{ leased: boolean }>(`SELECT lease_token IS NOT NULL AS leased FROM agent_work WHERE agent_id = $1 AND thread_id = $2`, [agentId, threadId]);
  return rows[0]?.leased === true;
}

/** Options of {@link createRemoteCanceller}. */
export interface RemoteCancellerOptions {
  deps: DomainDeps;
  log: LoopLogger;
  /** Aborted when the service stops: cancels in flight end (logged as not delivered). */
  stopping: AbortSignal;
  /** Longest exchange with the remote per attempt, in milliseconds (the loop's call timeout). */
  callTimeoutMs: number;
  /** The wait before attempt `n + 1` after `n` failed, in milliseconds. Default 1 s doubling, at most 5 min. */
  backoffMs?(failures: number): number;
  /** How often a leased work row is looked at while the canceller waits for its exchange to end, in milliseconds. Default 1000. */
  leasePollMs?: number;
}

/** Cancels remote A2A agents' tasks from the process that canceled ours (see the module's comment). */
export interface RemoteCanceller {
  /** For `DomainDeps.onTaskCanceled`: starts, without waiting, what the cancel of `task` asks of a remote A2A assignee. Never throws. */
  taskCanceled(task: Task): void;
  /** Resolves once the cancels in flight ended (abort `stopping` first to end them early). */
  close(): Promise<void>;
}

/**
 * Creates the canceller of the process. `taskCanceled(task)` looks up the task's assignee: when
 * it is a remote A2A agent whose exchange on the task's thread still follows a remote task, and no
 * exchange is in progress (the thread's work row is not leased: an exchange in progress sends
 * `CancelTask` itself, remote-runner.ts; while the row is leased the canceller waits for it to be
 * parked and then reads the exchange again, so that one that settled a question meanwhile, as the
 * cancel came, is still sent it), it sends `CancelTask` ({@link sendRemoteCancel}), up to
 * {@link maxCancelAttempts} times with backoff while the remote cannot be reached, then logs that it
 * gave up. Output: {@link RemoteCanceller}.
 */
export function createRemoteCanceller(options: RemoteCancellerOptions): RemoteCanceller {
  const { deps, log, stopping } = options;
  const backoffMs = options.backoffMs ?? ((failures: number) => Math.min(300_000, 1000 * 2 ** (failures - 1)));
  const leasePollMs = options.leasePollMs ?? 1000;
  const inFlight = new Set<Promise<void>>();

  async function cancelFor(task: Task): Promise<void> {
    // Leased: an exchange is in progress. If it is cut by the cancel it sends CancelTask itself
    // (and notes the remote's task canceled); if it settles a question (input-required) instead,
    // it parks the row and nothing would wake it (a remote agent has no turn to stop). So the
    // canceller waits for the lease to go (at most a call's time and a minute: a lease outlives
    // a dead process by no more) and then reads the exchange as that park left it.
    const waitUntil = Date.now() + options.callTimeoutMs + 60_000;
    while ((await isLeased(deps.db, task.assignee_id, task.thread_id)) && Date.now() < waitUntil) {
      await sleep(leasePollMs, undefined, { signal: stopping }).catch(() => undefined);
      if (stopping.aborted) return;
    }
    const rows = await deps.db.query<{ name: string; a2a: unknown; a2a_secrets: string | null; remote_task_id: string | null; remote_state: string | null }>(
      `SELECT p.name, p.a2a, p.a2a_secrets, x.remote_task_id, x.remote_state
         FROM participants p JOIN a2a_exchanges x ON x.agent_id = p.id AND x.thread_id = $2
        WHERE p.id = $1 AND p.a2a IS NOT NULL`,
      [task.assignee_id, task.thread_id],
    );
    const row = rows[0];
    const remoteTaskId = liveRemoteTask(row);
    if (!row || remoteTaskId === undefined) return;
    const assignee: RemoteAssignee = { agentId: task.assignee_id, threadId: task.thread_id, orgId: task.org_id, name: row.name, a2a: row.a2a, a2aSecrets: row.a2a_secrets };
    for (let attempt = 1; ; attempt++) {
      const signal = AbortSignal.any([stopping, AbortSignal.timeout(options.callTimeoutMs)]);
      if ((await sendRemoteCancel(deps, log, assignee, remoteTaskId, signal)) === 'done' || stopping.aborted) return;
      if (attempt >= maxCancelAttempts) {
        log.warn({ agent_id: assignee.agentId, thread_id: assignee.threadId, attempts: attempt }, 'remote A2A agent unavailable: CancelTask given up; its task is followed no more');
        return;
      }
      await sleep(backoffMs(attempt), undefined, { signal: stopping }).catch(() => undefined);
      if (stopping.aborted) return;
    }
  }

  return {
    taskCanceled(task) {
      const running: Promise<void> = cancelFor(task)
        .catch((error: unknown) => log.error({ task_id: task.task_id, reason: (error as Error).message }, 'remote A2A agent: its task could not be canceled'))
        .finally(() => inFlight.delete(running));
      inFlight.add(running);
    },
    async close() {
      await Promise.all([...inFlight]);
    },
  };
}
