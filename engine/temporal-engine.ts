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
 * Runs `applyWorkflow(input)` on Temporal and returns its result. Errors: `temporal_unreachable`;
 * `no_worker` when no worker polls the task queue (nothing is started);
 * `apply_in_progress` when an apply of the same organization is running; `WorkflowFailedError`
 * (its cause is the activity's `ApplicationFailure`, typed by the stable code) when it fails.
 */
export async function applyWithTemporal(input: ApplyInput, target: TemporalTarget): Promise<ApplyResult> {
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
