import { ApplicationFailure } from '@temporalio/common';
import { AcsApiError } from '../client/errors.ts';
import { ToolkitError } from '../errors/catalogue.ts';

/**
 * Maps an error of a service call to a Temporal `ApplicationFailure` whose `type` is the stable
 * code (contract §2): non-retryable for 4xx other than 429 and for toolkit errors (a missing
 * secret will not appear by retrying); 429 and 503 carry the service's `Retry-After` as the next
 * retry delay. Other errors are returned unchanged (Temporal retries them).
 */
export function toApplicationFailure(error: unknown): unknown {
  if (error instanceof AcsApiError) {
    const nonRetryable = error.status >= 400 && error.status < 500 && error.status !== 429;
    return ApplicationFailure.create({
      type: error.code,
      message: error.message,
      nonRetryable,
      details: [{ status: error.status, requestId: error.requestId ?? null, existingId: error.existingId ?? null }],
      ...(error.retryAfterSeconds ? { nextRetryDelay: error.retryAfterSeconds * 1000 } : {}),
    });
  }
  if (error instanceof ToolkitError) {
    return ApplicationFailure.create({ type: error.code, message: error.message, nonRetryable: true });
  }
  return error;
}

/** Whether an error (an `ApplicationFailure` or not) may succeed when the call is retried. */
export function isRetryable(error: unknown): boolean {
  if (error instanceof ApplicationFailure) return !error.nonRetryable;
  if (error instanceof AcsApiError) return error.retryable;
  return !(error instanceof ToolkitError);
}
