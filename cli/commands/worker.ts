/** `teamctl worker`: runs a Temporal worker for the workflows and activities of teamctl. */
import type { Command } from 'commander';
import { temporalOptionsFromEnv } from '../../engine/temporal-engine.ts';
import { ExitCodes } from '../errors.ts';
import type { CliIo } from '../io.ts';
import type { Runner } from './runner.ts';

/** Registers `worker`. */
export function registerWorker(program: Command, io: CliIo, run: Runner): void {
  program
    .command('worker')
    .description('Run a Temporal worker (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE) polling a task queue until SIGINT/SIGTERM.')
    .option('--task-queue <name>', 'task queue to poll', 'teamctl')
    .action((opts: { taskQueue: string }) =>
      run(async () => {
        const { createWorker } = await import('../../worker/worker.ts');
        const options = temporalOptionsFromEnv(io.env, opts.taskQueue);
        const worker = await createWorker(options);
        io.stderr(`teamctl worker polling task queue ${options.taskQueue} on ${options.address} (namespace ${options.namespace})`);
        await worker.run();
        return ExitCodes.ok;
      }),
    );
}
