/** Running `teamctl` in-process for tests, as the entrypoint would, with captured output. */
import type { CliIo } from '../../cli/io.ts';
import { runCli } from '../../cli/program.ts';

/** What one `teamctl` run printed and returned. */
export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `teamctl ARGS` through `runCli` with `env` as its whole environment and no terminal. */
export async function runTeamctl(args: string[], env: NodeJS.ProcessEnv): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  const io: CliIo = { stdout: (t) => void (stdout += `${t}\n`), stderr: (t) => void (stderr += `${t}\n`), env, isTTY: false };
  const code = await runCli(args, io);
  return { code, stdout, stderr };
}
