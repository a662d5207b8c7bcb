import { ErrorCatalogue, ServiceError, type ErrorCode } from '../../errors/catalogue.ts';
import type { Problem } from '../../api/schemas.ts';

// Fastify's own errors that stand for a contract error (contract §2).
const fastifyCodes: Record<string, ErrorCode> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'payload_too_large',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported_media_type',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'malformed_json',
  FST_ERR_CTP_INVALID_JSON_BODY: 'malformed_json',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'invalid_request',
  FST_ERR_BAD_URL: 'route_not_found',
  FST_ERR_ASYNC_CONSTRAINT: 'route_not_found',
};

// Driver errors meaning the database cannot be reached right now (node socket errors, SQLSTATE
// class 08 connection exceptions, 57P0x shutdowns): 503 `unavailable`, not a bug.
function isStorageUnavailable(code: string | undefined): boolean {
  return code !== undefined && (['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND'].includes(code) || /^(08|57P0)/.test(code));
}

// SQLSTATE 23503 (foreign_key_violation): a write named a row that a concurrent deletion removed
// between this request's checks and its insert (an organization or team deleted meanwhile). The
// request would have got 404 a moment later, so it gets it now rather than a 500.
const foreignKeyViolation = '23503';

const byStatus: Record<number, ErrorCode> = {
  400: 'invalid_request',
  404: 'route_not_found',
  405: 'method_not_allowed',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  503: 'unavailable',
};

/**
 * Turns any thrown value into a problem document (RFC 9457, contract §2) for `requestId`.
 * A {@link ServiceError} keeps its code, detail, `errors` and extras; a Fastify client error is
 * mapped by its code or status; anything else is 500 `internal` with a fixed detail, so no stack
 * trace or secret ever reaches a response. Output: the document and whether it was unexpected.
 */
export function toProblem(error: unknown, requestId: string): { problem: Problem & Record<string, unknown>; unexpected: boolean } {
  let code: ErrorCode = 'internal';
  let detail = 'an unexpected error occurred';
  let serviceError: ServiceError | undefined;
  if (error instanceof ServiceError) {
    serviceError = error;
    code = error.code;
    detail = error.message;
  } else if (typeof error === 'object' && error !== null) {
    const { code: fastifyCode, statusCode } = error as { code?: string; statusCode?: number };
    if (fastifyCode === foreignKeyViolation) {
      code = 'not_found';
      detail = 'a resource this request names was deleted meanwhile';
    }
    const mapped =
      (isStorageUnavailable(fastifyCode) ? 'unavailable' : undefined) ||
      (fastifyCode && fastifyCodes[fastifyCode]) || (statusCode && statusCode < 500 ? byStatus[statusCode] : undefined);
    if (mapped) {
      code = mapped;
      detail = ErrorCatalogue[mapped].title;
    }
  }
  const entry = ErrorCatalogue[code];
  const problem: Problem & Record<string, unknown> = {
    type: `urn:acs:error:${code}`,
    title: entry.title,
    status: entry.status,
    detail,
    code,
    request_id: requestId,
  };
  if (serviceError?.errors) problem.errors = serviceError.errors;
  // Extras (`existing_id`, …) never override the members every problem has.
  for (const [key, value] of Object.entries(serviceError?.extra ?? {})) if (!(key in problem)) problem[key] = value;
  return { problem, unexpected: code === 'internal' };
}
