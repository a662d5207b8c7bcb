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
 * `TEAMCTL_EVENTS_SECRET`). Errors: `temporal_unreachable` (exit 1 with a hint); `invalid_usage`
 * (a bad `--events-listen`, no secret in the variable, the port taken).
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
    .action((opts: { taskQueue: string; maxConcurrentActivities?: number; maxConcurrentWorkflowTasks?: number; logLevel: 'TRACE' | 'DEBUG' | 'INFO' | 'WARN' | 'ERROR'; eventsListen?: string; eventsSecretEnv: string }) =>
      run(async () => {
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
        // The SDK logs every bundling step at INFO; a worker started by hand should stay quiet.
        try {
          Runtime.install({ logger: new DefaultLogger(opts.logLevel) });
        } catch {
          // Already installed in this process (tests running the CLI in-process): keep that one.
        }
        const settings = loadTemporalSettings(io.env);
        let created;
        try {
          created = await createWorker(settings, {
            taskQueue: opts.taskQueue,
            ...(opts.maxConcurrentActivities ? { maxConcurrentActivityTaskExecutions: opts.maxConcurrentActivities } : {}),
            ...(opts.maxConcurrentWorkflowTasks ? { maxConcurrentWorkflowTaskExecutions: opts.maxConcurrentWorkflowTasks } : {}),
            activityDeps: { env: io.env },
            env: io.env,
            ...(eventsListener ? { eventsListener } : {}),
          });
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') throw new ToolkitError('invalid_usage', `--events-listen ${opts.eventsListen}: the address is in use`);
          throw error;
        }
        const { run: runWorker, listener, searchAttribute } = created;
        if (!searchAttribute.ready) io.stderr(`warning: ${searchAttribute.reason}; pipeline steps on this worker wait by poll`);
        if (listener) io.stderr(`teamctl worker receiving the organization's webhook at ${listener.url} (secret from ${opts.eventsSecretEnv})`);
        io.stderr(`teamctl worker polling task queue ${opts.taskQueue} on ${settings.address} (namespace ${settings.namespace}); Ctrl-C stops it`);
        // The runtime shuts the worker down on SIGINT/SIGTERM; this keeps the same Ctrl-C delivered twice (npx) from killing it halfway.
        await untilStopped(() => runWorker());
        io.stderr('teamctl worker stopped');
        return ExitCodes.ok;
      }),
    );
}
