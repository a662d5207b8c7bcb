import type { ProtectedResource } from '../api/schemas.ts';
import type { FieldProblem } from '../errors/catalogue.ts';

/** Code used by {@link AcsApiError} when no HTTP response arrived (connection refused, DNS, reset). */
export const NETWORK_ERROR = 'network_error';

/**
 * The one error the client raises: an HTTP error answer of the service (problem+json,
 * contract §2) or a failure to reach it (`status` 0, `code` `network_error`).
 *
 * Never carries the API key: the message is built from the method, path and problem only.
 */
export class AcsApiError extends Error {
  /** HTTP status, or 0 when no response arrived. */
  readonly status: number;
  /** Stable code from contract §2 (`not_found`, `conflict`, …) or `network_error`. */
  readonly code: string;
  /** The service's request id (`X-Request-Id`), when a response arrived. */
  readonly requestId: string | undefined;
  /** Field problems of an `invalid_request`. */
  readonly errors: FieldProblem[];
  /** For `conflict`: the id of the resource that already holds the name. */
  readonly existingId: string | undefined;
  /** For `deletion_protected`: every protected resource the deletion would have removed (contract §4). */
  readonly protectedResources: ProtectedResource[];
  /** For 429 and 503: seconds to wait before retrying (`Retry-After`). */
  readonly retryAfterSeconds: number | undefined;

  constructor(init: {
    status: number;
    code: string;
    message: string;
    requestId?: string | undefined;
    errors?: FieldProblem[] | undefined;
    existingId?: string | undefined;
    protectedResources?: ProtectedResource[] | undefined;
    retryAfterSeconds?: number | undefined;
  }) {
    super(init.message);
    this.name = 'AcsApiError';
    this.status = init.status;
    this.code = init.code;
    this.requestId = init.requestId;
    this.errors = init.errors ?? [];
    this.existingId = init.existingId;
    this.protectedResources = init.protectedResources ?? [];
    this.retryAfterSeconds = init.retryAfterSeconds;
  }

  /** Whether trying the same request again may succeed: 429, 5xx and network errors. */
  get retryable(): boolean {
    return this.status === 0 || this.status === 429 || this.status >= 500;
  }
}
