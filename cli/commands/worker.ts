/** `teamctl worker`: runs a Temporal worker for the workflows and activities of teamctl. */
import type { Command } from 'commander';
import { Option } from 'commander';
import { ToolkitError } from '../../errors/catalogue.ts';
import { DEFAULT_TASK_QUEUE, loadTemporalSettings } from '../../temporal/settings.ts';
import { ExitCodes } from '../errors.ts';
import type { CliIo } from '../io.ts';
import { untilStopped } from '../signals.ts';
import { positiveInt } from './plan-apply.ts';
import type { Runner } from './runner.ts';

/**
 * Registers `worker`: connects to Temporal (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, a
 * TEMPORAL_PROFILE of the config file), polls one task queue and runs the apply workflow and its
 * activities until SIGINT or SIGTERM, then lets in-flight tasks finish, closes its connection and
 * exits 0. The SDK logs at `--log-level` (default WARN). The activities read the service's key and provider keys from this process's
 * environment. With `--events-listen HOST:PORT` it also receives the organization's webhook at
 * `http://HOST:PORT/` and wakes the pipeline runs waiting by push (`worker/events-listener.ts`),
 * verifying deliveries with the secret(s) of the variable `--events-secret-env` names (default
 * `TEAMCTL_EVENTS_SECRET`). With `--metrics-listen HOST:PORT` it serves Prometheus metrics: the
 * Temporal SDK's at `http://HOST:PORT/metrics` and teamctl's own (`teamctl_apply_changes_total`,
 * `teamctl_pipeline_steps_total`, Node's) at `http://HOST:PORT+1/metrics` (worker/metrics.ts).
 * Errors: `temporal_unreachable` (exit 1 with a hint); `invalid_usage` (a bad `--events-listen` or
 * `--metrics-listen`, no secret in the variable, the port taken).
 */
