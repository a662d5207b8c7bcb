/**
 * The Temporal worker of teamctl: registers the workflows (bundled from `workflows/index.ts`)
 * and the activities, and polls one task queue until stopped (SIGINT/SIGTERM).
 */
import { fileURLToPath } from 'node:url';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createApplyActivities } from '../activities/apply-activities.ts';
import type { TemporalOptions } from '../engine/temporal-engine.ts';

/** Path of the workflows' entry module, for bundling. */
export const workflowsPath = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));

/** Creates (does not run) a worker connected to `options.address`. */
export async function createWorker(options: TemporalOptions): Promise<Worker> {
  const connection = await NativeConnection.connect({ address: options.address });
  return Worker.create({
    connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    workflowsPath,
    activities: createApplyActivities(),
  });
}
