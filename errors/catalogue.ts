/**
 * The one error catalogue of the project: every stable error code, its HTTP status and title.
 *
 * The service maps these to problem+json (RFC 9457, contract §2); the client turns problem+json
 * back into {@link AcsError}; activities map them to `ApplicationFailure` (non-retryable for 4xx
 * other than 429); the CLI maps them to exit codes and a one-line hint.
 */
export const ErrorCatalogue = {
  malformed_json: { status: 400, title: 'Malformed JSON' },
  invalid_request: { status: 400, title: 'Invalid request' },
  invalid_cursor: { status: 400, title: 'Invalid cursor' },
  webhook_url_refused: { status: 400, title: 'Webhook URL refused' },
  unauthenticated: { status: 401, title: 'Unauthenticated' },
  invalid_api_key: { status: 401, title: 'Invalid API key' },
  wrong_key_type: { status: 403, title: 'Wrong key type' },
  forbidden: { status: 403, title: 'Forbidden' },
  not_a_participant: { status: 403, title: 'Not a participant' },
  csrf_failed: { status: 403, title: 'CSRF check failed' },
  not_found: { status: 404, title: 'Not found' },
  route_not_found: { status: 404, title: 'Route not found' },
  method_not_allowed: { status: 405, title: 'Method not allowed' },
  request_timeout: { status: 408, title: 'Request timeout' },
  conflict: { status: 409, title: 'Conflict' },
  last_key: { status: 409, title: 'Last key' },
  key_limit: { status: 409, title: 'Key limit reached' },
  mcp_key_limit: { status: 409, title: 'MCP key limit reached' },
  in_use: { status: 409, title: 'In use' },
  deletion_protected: { status: 409, title: 'Deletion protected' },
  idempotency_key_in_use: { status: 409, title: 'Idempotency key in use' },
  webhook_limit: { status: 409, title: 'Webhook limit reached' },
  task_final: { status: 409, title: 'Task is final' },
  events_expired: { status: 410, title: 'Events expired' },
  payload_too_large: { status: 413, title: 'Payload too large' },
  unsupported_media_type: { status: 415, title: 'Unsupported media type' },
  unknown_reference: { status: 422, title: 'Unknown reference' },
  idempotency_key_mismatch: { status: 422, title: 'Idempotency key mismatch' },
  rate_limited: { status: 429, title: 'Rate limited' },
  too_many_waits: { status: 429, title: 'Too many held waits' },
  too_many_requests_queued: { status: 429, title: 'Too many requests queued' },
  headers_too_large: { status: 431, title: 'Request headers too large' },
  internal: { status: 500, title: 'Internal error' },
  unavailable: { status: 503, title: 'Unavailable' },
} as const;

/** A stable error code of the service (contract §2). */
export type ErrorCode = keyof typeof ErrorCatalogue;

