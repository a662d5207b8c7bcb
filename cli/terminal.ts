/**
 * What the terminal allows: one decision, made once per process, for every command's progress
 * output and colour. A spinner or colour is drawn only for a person at a terminal:
 *
 * - never when stdout or stderr is not a terminal (piped, redirected, in CI);
 * - never when `NO_COLOR` is set (https://no-color.org; any non-empty value) or `TERM=dumb`;
 * - never when the terminal reports 0 columns (a pty whose size was never set, `stty cols 0`):
 *   a spinner measures its lines by the width and would divide by zero, redrawing forever.
 *
 * A command opts in by drawing progress only through {@link startSpinner} and colouring only
 * through `io.style` (absent: plain); both follow the decision stored in its `CliIo` (`cli/io.ts`).
 */
import ora from 'ora';
import type { Ora } from 'ora';
import { printable } from './printable.ts';

/** The streams the decision looks at (the process's own, or a test's). */
export interface TerminalStreams {
  stdout: { isTTY?: boolean; columns?: number };
  stderr: { isTTY?: boolean; columns?: number };
}

/** What output may do on this terminal. */
export interface TerminalCapabilities {
  /** A spinner or other redrawn progress may be shown (on stderr). */
  progress: boolean;
  /** Output on stdout may carry ANSI colours. */
  color: boolean;
}

/** Whether `NO_COLOR` asks for no colour: set to anything but the empty string. */
function noColor(env: NodeJS.ProcessEnv): boolean {
  return env.NO_COLOR !== undefined && env.NO_COLOR !== '';
}

/** A stream is a usable terminal: a TTY whose width is known and not 0. */
function usableTerminal(stream: { isTTY?: boolean; columns?: number }): boolean {
  return stream.isTTY === true && typeof stream.columns === 'number' && stream.columns > 0;
}

/**
 * Decides what output may do. Input: the streams and the environment (`NO_COLOR`, `TERM`,
 * `CI`). Output: {@link TerminalCapabilities}; progress also needs `CI` unset (CI logs are files
 * even when a pty is attached). Raises nothing.
 */
export function terminalCapabilities(streams: TerminalStreams, env: NodeJS.ProcessEnv): TerminalCapabilities {
  const plain = noColor(env) || env.TERM === 'dumb';
  const color = !plain && usableTerminal(streams.stdout);
  const progress = color && usableTerminal(streams.stderr) && !env.CI;
  return { progress, color };
}

/**
 * Starts a spinner on stderr with `text` when `io.isTTY` allows progress, and returns it (stop
 * it with `stop()`); returns undefined otherwise, so callers write `spinner?.…`. The spinner
 * stops by itself if the terminal is resized to 0 columns while it spins.
 */
export function startSpinner(io: { isTTY: boolean }, text: string): Ora | undefined {
  if (!io.isTTY) return undefined;
  const stream = process.stderr;
  // Stdin is left alone: discarding it puts the terminal in raw mode, where Ctrl-C is no longer
  // a signal the program receives but a keystroke ora has to turn back into one.
  const spinner = ora({ text: printable(text), stream, discardStdin: false }).start();
  const onResize = () => {
    if (!usableTerminal(stream)) spinner.stop();
  };
  stream.on('resize', onResize);
  const stop = spinner.stop.bind(spinner);
  spinner.stop = () => {
    stream.off('resize', onResize);
    return stop();
  };
  return spinner;
}
