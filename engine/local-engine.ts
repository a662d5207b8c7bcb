/**
 * The local engine: runs the same orchestration as the Temporal workflow, in-process, calling
 * the activities directly. Each activity call is retried like Temporal would (exponential
 * backoff; failures marked non-retryable stop at once). Nothing is remembered between runs:
 * an interrupted apply is resumed by running it again, which re-reads the live state.
 */
import pRetry from 'p-retry';
import type { ApplyActivities } from '../activities/apply-activities.ts';
import { isRetryable } from '../activities/failures.ts';
import { orchestrateApply } from '../workflows/apply-orchestration.ts';
import type { ApplyInput, ApplyResult, ProgressListener } from '../workflows/apply-orchestration.ts';

/** Retry policy of the local engine. */
export interface LocalRetryPolicy {
  /** Retries after the first attempt (default 5; 0 = no retry). */
  retries: number;
  /** First delay in milliseconds (default 500), doubled on each retry up to `maxTimeoutMs`. */
  minTimeoutMs: number;
  maxTimeoutMs: number;
}

const DEFAULT_RETRY: LocalRetryPolicy = { retries: 5, minTimeoutMs: 500, maxTimeoutMs: 10_000 };

/** Wraps every activity with the retry policy. */
export function withRetries(acts: ApplyActivities, policy: Partial<LocalRetryPolicy> = {}): ApplyActivities {
  const { retries, minTimeoutMs, maxTimeoutMs } = { ...DEFAULT_RETRY, ...policy };
  const wrapped: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(acts) as Array<[string, (input: unknown) => Promise<unknown>]>) {
    wrapped[name] = (input: unknown) =>
      pRetry(() => fn(input), {
        retries,
        minTimeout: minTimeoutMs,
        maxTimeout: maxTimeoutMs,
        shouldRetry: ({ error }) => isRetryable(error),
      });
  }
  return wrapped as ApplyActivities;
}

/**
 * Applies `input` in-process. Raises the first activity failure (an `ApplicationFailure` whose
 * `type` is the stable code) once retries are exhausted.
 */
export async function applyLocally(
  input: ApplyInput,
  acts: ApplyActivities,
  options: { retry?: Partial<LocalRetryPolicy>; onProgress?: ProgressListener } = {},
): Promise<ApplyResult> {
  return orchestrateApply(input, withRetries(acts, options.retry), options.onProgress);
}
