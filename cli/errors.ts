/**
 * The CLI's edge of the error catalogue: turns any error into an exit code and a one-line
 * message with a hint. Never prints a stack trace or a secret.
 */
import { ApplicationFailure, TemporalFailure } from '@temporalio/common';
import { msToNumber } from '@temporalio/common/lib/time.js';
import { connectionCode } from '../activities/failures.ts';
import { AcsApiError, isTlsFailure } from '../client/errors.ts';
import { ServiceError, ToolkitError } from '../errors/catalogue.ts';
import type { ConnectionOrigin } from './context.ts';
import { ExitCodes, type ExitCode } from './exit-codes.ts';

export { ExitCodes } from './exit-codes.ts';
export type { ExitCode } from './exit-codes.ts';

/** Where this teamctl runs: in a clone of the repository (its TypeScript run directly) or installed from the package. */
export type Place = 'clone' | 'installed';

/** This process's place: the package ships compiled JavaScript, a clone runs the TypeScript itself. */
export const PLACE: Place = import.meta.url.endsWith('.ts') ? 'clone' : 'installed';

/**
 * The commands a hint names, as they run where teamctl runs: in a clone `npx acs-server` (the
 * clone's own) and `npm run temporal:dev` (which installs the Temporal CLI into the clone);
 * installed, the binaries on PATH and the Temporal CLI's own `temporal server start-dev` — `npx
 * acs-server` outside a clone would ask the npm registry for a package of that name.
 */
export function commandsAt(place: Place): { acsServer: string; temporalDev: string } {
  return place === 'clone' ? { acsServer: 'npx acs-server', temporalDev: 'npm run temporal:dev' } : { acsServer: 'acs-server', temporalDev: 'temporal server start-dev' };
}

