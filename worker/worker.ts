/**
 * The Temporal worker of teamctl: registers every workflow (bundled from `workflows/index.ts`)
 * and every activity on one task queue and polls it until stopped. With tracing turned on by the
 * `OTEL_*` variables (`temporal/telemetry.ts`), it traces its workflows, activities and their
 * HTTP calls.
 */
import { join } from 'node:path';
import { Client } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { PACKAGE_ROOT } from '../api/version.ts';
import { createApplyActivities } from '../activities/apply-activities.ts';
import { createConversationActivities } from '../activities/conversation-activities.ts';
import type { ActivityDeps } from '../activities/apply-activities.ts';
import { temporalUnreachable } from '../temporal/settings.ts';
import type { TemporalSettings } from '../temporal/settings.ts';
import { WORKER_SERVICE_NAME, createTelemetry } from '../temporal/telemetry.ts';
import { PAYLOAD_WARN_BYTES } from '../workflows/payload-bytes.ts';
import { startEventsListener } from './events-listener.ts';
import type { EventsListener, EventsListenerOptions } from './events-listener.ts';
import { ensureAwaitingThreads } from './search-attributes.ts';
import type { SearchAttributeOutcome } from './search-attributes.ts';

/**
 * Path of the workflows' entry module, for bundling: the TypeScript source in a checkout, the
 * JavaScript built from it in an installed package (`dist/workflows/index.js`), found from the
 * package's root, so the worker bundles whichever tree it runs from — from `dist/worker/` or from
 * the bundle of `teamctl` in `dist/bin/` alike.
 */
export const workflowsPath = import.meta.url.endsWith('.ts') ? join(PACKAGE_ROOT, 'workflows', 'index.ts') : join(PACKAGE_ROOT, 'dist', 'workflows', 'index.js');

/**
 * The bundler options of every worker and replayer of these workflows: the modules listed in
 * `workflows/preloaded.ts` (beside the entry module, in the same tree) are evaluated once per
 * workflow thread instead of once per workflow (~7 ms less of the worker's CPU before each
 * workflow's first command; docs/performance.md).
 */
export const workflowBundlerOptions = {
  preloadModules: [workflowsPath.replace(/index\.(ts|js)$/, 'preloaded.$1')],
};

/** Settings of a worker; omitted numbers keep the SDK's defaults. */
export interface WorkerOptions {
  taskQueue: string;
  /** Activities run at once (SDK default 100). */
  maxConcurrentActivityTaskExecutions?: number;
  /** Workflow tasks run at once (SDK default 40). */
  maxConcurrentWorkflowTaskExecutions?: number;
  /**
   * Workflows kept in memory between their tasks (the SDK's `maxCachedWorkflows`: by default sized
   * from the heap): 0 keeps none (each task replays its run's history), else at least 2. Bounds the
   * worker's memory: a waiting run that is not cached costs none.
   */
  maxCachedWorkflows?: number;
  /** Where the activities resolve secrets and send HTTP (tests pass their own). */
  activityDeps?: ActivityDeps;
  /** Environment the tracing variables (`OTEL_*`, see `temporal/telemetry.ts`) are read from (default `process.env`). */
  env?: NodeJS.ProcessEnv;
  /**
   * `--events-listen`: receive the organization's webhook here and wake the runs waiting by push
   * (`worker/events-listener.ts`), verifying deliveries with `secrets`.
   */
  eventsListener?: Pick<EventsListenerOptions, 'host' | 'port' | 'secrets' | 'log' | 'stateFile' | 'readEvents'>;
}

/** A created worker and the connection it owns. */
export interface TeamctlWorker {
  worker: Worker;
  /** Whether runs on this worker may wait by push: the search attribute they list their threads in is registered. */
  searchAttribute: SearchAttributeOutcome;
  /** The events listener, when `eventsListener` was given. */
  listener?: EventsListener;
  /**
   * Runs until `worker.shutdown()` or SIGINT/SIGTERM (the SDK's shutdown signals: in-flight
   * tasks get the grace time to finish), then closes the connection and, when tracing is on,
   * sends the spans still buffered.
   */
  run(): Promise<void>;
}

