/**
 * The retry policy of `workflows/retry-policy.ts` applied in-process: the local engine wraps its
 * activities with it, and the batch activity (`runSteps`) retries each of its steps with it, so a
 * step is retried alike on either engine. A failure's own next delay (`nextRetryDelay`, from a
 * 429 or 503's `Retry-After` or the client's pacing) is waited exactly, never less.
 */
import { ApplicationFailure } from '@temporalio/common';
import { msOptionalToNumber } from '@temporalio/common/lib/time.js';
import pRetry from 'p-retry';
import { ACTIVITY_RETRY, retryDelayMs } from '../workflows/retry-policy.ts';
import { isRetryable } from './failures.ts';

/** Overrides of the retry policy (tests use `maximumAttempts: 1`). */
export interface RetryOptions {
  /** Attempts in all, the first included (default {@link ACTIVITY_RETRY}'s 10). */
  maximumAttempts?: number;
  /** Stops retrying (and the wait between attempts) when aborted: a cancelled or timed-out activity. */
  signal?: AbortSignal;
}

/** The delay a failure asks for before the next attempt (`ApplicationFailure.nextRetryDelay`), in ms. */
function requestedDelayMs(error: unknown): number | undefined {
  return error instanceof ApplicationFailure ? msOptionalToNumber(error.nextRetryDelay ?? undefined) : undefined;
}

/**
 * Sleeps until the wall clock reaches `deadline` (a timer may fire a little early; `Retry-After`
 * is a floor), or until `signal` aborts.
 */
async function sleepUntil(deadline: number, signal?: AbortSignal): Promise<void> {
  for (let left = deadline - Date.now(); left > 0 && !signal?.aborted; left = deadline - Date.now()) {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, left);
      function done() {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        resolve();
      }
      signal?.addEventListener('abort', done, { once: true });
    });
  }
}

/**
 * Calls `fn` until it succeeds, fails non-retryably, or has used its attempts; rejects with the
 * last failure, whose message then ends with `; gave up after N attempts over S s`.
 */
export function retrying<T>(fn: () => Promise<T>, options: RetryOptions = {}): Promise<T> {
  const maximumAttempts = options.maximumAttempts ?? ACTIVITY_RETRY.maximumAttempts;
  const started = Date.now();
  let attempts = 0;
  return pRetry(fn, {
    retries: maximumAttempts - 1,
    // p-retry's own delay is off: the policy's delay is waited in onFailedAttempt, which p-retry
    // awaits before the next attempt.
    minTimeout: 0,
    maxTimeout: 0,
    randomize: false,
    ...(options.signal ? { signal: options.signal } : {}),
    onFailedAttempt: async ({ error, attemptNumber, retriesLeft }) => {
      attempts = attemptNumber;
      if (retriesLeft === 0 || !isRetryable(error)) return;
      await sleepUntil(Date.now() + retryDelayMs(attemptNumber, requestedDelayMs(error)), options.signal);
    },
    shouldRetry: ({ error }) => isRetryable(error),
  }).catch((error: unknown) => {
    // A failure that outlived every attempt says so, so that the reader knows waiting was tried.
    if (attempts > 1 && attempts >= maximumAttempts && error instanceof Error && isRetryable(error)) {
      error.message += `; gave up after ${attempts} attempts over ${Math.round((Date.now() - started) / 1000)} s`;
    }
    throw error;
  });
}

/** Wraps every function of `acts` with {@link retrying}. */
export function withRetries<T extends object>(acts: T, options: RetryOptions = {}): T {
  const wrapped: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(acts) as Array<[string, (input: unknown) => Promise<unknown>]>) {
    wrapped[name] = (input: unknown) => retrying(() => fn(input), options);
  }
  return wrapped as T;
}