export function registerWorker(program: Command, io: CliIo, run: Runner): void {
  program
    .command('worker')
    .description('Run a Temporal worker (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE or TEMPORAL_PROFILE) polling a task queue until SIGINT/SIGTERM.')
    .option('--task-queue <name>', 'task queue to poll', DEFAULT_TASK_QUEUE)
    .addOption(new Option('--max-concurrent-activities <n>', 'activities run at once (SDK default: 100)').argParser(positiveInt))
    .addOption(new Option('--max-concurrent-workflow-tasks <n>', 'workflow tasks run at once (SDK default: 40)').argParser(positiveInt))
    .addOption(new Option('--log-level <level>', 'the Temporal SDK\'s log level').choices(['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR']).default('WARN'))
    .option('--events-listen <host:port>', "receive the organization's webhook at http://HOST:PORT/ and wake pipeline runs waiting by push")
    .option('--events-secret-env <name>', 'variable holding the webhook secret(s) the listener verifies with (comma-separated during a rotation)', 'TEAMCTL_EVENTS_SECRET')
    .option('--metrics-listen <host:port>', "serve Prometheus metrics: the Temporal SDK's at http://HOST:PORT/metrics, teamctl's (apply changes, pipeline steps, Node) at http://HOST:PORT+1/metrics")
    .action((opts: { taskQueue: string; maxConcurrentActivities?: number; maxConcurrentWorkflowTasks?: number; logLevel: 'TRACE' | 'DEBUG' | 'INFO' | 'WARN' | 'ERROR'; eventsListen?: string; eventsSecretEnv: string; metricsListen?: string }) =>
      run(async () => {
        let metricsAddress: { host: string; port: number } | undefined;
        if (opts.metricsListen !== undefined) {
          const { parseListenAddress } = await import('../../telemetry/listen-address.ts');
          try {
            metricsAddress = parseListenAddress('--metrics-listen', opts.metricsListen);
          } catch (error) {
            throw new ToolkitError('invalid_usage', (error as Error).message);
          }
          // Two listeners: the SDK's on PORT, teamctl's on PORT+1 (worker/metrics.ts says why).
          if (metricsAddress.port < 1 || metricsAddress.port > 65_534) {
            throw new ToolkitError('invalid_usage', `--metrics-listen: give a port from 1 to 65534: the Temporal SDK serves its metrics on PORT and teamctl its own on PORT+1, got ${metricsAddress.port}`);
          }
        }
        let eventsListener: { host: string; port: number; secrets: string[]; log: (line: string) => void } | undefined;
        if (opts.eventsListen !== undefined) {
          const { parseListenAddress, secretsFrom } = await import('../../worker/events-listener.ts');
          try {
            eventsListener = { ...parseListenAddress(opts.eventsListen), secrets: secretsFrom(io.env, opts.eventsSecretEnv), log: (line) => io.stderr(line) };
          } catch (error) {
            throw new ToolkitError('invalid_usage', (error as Error).message);
          }
        }
        const { createWorker } = await import('../../worker/worker.ts');
        const { DefaultLogger, Runtime } = await import('@temporalio/worker');
        const metrics = metricsAddress ? await import('../../worker/metrics.ts') : undefined;
        // The SDK logs every bundling step at INFO; a worker started by hand should stay quiet.
        try {
          Runtime.install({
            logger: new DefaultLogger(opts.logLevel),
            ...(metrics && metricsAddress ? { telemetryOptions: metrics.temporalTelemetryOptions(metricsAddress.host, metricsAddress.port) } : {}),
          });
        } catch (error) {
          // Already installed in this process (tests running the CLI in-process): keep that one,
          // unless it was to serve the SDK's metrics, which only a runtime of this command can.
          if (metricsAddress) throw new ToolkitError('invalid_usage', `--metrics-listen: the Temporal SDK's runtime could not be set up to serve its metrics (${(error as Error).message})`);
        }
        const workerMetrics = metrics?.createWorkerMetrics();
        let metricsListener: { url: string; close(): Promise<void> } | undefined;
        if (workerMetrics && metricsAddress) {
          const { startMetricsListener } = await import('../../telemetry/prometheus.ts');
          try {
            metricsListener = await startMetricsListener({ host: metricsAddress.host, port: metricsAddress.port + 1, expose: workerMetrics.expose });
          } catch (error) {
            throw new ToolkitError('invalid_usage', `--metrics-listen ${opts.metricsListen}: teamctl's metrics cannot listen on port ${metricsAddress.port + 1} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
          }
        }
        const settings = loadTemporalSettings(io.env);
        let created;
        try {
          created = await createWorker(settings, {
            taskQueue: opts.taskQueue,
            ...(opts.maxConcurrentActivities ? { maxConcurrentActivityTaskExecutions: opts.maxConcurrentActivities } : {}),
            ...(opts.maxConcurrentWorkflowTasks ? { maxConcurrentWorkflowTaskExecutions: opts.maxConcurrentWorkflowTasks } : {}),
            activityDeps: { env: io.env, ...(workerMetrics ? { metrics: workerMetrics } : {}) },
            env: io.env,
            ...(eventsListener ? { eventsListener } : {}),
          });
        } catch (error) {
          await metricsListener?.close();
          if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') throw new ToolkitError('invalid_usage', `--events-listen ${opts.eventsListen}: the address is in use`);
          throw error;
        }
        const { run: runWorker, listener, searchAttribute } = created;
        if (!searchAttribute.ready) io.stderr(`warning: ${searchAttribute.reason}; pipeline steps on this worker wait by poll`);
        if (listener) io.stderr(`teamctl worker receiving the organization's webhook at ${listener.url} (secret from ${opts.eventsSecretEnv})`);
        if (metricsListener && metricsAddress) {
          const host = metricsAddress.host.includes(':') ? `[${metricsAddress.host}]` : metricsAddress.host;
          io.stderr(`teamctl worker metrics at http://${host}:${metricsAddress.port}/metrics (Temporal SDK) and ${metricsListener.url} (teamctl)`);
        }
        io.stderr(`teamctl worker polling task queue ${opts.taskQueue} on ${settings.address} (namespace ${settings.namespace}); Ctrl-C stops it`);
        // The runtime shuts the worker down on SIGINT/SIGTERM; this keeps the same Ctrl-C delivered twice (npx) from killing it halfway.
        try {
          await untilStopped(() => runWorker());
        } finally {
          await metricsListener?.close();
        }
        io.stderr('teamctl worker stopped');
        return ExitCodes.ok;
      }),
    );
}
