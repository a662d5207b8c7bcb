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
import { connectionRefused, isRetryable, serviceAnswered } from './failures.ts';

/**
 * Once a call's waits between attempts, this one included, add up to this (ms), each wait is
 * reported to {@link RetryOptions.onWait} as it starts: a short hiccup stays quiet, a service
 * that keeps failing is seen being waited for.
 */
export const REPORTED_WAIT_MS = 2_000;

/**
 * Whether the service has answered any call of one run yet (a command's reads and changes share
 * one): set by {@link retrying} when a call succeeds or gets an HTTP answer.
 */
export interface ServiceContact {
  answered: boolean;
}

/** A wait before the next attempt, as {@link RetryOptions.onWait} hears of it. */
export interface RetryWait {
  /** The attempt that failed (1-based) and how many there may be in all. */
  attempt: number;
  maximumAttempts: number;
  /** How long the wait lasts, in ms. */
  delayMs: number;
  /** Why: the failure of that attempt. */
  error: unknown;
}

/** Overrides of the retry policy (tests use `maximumAttempts: 1`). */
export interface RetryOptions {
  /** Attempts in all, the first included (default {@link ACTIVITY_RETRY}'s 10). */
  maximumAttempts?: number;
  /** Stops retrying (and the wait between attempts) when aborted: a cancelled or timed-out activity. */
  signal?: AbortSignal;
  /**
   * The run's contact with the service. Given, a connection refused before the service has
   * answered any call of the run is not retried: nothing listens at that address, and waiting
   * minutes to say so helps nobody (a CLI command run against the wrong port). Once the service
   * has answered, a refused connection is a restart, retried as any other fault. Without it
   * (a worker, which may well start before the service) every refused connection is retried.
   */
  contact?: ServiceContact;
  /** Hears of each wait before a next attempt once the call's waits reach {@link REPORTED_WAIT_MS}. */
  onWait?: (wait: RetryWait) => void;
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
 * Calls `fn` until it succeeds, fails non-retryably (or, with `options.contact`, finds the
 * connection refused before the service ever answered), or has used its attempts; rejects with
 * the last failure, whose message then ends with `; gave up after N attempts over S s`. Once
 * its waits add up to {@link REPORTED_WAIT_MS}, each is reported to `options.onWait` as it starts.
 */
export function retrying<T>(fn: () => Promise<T>, options: RetryOptions = {}): Promise<T> {
  const maximumAttempts = options.maximumAttempts ?? ACTIVITY_RETRY.maximumAttempts;
  const started = Date.now();
  let attempts = 0;
  let waitedMs = 0;
  const { contact } = options;
  const attempt = contact
    ? async () => {
        try {
          const result = await fn();
          contact.answered = true;
          return result;
        } catch (error) {
          if (serviceAnswered(error)) contact.answered = true;
          throw error;
        }
      }
    : fn;
  // A refused first contact: the service is not there, not briefly away.
  const retryable = (error: unknown) => isRetryable(error) && !(contact && !contact.answered && connectionRefused(error));
  return pRetry(attempt, {
    retries: maximumAttempts - 1,
    // p-retry's own delay is off: the policy's delay is waited in onFailedAttempt, which p-retry
    // awaits before the next attempt.
    minTimeout: 0,
    maxTimeout: 0,
    randomize: false,
    ...(options.signal ? { signal: options.signal } : {}),
    onFailedAttempt: async ({ error, attemptNumber, retriesLeft }) => {
      attempts = attemptNumber;
      if (retriesLeft === 0 || !retryable(error)) return;
      const delayMs = retryDelayMs(attemptNumber, requestedDelayMs(error));
      waitedMs += delayMs;
      if (waitedMs >= REPORTED_WAIT_MS) options.onWait?.({ attempt: attemptNumber, maximumAttempts, delayMs, error });
      await sleepUntil(Date.now() + delayMs, options.signal);
    },
    shouldRetry: ({ error }) => retryable(error),
  }).catch((error: unknown) => {
    // A failure that outlived every attempt says so, so that the reader knows waiting was tried.
    if (attempts > 1 && attempts >= maximumAttempts && error instanceof Error && retryable(error)) {
      error.message += `; gave up after ${attempts} attempts over ${Math.round((Date.now() - started) / 1000)} s`;
    }
    throw error;
  });
}

/** Wraps every function of `acts` with {@link retrying}, all under the same `options` (one `contact` among them). */
export function withRetries<T extends object>(acts: T, options: RetryOptions = {}): T {
  const wrapped: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(acts) as Array<[string, (input: unknown) => Promise<unknown>]>) {
    wrapped[name] = (input: unknown) => retrying(() => fn(input), options);
  }
  return wrapped as T;
}
