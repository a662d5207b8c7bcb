/**
 * The `teamctl` program: commands, flags and the one place errors become exit codes. It never
 * calls `process.exit`; `bin/teamctl.ts` does, with the code {@link runCli} returns.
 */
import { Command, CommanderError } from 'commander';
import { DefinitionError } from '../definitions/problems.ts';
import { registerDestroy } from './commands/destroy.ts';
import { registerExport } from './commands/export.ts';
import { registerGet } from './commands/get.ts';
import { registerKeys } from './commands/keys.ts';
import { registerPlanApply } from './commands/plan-apply.ts';
import { registerRun } from './commands/run.ts';
import { registerSchedules } from './commands/schedules.ts';
import { registerThread } from './commands/thread.ts';
import { registerWorker } from './commands/worker.ts';
import { ExitCodes, reportError } from './errors.ts';
import type { ExitCode } from './errors.ts';
import type { CliIo } from './io.ts';

/**
 * Runs `teamctl` with `argv` (without the node and script paths) and returns the exit code:
 * 0 success, 1 error, 2 changes (`plan --detailed-exitcode`), 4 timed out.
 * Errors are printed as one line `error[code]: message` plus a hint; never with a stack trace.
 */
export async function runCli(argv: string[], io: CliIo): Promise<ExitCode> {
  let exitCode: ExitCode = ExitCodes.ok;
  const run = async (action: () => Promise<ExitCode>): Promise<void> => {
    try {
      exitCode = await action();
    } catch (error) {
      exitCode = printError(error, io);
    }
  };
  const program = new Command('teamctl')
    .description('Manage Agent Collaboration Service teams as code: validate, plan, apply; open threads; run a Temporal worker.')
    .version('0.1.0')
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.stdout(s), writeErr: (s) => io.stderr(s) })
    .showHelpAfterError('(run teamctl --help for usage)');
  registerPlanApply(program, io, run);
  registerDestroy(program, io, run);
  registerGet(program, io, run);
  registerExport(program, io, run);
  registerRun(program, io, run);
  registerSchedules(program, io, run);
  registerThread(program, io, run);
  registerKeys(program, io, run);
  registerWorker(program, io, run);
  try {
    await program.parseAsync(argv, { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError) {
      // --help and --version "fail" with exit code 0; usage errors were already printed.
      return error.exitCode === 0 ? ExitCodes.ok : ExitCodes.error;
    }
    return printError(error, io);
  }
  return exitCode;
}

function printError(error: unknown, io: CliIo): ExitCode {
  if (error instanceof DefinitionError) {
    io.stderr(error.message);
    return ExitCodes.error;
  }
  const report = reportError(error);
  io.stderr(`error[${report.code}]: ${report.message}`);
  if (report.hint) io.stderr(`hint: ${report.hint}`);
  return report.exitCode;
}
