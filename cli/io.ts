/** Where the CLI writes and what it reads; the entrypoint passes the process's, tests their own. */
export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: NodeJS.ProcessEnv;
  /** Whether stderr is a terminal (progress is shown only then). */
  isTTY: boolean;
}

/** The process's own streams and environment. */
export function processIo(): CliIo {
  return {
    stdout: (text) => process.stdout.write(text.endsWith('\n') ? text : `${text}\n`),
    stderr: (text) => process.stderr.write(text.endsWith('\n') ? text : `${text}\n`),
    env: process.env,
    isTTY: Boolean(process.stderr.isTTY) && !process.env.CI,
  };
}
