import type { ProtectedResource } from '../api/schemas.ts';
import type { FieldProblem } from '../errors/catalogue.ts';
import type { HeaderSource } from './rate-limit-pacer.ts';

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
    /** For `network_error`: what the transport threw (the socket's error is in its `cause` chain). */
    cause?: unknown;
  }) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = 'AcsApiError';
    this.status = init.status;
    this.code = init.code;
    this.requestId = init.requestId;
    this.errors = init.errors ?? [];
    this.existingId = init.existingId;
    this.protectedResources = init.protectedResources ?? [];
    this.retryAfterSeconds = init.retryAfterSeconds;
  }

  /**
   * Whether trying the same request again may succeed: 429, 5xx and network errors, except a
   * TLS failure (a certificate that is refused now is refused in a minute too).
   */
  get retryable(): boolean {
    if (this.status === 0) return !isTlsFailure(connectionFailureCode(this));
    return this.status === 429 || this.status >= 500;
  }
}

/**
 * The code of the socket's or TLS layer's error behind a failure to reach the service
 * (`ECONNREFUSED`, `ENOTFOUND`, `CERT_HAS_EXPIRED`, …), found along the `cause` chain (fetch wraps
 * it in a `TypeError`, happy eyeballs in an `AggregateError`). Input: any error. Output: the code,
 * or undefined when there is none.
 */
export function connectionFailureCode(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 8 && current instanceof Error; depth++) {
    if (current instanceof AggregateError && current.errors.length > 0) current = current.errors[0];
    const { code } = current as { code?: unknown };
    if (typeof code === 'string' && !(current instanceof AcsApiError)) return code;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/** Whether a connection failure's code is the TLS layer's: a certificate or handshake refused. */
export function isTlsFailure(code: string | undefined): boolean {
  return code !== undefined && /CERT|TLS|SSL|SELF_SIGNED/.test(code);
}

/** TLS failures that mean the server answered in plain HTTP, by OpenSSL's code as Node reports it. */
const NOT_TLS = new Set(['ERR_SSL_WRONG_VERSION_NUMBER', 'ERR_SSL_PACKET_LENGTH_TOO_LONG', 'ERR_SSL_HTTP_REQUEST']);

/**
 * A TLS failure in a few words on one line: `the server does not speak TLS (an http:// server?)`
 * for a plain HTTP server asked for https, else the library's reason without OpenSSL's prefix and
 * source position (`C0…:error:0A0000C6:SSL routines:…:packet length too long:../deps/…:662:`
 * becomes `packet length too long`). Input: the error's code and message.
 */
export function tlsReason(code: string, message: string | undefined): string {
  if (NOT_TLS.has(code)) return 'the server does not speak TLS there (an http:// server?)';
  const text = (message ?? code).trim();
  const openssl = /^[0-9A-F]+:error:[0-9A-F]+:[^:]*:[^:]*:([^:]+)/.exec(text);
  return (openssl?.[1] ?? text).replace(/\s+/g, ' ');
}

/** An answer of the service as the client reads it, whichever way it was sent (undici's dispatcher, or `fetch`). */
export interface Answer {
  /** HTTP status. */
  status: number;
  /** The status's reason phrase (`Bad Gateway`; empty when unknown). */
  statusText: string;
  /** The answer's headers. */
  headers: HeaderSource;
  /** The whole body as text (empty for none). */
  text: string;
}

/**
 * The {@link AcsApiError} of an error answer to `method path` (the path as the message names it,
 * e.g. `/teams/…` or `events/stream`): the problem+json's `code`, `detail`, `request_id`,
 * `errors`, `existing_id` and `protected` (contract §2), `Retry-After` in seconds. An answer
 * without problem+json (a proxy's HTML page, say) gets a code by its status ({@link fallbackCode})
 * and its reason phrase as detail; the request id then comes from `X-Request-Id`. Never carries
 * the API key: the message is built from the method, path, status and problem only.
 */
export function errorFromResponse(method: string, path: string, response: Answer): AcsApiError {
  let problem: Record<string, unknown> = {};
  try {
    const parsed: unknown = JSON.parse(response.text);
    if (parsed && typeof parsed === 'object') problem = parsed as Record<string, unknown>;
  } catch {
    // Not problem+json (a proxy's HTML page, say): fall back to the status alone.
  }
  const code = typeof problem.code === 'string' ? problem.code : fallbackCode(response.status);
  const detail = typeof problem.detail === 'string' ? problem.detail : response.statusText;
  const retryAfter = Number(response.headers.get('retry-after'));
  return new AcsApiError({
    status: response.status,
    code,
    message: `${method} ${path}: ${response.status} ${code}${detail ? `: ${detail}` : ''}`,
    requestId: typeof problem.request_id === 'string' ? problem.request_id : (response.headers.get('x-request-id') ?? undefined),
    errors: Array.isArray(problem.errors) ? (problem.errors as AcsApiError['errors']) : undefined,
    existingId: typeof problem.existing_id === 'string' ? problem.existing_id : undefined,
    protectedResources: Array.isArray(problem.protected) ? (problem.protected as ProtectedResource[]) : undefined,
    retryAfterSeconds: Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter : undefined,
  });
}

/**
 * A code for answers without problem+json, by status (contract §2's codes where one fits):
 * `unauthenticated` (401), `not_found` (404), `conflict` (409), `rate_limited` (429),
 * `unavailable` (503), `internal` (any other 5xx), else `invalid_request`.
 */
function fallbackCode(status: number): string {
  if (status === 401) return 'unauthenticated';
  if (status === 404) return 'not_found';
  if (status === 409) return 'conflict';
  if (status === 429) return 'rate_limited';
  if (status === 503) return 'unavailable';
  if (status >= 500) return 'internal';
  return 'invalid_request';
}
