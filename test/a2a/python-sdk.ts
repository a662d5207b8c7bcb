/**
 * Running programs with the official A2A Python SDK (PyPI's `a2a-sdk`), which
 * scripts/a2a-python.sh installs, pinned, into .tools/a2a-python and reuses: the gate of the suites
 * that need python3, the install, and a run.
 */
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, it } from 'vitest';

const runner = resolve(import.meta.dirname, '..', '..', 'scripts', 'a2a-python.sh');

async function hasPython(): Promise<boolean> {
  try {
    await promisify(execFile)('python3', ['--version']);
    return true;
  } catch {
    return false;
  }
}

const pythonPresent = await hasPython();

/**
 * `describe` for a suite that runs the A2A Python SDK. Without python3 it is skipped with a title
 * that says why, except in CI (`CI` set), where it must run, so it fails instead.
 */
export function describeWithPython(title: string, body: () => void): void {
  if (pythonPresent) describe(title, body);
  else if (process.env.CI) {
    describe(title, () => {
      it(`${title}: needs python3 to install the A2A Python SDK, and CI must provide it`, () => {
        throw new Error('python3 is not on PATH: scripts/a2a-python.sh installs a2a-sdk with it');
      });
    });
  } else describe.skip(`${title} (skipped: needs python3 for the A2A Python SDK, a2a-sdk, and it is not on PATH)`, body);
}

/** Installs the SDK now (once; later calls reuse it): call in a `beforeAll` with room for a pip install. */
export async function installPythonSdk(): Promise<void> {
  await promisify(execFile)('bash', [runner, '--install'], { timeout: 300_000 });
}

/** Runs `program` (a .py file) with the SDK's python and `args`, with `env` added. Output: its stdout. Errors: rejects when it fails (its stderr in the error). */
export async function runPython(program: string, args: readonly string[], env: Record<string, string> = {}): Promise<string> {
  const { stdout } = await promisify(execFile)('bash', [runner, program, ...args], { timeout: 120_000, maxBuffer: 16 * 1024 * 1024, env: { ...process.env, ...env } });
  return stdout;
}
