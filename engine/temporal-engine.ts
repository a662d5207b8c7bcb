/**
 * The Temporal engine: starts `applyWorkflow` (by its imported function, so its input and result
 * are typed) on a task queue served by `teamctl worker`, and waits for its result.
 *
 * One apply per organization at a time: the workflow id is the business key
 * `teamctl-apply/<organization name>`. A second apply of an organization whose apply is still
 * running is refused with `apply_in_progress`, naming the running workflow and run; it does not
 * attach to it, because the running one may apply another version of the definition. Once that
 * one has finished (completed, failed or cancelled), the id may be used again.
 */
import { Client, Connection, WorkflowExecutionAlreadyStartedError, WorkflowIdConflictPolicy, WorkflowIdReusePolicy } from '@temporalio/client';
import proto from '@temporalio/proto';
import { ToolkitError } from '../errors/catalogue.ts';
import { temporalUnreachable } from '../temporal/settings.ts';
import type { TemporalSettings } from '../temporal/settings.ts';
import { CLIENT_SERVICE_NAME, createTelemetry } from '../temporal/telemetry.ts';
import type { ApplyInput, ApplyResult } from '../workflows/apply-orchestration.ts';
import { applyWorkflow } from '../workflows/apply-workflow.ts';
import { jsonBytes, TEMPORAL_PAYLOAD_LIMIT_BYTES } from '../workflows/payload-bytes.ts';

/** Where and how to run a workflow: Temporal's settings and the task queue the worker polls. */
export interface TemporalTarget {
  settings: TemporalSettings;
  taskQueue: string;
  /** Hears what a start waits for (no worker polling yet), as one line a person can read. */
  onWait?: (text: string) => void;
}

/** The workflow id of the apply of one organization. */
export function applyWorkflowId(orgName: string): string {
  return `teamctl-apply/${orgName}`;
}

/**
 * Connects a Temporal client, runs `fn` with it and closes the connection. With tracing turned on
 * by the `OTEL_*` variables of `env` (default `process.env`; see `temporal/telemetry.ts`), the
 * client's calls (starting a workflow above all) open spans that the workflow's run continues,
 * and they are sent before this returns. Errors: `temporal_unreachable` when the frontend does
 * not answer within 10 s; `invalid_usage` when an `OTEL_*` endpoint is not an http(s) URL.
 */
export async function withTemporalClient<T>(settings: TemporalSettings, fn: (client: Client) => Promise<T>, env: NodeJS.ProcessEnv = process.env): Promise<T> {
  const telemetry = createTelemetry(env, { defaultServiceName: CLIENT_SERVICE_NAME });
  const connection = await Connection.connect({ ...settings.connectionOptions, connectTimeout: '10 seconds' } as Parameters<typeof Connection.connect>[0]).catch(
    async (error: unknown) => {
      await telemetry?.shutdown();
      throw temporalUnreachable(settings, error);
    },
  );
  try {
    return await fn(new Client({ connection, namespace: settings.namespace, ...(telemetry ? { interceptors: telemetry.clientInterceptors } : {}) }));
  } finally {
    try {
      await connection.close();
    } finally {
      await telemetry?.shutdown();
    }
  }
}

/** The `input_too_large` error of an apply whose input is `bytes` long (unknown when the server said so). */
function inputTooLarge(orgName: string, bytes: number | undefined): ToolkitError {
  const size = bytes === undefined ? 'over the Temporal server\'s limit for one payload' : `${(bytes / 1024 / 1024).toFixed(1)} MiB as JSON, over Temporal's limit of ${TEMPORAL_PAYLOAD_LIMIT_BYTES / 1024 / 1024} MiB for one payload`;
  return new ToolkitError('input_too_large', `the apply of organization "${orgName}" would start a workflow whose input (the definition) is ${size}; nothing was started`);
}

/** Whether `error` is the server refusing a payload over its size limit (gRPC INVALID_ARGUMENT, "Blob data size exceeds limit"). */
function isBlobSizeRefusal(error: unknown): boolean {
  for (let current = error, depth = 0; current instanceof Error && depth < 5; current = current.cause, depth++) {
    if (/blob data size exceeds limit/i.test(current.message)) return true;
  }
  return false;
}

/** How long {@link assertWorkerPolls} gives a worker that has just started to poll, in ms. */
export const WORKER_GRACE_MS = 5_000;

/**
 * Refuses (`no_worker`) when no worker polls `taskQueue` for workflow tasks: the workflow would
 * otherwise wait, silently, until one does, and hold the organization's apply id meanwhile. A
 * worker that has just started may not have polled yet, so when none polls at first the check
 * says so through `onWait` and looks again for up to {@link WORKER_GRACE_MS}.
 */
export async function assertWorkerPolls(client: Client, namespace: string, taskQueue: string, onWait?: (text: string) => void): Promise<void> {
  // A CommonJS module: its namespace object comes as the default export.
  const { temporal } = proto;
  const deadline = Date.now() + WORKER_GRACE_MS;
  for (let first = true; ; first = false) {
    const { pollers } = await client.workflowService.describeTaskQueue({
      namespace,
      taskQueue: { name: taskQueue, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
      taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
    });
    if (pollers && pollers.length > 0) return;
    if (Date.now() >= deadline) throw new ToolkitError('no_worker', `no worker polls task queue "${taskQueue}" in namespace ${namespace}; nothing was started`);
    if (first) onWait?.(`no worker polls task queue "${taskQueue}" yet: waiting up to ${WORKER_GRACE_MS / 1000} s for one that is starting`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/**
 * Runs `applyWorkflow(input)` on Temporal and returns its result. Errors: `input_too_large` when
 * the input's JSON is over {@link TEMPORAL_PAYLOAD_LIMIT_BYTES} or the server refuses its size
 * (nothing is started); `temporal_unreachable`;
 * `no_worker` when no worker polls the task queue (nothing is started);
 * `apply_in_progress` when an apply of the same organization is running; `WorkflowFailedError`
 * (its cause is the activity's `ApplicationFailure`, typed by the stable code) when it fails.
 */
export async function applyWithTemporal(input: ApplyInput, target: TemporalTarget): Promise<ApplyResult> {
  // Refused here, before any connection: the server would refuse it only after the worker check.
  const bytes = jsonBytes(input);
  if (bytes > TEMPORAL_PAYLOAD_LIMIT_BYTES) throw inputTooLarge(input.desired.organization.name, bytes);
  return withTemporalClient(target.settings, async (client) => {
    const workflowId = applyWorkflowId(input.desired.organization.name);
    await assertWorkerPolls(client, target.settings.namespace, target.taskQueue, target.onWait);
    let handle;
    try {
      handle = await client.workflow.start(applyWorkflow, {
        taskQueue: target.taskQueue,
        workflowId,
        workflowIdConflictPolicy: WorkflowIdConflictPolicy.FAIL,
        workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE,
        args: [input],
      });
    } catch (error) {
      // A server configured with a lower limit than the default.
      if (isBlobSizeRefusal(error)) throw inputTooLarge(input.desired.organization.name, undefined);
      if (error instanceof WorkflowExecutionAlreadyStartedError) {
        const running = await client.workflow.getHandle(workflowId).describe().catch(() => undefined);
        throw new ToolkitError(
          'apply_in_progress',
          `an apply of organization "${input.desired.organization.name}" is already running: workflow ${workflowId}${running ? `, run ${running.runId}, started ${running.startTime.toISOString()}` : ''}`,
        );
      }
      throw error;
    }
    return handle.result();
  });
}
