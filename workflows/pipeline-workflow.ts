/**
 * The Temporal workflow of a pipeline run: the orchestration of `pipeline-orchestration.ts`
 * over activities known by type only.
 *
 * - Waiting by **push** (`pipeline-waits.ts`; runs started since `PIPELINE_PATCHES.waitsInWorkflow`,
 *   when `waitsByPush`): a local activity (`sendStep`) sends the message and reads the thread once;
 *   then the workflow waits — no activity, no slot, no connection — for the `message` signal of
 *   `teamctl worker --events-listen`, reading the thread every `reconcileEvery` and at the
 *   deadline. Eight history events per awaited reply (seven when the step waits on a thread it
 *   already waited on).
 * - Waiting by **poll** (runs recorded before, and `waitMode: poll` or no webhook): one `converse`
 *   activity per step sends the message and waits for the reply: six history events per awaited
 *   reply, however long the wait (the activity long-polls the service and heartbeats its cursor;
 *   heartbeats add no events), but it holds an activity slot of the worker while it waits. A
 *   worker that dies mid-wait is noticed by the heartbeat timeout and the step resumes on another
 *   worker from its last cursor, without sending again (the message id is in the heartbeat, and
 *   the send carries an Idempotency-Key made from the workflow id and the step id).
 * - A step that awaits no reply sends with the local activity (runs started since the patch).
 * - A task step (`task: true`) creates its task with a local activity (`createStepTask`, one
 *   marker), then waits in one `awaitTask` activity that long-polls the task's thread and reads
 *   the task until it is final, heartbeating its cursor: a worker that dies mid-wait is noticed
 *   by the heartbeat timeout and the wait resumes on another worker (nothing is created twice:
 *   the creation's marker is in the history, and it carries an Idempotency-Key). A task the run
 *   stops waiting for — the run is cancelled, or the step's `timeout` passes — is cancelled
 *   (`cancelStepTask`, a local activity in a non-cancellable scope, best effort: its failure is
 *   logged and the run ends as it would have); runs recorded before the patch
 *   `PIPELINE_PATCHES.cancelOpenTasks` replay without it. Since `cancelTasksAtEnd`, so is a task
 *   that another task step still waits for when the run fails, and the creation of a task is
 *   awaited in a non-cancellable scope, its task cancelled when the run was cancelled meanwhile.
 * - Expressions (CEL) and typed replies (JSON Schema, ajv) are evaluated in the workflow itself:
 *   both libraries are pure, deterministic JavaScript that the workflow sandbox runs (ajv's
 *   generated validators included), so a `when`, an `until` or a reply check adds no history
 *   event. A re-ask is one more `converse` activity in the same thread.
 * - A `sleep` is a durable timer; a `run` entry is a child workflow (`pipelineWorkflow` again)
 *   whose id is the run's business key, `/`, and the entry's key, so `runs show` finds it under
 *   its parent; cancelling the run cancels it.
 * - `progress` (query) answers the run's tree: each entry's state, thread id, reply and value,
 *   loops with their iterations and maps with their items.
 * - Cancelling the run cancels the waiting activities; nothing more is sent (but the cancel of a
 *   waiting task step's task), and the run ends cancelled with its steps so marked.
 * - Past `historyEventLimit` events (or when the server suggests it) the run continues as new
 *   between entries, between loop iterations and between map items (once the items in flight
 *   are done), carrying its state, so a pipeline that runs for weeks, loops or maps over a
 *   thousand items stays within limits.
 *
 * Changing this file changes how running histories replay: a change to the commands it issues
 * must be guarded with `patched()` (Temporal's patching), and `test/workflows/replay.test.ts`
 * replays recorded pipeline histories to catch one that is not.
 */
import {
  ActivityFailure,
  CancellationScope,
  continueAsNew,
  defineQuery,
  executeChild,
  isCancellation,
  log,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  sleep,
  TimeoutFailure,
  workflowInfo,
} from '@temporalio/workflow';
import { errorOf, initialState, orchestratePipeline, RunStatuses, settleRunning, StepStatuses, stepList, WaitKinds } from './pipeline-orchestration.ts';
import type { AwaitTaskInput, ConversationActivities, ConverseInput, ResolvedTeam, TaskStepInput } from '../activities/conversation-activities.ts';
import type { Connection } from '../activities/connection.ts';
import { DEFAULT_RECONCILE_EVERY, WaitModes } from '../definitions/pipeline-limits.ts';
import type { WaitMode } from '../definitions/pipeline-limits.ts';
import { parseDuration } from '../definitions/durations.ts';
import type { ExchangeOptions, PipelineActivities, PipelineProgress, PipelineResult, PipelineRunInput, RunStatus } from './pipeline-orchestration.ts';
import { PushWaits } from './pipeline-waits.ts';
import { FINAL_TASK_STATES, TASK_CANCEL_ATTEMPTS } from './task-states.ts';
import { temporalRetryPolicy } from './retry-policy.ts';