/** One-line hints by stable code, for commands as they run at `place`. */
function hints(place: Place): Record<string, string> {
  const { acsServer, temporalDev } = commandsAt(place);
  return {
    unauthenticated: 'set ACS_API_KEY (or name another variable with --api-key-env)',
    invalid_api_key: `the organization key is unknown, revoked or expired: put a valid one in its variable (an operator issues one: ${acsServer} admin keys issue --org ORG_ID)`,
    network_error: `is acs-server running at that address? Start one with \`${acsServer} start\`, or point ACS_BASE_URL, --base-url or a context (teamctl config use-context) at the service`,
    unavailable:
      'the service or its database is down or restarting: check acs-server\'s log and its database (--database-url), then run the same command again (apply is idempotent and picks up where it stopped)',
    temporal_unreachable: `start one with \`${temporalDev}\`, or point TEMPORAL_ADDRESS (or TEMPORAL_PROFILE) at your Temporal server`,
    keys_refused: `put a valid organization key in one of the named variables (an operator issues one: ${acsServer} admin keys issue --org ORG_ID; a dev server's is in its --dev-credentials file)`,
    apply_in_progress: 'wait for the running apply to finish (temporal workflow result --workflow-id ID), or stop it: temporal workflow cancel --workflow-id ID (terminate if it does not end)',
    no_worker: 'start one where the service\'s key and provider keys are in the environment: teamctl worker (--task-queue to match)',
    input_too_large: 'apply it with --engine local (no such limit), or split the definition into several organizations',
    not_applied: 'apply the definition first: teamctl apply -f FILE',
    run_not_found: 'list runs with: teamctl runs list',
    schedule_not_found: 'list schedules with: teamctl schedules list -f FILE; apply creates the schedules of a file',
    not_found: 'the resource does not exist or this key cannot reach it',
    route_not_found: 'the service has no such route: give its root URL as the base URL, without a path (teamctl adds /api/v1)',
    conflict: 'a resource of that name already exists',
    unresolved_secret: 'export the variable before running teamctl',
    rate_limited: 'the service limits the requests of each key per minute: wait a minute, then run the command again',
    too_many_requests_queued: 'the service queues a bounded number of one key\'s requests at once: send fewer at once (apply: a lower --parallelism), then run the command again',
    invalid_usage: 'see teamctl --help',
    name_not_found: 'names are matched exactly; if the definition is new, apply it first: teamctl apply -f FILE',
    invalid_config: 'fix the file, or point TEAMCTL_CONFIG at another one; teamctl config set-context rewrites it',
    context_not_found: 'list the contexts with: teamctl config get-contexts',
    deletion_protected: 'set protect: false on it in the definition (or clear its deletion_protection: PATCH it), apply, then delete it (remove it from the file and apply, or destroy)',
    in_use: 'delete what still depends on it first: its edges (a participant), or the organizations it provisioned (an organization)',
    forbidden: 'a key may not delete its own organization: use a key of the organization that provisioned it',
    not_approved:
      'read the plan (teamctl plan -f FILE), then run again on a terminal and type yes, or pass --auto-approve (CI, and blocks pasted into a shell: the line after the command is read as the answer)',
    timed_out: 'try a longer --wait, or check that the peer is running',
    webhook_url_refused:
      'webhooks (and agents\' MCP servers) must be https and reach public addresses only; for a receiver on this machine or a private network (development, tests), start acs-server with --webhook-allow-private',
    webhook_limit: 'an organization holds at most 20 webhooks: delete one it no longer needs (remove it from the definition and apply)',
    mcp_key_limit: 'list the agent\'s keys with teamctl mcp keys list --team TEAM --agent AGENT, and revoke one it no longer needs (teamctl mcp keys revoke)',
    task_final: 'the task is completed, failed, canceled or rejected already and changes no more: ask for a new task instead',
    task_failed: 'teamctl tasks show TASK shows the task, its status message and its thread; ask again with a new run',
    reply_invalid: runFailureHint('reply_invalid', 'temporal', 'RUN')!,
    loop_exhausted: runFailureHint('loop_exhausted', 'temporal', 'RUN')!,
    expression_failed: runFailureHint('expression_failed', 'temporal', 'RUN')!,
    invalid_input: 'the rendered text must spell a number (or true/false) for that input of the sub-pipeline',
    invalid_agent_card:
      'check the agent\'s a2a.url (its card is read from {url}/.well-known/agent-card.json) and that the remote agent is running; teamctl validate -f FILE --remote reads every remote agent\'s card',
  };
}

/**
 * The hint of a pipeline run's failure for the engine it ran on, naming what works there: on
 * Temporal the run stays, so `teamctl runs show RUN` (with the run's id) shows it; a local run
 * ended with the process that ran it — `runs show` no longer finds it — so the hint points at the
 * lines the run printed and at the step's thread (`thread`, when known). Codes: `reply_invalid`,
 * `loop_exhausted`, `expression_failed`; undefined for any other.
 */