/** Codes of errors raised by the toolkit itself, before or without a service call. */
export const ToolkitErrorCodes = {
  /** A definition file failed to parse or validate. */
  invalid_definition: 'invalid_definition',
  /** A `${env:NAME}` reference names a variable that is not set. */
  unresolved_secret: 'unresolved_secret',
  /** Flags, environment or configuration are missing or wrong. */
  invalid_usage: 'invalid_usage',
  /** The service could not be reached (connection refused, DNS, timeout). */
  network_error: 'network_error',
  /** A wait (for a reply, for a workflow) ran out of time. */
  timed_out: 'timed_out',
  /** The Temporal frontend could not be reached (`TEMPORAL_ADDRESS`, a config profile). */
  temporal_unreachable: 'temporal_unreachable',
  /** An apply of the same organization is already running on Temporal. */
  apply_in_progress: 'apply_in_progress',
  /** No Temporal worker polls the task queue a workflow would run on. */
  no_worker: 'no_worker',
  /** A workflow's input is over Temporal's limit for one payload (2 MB by default): nothing was started. */
  input_too_large: 'input_too_large',
  /** Every key of a keyring was refused by the service (401). */
  keys_refused: 'keys_refused',
  /** What a run needs (its organization, its team) is not on the service: the definition was not applied. */
  not_applied: 'not_applied',
  /** The organization has no schedule of that name on Temporal. */
  schedule_not_found: 'schedule_not_found',
  /** No pipeline run has that id. */
  run_not_found: 'run_not_found',
  /** A pipeline run ended without completing (failed or cancelled). */
  run_failed: 'run_failed',
  /** A typed reply of a pipeline step did not fit its JSON Schema after all its attempts. */
  reply_invalid: 'reply_invalid',
  /** A pipeline loop ran its `maxIterations` without its `until` holding. */
  loop_exhausted: 'loop_exhausted',
  /** A pipeline expression (CEL) failed at run time or gave a value of the wrong type. */
  expression_failed: 'expression_failed',
  /** An input given to a sub-pipeline is not of the input's type once rendered. */
  invalid_input: 'invalid_input',
  /** A pipeline task step's task (`task: true`) ended failed, canceled or rejected. */
  task_failed: 'task_failed',
  /** A remote A2A agent's Agent Card cannot be read or does not parse (apply, `validate --remote`): nothing is sent for that agent. */
  invalid_agent_card: 'invalid_agent_card',
  /** A team, participant or organization named on the command line does not exist where it was looked for. */
  name_not_found: 'name_not_found',
  /** The teamctl config file (contexts) cannot be read, is not YAML, or does not match its schema. */
  invalid_config: 'invalid_config',
  /** `--context` or `TEAMCTL_CONTEXT` names a context the config file does not have. */
  context_not_found: 'context_not_found',
  /** A plan deletes something nobody approved: no terminal to ask on and no `--auto-approve`, an answer other than `yes`, or the live state changed since the plan was approved. Nothing was changed. */
  not_approved: 'not_approved',
} as const;

/** A code of an error raised by the toolkit itself. */
export type ToolkitErrorCode = keyof typeof ToolkitErrorCodes;

/** One problem of a request, with the path of the field it concerns (`team_name`, `participants.1`). */
export interface FieldProblem {
  path: string;
  message: string;
}

/** Whether `code` is one of the service's stable codes. */
export function isErrorCode(code: unknown): code is ErrorCode {
  return typeof code === 'string' && Object.hasOwn(ErrorCatalogue, code);
}

/**
 * An error with a stable code from {@link ErrorCatalogue}, raised by the service's domain layer
 * and mapped to problem+json at the HTTP edge.
 */
export class ServiceError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly errors: FieldProblem[] | undefined;
  /** Extra members of the problem document (`existing_id` for `conflict`, `protected` for `deletion_protected`). */
  readonly extra: Record<string, unknown>;

  constructor(code: ErrorCode, detail?: string, options: { errors?: FieldProblem[]; extra?: Record<string, unknown> } = {}) {
    super(detail ?? ErrorCatalogue[code].title);
    this.name = 'ServiceError';
    this.code = code;
    this.status = ErrorCatalogue[code].status;
    this.errors = options.errors;
    this.extra = options.extra ?? {};
  }
}

/**
 * An error raised by the toolkit (definitions, CLI, engines) with a stable code: one of its own,
 * or a service's code when the toolkit refuses, before any request, what the service would refuse
 * (`deletion_protected`, `forbidden`, `in_use` in a plan).
 */
export class ToolkitError extends Error {
  readonly code: ToolkitErrorCode | ErrorCode;
  /** What to do, when it depends on this error rather than on its code (the CLI prints it as the hint). */
  readonly hint: string | undefined;
  constructor(code: ToolkitErrorCode | ErrorCode, message: string, options: { hint?: string } = {}) {
    super(message);
    this.name = 'ToolkitError';
    this.code = code;
    this.hint = options.hint;
  }
}
