/** `teamctl worker`: runs a Temporal worker for the workflows and activities of teamctl. */
import type { Command } from 'commander';
import { InvalidArgumentError, Option } from 'commander';
import { ToolkitError } from '../../errors/catalogue.ts';
import { DEFAULT_TASK_QUEUE, loadTemporalSettings } from '../../temporal/settings.ts';
import { ExitCodes } from '../errors.ts';
import type { CliIo } from '../io.ts';
import { untilStopped } from '../signals.ts';
import { positiveInt } from './plan-apply.ts';
import type { Runner } from './runner.ts';
import type { CatchUpReport, EventsListenerOptions } from '../../worker/events-listener.ts';
import type { WorkerOptions } from '../../worker/worker.ts';

/**
 * Parses `--max-cached-workflows`: 0 (no workflow kept in memory between its tasks) or an integer
 * of at least 2 (the Temporal SDK's rule: it would turn 1 into 2 with a warning). Errors: commander's
 * `InvalidArgumentError` with the rule.
 */
export function cachedWorkflowsArg(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n === 1) {
    throw new InvalidArgumentError('expected 0 (keep no workflow in memory) or a whole number of at least 2 (the least cache the Temporal SDK keeps)');
  }
  return n;
}

/**
 * Registers `worker`: connects to Temporal (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, a
 * TEMPORAL_PROFILE of the config file), polls one task queue and runs the apply workflow and its
 * activities until SIGINT or SIGTERM, then lets in-flight tasks finish, closes its connection and
 * exits 0. The SDK logs at `--log-level` (default WARN). The activities read the service's key and provider keys from this process's
 * environment. With `--events-listen HOST:PORT` it also receives the organization's webhook at
 * `http://HOST:PORT/` and wakes the pipeline runs waiting by push (`worker/events-listener.ts`),
 * verifying deliveries with the secret(s) of the variable `--events-secret-env` names (default
 * `TEAMCTL_EVENTS_SECRET`); it keeps its place in the event log in `--events-state FILE` (default
 * `$XDG_STATE_HOME/teamctl/events-listener-PORT.json`) and, started again, reads the log from
 * there through the service the environment names (`ACS_BASE_URL` and the organization keyring, as
 * other commands), so replies written while it was down wake their runs at once.
 * `--max-cached-workflows N` bounds the workflows kept in memory (the SDK's `maxCachedWorkflows`).
 * With `--metrics-listen HOST:PORT` it serves Prometheus metrics: the
 * Temporal SDK's at `http://HOST:PORT/metrics` and teamctl's own (`teamctl_apply_changes_total`,
 * `teamctl_pipeline_steps_total`, Node's) at `http://HOST:PORT+1/metrics` (worker/metrics.ts).
 * Errors: `temporal_unreachable` (exit 1 with a hint); `invalid_usage` (a bad `--events-listen` or
 * `--metrics-listen`, no secret in the variable, the port taken, a state file that is not one,
 * `--max-concurrent-workflow-tasks` above `--max-cached-workflows`); a `--max-cached-workflows`
 * that is not 0 or at least 2 is a usage error of commander's.
 */
