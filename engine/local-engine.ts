/**
 * The local engine: runs the same orchestration as the Temporal workflow, in-process, calling
 * the activities directly under the same retry policy (`workflows/retry-policy.ts`): the same
 * attempts, the same backoff, a failure's own next delay (a 429 or 503's `Retry-After`) honoured
 * exactly, failures marked non-retryable stopped at once. Nothing is remembered between runs:
 * an interrupted apply is resumed by running it again, which re-reads the live state.
 */
import { ApplicationFailure } from '@temporalio/common';
import { msOptionalToNumber } from '@temporalio/common/lib/time.js';
import pRetry from 'p-retry';
import { isRetryable } from '../activities/failures.ts';
import { orchestrateApply } from '../workflows/apply-orchestration.ts';
import type { ApplyInput, ApplyResult, OrchestratedActivities, ProgressListener } from '../workflows/apply-orchestration.ts';
import { ACTIVITY_RETRY, retryDelayMs } from '../workflows/retry-policy.ts';

/** Overrides of the retry policy for the local engine (tests use `maximumAttempts: 1`). */
export interface LocalRetryOptions {
  /** Attempts in all, the first included (default {@link ACTIVITY_RETRY}'s 10). */
  maximumAttempts?: number;
}

/** The delay a failure asks for before the next attempt (`ApplicationFailure.nextRetryDelay`), in ms. */
function requestedDelayMs(error: unknown): number | undefined {
  return error instanceof ApplicationFailure ? msOptionalToNumber(error.nextRetryDelay ?? undefined) : undefined;
}

/** Sleeps until the wall clock reaches `deadline` (a timer may fire a little early; `Retry-After` is a floor). */
async function sleepUntil(deadline: number): Promise<void> {
  for (let left = deadline - Date.now(); left > 0; left = deadline - Date.now()) {
    await new Promise((resolve) => setTimeout(resolve, left));
  }
}

/** Wraps every activity with the retry policy. */
export function withRetries<T extends object>(acts: T, options: LocalRetryOptions = {}): T {
  const maximumAttempts = options.maximumAttempts ?? ACTIVITY_RETRY.maximumAttempts;
  const wrapped: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(acts) as Array<[string, (input: unknown) => Promise<unknown>]>) {
    wrapped[name] = (input: unknown) =>
      pRetry(() => fn(input), {
        retries: maximumAttempts - 1,
        // p-retry's own delay is off: the policy's delay is waited in onFailedAttempt, which
        // p-retry awaits before the next attempt.
        minTimeout: 0,
        maxTimeout: 0,
        randomize: false,
        onFailedAttempt: async ({ error, attemptNumber, retriesLeft }) => {
          if (retriesLeft === 0 || !isRetryable(error)) return;
          await sleepUntil(Date.now() + retryDelayMs(attemptNumber, requestedDelayMs(error)));
        },
        shouldRetry: ({ error }) => isRetryable(error),
      });
  }
  return wrapped as T;
}

/**
 * Applies `input` in-process. Output: {@link ApplyResult}. Raises the first activity failure
 * (an `ApplicationFailure` whose `type` is the stable code) once its retries are exhausted.
 */
export async function applyLocally(
  input: ApplyInput,
  acts: OrchestratedActivities,
  options: { retry?: LocalRetryOptions; onProgress?: ProgressListener } = {},
): Promise<ApplyResult> {
  const { orgId, applied } = await orchestrateApply(input, withRetries(acts, options.retry), { ...(options.onProgress ? { onProgress: options.onProgress } : {}) });
  return { orgId, applied };
}
