/**
 * The local engine: runs the same orchestration as the Temporal workflow, in-process, calling
 * the activities directly under the same retry policy (`workflows/retry-policy.ts`, applied by
 * `activities/retrying.ts`): the same attempts, the same backoff, a failure's own next delay (a
 * 429 or 503's `Retry-After`) honoured exactly, failures marked non-retryable stopped at once.
 * Nothing is remembered between runs: an interrupted apply is resumed by running it again, which
 * re-reads the live state.
 */
import { ApplicationFailure } from '@temporalio/common';
import { retrying as retryingCall, withRetries } from '../activities/retrying.ts';
import type { RetryOptions } from '../activities/retrying.ts';
import { orchestrateApply } from '../workflows/apply-orchestration.ts';
import type { ApplyInput, ApplyResult, OrchestratedActivities, ProgressListener } from '../workflows/apply-orchestration.ts';
import type {
  PipelineActivities,
  PipelineProgress,
  PipelineResult,
  PipelineRunInput,
  PipelineState,
  ProgressEvent,
  RunStatus,
  StepProgress,
} from '../workflows/pipeline-orchestration.ts';
import type { StreamableActivities } from './stream-waits.ts';
import type { CancelStepTaskInput, CancelStepTaskResult, ConversationActivities, TaskStepInput } from '../activities/conversation-activities.ts';
import { FINAL_TASK_STATES, TASK_CANCEL_ATTEMPTS } from '../workflows/task-states.ts';
import { setTimeout as delay } from 'node:timers/promises';

/** Changes per activity call on the local engine: one, so progress shows change by change. */
export const LOCAL_BATCH_SIZE = 1;

/**
 * Applies `input` in-process. Output: {@link ApplyResult}. Raises the first activity failure
 * (an `ApplicationFailure` whose `type` is the stable code) once its retries are exhausted.
 */
export async function applyLocally(
  input: ApplyInput,
  acts: OrchestratedActivities,
  options: { retry?: RetryOptions; onProgress?: ProgressListener } = {},
): Promise<ApplyResult> {
  const { orgId, applied } = await orchestrateApply(input, withRetries(acts, options.retry), {
    batchSize: input.batchSize ?? LOCAL_BATCH_SIZE,
    ...(options.onProgress ? { onProgress: options.onProgress } : {}),
    ...(options.retry ? { retry: options.retry } : {}),
  });
  return { orgId, applied };
}

/**
 * What a local run shows of itself while it runs (`teamctl runs show` of a local run): its tree
 * now, with each sub-pipeline's steps under its `run` entry, and the team's human names.
 */
export interface LocalRunView {
  /** The run's state now: status, the tree (sub-pipelines' steps filled in), the humans of its teams. */
  progress(): PipelineProgress;
}

/** The error a local run's waits and sleeps end with when its `signal` is aborted: the run's cancellation. */
export class LocalRunCancelled extends Error {
  constructor(message = 'the run was cancelled') {
    super(message);
    this.name = 'LocalRunCancelled';
  }
}

/**
 * Runs a pipeline in-process: the same orchestration as `pipelineWorkflow`, the activities called
 * directly under the same retry policy, waits held in this process (nothing survives it; the
 * Temporal engine is the durable one). A `sleep` is a timer of this process; a `run` entry runs
 * its sub-pipeline here too, with the run id `<this run's key>/<entry key>` as its business key.
 * `input.runKey` is the run's business key for idempotency keys (the CLI makes a fresh one per
 * run). `onProgress` hears every change of an entry, sub-pipelines' entries included (their
 * location starts with `{ run: ID }`). With `streamWaits` (and activities that can send without
 * waiting: `sendStep`, `readReply`, `waitForMessage`), waiting steps wait on one event stream of the organization for
 * the whole run (`engine/stream-waits.ts`) instead of a long poll each; the keys are read from
 * `streamWaits.env`. `watch` is handed, once, a {@link LocalRunView} of the run. Aborting
 * `signal` cancels the run as `runs cancel` cancels a workflow: the waiting steps and sleeps stop
 * at once, running entries end `cancelled`, nothing more is sent (a send already under way ends
 * first), and the run rejects with a {@link LocalRunCancelled} (the signal's reason when it is one).
 * A waiting task step's task is cancelled then, when the step's `timeout` passes, and when the run
 * fails meanwhile (a parallel member's, another member failing the run; a task being created is
 * cancelled once it is), with `cancelStepTask` among `acts` (best effort: a failure goes to
 * `onWarning`, default `process.emitWarning`, and the run ends as it would have); the run settles
 * once those cancels are done. Output: {@link PipelineResult}. Raises the first failing entry's error (an
 * `ApplicationFailure` typed by the stable code, e.g. `timed_out`, `reply_invalid`).
 */
