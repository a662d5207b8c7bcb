/**
 * The `teamctl` program: commands, flags and the one place errors become exit codes. It never
 * calls `process.exit`; `bin/teamctl.ts` does, with the code {@link runCli} returns.
 */
import { CommanderError } from 'commander';
import type { Command } from 'commander';
import { VERSION } from '../api/version.ts';
import { DefinitionError } from '../definitions/problems.ts';
import { TeamctlCommand } from './command.ts';
import { ExitCodes } from './exit-codes.ts';
import type { ExitCode } from './exit-codes.ts';
import { printableIo, type CliIo } from './io.ts';
import type { Runner } from './commands/runner.ts';

/** What registers top-level commands on the program. */
type Register = (program: Command, io: CliIo, run: Runner) => void;

/**
 * Every top-level command, in the order `teamctl --help` lists them, with the module that registers
 * it. A command's module is imported only when that command runs (or the whole tree is needed:
 * `--help`, an unknown command, completion), so `teamctl validate` never loads what `apply` or the
 * Temporal commands need (docs/performance.md, "Start-up"). A new command is one entry here.
 */
const COMMANDS: ReadonlyArray<{ names: readonly string[]; load: () => Promise<Register> }> = [
  { names: ['validate'], load: async () => (await import('./commands/validate.ts')).registerValidate },
  { names: ['plan', 'apply'], load: async () => (await import('./commands/plan-apply.ts')).registerPlanApply },
  { names: ['destroy'], load: async () => (await import('./commands/destroy.ts')).registerDestroy },
  {
    names: ['get'],
    load: async () => {
      const [{ registerGet }, { registerGetUsage }] = await Promise.all([import('./commands/get.ts'), import('./commands/get-usage.ts')]);
      return (program, io, run) => registerGetUsage(registerGet(program, io, run), io, run);
    },
  },
  { names: ['export'], load: async () => (await import('./commands/export.ts')).registerExport },
  { names: ['run', 'runs'], load: async () => (await import('./commands/run.ts')).registerRun },
  { names: ['schedules'], load: async () => (await import('./commands/schedules.ts')).registerSchedules },
  { names: ['thread'], load: async () => (await import('./commands/thread.ts')).registerThread },
  { names: ['tasks'], load: async () => (await import('./commands/tasks.ts')).registerTasks },
  { names: ['events'], load: async () => (await import('./commands/events.ts')).registerEvents },
  { names: ['keys'], load: async () => (await import('./commands/keys.ts')).registerKeys },
  { names: ['humans'], load: async () => (await import('./commands/humans.ts')).registerHumans },
  { names: ['worker'], load: async () => (await import('./commands/worker.ts')).registerWorker },
  { names: ['mcp'], load: async () => (await import('./commands/mcp.ts')).registerMcp },
  { names: ['a2a'], load: async () => (await import('./commands/a2a.ts')).registerA2a },
  { names: ['config'], load: async () => (await import('./commands/config.ts')).registerConfig },
  // Completion walks the whole tree: it is never registered alone.
  { names: ['completion', 'completion-server'], load: async () => (await import('./commands/completion.ts')).registerCompletion },
];

/** The program's own options that take a value: the word after them is not a command. */
const GLOBAL_OPTIONS_WITH_VALUE = new Set(['--context', '--max-file-size']);

/**
 * Which top-level commands `argv` needs registered: the one it names, when the program knows it
 * (`teamctl validate -f x`, `teamctl --context ci apply …`); none for `--version` alone; every
 * one otherwise (no command, `--help`, `help`, an unknown name: help and "did you mean" list them
 * all; completion, which walks the tree).
 */
export function commandsFor(argv: readonly string[]): 'all' | readonly string[] {
  let i = 0;
  while (i < argv.length && argv[i]!.startsWith('-')) {
    if (GLOBAL_OPTIONS_WITH_VALUE.has(argv[i]!)) i++;
    i++;
  }
  const name = argv[i];
  if (name === undefined) {
    const help = argv.includes('--help') || argv.includes('-h');
    const version = argv.includes('--version') || argv.includes('-V');
    return version && !help ? [] : 'all';
  }
  const entry = COMMANDS.find((c) => c.names.includes(name));
  if (!entry || entry.names.includes('completion')) return 'all';
  return [name];
}

