/**
 * Shell completion for teamctl, on `@pnpm/tabtab` (the scripts for bash, zsh, fish and
 * PowerShell, and the protocol between them and the program). `teamctl completion SHELL` prints
 * the script to source; the script calls the hidden `teamctl completion-server -- WORDS…` with
 * the line in `COMP_LINE`/`COMP_POINT`, and that prints the candidates. Candidates come from the
 * program's own commander tree, so a new command or flag completes without being listed here:
 * subcommands, flags of the command being typed, the choices of a flag (`--engine local|temporal`),
 * files after `-f`/`--file` and other path flags, and context names after `--context` and for
 * `config use-context|set-context|delete-context`.
 */
import type { Command, Option } from 'commander';
import { Argument } from 'commander';
import tabtab from '@pnpm/tabtab';
import { configPath, loadConfig } from '../config.ts';
import { ExitCodes } from '../errors.ts';
import type { CliIo } from '../io.ts';
import type { Runner } from './runner.ts';

/** Shells `teamctl completion` writes a script for (tabtab's names; `pwsh` is PowerShell). */
export const COMPLETION_SHELLS = ['bash', 'zsh', 'fish', 'pwsh'] as const;

/** Flags whose value is a path: the shell completes file names there. */
const PATH_FLAGS = new Set(['--file', '--out', '--dev-credentials']);

/** What tabtab's scripts take as "complete file names here". */
const FILES = '__tabtab_complete_files__';

/** Commands whose argument is a context name. */
const CONTEXT_ARGUMENT = new Set(['use-context', 'set-context', 'delete-context']);

/** A candidate and its description (shown by zsh and fish). */
interface Candidate {
  name: string;
  description?: string;
}

/** The option of `command` (or of an ancestor: global flags) spelled `flag`. */
function findOption(command: Command, flag: string): Option | undefined {
  for (let c: Command | null = command; c; c = c.parent) {
    const option = c.options.find((o) => o.long === flag || o.short === flag);
    if (option) return option;
  }
  return undefined;
}

/** Names of the contexts in the config file; none when it cannot be read (completion never fails). */
async function contextNames(env: NodeJS.ProcessEnv): Promise<Candidate[]> {
  try {
    const { config } = await loadConfig(configPath(env));
    return Object.entries(config.contexts).map(([name, c]) => ({ name, description: c.baseUrl ?? '' }));
  } catch {
    return [];
  }
}

/**
 * The candidates for the word being typed. Input: the program, the words before the cursor
 * (without the program's name; the last one is the word being typed, possibly empty) and the
 * environment (for the config file). Output: candidates starting with that word, or
 * `[FILES]` when the shell should complete a path.
 */
export async function completionCandidates(program: Command, words: string[], env: NodeJS.ProcessEnv): Promise<Candidate[] | typeof FILES> {
  const current = words.at(-1) ?? '';
  let command = program;
  let pendingValue: Option | undefined;
  for (const word of words.slice(0, -1)) {
    if (pendingValue) {
      pendingValue = undefined;
      continue;
    }
    if (word.startsWith('-')) {
      const option = word.includes('=') ? undefined : findOption(command, word);
      if (option && (option.required || option.optional)) pendingValue = option;
      continue;
    }
    const sub = command.commands.find((c) => c.name() === word || c.aliases().includes(word));
    if (sub) command = sub;
  }
  const starting = (list: Candidate[]) => list.filter((c) => c.name.startsWith(current));
  if (pendingValue) {
    if (pendingValue.long === '--context') return starting(await contextNames(env));
    if (pendingValue.argChoices) return starting(pendingValue.argChoices.map((name) => ({ name })));
    if (pendingValue.long && PATH_FLAGS.has(pendingValue.long)) return FILES;
    return [];
  }
  if (current.startsWith('-')) {
    const options: Candidate[] = [];
    for (let c: Command | null = command; c; c = c.parent) {
      for (const o of c.options) if (o.long && !o.hidden) options.push({ name: o.long, description: o.description });
    }
    options.push({ name: '--help', description: 'show help' });
    return starting(options);
  }
  const subcommands = command.commands.filter((c) => !(c as Command & { _hidden?: boolean })._hidden).map((c) => ({ name: c.name(), description: c.description() }));
  if (subcommands.length > 0) return starting(subcommands);
  if (CONTEXT_ARGUMENT.has(command.name())) return starting(await contextNames(env));
  const argument: Argument | undefined = command.registeredArguments[0];
  if (argument?.argChoices) return starting(argument.argChoices.map((name) => ({ name })));
  return [];
}

/**
 * Registers `completion SHELL` (prints the script) and the hidden `completion-server` (answers
 * the script). The candidates are written to stdout, one a line, as tabtab's scripts read them.
 */
export function registerCompletion(program: Command, io: CliIo, run: Runner): void {
  program
    .command('completion')
    .description('Print the shell completion script: eval "$(teamctl completion bash)" (or zsh, fish, pwsh), or save it where your shell loads completions.')
    .addArgument(new Argument('<shell>', 'bash, zsh, fish or pwsh').choices(COMPLETION_SHELLS))
    .action((shell: (typeof COMPLETION_SHELLS)[number]) =>
      run(async () => {
        io.stdout(await tabtab.getCompletionScript({ name: 'teamctl', completer: 'teamctl', shell }));
        return ExitCodes.ok;
      }),
    );

  program
    .command('completion-server', { hidden: true })
    .description('answer a completion script (internal)')
    .allowUnknownOption()
    .allowExcessArguments()
    .argument('[words...]')
    .action(() =>
      run(async () => {
        const parsed = tabtab.parseEnv(io.env);
        if (!parsed.complete) return ExitCodes.ok;
        const shell = tabtab.isShellSupported(io.env.SHELL ?? '') ? (io.env.SHELL as (typeof COMPLETION_SHELLS)[number]) : 'bash';
        // The words before the cursor, as the shell split them; the first is the program's name.
        const words = parsed.partial.split(/\s+/).slice(1);
        if (words.length === 0) words.push('');
        const candidates = await completionCandidates(program, words.filter((w, i) => w !== '' || i === words.length - 1), io.env);
        if (candidates === FILES) io.stdout(FILES);
        else tabtab.log(candidates.map((c) => (c.description ? { name: c.name, description: c.description } : c.name)), shell, (line: string) => io.stdout(line));
        return ExitCodes.ok;
      }),
    );
}