/** The `progress` query: each step's state, thread id and reply so far. */
export const progressQuery = defineQuery<PipelineProgress>('progress');

/** Default of `PipelineRunInput.historyEventLimit` (Temporal warns at 10,240 events). */
export const PIPELINE_HISTORY_EVENT_LIMIT = 10_000;

/**
 * Heartbeat timeout of a waiting step: a worker that stops heartbeating for this long is taken
 * for dead and the step is retried elsewhere. The activity heartbeats every few seconds, and
 * cancellation reaches it with a heartbeat's answer, so this also bounds how long a cancel takes.
 */
export const CONVERSE_HEARTBEAT_TIMEOUT_MS = 20_000;

/** Time given to a step beyond its wait, for sending and retries. */
const STEP_MARGIN_MS = 5 * 60_000;

/**
 * Patch ids (`patched()`): a run started by this code sends every step's message with a local
 * activity and, in push mode, waits for replies in the workflow (`pipeline-waits.ts`); a run
 * recorded before replays with one `converse` activity per step, as it ran. `cancelOpenTasks`: a
 * task step's task that the run stops waiting for (cancelled, timed out) is cancelled; a run
 * recorded before (its `runs show` replays it) ends as it did, without the cancel.
 * `cancelTasksAtEnd`: a task step's creation is awaited even when the run is cancelled meanwhile
 * (and the task it made cancelled then), and a run that fails cancels the tasks its other task
 * steps still wait for (a parallel member's, when another member failed the run); a run recorded
 * before ends as it did.
 */
export const PIPELINE_PATCHES = {
  waitsInWorkflow: 'pipeline-waits-in-workflow',
  cancelOpenTasks: 'pipeline-cancel-open-tasks',
  cancelTasksAtEnd: 'pipeline-cancel-tasks-at-end',
} as const;

/**
 * Whether a task step's wait failed because its time ran out: `awaitTask`'s `timed_out` at the
 * step's deadline, or (a worker that never answered) the activity's own timeout.
 */
function waitRanOut(error: unknown): boolean {
  return errorOf(error).code === 'timed_out' || (error instanceof ActivityFailure && error.cause instanceof TimeoutFailure);
}

/**
 * Whether a run on `team` waits by push: asked for (`push`) or allowed (`auto`, the organization
 * has an enabled webhook for `message.created`), and the worker registered the search attribute
 * the waits are listed in (without it the listener could not find the run, and the upsert would
 * fail). Otherwise the run polls.
 */
export function waitsByPush(mode: WaitMode, team: ResolvedTeam): boolean {
  if (mode === WaitModes.poll || team.waits?.registered !== true) return false;
  return mode === WaitModes.push || team.waits.webhook;
}

/**
 * Runs a pipeline. Input: {@link PipelineRunInput} (secret references only). Output:
 * {@link PipelineResult}. Fails with the failing activity's `ApplicationFailure` (its `type` the
 * stable code, e.g. `timed_out` when no reply came in time, `keys_refused`); ends cancelled when
 * cancelled.
 */
