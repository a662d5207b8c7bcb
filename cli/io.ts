/** Where the CLI writes and what it reads; the entrypoint passes the process's, tests their own. */
import { terminalCapabilities } from './terminal.ts';

export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: NodeJS.ProcessEnv;
  /**
   * Whether progress (a spinner on stderr) may be drawn: a person at a usable terminal
   * (see `cli/terminal.ts`: both streams terminals with a width, no `NO_COLOR`, no `CI`).
   * Draw progress only through `startSpinner(io, text)`.
   */
  isTTY: boolean;
  /** Whether stdout may carry ANSI colours (a terminal with a width, no `NO_COLOR`); absent: no. */
  color?: boolean;
}

/** The process's own streams and environment. */
export function processIo(): CliIo {
  const terminal = terminalCapabilities({ stdout: process.stdout, stderr: process.stderr }, process.env);
  return {
    stdout: (text) => process.stdout.write(text.endsWith('\n') ? text : `${text}\n`),
    stderr: (text) => process.stderr.write(text.endsWith('\n') ? text : `${text}\n`),
    env: process.env,
    isTTY: terminal.progress,
    color: terminal.color,
  };
}