export async function runPipelineLocally(
  input: PipelineRunInput & { runKey: string },
  acts: PipelineActivities | StreamableActivities | (PipelineActivities & TaskStepActivities),
  options: {
    retry?: RetryOptions;
    onProgress?: (event: ProgressEvent) => void;
    streamWaits?: { env: NodeJS.ProcessEnv; fetch?: typeof fetch };
    signal?: AbortSignal;
    watch?: (view: LocalRunView) => void;
    onWarning?: (text: string) => void;
  } = {},
): Promise<PipelineResult> {
  // Loaded here: the interpreter brings the CEL and JSON Schema libraries, which an apply (the
  // other half of this module) and every other command are spared at start-up.
  const { initialState, orchestratePipeline, RunStatuses, settleRunning, stepList, StepStatuses } = await import('../workflows/pipeline-orchestration.ts');
  const { signal } = options;
  const cancelled = (): LocalRunCancelled => (signal?.reason instanceof LocalRunCancelled ? signal.reason : new LocalRunCancelled());
  const retried = withRetries(acts, options.retry);
  let retrying: PipelineActivities = retried;
  let closeStream = () => {};
  if (options.streamWaits && 'sendStep' in acts && 'readReply' in acts && 'waitForMessage' in acts) {
    const { withStreamWaits } = await import('./stream-waits.ts');
    const streaming = withStreamWaits(withRetries(acts, options.retry), options.streamWaits.env, options.streamWaits.fetch);
    retrying = streaming.acts;
    closeStream = streaming.close;
  }
  if (signal) retrying = untilAborted(retrying, signal, cancelled);
  // Task steps see the signal themselves: a cancelled step cancels its task before it ends.
  const cancels: Array<Promise<void>> = [];
  // Aborted when the run has ended: a task step still under way then (a parallel member's, when
  // another member failed the run) cancels its task and ends.
  const ended = new AbortController();
  const steps = new Set<Promise<unknown>>();
  const { cancelStepTask } = acts as Partial<TaskStepActivities>;
  retrying = withTaskSteps(retrying, retried as Partial<TaskStepActivities>, {
    ...(signal ? { signal } : {}),
    ended: ended.signal,
    cancelled,
    cancels,
    steps,
    onWarning: options.onWarning ?? ((text) => process.emitWarning(text, 'TeamctlWarning')),
    ...(cancelStepTask
      ? {
          cancelStepTask: (input: CancelStepTaskInput) =>
            retryingCall(() => cancelStepTask(input), { ...options.retry, maximumAttempts: Math.min(TASK_CANCEL_ATTEMPTS, options.retry?.maximumAttempts ?? TASK_CANCEL_ATTEMPTS) }),
        }
      : {}),
  });
  // Every run of this process (the top one and its sub-pipelines) by business key, for the view.
  const runs = new Map<string, { pipeline: PipelineRunInput['pipeline']; state: PipelineState; status: RunStatus }>();
  const view: LocalRunView = {
    progress: () => {
      const top = runs.get(input.runKey) ?? { pipeline: input.pipeline, state: initialState(input.pipeline), status: signal?.aborted ? RunStatuses.cancelled : RunStatuses.running };
      const humans = new Set<string>();
      const tree = (runKey: string, depth: number): StepProgress[] => {
        const entry = runs.get(runKey);
        if (!entry) return [];
        for (const name of entry.state.team?.humans ?? []) humans.add(name);
        const steps = stepList(entry.pipeline, entry.state);
        // A sub-pipeline's steps under its entry, as `runs show` draws a child workflow's.
        const fill = (list: StepProgress[]) => {
          for (const step of list) {
            if (step.kind === 'run' && step.run_id && depth > 0) step.steps = tree(step.run_id, depth - 1);
            step.iterations?.forEach((iteration) => fill(iteration.steps));
            step.items?.forEach((item) => fill(item.steps));
          }
        };
        fill(steps);
        return steps;
      };
      const steps = tree(input.runKey, 8);
      return { pipeline: top.pipeline.name, status: top.status, steps, ...(top.state.team ? { humans: [...humans] } : {}) };
    },
  };
  const run = async (runInput: PipelineRunInput & { runKey: string }, onProgress: ((event: ProgressEvent) => void) | undefined): Promise<PipelineResult> => {
    const state = initialState(runInput.pipeline);
    const entry = { pipeline: runInput.pipeline, state, status: RunStatuses.running as RunStatus };
    runs.set(runInput.runKey, entry);
    try {
      const outcome = await orchestratePipeline(runInput, retrying, state, {
        now: () => Date.now(),
        runKey: runInput.runKey,
        isCancellation: (error) => error instanceof LocalRunCancelled,
        sleep: (ms) => (signal ? delay(ms, undefined, { signal }).catch((error: unknown) => Promise.reject(signal.aborted ? cancelled() : error)) : delay(ms)),
        runChild: ({ runId, input: child }) => {
          const prefix = runId.slice(runInput.runKey.length + 1);
          return run({ ...child, runKey: runId }, onProgress && ((event) => onProgress({ ...event, location: [{ run: prefix }, ...event.location] })));
        },
        ...(onProgress ? { onProgress } : {}),
      });
      // Without shouldPause the orchestration always runs to its end.
      if (!outcome.complete) throw new Error('a local pipeline run paused, which only a workflow asks for');
      entry.status = RunStatuses.completed;
      return outcome.result;
    } catch (error) {
      const wasCancelled = error instanceof LocalRunCancelled;
      entry.status = wasCancelled ? RunStatuses.cancelled : RunStatuses.failed;
      settleRunning(state, wasCancelled ? StepStatuses.cancelled : StepStatuses.failed);
      throw error;
    }
  };
  options.watch?.(view);
  try {
    if (signal?.aborted) throw cancelled();
    return await run(input, options.onProgress);
  } finally {
    // Task steps still under way (a parallel member's, when another member ended the run first)
    // stop and cancel their tasks; the run settles once those cancels are done.
    ended.abort();
    await Promise.allSettled(steps);
    await Promise.all(cancels);
    closeStream();
  }
}

