/**
 * The Temporal worker of teamctl: registers every workflow (bundled from `workflows/index.ts`)
 * and every activity on one task queue and polls it until stopped. With tracing turned on by the
 * `OTEL_*` variables (`temporal/telemetry.ts`), it traces its workflows, activities and their
 * HTTP calls.
 */
import { join } from 'node:path';
import { NativeConnection, Worker } from '@temporalio/worker';
import { PACKAGE_ROOT } from '../api/version.ts';
import { createApplyActivities } from '../activities/apply-activities.ts';
import { createConversationActivities } from '../activities/conversation-activities.ts';
import type { ActivityDeps } from '../activities/apply-activities.ts';
import { temporalUnreachable } from '../temporal/settings.ts';
import type { TemporalSettings } from '../temporal/settings.ts';
import { WORKER_SERVICE_NAME, createTelemetry } from '../temporal/telemetry.ts';

/**
 * Path of the workflows' entry module, for bundling: the TypeScript source in a checkout, the
 * JavaScript built from it in an installed package (`dist/workflows/index.js`), found from the
 * package's root, so the worker bundles whichever tree it runs from — from `dist/worker/` or from
 * the bundle of `teamctl` in `dist/bin/` alike.
 */
export const workflowsPath = import.meta.url.endsWith('.ts') ? join(PACKAGE_ROOT, 'workflows', 'index.ts') : join(PACKAGE_ROOT, 'dist', 'workflows', 'index.js');

/** Settings of a worker; omitted numbers keep the SDK's defaults. */
export interface WorkerOptions {
  taskQueue: string;
  /** Activities run at once (SDK default 100). */
  maxConcurrentActivityTaskExecutions?: number;
  /** Workflow tasks run at once (SDK default 40). */
  maxConcurrentWorkflowTaskExecutions?: number;
  /** Where the activities resolve secrets and send HTTP (tests pass their own). */
  activityDeps?: ActivityDeps;
  /** Environment the tracing variables (`OTEL_*`, see `temporal/telemetry.ts`) are read from (default `process.env`). */
  env?: NodeJS.ProcessEnv;
}

/** A created worker and the connection it owns. */
export interface TeamctlWorker {
  worker: Worker;
  /**
   * Runs until `worker.shutdown()` or SIGINT/SIGTERM (the SDK's shutdown signals: in-flight
   * tasks get the grace time to finish), then closes the connection and, when tracing is on,
   * sends the spans still buffered.
   */
  run(): Promise<void>;
}

/**
 * Connects and creates (does not run) a worker; with tracing on (`options.env`), its workflows,
 * activities and HTTP calls are traced. Errors: `temporal_unreachable` when the server does not
 * answer; `invalid_usage` when an `OTEL_*` endpoint is not an http(s) URL; bundling errors of the
 * workflows as they are.
 */
export async function createWorker(settings: TemporalSettings, options: WorkerOptions): Promise<TeamctlWorker> {
  const telemetry = createTelemetry(options.env ?? process.env, { defaultServiceName: WORKER_SERVICE_NAME, instrumentHttp: true });
  const connection = await NativeConnection.connect(settings.connectionOptions).catch(async (error: unknown) => {
    await telemetry?.shutdown();
    throw temporalUnreachable(settings, error);
  });
  try {
    const worker = await Worker.create({
      connection,
      namespace: settings.namespace,
      taskQueue: options.taskQueue,
      workflowsPath,
      activities: { ...createApplyActivities(options.activityDeps), ...createConversationActivities(options.activityDeps) },
      ...(options.maxConcurrentActivityTaskExecutions ? { maxConcurrentActivityTaskExecutions: options.maxConcurrentActivityTaskExecutions } : {}),
      ...(options.maxConcurrentWorkflowTaskExecutions ? { maxConcurrentWorkflowTaskExecutions: options.maxConcurrentWorkflowTaskExecutions } : {}),
      ...telemetry?.workerOptions,
    });
    return {
      worker,
      async run() {
        try {
          await worker.run();
        } finally {
          try {
            await connection.close();
          } finally {
            // After the run: the workflow spans reach the exporter through sinks until the last task.
            await telemetry?.shutdown();
          }
        }
      },
    };
  } catch (error) {
    await connection.close();
    await telemetry?.shutdown();
    throw error;
  }
}
