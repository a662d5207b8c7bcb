import { closeSync, constants, openSync, readSync } from 'node:fs';
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
   * `--json` result included) and returns the answer: one line read from the terminal itself (see
   * {@link terminalAsk}). Absent when there is no terminal to ask on (stderr not a terminal, or no
   * terminal device): then nothing that needs consent happens without `--auto-approve`. Rejects
   * with an `AbortError` on Ctrl-C at the question.
   */
  ask?: (question: string) => Promise<string>;
}

/** The controlling terminal's device on POSIX systems. */
const TERMINAL_DEVICE = '/dev/tty';

/** An error as readline's question gives on Ctrl-C: `name` is `AbortError`. */
function interrupted(): Error {
  const error = new Error('the question was interrupted');
  error.name = 'AbortError';
  return error;
}

/** How often a question looks for its answer on the terminal, in milliseconds (a person types far slower). */
const ANSWER_POLL_MS = 50;

/**
 * Reads one line from the terminal device, byte by byte up to its newline, as a shell's `read`
 * does. So a question inside a block pasted into a shell takes the line after its command as its
 * answer and leaves every later line to the shell — readline on stdin reads all that is there, and
 * the lines it does not use are lost. The device is opened
 * non-blocking (a file description of its own: the shell's stdin is not changed) and looked at
 * every {@link ANSWER_POLL_MS} ms, so no thread is left blocked in a read (which would keep the
 * process from exiting) and Ctrl-C, which the terminal turns into SIGINT, is heard at once: it
 * rejects with an `AbortError`. Ctrl-D answers the empty line.
 */
function readTerminalLine(question: string): Promise<string> {
  const fd = openSync(TERMINAL_DEVICE, constants.O_RDONLY | constants.O_NONBLOCK);
  return new Promise((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined;
    const done = (settle: () => void) => {
      clearTimeout(timer);
      closeSync(fd);
      settle();
    };
    // Listening before the question shows: a Ctrl-C right after it must be a no, not Node's
    // default (the end of the process). The listener stays: under npx the same Ctrl-C arrives
    // twice, and the second must not end the process before the first has said what it did
    // (see cli/signals.ts); the process ends after the refusal anyway.
    let interruptedAlready = false;
    const onSignal = () => {
      if (interruptedAlready) return;
      interruptedAlready = true;
      done(() => reject(interrupted()));
    };
    process.on('SIGINT', onSignal);
    process.stderr.write(question);
    // Byte by byte up to the newline: text typed (or pasted) while the shell's line editor had the
    // terminal comes as one "line" however many lines it holds, and what follows the answer's
    // newline must stay in the terminal for the shell.
    const line: number[] = [];
    const byte = Buffer.alloc(1);
    const answer = () => Buffer.from(line).toString('utf8').replace(/\r$/, '');
    const look = () => {
      for (;;) {
        let bytes: number;
        try {
          bytes = readSync(fd, byte, 0, 1, null);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === 'EAGAIN') {
            timer = setTimeout(look, ANSWER_POLL_MS);
            return;
          }
          process.off('SIGINT', onSignal);
          done(() => reject(error));
          return;
        }
        // The end of the line, or of the input (Ctrl-D).
        if (bytes === 0 || byte[0] === 0x0a) {
          process.off('SIGINT', onSignal);
          done(() => resolve(answer()));
          return;
        }
        line.push(byte[0]!);
      }
    };
    look();
  });
}

/**
 * How this process asks a person a question, or undefined when it cannot: with stderr on a
 * terminal (where the question shows), the answer is read from the terminal device itself
 * ({@link readTerminalLine}) — also when stdin is not a terminal (a script fed to `bash` on
 * stdin, a here-document, a pipe), whose lines are then never read as an answer. Without a
 * terminal device (Windows, a process without a controlling terminal), readline on stdin when
 * stdin is a terminal, as before.
 */
function terminalAsk(): ((question: string) => Promise<string>) | undefined {
  if (!process.stderr.isTTY) return undefined;
  try {
    closeSync(openSync(TERMINAL_DEVICE, 'r'));
    return readTerminalLine;
  } catch {
    // No terminal device here: stdin, if it is one.
  }
  if (!process.stdin.isTTY) return undefined;
  return async (question: string) => {
    const rl = createInterface({ input: process.stdin, output: process.stderr });
    try {
      return await rl.question(question);
    } finally {
      rl.close();
    }
  };
}

/** The process's own streams and environment. */
export function processIo(): CliIo {
  const terminal = terminalCapabilities({ stdout: process.stdout, stderr: process.stderr }, process.env);
  const ask = terminalAsk();
  return {
    stdout: (text) => process.stdout.write(text.endsWith('\n') ? text : `${text}\n`),
    stderr: (text) => process.stderr.write(text.endsWith('\n') ? text : `${text}\n`),
    ...(process.stdout.isTTY ? { write: (text: string) => void process.stdout.write(text) } : {}),
    env: process.env,
    isTTY: terminal.progress,
    // The decision is made above (0 columns and TERM=dumb included), so styleText need not check again.
    ...(terminal.color ? { style: (format: StyleFormat, text: string) => styleText(format, text, { validateStream: false }) } : {}),
    ...(ask ? { ask } : {}),
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