export function registerWorker(program: Command, io: CliIo, run: Runner): void {
  program
    .command('worker')
    .description('Run a Temporal worker (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE or TEMPORAL_PROFILE) polling a task queue until SIGINT/SIGTERM.')
    .option('--task-queue <name>', 'task queue to poll', DEFAULT_TASK_QUEUE)
    .addOption(new Option('--max-concurrent-activities <n>', 'activities run at once (SDK default: 100)').argParser(positiveInt))
    .addOption(new Option('--max-concurrent-workflow-tasks <n>', 'workflow tasks run at once (SDK default: 40)').argParser(positiveInt))
    .addOption(
      new Option('--max-cached-workflows <n>', 'workflows kept in memory between their tasks, bounding the worker\'s memory: 0 (none) or at least 2 (SDK default: sized from the heap)').argParser(
        cachedWorkflowsArg,
      ),
    )
    .addOption(new Option('--log-level <level>', 'the Temporal SDK\'s log level').choices(['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR']).default('WARN'))
    .option('--events-listen <host:port>', "receive the organization's webhook at http://HOST:PORT/ and wake pipeline runs waiting by push")
    .option('--events-secret-env <name>', 'variable holding the webhook secret(s) the listener verifies with (comma-separated during a rotation)', 'TEAMCTL_EVENTS_SECRET')
    .option('--events-state <file>', "where the listener keeps its place in the event log, read from there when started again (default: $XDG_STATE_HOME/teamctl/events-listener-PORT.json)")
    .option('--metrics-listen <host:port>', "serve Prometheus metrics: the Temporal SDK's at http://HOST:PORT/metrics, teamctl's (apply changes, pipeline steps, Node) at http://HOST:PORT+1/metrics")
    .action(
      (opts: {
        taskQueue: string;
        maxConcurrentActivities?: number;
        maxConcurrentWorkflowTasks?: number;
        maxCachedWorkflows?: number;
        logLevel: 'TRACE' | 'DEBUG' | 'INFO' | 'WARN' | 'ERROR';
        eventsListen?: string;
        eventsSecretEnv: string;
        eventsState?: string;
        metricsListen?: string;
      }) =>
      run(async () => {
        // The SDK would lower the tasks to the cache's size with a warning: said here instead, before anything starts.
        if (opts.maxCachedWorkflows && opts.maxConcurrentWorkflowTasks && opts.maxConcurrentWorkflowTasks > opts.maxCachedWorkflows) {
          throw new ToolkitError(
            'invalid_usage',
            `--max-concurrent-workflow-tasks ${opts.maxConcurrentWorkflowTasks} is more than --max-cached-workflows ${opts.maxCachedWorkflows}: a worker that caches workflows runs at most as many workflow tasks at once as it caches`,
            { hint: `lower --max-concurrent-workflow-tasks to ${opts.maxCachedWorkflows} or less, or raise --max-cached-workflows` },
          );
        }
        if (opts.eventsState !== undefined && opts.eventsListen === undefined) throw new ToolkitError('invalid_usage', '--events-state is the state of the events listener: give --events-listen HOST:PORT too');
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
        let eventsListener: NonNullable<WorkerOptions['eventsListener']> | undefined;
        let catchUpOff: string | undefined;
        if (opts.eventsListen !== undefined) {
          const { parseListenAddress, secretsFrom } = await import('../../worker/events-listener.ts');
          const { defaultPositionFile } = await import('../../worker/events-position.ts');
          try {
            const address = parseListenAddress(opts.eventsListen);
            eventsListener = {
              ...address,
              secrets: secretsFrom(io.env, opts.eventsSecretEnv),
              log: (line) => io.stderr(line),
              stateFile: opts.eventsState ?? defaultPositionFile(io.env, address.port),
            };
          } catch (error) {
            throw new ToolkitError('invalid_usage', (error as Error).message);
          }
          // The catch-up reads the log as other commands do: ACS_BASE_URL (or a context) and the keyring.
          const reader = await eventsReader(io.env);
          if (typeof reader === 'string') catchUpOff = reader;
          else eventsListener.readEvents = reader;
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
            ...(opts.maxCachedWorkflows !== undefined ? { maxCachedWorkflows: opts.maxCachedWorkflows } : {}),
            activityDeps: { env: io.env, ...(workerMetrics ? { metrics: workerMetrics } : {}) },
            env: io.env,
            ...(eventsListener ? { eventsListener } : {}),
          });
        } catch (error) {
          await metricsListener?.close();
          if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') throw new ToolkitError('invalid_usage', `--events-listen ${opts.eventsListen}: the address is in use`);
          if (eventsListener?.stateFile && (error as Error).message?.includes(eventsListener.stateFile)) throw new ToolkitError('invalid_usage', (error as Error).message);
          throw error;
        }
        const { run: runWorker, listener, searchAttribute } = created;
        if (!searchAttribute.ready) io.stderr(`warning: ${searchAttribute.reason}; pipeline steps on this worker wait by poll`);
        if (listener) {
          io.stderr(`teamctl worker receiving the organization's webhook at ${listener.url} (secret from ${opts.eventsSecretEnv}; its place in the event log kept in ${listener.stateFile})`);
          if (catchUpOff) io.stderr(`warning: the events listener cannot read the event log when started again (${catchUpOff}): replies written while it is down wait for the webhook's next retry`);
          void listener.caughtUp.then((reports) => {
            for (const report of reports) io.stderr(catchUpLine(report));
          });
        }
        if (metricsListener && metricsAddress) {
          const host = metricsAddress.host.includes(':') ? `[${metricsAddress.host}]` : metricsAddress.host;
          io.stderr(`teamctl worker metrics at http://${host}:${metricsAddress.port}/metrics (Temporal SDK) and ${metricsListener.url} (teamctl)`);
        }
        io.stderr(
          `teamctl worker polling task queue ${opts.taskQueue} on ${settings.address} (namespace ${settings.namespace}), caching at most ${created.worker.options.maxCachedWorkflows} workflows; Ctrl-C stops it`,
        );
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

/**
 * The catch-up's reader of the event log (pages of `message.created` events) on the connection
 * other commands use: `ACS_BASE_URL` (or a context) and the organization keyring.
 * Output: the reader, or why there is none (no service URL, no key: the listener then catches
 * nothing up). Raises nothing.
 */
export async function eventsReader(env: NodeJS.ProcessEnv): Promise<NonNullable<EventsListenerOptions['readEvents']> | string> {
  const { keyringClient, resolveConnection } = await import('../context.ts');
  try {
    const client = keyringClient(resolveConnection({}, env), env);
    return (orgId, after, limit) => client.listEvents(orgId, { ...(after !== undefined ? { after } : {}), types: ['message.created'], limit });
  } catch (error) {
    return (error as Error).message;
  }
}

/** The line the worker prints once the listener caught up on one organization's log. */
export function catchUpLine(report: CatchUpReport): string {
  const read = `read organization ${report.org_id}'s event log after seq ${report.after}: ${report.events} message${report.events === 1 ? '' : 's'}, ${report.passedOn} passed on to waiting runs`;
  return report.error === undefined
    ? `teamctl worker events listener ${read}`
    : `warning: the events listener stopped catching up (${report.error}); ${read}; the webhook's retries deliver the rest`;
}