export function runFailureHint(code: string, engine: 'local' | 'temporal', runId: string, thread?: string): string | undefined {
  const show = engine === 'temporal' ? `teamctl runs show ${runId}` : undefined;
  const threadShow = `teamctl thread show ${thread ?? 'THREAD'}`;
  switch (code) {
    case 'reply_invalid':
      return `the step re-asked and the replies still did not fit: see them with ${show ? `${show} (or ${threadShow})` : threadShow}; loosen the schema, raise attempts, or say in the content what shape to answer in`;
    case 'loop_exhausted':
      return `raise maxIterations, or make until reachable; ${show ? `${show} shows every iteration` : 'the lines above show each iteration\'s steps (a local run ends with its process: runs show no longer finds it)'}`;
    case 'expression_failed':
      return `the expression is named in the message: check the fields it reads (${show ? `${show} shows each entry's value` : 'the lines above show each finished entry\'s reply'}); use has(x.f) for a field that may be missing`;
    default:
      return undefined;
  }
}

/** What the CLI prints and returns for an error. */
export interface ReportedError {
  code: string;
  message: string;
  hint: string | undefined;
  exitCode: ExitCode;
}

/** Finds the innermost error with a stable code (Temporal wraps activity failures in causes). */
function rootCause(error: unknown): unknown {
  let current = error;
  for (let depth = 0; depth < 10 && current instanceof TemporalFailure && !(current instanceof ApplicationFailure); depth++) {
    if (!current.cause) break;
    current = current.cause;
  }
  if (current instanceof Error && !(current instanceof TemporalFailure) && current.cause instanceof TemporalFailure) return rootCause(current.cause);
  return current;
}

/**
 * Maps an error to its code, message (one line: a library's line breaks become spaces), hint and
 * exit code. With the command's {@link ConnectionOrigin}, hints about the service's address and
 * key name the setting they came from (`--base-url`, `ACS_BASE_URL`, a context's `baseUrl`; the
 * key's variable). `place` words the commands hints name (see {@link commandsAt}).
 */
export function reportError(error: unknown, origin?: ConnectionOrigin, place: Place = PLACE): ReportedError {
  const cause = rootCause(error);
  let code = 'internal';
  let message = cause instanceof Error ? cause.message : String(cause);
  if (cause instanceof AcsApiError || cause instanceof ServiceError || cause instanceof ToolkitError) code = cause.code;
  else if (cause instanceof ApplicationFailure && cause.type) code = cause.type;
  if (cause instanceof AcsApiError && cause.requestId) message += ` (request ${cause.requestId})`;
  const exitCode = code === 'timed_out' ? ExitCodes.timedOut : ExitCodes.error;
  const hint = (cause instanceof ToolkitError ? cause.hint : undefined) ?? hintFor(code, cause, origin, place);
  return { code, message: message.replace(/\s*\n\s*/g, ' ').trim(), hint, exitCode };
}

/** Seconds a refused request asked to wait (`Retry-After`), from the client's error or an activity's failure. */
function retryAfterSeconds(cause: unknown): number | undefined {
  if (cause instanceof AcsApiError) return cause.retryAfterSeconds;
  if (cause instanceof ApplicationFailure && cause.nextRetryDelay != null) return Math.ceil(msToNumber(cause.nextRetryDelay) / 1000);
  return undefined;
}

/**
 * The hint for a code: for `rate_limited`, how long the service asked to wait; for the service's
 * address (`network_error`, a TLS failure, `route_not_found`) and key (`invalid_api_key`,
 * `keys_refused`), the setting to fix, by name, when the origin is known.
 */
function hintFor(code: string, cause: unknown, origin: ConnectionOrigin | undefined, place: Place): string | undefined {
  const wait = code === 'rate_limited' ? retryAfterSeconds(cause) : undefined;
  if (wait !== undefined) return `the service limits the requests of each key per minute: wait ${wait} s (its Retry-After), then run the command again`;
  const { acsServer } = commandsAt(place);
  const tls = code === 'network_error' && isTlsFailure(connectionCode(cause));
  if (tls) {
    const url = origin ? `${origin.baseUrl} (${origin.baseUrlFrom})` : 'the base URL';
    return `the TLS handshake failed: make ${url} http:// if the server has no TLS, else have its certificate trusted (NODE_EXTRA_CA_CERTS=FILE for a private CA)`;
  }
  if (origin) {
    const keyEnv = origin.keyEnvs.length === 1 ? origin.keyEnvs[0] : undefined;
    if (code === 'network_error') return `is acs-server running at ${origin.baseUrl}? Start one with \`${acsServer} start\`, or set ${origin.baseUrlFrom} to the service's address`;
    if (code === 'route_not_found') return `${origin.baseUrl} (${origin.baseUrlFrom}) has no such route: give the service's root URL, without a path (teamctl adds /api/v1)`;
    if (code === 'invalid_api_key' && keyEnv) return `the key in ${keyEnv} is unknown, revoked or expired: put a valid organization key in it (an operator issues one: ${acsServer} admin keys issue --org ORG_ID)`;
  }
  return hints(place)[code];
}