/**
 * Runs `teamctl` with `argv` (without the node and script paths) and returns the exit code:
 * 0 success, 1 error, 2 changes (`plan --detailed-exitcode`), 4 timed out.
 * Errors are printed as one line `error[code]: message` plus a hint; never with a stack trace.
 */
export async function runCli(argv: string[], given: CliIo): Promise<ExitCode> {
  // A copy of the environment: the context of the config file is filled into it (see
  // buildProgram), never into the caller's object. Everything printed goes through the one
  // sanitiser (cli/printable.ts): service data may carry terminal control sequences.
  const io: CliIo = printableIo({ ...given, env: { ...given.env } });
  let exitCode: ExitCode = ExitCodes.ok;
  const run = async (action: () => Promise<ExitCode>): Promise<void> => {
    try {
      exitCode = await action();
    } catch (error) {
      exitCode = await printError(error, io);
    }
  };
  const program = await buildProgram(io, run, commandsFor(argv));
  try {
    await program.parseAsync(argv, { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError) {
      // --help and --version "fail" with exit code 0; usage errors were already printed.
      return error.exitCode === 0 ? ExitCodes.ok : ExitCodes.error;
    }
    return await printError(error, io);
  }
  return exitCode;
}

/**
 * The `teamctl` program: the commands `only` names (default: every command, subcommand and
 * flag), with the hook that fills a context of the config file into `io.env`, writing to `io` and
 * running each command's body through `run`. Builds only; parses and runs nothing, so the command
 * tree can be walked without running a command (the CLI reference's completeness test,
 * test/docs/cli-reference.test.ts). `io.env` must be the program's own copy: the hook writes into
 * it. Async because each command's module is imported on demand ({@link COMMANDS}).
 */
export async function buildProgram(io: CliIo, run: Runner, only: 'all' | readonly string[] = 'all'): Promise<Command> {
  const program = new TeamctlCommand('teamctl')
    .description('Manage Agent Collaboration Service teams as code: validate, plan, apply; open threads; run a Temporal worker.')
    .version(VERSION, '-V, --version', 'print the version of teamctl')
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.stdout(s), writeErr: (s) => io.stderr(s) })
    .option('--context <name>', 'context of the config file to use (default: $TEAMCTL_CONTEXT, else its current context)')
    .option('--max-file-size <size>', 'largest definition file read, e.g. 4MiB (default: $TEAMCTL_MAX_FILE_SIZE, else 1MiB)')
    .hook('preAction', async (_program, command) => {
      const { maxFileSize } = program.opts<{ maxFileSize?: string }>();
      if (maxFileSize !== undefined) {
        const { MAX_FILE_SIZE_ENV, parseByteSize } = await import('./definition-file.ts');
        io.env[MAX_FILE_SIZE_ENV] = String(parseByteSize(maxFileSize, '--max-file-size'));
      }
      // Every command that may connect reads its environment with the context filled in, so a
      // new command follows contexts by reading io.env as usual. The config commands manage the
      // file themselves; validate and completion stay offline and work whatever the file holds.
      if (OFFLINE_COMMANDS.has(topLevelName(command))) return;
      const { fillContext, selectContext } = await import('./config.ts');
      const selected = await selectContext(io.env, program.opts<{ context?: string }>().context);
      if (selected) fillContext(io.env, selected);
    });
  const wanted = COMMANDS.filter((c) => only === 'all' || c.names.some((name) => only.includes(name)));
  const registers = await Promise.all(wanted.map((c) => c.load()));
  for (const register of registers) register(program, io, run);
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

/** Prints an error as one line (and a hint) and returns its exit code; the error catalogue's edge is loaded only here. */
async function printError(error: unknown, io: CliIo): Promise<ExitCode> {
  if (error instanceof DefinitionError) {
    io.stderr(error.message);
    return ExitCodes.error;
  }
  const [{ reportError }, { connectionOrigin }] = await Promise.all([import('./errors.ts'), import('./context.ts')]);
  const report = reportError(error, connectionOrigin(io.env));
  io.stderr(`error[${report.code}]: ${report.message}`);
  if (report.hint) io.stderr(`hint: ${report.hint}`);
  return report.exitCode;
}
