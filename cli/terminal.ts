/**
 * What the terminal allows: one decision, made once per process, for every command's progress
 * output and colour. A spinner or colour is drawn only for a person at a terminal:
 *
 * - never when stdout or stderr is not a terminal (piped, redirected, in CI);
 * - never when `NO_COLOR` is set (https://no-color.org; any non-empty value) or `TERM=dumb`;
 * - never when the terminal reports 0 columns (a pty whose size was never set, `stty cols 0`):
 *   a spinner measures its lines by the width and would divide by zero, redrawing forever.
 *
 * A command opts in by drawing progress only through `startSpinner` (`cli/spinner.ts`) and
 * colouring only through `io.style` (absent: plain); both follow the decision stored in its `CliIo` (`cli/io.ts`).
 */

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
export function usableTerminal(stream: { isTTY?: boolean; columns?: number }): boolean {
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
