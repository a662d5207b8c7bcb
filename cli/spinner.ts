/**
 * The spinner of long commands (ora), in a module of its own so that only the commands that draw
 * one load it. Whether one may be drawn is decided once, in `cli/terminal.ts`.
 */
import ora from 'ora';
import type { Ora } from 'ora';
import { printable } from './printable.ts';
import { usableTerminal } from './terminal.ts';

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
