/** acs-server as a separate process (the real binary), for tests and the soak that need several. */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

/** A running `acs-server start` child. */
export interface AcsProcess {
  child: ChildProcess;
  /** Its base URL, from its "listening on" line. */
  url: string;
  /** Resolves with the exit code (null after a signal). */
  exited: Promise<number | null>;
  /** Everything it wrote so far, stdout and stderr together. */
  output(): string;
}

const root = join(import.meta.dirname, '../..');

/**
 * Starts `node bin/acs-server.ts start --port 0 ARGS` from the repository's root with
 * `process.env` plus `env`, and resolves once it prints where it listens.
 * Errors: rejects with its output when it exits before listening.
 */
export async function spawnAcsServer(args: string[], env: Record<string, string> = {}): Promise<AcsProcess> {
  const child = spawn(join(root, 'node_modules/.bin/node'), [join(root, 'bin/acs-server.ts'), 'start', '--port', '0', ...args], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    const look = () => {
      const match = /acs-server listening on (http:\/\/\S+)/.exec(out);
      if (match) resolve(match[1]!);
    };
    child.stdout!.on('data', look);
    child.on('exit', (code) => reject(new Error(`acs-server exited with ${code} before listening: ${out}`)));
  });
  return { child, url, exited, output: () => out };
}

/** Runs `node bin/acs-server.ts ARGS` to its end. Output: its exit code, stdout and stderr. */
export async function runAcsServer(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(join(root, 'node_modules/.bin/node'), [join(root, 'bin/acs-server.ts'), ...args], { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
  return { code, stdout, stderr };
}
