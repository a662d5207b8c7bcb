/**
 * The `teamctl` program: commands, flags and the one place errors become exit codes. It never
 * calls `process.exit`; `bin/teamctl.ts` does, with the code {@link runCli} returns.
 */
import { Command, CommanderError } from 'commander';
import { VERSION } from '../api/version.ts';
import { DefinitionError } from '../definitions/problems.ts';
import { registerGetUsage } from './commands/get-usage.ts';
import { registerCompletion } from './commands/completion.ts';
import { registerConfig } from './commands/config.ts';
import { registerDestroy } from './commands/destroy.ts';
import { registerEvents } from './commands/events.ts';
import { registerExport } from './commands/export.ts';
import { registerGet } from './commands/get.ts';
import { registerKeys } from './commands/keys.ts';
import { registerMcp } from './commands/mcp.ts';
import { registerPlanApply } from './commands/plan-apply.ts';
import { registerRun } from './commands/run.ts';
import { registerSchedules } from './commands/schedules.ts';
import { registerThread } from './commands/thread.ts';
import { registerWorker } from './commands/worker.ts';
import { environmentWithContext, selectContext } from './config.ts';
import { MAX_FILE_SIZE_ENV, parseByteSize } from './desired.ts';
import { ExitCodes, reportError } from './errors.ts';
import type { ExitCode } from './errors.ts';
import type { CliIo } from './io.ts';
import type { Runner } from './commands/runner.ts';

/**
 * Runs `teamctl` with `argv` (without the node and script paths) and returns the exit code:
 * 0 success, 1 error, 2 changes (`plan --detailed-exitcode`), 4 timed out.
 * Errors are printed as one line `error[code]: message` plus a hint; never with a stack trace.
 */
export async function runCli(argv: string[], given: CliIo): Promise<ExitCode> {
  // A copy of the environment: the context of the config file is filled into it (see
  // buildProgram), never into the caller's object.
  const io: CliIo = { ...given, env: { ...given.env } };
  let exitCode: ExitCode = ExitCodes.ok;
  const run = async (action: () => Promise<ExitCode>): Promise<void> => {
    try {
      exitCode = await action();
    } catch (error) {
      exitCode = printError(error, io);
    }
  };
  const program = buildProgram(io, run);
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

/**
 * The `teamctl` program: every command, subcommand and flag, with the hook that fills a context
 * of the config file into `io.env`, writing to `io` and running each command's body through
 * `run`. Builds only; parses and runs nothing, so the command tree can be walked without running a
 * command (the CLI reference's completeness test, test/docs/cli-reference.test.ts). `io.env` must be the program's own copy:
 * the hook writes into it.
 */
export function buildProgram(io: CliIo, run: Runner): Command {
  const program = new Command('teamctl')
    .description('Manage Agent Collaboration Service teams as code: validate, plan, apply; open threads; run a Temporal worker.')
    .version(VERSION, '-V, --version', 'print the version of teamctl')
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.stdout(s), writeErr: (s) => io.stderr(s) })
    .showHelpAfterError('(run teamctl --help for usage)')
    .option('--context <name>', 'context of the config file to use (default: $TEAMCTL_CONTEXT, else its current context)')
    .option('--max-file-size <size>', 'largest definition file read, e.g. 4MiB (default: $TEAMCTL_MAX_FILE_SIZE, else 1MiB)')
    .hook('preAction', async (_program, command) => {
      const { maxFileSize } = program.opts<{ maxFileSize?: string }>();
      if (maxFileSize !== undefined) io.env[MAX_FILE_SIZE_ENV] = String(parseByteSize(maxFileSize, '--max-file-size'));
      // Every command that may connect reads its environment with the context filled in, so a
      // new command follows contexts by reading io.env as usual. The config commands manage the
      // file themselves; validate and completion stay offline and work whatever the file holds.
      if (OFFLINE_COMMANDS.has(topLevelName(command))) return;
      const selected = await selectContext(io.env, program.opts<{ context?: string }>().context);
      if (selected) Object.assign(io.env, environmentWithContext(io.env, selected.context));
    });
  registerPlanApply(program, io, run);
  registerDestroy(program, io, run);
  registerGetUsage(registerGet(program, io, run), io, run);
  registerExport(program, io, run);
  registerRun(program, io, run);
  registerSchedules(program, io, run);
  registerThread(program, io, run);
  registerEvents(program, io, run);
  registerKeys(program, io, run);
  registerWorker(program, io, run);
  registerMcp(program, io, run);
  registerConfig(program, io, run);
  registerCompletion(program, io, run);
  return program;
}

/** Commands that never read a context: they do not connect, or they manage the config file. */
const OFFLINE_COMMANDS = new Set(['config', 'validate', 'completion', 'completion-server']);

/** The name of the top-level command `command` belongs to (`thread` for `thread open`). */
function topLevelName(command: Command): string {
  let current = command;
  while (current.parent?.parent) current = current.parent;
  return current.name();
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
