/**
 * The one retry policy of every activity, on both engines. Temporal applies it through
 * `proxyActivities`; the local engine applies the same numbers through p-retry
 * (`engine/local-engine.ts`) with {@link retryDelayMs}, so an apply behaves alike on either.
 *
 * A failure that names its own next delay (`ApplicationFailure.nextRetryDelay`, set from a 429 or
 * 503's `Retry-After` or from the client's own rate-limit pacing) is retried after exactly that
 * delay instead of the backoff, as Temporal does. Pure and deterministic: workflows import it.
 */

/** Retry numbers, in milliseconds (Temporal's `RetryPolicy` fields). */
export const ACTIVITY_RETRY = {
  initialIntervalMs: 1_000,
  backoffCoefficient: 2,
  maximumIntervalMs: 30_000,
  /** Attempts in all, the first included. */
  maximumAttempts: 10,
} as const;

/**
 * Seconds one activity call may run before Temporal runs it again (the default
 * `startToCloseTimeout`): a batch of changes, each retried under this policy, may wait out
 * several `Retry-After`s.
 */
export const DEFAULT_ACTIVITY_TIMEOUT_SECONDS = 300;

/** {@link ACTIVITY_RETRY} as Temporal's `RetryPolicy` (for `proxyActivities`). */
export function temporalRetryPolicy(): {
  initialInterval: number;
  backoffCoefficient: number;
  maximumInterval: number;
  maximumAttempts: number;
} {
  return {
    initialInterval: ACTIVITY_RETRY.initialIntervalMs,
    backoffCoefficient: ACTIVITY_RETRY.backoffCoefficient,
    maximumInterval: ACTIVITY_RETRY.maximumIntervalMs,
    maximumAttempts: ACTIVITY_RETRY.maximumAttempts,
  };
}

/**
 * Milliseconds to wait after failed attempt number `attempt` (1-based) before the next one:
 * `nextRetryDelayMs` when the failure named one, else the exponential backoff, capped.
 */
export function retryDelayMs(attempt: number, nextRetryDelayMs?: number): number {
  if (nextRetryDelayMs !== undefined && nextRetryDelayMs >= 0) return nextRetryDelayMs;
  const backoff = ACTIVITY_RETRY.initialIntervalMs * ACTIVITY_RETRY.backoffCoefficient ** Math.max(0, attempt - 1);
  return Math.min(backoff, ACTIVITY_RETRY.maximumIntervalMs);
}
