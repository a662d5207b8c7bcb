import { createInterface } from 'node:readline/promises';
import { styleText } from 'node:util';
import type { Style } from './render.ts';

/** Where the CLI writes and what it reads; the entrypoint passes the process's, tests their own. */
export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: NodeJS.ProcessEnv;
  /** Whether stderr is a terminal (progress is shown only then). */
  isTTY: boolean;
  /** Colours for stdout: set only when stdout is a terminal that takes colour (not piped, no `NO_COLOR`). */
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
  const interactive = Boolean(process.stdin.isTTY && process.stderr.isTTY);
  return {
    stdout: (text) => process.stdout.write(text.endsWith('\n') ? text : `${text}\n`),
    stderr: (text) => process.stderr.write(text.endsWith('\n') ? text : `${text}\n`),
    env: process.env,
    isTTY: Boolean(process.stderr.isTTY) && !process.env.CI,
    // styleText checks the stream itself: plain text when it is not a terminal or NO_COLOR is set.
    style: (format, text) => styleText(format, text, { stream: process.stdout }),
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
