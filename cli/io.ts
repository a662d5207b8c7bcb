import { createInterface } from 'node:readline/promises';
import { styleText } from 'node:util';
import { printable, styleMarks } from './printable.ts';
import type { Style, StyleFormat } from './render.ts';
import { terminalCapabilities } from './terminal.ts';

/** Where the CLI writes and what it reads; the entrypoint passes the process's, tests their own. */
export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  /**
   * Writes `text` to stdout as it is, without ending the line: present only when stdout is a
   * terminal, where a reply being written is shown growing (`thread follow`, `thread send
   * --wait`); absent (piped, redirected, a test's I/O), commands print whole lines only.
   */
  write?: (text: string) => void;
  env: NodeJS.ProcessEnv;
  /**
   * Whether progress (a spinner on stderr) may be drawn: a person at a usable terminal
   * (see `cli/terminal.ts`: both streams terminals with a width, no `NO_COLOR`, no `CI`).
   * Draw progress only through `startSpinner(io, text)`.
   */
  isTTY: boolean;
  /**
   * Colours for stdout: set only when stdout may carry them (a terminal with a width, no
   * `NO_COLOR`, not `TERM=dumb`: see `cli/terminal.ts`); absent, output stays plain.
   */
  style?: Style;
  /**
   * Asks a question on the terminal (written to stderr, so that stdout keeps only the output, a
   * `--json` result included) and returns the answer; absent when there is no terminal to ask on
   * (stdin or stderr not a TTY): then nothing that needs consent happens without `--auto-approve`.
   */
  ask?: (question: string) => Promise<string>;
}

/** The process's own streams and environment. */
export function processIo(): CliIo {
  const terminal = terminalCapabilities({ stdout: process.stdout, stderr: process.stderr }, process.env);
  const interactive = Boolean(process.stdin.isTTY && process.stderr.isTTY);
  return {
    stdout: (text) => process.stdout.write(text.endsWith('\n') ? text : `${text}\n`),
    stderr: (text) => process.stderr.write(text.endsWith('\n') ? text : `${text}\n`),
    ...(process.stdout.isTTY ? { write: (text: string) => void process.stdout.write(text) } : {}),
    env: process.env,
    isTTY: terminal.progress,
    // The decision is made above (0 columns and TERM=dumb included), so styleText need not check again.
    ...(terminal.color ? { style: (format: StyleFormat, text: string) => styleText(format, text, { validateStream: false }) } : {}),
    ...(interactive
      ? {
          ask: async (question: string) => {
            const rl = createInterface({ input: process.stdin, output: process.stderr });
            try {
              return await rl.question(question);
            } finally {
              rl.close();
            }
          },
        }
      : {}),
  };
}

/**
 * The same I/O, made safe to print through: `stdout`, `stderr` and the question of `ask` pass
 * through {@link printable}, and `style` (when present) still colours, through marks only this
 * wrapper can write and read. The environment object is the same one (the CLI fills contexts
 * into it). Input: the process's or a test's {@link CliIo}. Output: the wrapper.
 */
export function printableIo(io: CliIo): CliIo {
  const wrapped: CliIo = { ...io, stdout: (text) => io.stdout(printable(text)), stderr: (text) => io.stderr(printable(text)) };
  if (io.write) {
    const write = io.write;
    wrapped.write = (text) => write(printable(text));
  }
  if (io.ask) {
    const ask = io.ask;
    wrapped.ask = (question) => ask(printable(question));
  }
  if (io.style) {
    const marks = styleMarks(io.style);
    wrapped.style = marks.style;
    wrapped.stdout = (text) => io.stdout(marks.render(text));
    wrapped.stderr = (text) => io.stderr(marks.render(text));
    if (io.write) {
      const write = io.write;
      wrapped.write = (text) => write(marks.render(text));
    }
  }
  return wrapped;
}
