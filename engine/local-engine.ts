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