/** The SDK's default of workflow tasks run at once. */
const SDK_WORKFLOW_TASKS = 40;

/**
 * The workflow cache and workflow task slots of a worker: a cache of N > 0 workflows runs at most
 * N tasks at once (the SDK's rule), so without `maxConcurrentWorkflowTaskExecutions` the tasks are
 * min(40, N) rather than the SDK's 40 lowered with a warning.
 */
function workflowTaskOptions(options: WorkerOptions): { maxCachedWorkflows?: number; maxConcurrentWorkflowTaskExecutions?: number } {
  const cached = options.maxCachedWorkflows;
  const tasks = options.maxConcurrentWorkflowTaskExecutions || (cached ? Math.min(SDK_WORKFLOW_TASKS, cached) : undefined);
  return { ...(cached !== undefined ? { maxCachedWorkflows: cached } : {}), ...(tasks ? { maxConcurrentWorkflowTaskExecutions: tasks } : {}) };
}

/**
 * Connects and creates (does not run) a worker; with tracing on (`options.env`), its workflows,
 * activities and HTTP calls are traced. Registers the search attribute of push waits when missing
 * (`worker/search-attributes.ts`; without it, runs wait by poll) and, with `eventsListener`,
 * starts the events listener (stopped with the worker), which catches up from its state file.
 * Errors: `temporal_unreachable` when the server does not answer; `invalid_usage` when an `OTEL_*`
 * endpoint is not an http(s) URL; bundling errors of the workflows as they are; the listener's
 * (`EADDRINUSE`; a state file that is not one).
 */
export async function createWorker(settings: TemporalSettings, options: WorkerOptions): Promise<TeamctlWorker> {
  const telemetry = createTelemetry(options.env ?? process.env, { defaultServiceName: WORKER_SERVICE_NAME, instrumentHttp: true });
  // The SDK warns from 512 KiB, which a result listing some 2,500 changes passes by design.
  const connection = await NativeConnection.connect({ ...settings.connectionOptions, payloadLimits: { payloadsWarnSize: PAYLOAD_WARN_BYTES } }).catch(async (error: unknown) => {
    await telemetry?.shutdown();
    throw temporalUnreachable(settings, error);
  });
  let listener: EventsListener | undefined;
  try {
    // Push waits list the run's threads in a custom search attribute: registered here when missing.
    const searchAttribute = await ensureAwaitingThreads(connection, settings.namespace);
    const worker = await Worker.create({
      connection,
      namespace: settings.namespace,
      taskQueue: options.taskQueue,
      workflowsPath,
      bundlerOptions: workflowBundlerOptions,
      activities: { ...createApplyActivities(options.activityDeps), ...createConversationActivities({ ...options.activityDeps, pushWaits: searchAttribute.ready }) },
      ...(options.maxConcurrentActivityTaskExecutions ? { maxConcurrentActivityTaskExecutions: options.maxConcurrentActivityTaskExecutions } : {}),
      ...workflowTaskOptions(options),
      ...telemetry?.workerOptions,
    });
    if (options.eventsListener) {
      listener = await startEventsListener({ ...options.eventsListener, client: new Client({ connection, namespace: settings.namespace }) });
    }
    return {
      worker,
      searchAttribute,
      ...(listener ? { listener } : {}),
      async run() {
        try {
          await worker.run();
        } finally {
          try {
            await listener?.close();
            await connection.close();
          } finally {
            // After the run: the workflow spans reach the exporter through sinks until the last task.
            await telemetry?.shutdown();
          }
        }
      },
    };
  } catch (error) {
    await listener?.close();
    await connection.close();
    await telemetry?.shutdown();
    throw error;
  }
}