/**
 * `running` until `signal` is aborted: then a rejection with `cancelled()` at once, `running` left
 * to end on its own (its result or failure dropped). Without `signal`: `running` itself.
 */
function untilSignal<T>(running: Promise<T>, signal: AbortSignal | undefined, cancelled: () => Error): Promise<T> {
  if (!signal) return running;
  if (signal.aborted) {
    running.catch(() => {});
    return Promise.reject(cancelled());
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(cancelled());
    signal.addEventListener('abort', onAbort, { once: true });
    running.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/**
 * The activities of a run that `signal` cancels: each call rejects with `cancelled()` as soon as
 * the signal is aborted (at once when it already is), leaving the call itself to end on its own
 * (a wait on the run's stream ends when the stream closes with the run; a send under way finishes
 * and its result is dropped). So the orchestration stops where it waits, and sends nothing more.
 */
function untilAborted(acts: PipelineActivities, signal: AbortSignal, cancelled: () => Error): PipelineActivities {
  const guard = <T>(call: () => Promise<T>): Promise<T> => (signal.aborted ? Promise.reject(cancelled()) : untilSignal(call(), signal, cancelled));
  const { task } = acts;
  return {
    resolveTeam: (input) => guard(() => acts.resolveTeam(input)),
    converse: (input, options) => guard(() => acts.converse(input, options)),
    ...(task ? { task: (input, options) => guard(() => task(input, options)) } : {}),
  };
}

/**
 * The activities a local run's task steps are made of (`activities/conversation-activities.ts`);
 * without `cancelStepTask`, a task the run stops waiting for is left open.
 */
export type TaskStepActivities = Pick<ConversationActivities, 'createStepTask' | 'awaitTask'> & Partial<Pick<ConversationActivities, 'cancelStepTask'>>;

/** How a local run's task steps end when the run stops waiting for their tasks (see {@link withTaskSteps}). */
interface TaskStepEnding {
  /** The run's cancellation, when it can be cancelled. */
  signal?: AbortSignal;
  /** Aborted once the run has ended (failed, say): a step still under way stops too. */
  ended: AbortSignal;
  /** Where each task step under way is put, until it ends (for the run to wait for). */
  steps: Set<Promise<unknown>>;
  /** The error a cancelled step ends with. */
  cancelled: () => Error;
  /** Cancels a task (retried a few times); absent: tasks are left open. */
  cancelStepTask?: (input: CancelStepTaskInput) => Promise<CancelStepTaskResult>;
  /** Hears a cancel that failed. */
  onWarning: (text: string) => void;
  /** Where each cancel under way is put, for the run to wait for (they never reject). */
  cancels: Array<Promise<void>>;
}

/**
 * `acts` with task steps (`task: true`) run as the workflow runs them: `createStepTask`, then,
 * when the step waits and the task is not final yet, `awaitTask` (a long poll of the task's
 * thread, reading the task after each poll; the step shows `poll` as its wait). `from` gives the
 * two activities (retried); `acts` that lack them, or have `task` already, are returned as given.
 * A step stops waiting when `ending.signal` is aborted (it rejects with `ending.cancelled()`; the
 * poll under way ends on its own, within a poll once the task is canceled) or at its deadline
 * (`timed_out`); either way its task is cancelled first, as the workflow does (best effort: a
 * task final already is left so, a failure goes to `ending.onWarning`, and the step ends as it would
 * have). A run cancelled while a step's task is being created cancels that task too. So does a
 * run that ended (`ending.ended`: failed while this step waits or creates its task); the step then
 * rejects with an error nobody sees (its run settled its steps already).
 */
function withTaskSteps(acts: PipelineActivities, from: Partial<TaskStepActivities>, ending: TaskStepEnding): PipelineActivities {
  const { createStepTask, awaitTask } = from;
  if (acts.task || !createStepTask || !awaitTask) return acts;
  const { signal, cancelled, ended } = ending;
  const stopping = signal ? AbortSignal.any([signal, ended]) : ended;
  /** Why a step stops waiting: the run's cancel, or its end. */
  const stopped = (): Error => (signal?.aborted ? cancelled() : new Error('the run ended while this task step was under way'));
  const cancelOpenTask = (input: TaskStepInput, taskId: string): Promise<void> => {
    const { cancelStepTask } = ending;
    if (!cancelStepTask) return Promise.resolve();
    const done = cancelStepTask({ connection: input.connection, taskId }).then(
      () => {},
      (error: unknown) => {
        const code = error instanceof ApplicationFailure ? error.type : undefined;
        ending.onWarning(`step ${input.stepId}: could not cancel task ${taskId}, which the run no longer waits for (${code ?? 'internal'}: ${(error as Error).message}); it stays open`);
      },
    );
    ending.cancels.push(done);
    return done;
  };
  return {
    ...acts,
    task: (input, options = {}) => {
      const step = (async () => {
        if (signal?.aborted) throw cancelled();
        const created = await createStepTask(input);
        options.taskCreated?.(created);
        const waits = input.deadline !== undefined && !FINAL_TASK_STATES.includes(created.state);
        if (stopping.aborted) {
          // Cancelled, or the run ended, while the task was being created: a task the step would wait for, nobody will.
          if (waits) await cancelOpenTask(input, created.taskId);
          throw stopped();
        }
        if (!waits) return created;
        // WaitKinds.poll: the interpreter's module is loaded lazily (see runPipelineLocally).
        options.waiting?.('poll');
        try {
          return await untilSignal(awaitTask({ connection: input.connection, taskId: created.taskId, threadId: created.threadId, deadline: input.deadline! }), stopping, stopped);
        } catch (error) {
          // Cancelled, ended, or out of time: nobody waits for the task any more, so its assignee should stop.
          if (stopping.aborted || (error instanceof ApplicationFailure && error.type === 'timed_out')) await cancelOpenTask(input, created.taskId);
          throw error;
        }
      })();
      ending.steps.add(step);
      const forget = () => void ending.steps.delete(step);
      step.then(forget, forget);
      return step;
    },
  };
}