export async function pipelineWorkflow(input: PipelineRunInput): Promise<PipelineResult> {
  const state = input.carried ?? initialState(input.pipeline);
  let status: RunStatus = RunStatuses.running;
  setHandler(progressQuery, () => ({ pipeline: input.pipeline.name, status, steps: stepList(input.pipeline, state), ...(state.team?.humans ? { humans: state.team.humans } : {}) }));

  const retry = temporalRetryPolicy();
  const lookup = proxyActivities<PipelineActivities>({ startToCloseTimeout: '1 minute', retry });
  const waits = new PushWaits();
  const inWorkflow = patched(PIPELINE_PATCHES.waitsInWorkflow);
  // Sends and reconcile reads are short: local activities, one marker event each, no task queue round trip.
  const local = proxyLocalActivities<ConversationActivities>({ startToCloseTimeout: '1 minute', retry });
  const mode: WaitMode = input.waitMode ?? input.pipeline.waitMode ?? WaitModes.auto;
  /** The long-poll activity: a step that sends and waits in one activity, holding its slot. */
  const pollingConverse = (args: ConverseInput) => {
    const wait = args.deadline === undefined ? 0 : Math.max(0, args.deadline - Date.now());
    return proxyActivities<PipelineActivities>({
      startToCloseTimeout: wait + STEP_MARGIN_MS,
      heartbeatTimeout: CONVERSE_HEARTBEAT_TIMEOUT_MS,
      retry,
    }).converse(args);
  };
  /** A task step's wait: an activity that long-polls the task's thread and reads the task, heartbeating. */
  const awaitingTask = (args: AwaitTaskInput) =>
    proxyActivities<ConversationActivities>({
      startToCloseTimeout: Math.max(0, args.deadline - Date.now()) + STEP_MARGIN_MS,
      heartbeatTimeout: CONVERSE_HEARTBEAT_TIMEOUT_MS,
      retry,
    }).awaitTask(args);
  // The cancel of a task is short and best effort: a few attempts, then it is logged and left.
  const cancelling = proxyLocalActivities<ConversationActivities>({ startToCloseTimeout: '30 seconds', retry: { ...retry, maximumAttempts: TASK_CANCEL_ATTEMPTS } });
  /** The cancels of tasks under way: the run ends only once they are done (they never fail). */
  const taskCancels: Array<Promise<void>> = [];
  /**
   * Cancels the task of a step that the run stops waiting for, in a non-cancellable scope (so that
   * it runs when the run itself is cancelled). Best effort: a task that is final already is left
   * as it is, and a failure is logged; neither changes how the step and the run end.
   */
  const cancelOpenTask = (connection: Connection, taskId: string, stepId: string): Promise<void> => {
    const done = CancellationScope.nonCancellable(async () => {
      // A run recorded before replays as it ran: without the cancel.
      if (!patched(PIPELINE_PATCHES.cancelOpenTasks)) return;
      try {
        await cancelling.cancelStepTask({ connection, taskId });
      } catch (error) {
        const { code, message } = errorOf(error);
        log.warn(`step ${stepId}: could not cancel task ${taskId}, which the run no longer waits for (${code}: ${message}); it stays open`, { taskId, code });
      }
    });
    taskCancels.push(done);
    return done;
  };
  /**
   * Whether this run cancels its task steps' tasks when it ends (`cancelTasksAtEnd`): asked once,
   * at its first task step (a run without one never records the patch).
   */
  let tasksAtEnd: boolean | undefined;
  /**
   * The task steps under way (`cancelTasksAtEnd`), each until it ends: its creation's outcome (the
   * id of the task it waits for, or none: not created, final already, not waited for).
   */
  const stepTasks = new Set<{ connection: Connection; stepId: string; waitsFor: Promise<string | undefined> }>();
  /** Set when the run failed: a task step whose creation ends afterwards waits for nothing. */
  let runFailed = false;
  const acts: PipelineActivities = {
    resolveTeam: (args) => lookup.resolveTeam(args),
    // Task steps exist only in runs started since they were added: no patch guards them (the
    // cancel of a task the run stops waiting for came later: `cancelOpenTasks` guards it, and
    // `cancelTasksAtEnd` the cancels at a failed run's end and of a creation a cancel overtook).
    task: async (args: TaskStepInput, options: ExchangeOptions = {}) => {
      tasksAtEnd ??= patched(PIPELINE_PATCHES.cancelTasksAtEnd);
      let created;
      const stepTask = { connection: args.connection, stepId: args.stepId, waitsFor: Promise.resolve<string | undefined>(undefined) };
      if (tasksAtEnd) {
        // Awaited even when the run is cancelled meanwhile: the task it makes is then known, so it
        // can be cancelled (a cancelled local activity's task may have been created all the same).
        const creation = CancellationScope.nonCancellable(() => local.createStepTask(args));
        stepTask.waitsFor = creation.then(
          (task) => (args.deadline === undefined || FINAL_TASK_STATES.includes(task.state) ? undefined : task.taskId),
          () => undefined,
        );
        stepTasks.add(stepTask);
        try {
          created = await creation;
        } catch (error) {
          stepTasks.delete(stepTask);
          throw error;
        }
      } else {
        created = await local.createStepTask(args);
      }
      options.taskCreated?.(created);
      const waits = args.deadline !== undefined && !FINAL_TASK_STATES.includes(created.state);
      if (tasksAtEnd) {
        const scope = CancellationScope.current();
        if (scope.consideredCancelled) {
          // Cancelled while the task was being created: a task the step would wait for, nobody will.
          stepTasks.delete(stepTask);
          if (waits) await cancelOpenTask(args.connection, created.taskId, args.stepId);
          await scope.cancelRequested;
        }
        // The run failed while the task was being created: its end cancels the task (see below);
        // the step is settled already, and what it throws is dropped.
        if (runFailed) throw new Error('the run failed while this task step created its task');
        if (!waits) stepTasks.delete(stepTask);
      }
      if (!waits) return created;
      options.waiting?.(WaitKinds.poll);
      try {
        return await awaitingTask({ connection: args.connection, taskId: created.taskId, threadId: created.threadId, deadline: args.deadline! });
      } catch (error) {
        // Cancelled, or out of time: nobody waits for the task any more, so its assignee should stop.
        if (isCancellation(error) || waitRanOut(error)) await cancelOpenTask(args.connection, created.taskId, args.stepId);
        throw error;
      } finally {
        stepTasks.delete(stepTask);
      }
    },
    converse: async (args: ConverseInput, options: ExchangeOptions = {}) => {
      if (!inWorkflow) {
        if (args.awaitFromId !== undefined) options.waiting?.(WaitKinds.poll);
        return pollingConverse(args);
      }
      const push = args.awaitFromId !== undefined && state.team !== undefined && waitsByPush(mode, state.team);
      if (args.awaitFromId !== undefined && !push) {
        options.waiting?.(WaitKinds.poll);
        return pollingConverse(args);
      }
      const sent = await local.sendStep(args);
      options.sent?.(sent.threadId);
      if (args.awaitFromId === undefined || sent.reply) return sent;
      options.waiting?.(WaitKinds.push);
      const fromId = args.awaitFromId;
      const reply = await waits.wait({
        threadId: sent.threadId,
        sentId: sent.messageId,
        fromId,
        deadline: args.deadline ?? Date.now(),
        reconcileEveryMs: options.reconcileEveryMs ?? parseDuration(DEFAULT_RECONCILE_EVERY)!,
        read: () => local.readReply({ connection: args.connection, threadId: sent.threadId, after: sent.messageId, fromId }),
      });
      return { ...sent, reply };
    },
  };
  const limit = input.historyEventLimit ?? PIPELINE_HISTORY_EVENT_LIMIT;
  let outcome;
  try {
    outcome = await orchestratePipeline(input, acts, state, {
      now: () => Date.now(),
      runKey: input.runKey ?? workflowInfo().workflowId,
      shouldPause: () => workflowInfo().historyLength >= limit || workflowInfo().continueAsNewSuggested,
      isCancellation,
      sleep: (ms) => {
        waits.settle();
        return sleep(ms);
      },
      runChild: ({ runId, input: child }) => {
        waits.settle();
        return executeChild(pipelineWorkflow, { workflowId: runId, args: [child] });
      },
    });
  } catch (error) {
    const cancelled = isCancellation(error);
    if (!cancelled && stepTasks.size > 0) {
      // The run failed while other task steps wait for their tasks (a parallel member's, when
      // another member failed): nobody will, so their assignees should stop. A creation under
      // way ends first (its step then waits for nothing). The steps are settled first, so that
      // such a step ends `failed` with the others.
      settleRunning(state, StepStatuses.failed);
      runFailed = true;
      const steps = [...stepTasks];
      stepTasks.clear();
      await Promise.all(
        steps.map(async ({ connection, stepId, waitsFor }) => {
          const taskId = await waitsFor;
          if (taskId !== undefined) await cancelOpenTask(connection, taskId, stepId);
        }),
      );
    }
    // Cancels still under way (a parallel member's, when another member ended the run first).
    if (taskCancels.length > 0) await Promise.all(taskCancels);
    status = cancelled ? RunStatuses.cancelled : RunStatuses.failed;
    settleRunning(state, cancelled ? StepStatuses.cancelled : StepStatuses.failed);
    throw error;
  }
  if (!outcome.complete) return continueAsNew<typeof pipelineWorkflow>({ ...input, runKey: input.runKey ?? workflowInfo().workflowId, carried: outcome.state });
  status = RunStatuses.completed;
  return outcome.result;
}
