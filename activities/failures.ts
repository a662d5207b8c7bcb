import { ApplicationFailure } from '@temporalio/common';
import { AcsApiError, connectionFailureCode, isTlsFailure } from '../client/errors.ts';
import { ToolkitError } from '../errors/catalogue.ts';

/** What an `ApplicationFailure` of a service call carries in its first detail. */
interface CallDetails {
  /** The HTTP status, or 0 when no answer came. */
  status?: number;
  /** With status 0: the socket's or TLS layer's error code (`ECONNREFUSED`), when there was one. */
  connection?: string | null;
}

/**
 * Maps an error of a service call to a Temporal `ApplicationFailure` whose `type` is the stable
 * code (contract §2): non-retryable for 4xx other than 429, for a TLS failure (a refused
 * certificate is refused on the next attempt too) and for toolkit errors (a missing secret will
 * not appear by retrying); 429 and 503 carry the service's `Retry-After` as the next retry delay.
 * The first detail holds `status`, `requestId`, `existingId` and, with no answer, `connection`
 * (the socket's error code). Other errors are returned unchanged (Temporal retries them).
 */
export function toApplicationFailure(error: unknown): unknown {
  if (error instanceof AcsApiError) {
    const connection = error.status === 0 ? (connectionFailureCode(error) ?? null) : null;
    const nonRetryable = (error.status >= 400 && error.status < 500 && error.status !== 429) || isTlsFailure(connection ?? undefined);
    return ApplicationFailure.create({
      type: error.code,
      message: error.message,
      nonRetryable,
      details: [{ status: error.status, requestId: error.requestId ?? null, existingId: error.existingId ?? null, ...(connection ? { connection } : {}) }],
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

/** The first detail of a service call's failure, as {@link toApplicationFailure} wrote it. */
function callDetails(error: ApplicationFailure): CallDetails {
  const first: unknown = error.details?.[0];
  return first && typeof first === 'object' ? (first as CallDetails) : {};
}

/**
 * Whether the service answered the call that failed (an HTTP status came back), from the client's
 * error or an activity's failure. Input: any error. Output: false for a failure to reach it and
 * for errors of other kinds.
 */
export function serviceAnswered(error: unknown): boolean {
  if (error instanceof AcsApiError) return error.status > 0;
  if (error instanceof ApplicationFailure) return (callDetails(error).status ?? 0) > 0;
  return false;
}

/**
 * Whether the call failed because the connection was refused: nothing listens at the service's
 * address (or not yet, or no longer). From the client's error or an activity's failure.
 */
export function connectionRefused(error: unknown): boolean {
  return connectionCode(error) === 'ECONNREFUSED';
}

/**
 * The socket's or TLS layer's error code of a call that got no answer (`ECONNREFUSED`,
 * `CERT_HAS_EXPIRED`, …), from the client's error or an activity's failure; undefined otherwise.
 */
export function connectionCode(error: unknown): string | undefined {
  if (error instanceof AcsApiError) return error.status === 0 ? connectionFailureCode(error) : undefined;
  if (error instanceof ApplicationFailure) return callDetails(error).connection ?? undefined;
  return undefined;
}
