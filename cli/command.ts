/**
 * commander's `Command`, as teamctl's commands need it on a usage mistake:
 *
 * - the mistake first: commander checks for a missing required option before it looks at unknown
 *   ones, so `plan --fiel x` was told `-f` is missing rather than that `--fiel` is unknown (with
 *   its did-you-mean `--file`); here an unknown option is reported first;
 * - then the command's usage, as docs/cli.md promises: `usage: teamctl plan -f <path> [options]`
 *   (its required options and arguments) and where every flag is listed.
 *
 * Every command of the program is one of these: the root is created as one, and each creates its
 * subcommands as such (`createCommand`).
 */
import { Command } from 'commander';
import type { Option } from 'commander';

/** The parts of commander's Command used here that its typings keep private (commander 14). */
interface CommanderInternals {
  args: string[];
  unknownOption(flag: string): void;
}

export class TeamctlCommand extends Command {
  override createCommand(name?: string): Command {
    return new TeamctlCommand(name);
  }

  /**
   * The usage lines printed after a usage mistake: the command with its required options and its
   * arguments, and the command that lists every flag (or, for the program, every command).
   */
  usageLines(): string {
    const path: string[] = [];
    for (let command: Command | null = this; command; command = command.parent) path.unshift(command.name());
    const name = path.join(' ');
    const required = this.options.filter((o) => o.mandatory).map((o) => `${o.short ?? o.long}${argumentOf(o)}`);
    return `usage: ${[name, ...required, this.usage()].join(' ')}\n(${name} --help lists every ${this.parent ? 'flag' : 'command'})`;
  }

  /** commander's error output, with {@link usageLines} after the message. */
  override error(message: string, errorOptions?: { code?: string; exitCode?: number }): never {
    this.showHelpAfterError(this.usageLines());
    return super.error(message, errorOptions);
  }

  /**
   * Called by commander when a required option is missing, before it checks for unknown options:
   * an unknown option among the arguments is the mistake to report (a misspelt required one).
   */
  missingMandatoryOptionValue(option: Option): void {
    const internals = this as unknown as CommanderInternals;
    const unknown = internals.args.find((arg) => arg.startsWith('-') && arg !== '-' && arg !== '--');
    if (unknown !== undefined) internals.unknownOption(unknown);
    this.error(`error: required option '${option.flags}' not specified`, { code: 'commander.missingMandatoryOptionValue' });
  }
}

/** ` <path>` of `-f, --file <path>`; empty for a flag without a value. */
function argumentOf(option: Option): string {
  const match = /\s([<[].*[>\]])$/.exec(option.flags);
  return match ? ` ${match[1]}` : '';
}
