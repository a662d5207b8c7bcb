/**
 * The Temporal engine: starts the `applyWorkflow` on a task queue served by `teamctl worker`
 * and waits for its result. The workflow id is derived from the organization's name, so two
 * applies of the same organization never run at once.
 */
import { Client, Connection, WorkflowIdConflictPolicy } from '@temporalio/client';
import { ToolkitError } from '../errors/catalogue.ts';
import type { ApplyInput, ApplyResult } from '../workflows/apply-orchestration.ts';

/** Where the Temporal service is. */
export interface TemporalOptions {
  /** `host:port` of the Temporal frontend (`TEMPORAL_ADDRESS`, default `localhost:7233`). */
  address: string;
  /** Namespace (`TEMPORAL_NAMESPACE`, default `default`). */
  namespace: string;
  /** Task queue the worker polls (default `teamctl`). */
  taskQueue: string;
}

/** The default task queue of workers and clients. */
export const DEFAULT_TASK_QUEUE = 'teamctl';

/** Reads the Temporal options from the environment and flags. */
export function temporalOptionsFromEnv(env: NodeJS.ProcessEnv, taskQueue?: string): TemporalOptions {
  return {
    address: env.TEMPORAL_ADDRESS || 'localhost:7233',
    namespace: env.TEMPORAL_NAMESPACE || 'default',
    taskQueue: taskQueue || DEFAULT_TASK_QUEUE,
  };
}

/** The workflow id of the apply of one organization. */
export function applyWorkflowId(orgName: string): string {
  return `teamctl-apply-${orgName}`;
}

/**
 * Runs `applyWorkflow(input)` on Temporal and returns its result. If an apply of the same
 * organization is already running, waits for that one instead of starting a second.
 * Raises `network_error` when Temporal cannot be reached, and `WorkflowFailedError` (its cause
 * is the activity's `ApplicationFailure`) when the workflow fails.
 */
export async function applyWithTemporal(input: ApplyInput, options: TemporalOptions): Promise<ApplyResult> {
  const connection = await Connection.connect({ address: options.address, connectTimeout: '10 seconds' }).catch((error: unknown) => {
    throw new ToolkitError('network_error', `cannot reach Temporal at ${options.address} (TEMPORAL_ADDRESS): ${(error as Error).message}`);
  });
  try {
    const client = new Client({ connection, namespace: options.namespace });
    const handle = await client.workflow.start('applyWorkflow', {
      taskQueue: options.taskQueue,
      workflowId: applyWorkflowId(input.desired.organization.name),
      workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
      args: [input],
    });
    return (await handle.result()) as ApplyResult;
  } finally {
    await connection.close();
  }
}
