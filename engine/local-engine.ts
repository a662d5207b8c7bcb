/**
 * The local engine: runs the same orchestration as the Temporal workflow, in-process, calling
 * the activities directly under the same retry policy (`workflows/retry-policy.ts`, applied by
 * `activities/retrying.ts`): the same attempts, the same backoff, a failure's own next delay (a
 * 429 or 503's `Retry-After`) honoured exactly, failures marked non-retryable stopped at once.
 * Nothing is remembered between runs: an interrupted apply is resumed by running it again, which
 * re-reads the live state.
 */
import { withRetries } from '../activities/retrying.ts';
import type { RetryOptions } from '../activities/retrying.ts';
import { orchestrateApply } from '../workflows/apply-orchestration.ts';
import type { ApplyInput, ApplyResult, OrchestratedActivities, ProgressListener } from '../workflows/apply-orchestration.ts';
import type { PipelineActivities, PipelineResult, PipelineRunInput, ProgressEvent } from '../workflows/pipeline-orchestration.ts';
import type { StreamableActivities } from './stream-waits.ts';
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
 * Runs a pipeline in-process: the same orchestration as `pipelineWorkflow`, the activities called
 * directly under the same retry policy, waits held in this process (nothing survives it; the
 * Temporal engine is the durable one). A `sleep` is a timer of this process; a `run` entry runs
 * its sub-pipeline here too, with the run id `<this run's key>/<entry key>` as its business key.
 * `input.runKey` is the run's business key for idempotency keys (the CLI makes a fresh one per
 * run). `onProgress` hears every change of an entry, sub-pipelines' entries included (their
 * location starts with `{ run: ID }`). With `streamWaits` (and activities that can send without
 * waiting: `sendStep`, `readReply`, `waitForMessage`), waiting steps wait on one event stream of the organization for
 * the whole run (`engine/stream-waits.ts`) instead of a long poll each; the keys are read from
 * `streamWaits.env`. Output: {@link PipelineResult}. Raises the first failing entry's error (an
 * `ApplicationFailure` typed by the stable code, e.g. `timed_out`, `reply_invalid`).
 */
export async function runPipelineLocally(
  input: PipelineRunInput & { runKey: string },
  acts: PipelineActivities | StreamableActivities,
  options: { retry?: RetryOptions; onProgress?: (event: ProgressEvent) => void; streamWaits?: { env: NodeJS.ProcessEnv; fetch?: typeof fetch } } = {},
): Promise<PipelineResult> {
  // Loaded here: the interpreter brings the CEL and JSON Schema libraries, which an apply (the
  // other half of this module) and every other command are spared at start-up.
  const { initialState, orchestratePipeline, settleRunning, StepStatuses } = await import('../workflows/pipeline-orchestration.ts');
  let retrying: PipelineActivities = withRetries(acts, options.retry);
  let closeStream = () => {};
  if (options.streamWaits && 'sendStep' in acts && 'readReply' in acts && 'waitForMessage' in acts) {
    const { withStreamWaits } = await import('./stream-waits.ts');
    const streaming = withStreamWaits(withRetries(acts, options.retry), options.streamWaits.env, options.streamWaits.fetch);
    retrying = streaming.acts;
    closeStream = streaming.close;
  }
  const run = async (runInput: PipelineRunInput & { runKey: string }, onProgress: ((event: ProgressEvent) => void) | undefined): Promise<PipelineResult> => {
    const state = initialState(runInput.pipeline);
    try {
      const outcome = await orchestratePipeline(runInput, retrying, state, {
        now: () => Date.now(),
        runKey: runInput.runKey,
        sleep: (ms) => delay(ms),
        runChild: ({ runId, input: child }) => {
          const prefix = runId.slice(runInput.runKey.length + 1);
          return run({ ...child, runKey: runId }, onProgress && ((event) => onProgress({ ...event, location: [{ run: prefix }, ...event.location] })));
        },
        ...(onProgress ? { onProgress } : {}),
      });
      // Without shouldPause the orchestration always runs to its end.
      if (!outcome.complete) throw new Error('a local pipeline run paused, which only a workflow asks for');
      return outcome.result;
    } catch (error) {
      settleRunning(state, StepStatuses.failed);
      throw error;
    }
  };
  try {
    return await run(input, options.onProgress);
  } finally {
    closeStream();
  }
}
