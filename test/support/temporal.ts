/**
 * What the suites that need a real Temporal server share: the rule for skipping, workers in this
 * process or in a child process (to kill), and history search.
 *
 * The server comes from `scripts/with-temporal.sh` (which `.ci/run` uses): it exports
 * `TEMPORAL_ADDRESS`, `TEMPORAL_NAMESPACE` and `TEMPORAL_CLI`.
 */
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { describe, it } from 'vitest';
import type { ActivityDeps } from '../../activities/apply-activities.ts';
import { loadTemporalSettings } from '../../temporal/settings.ts';
import type { TemporalSettings } from '../../temporal/settings.ts';
import { createWorker } from '../../worker/worker.ts';
import { installQuietRuntime } from './quiet-temporal.ts';

const repoRoot = resolve(import.meta.dirname, '..', '..');

// Retried activities are the point of several tests; the SDK's warning for each would bury the report.
installQuietRuntime();

/** Whether a Temporal server was given to the tests. */
export const hasTemporal = Boolean(process.env.TEMPORAL_ADDRESS);

/**
 * `describe` for a suite that needs a real Temporal server. With `TEMPORAL_ADDRESS` set it runs.
 * Without it: skipped with a title that says why, except in CI (`CI` set), where no Temporal test
 * may be skipped, so the suite fails instead.
 */
export function describeTemporal(title: string, body: () => void): void {
  if (hasTemporal) {
    describe(title, body);
  } else if (process.env.CI) {
    describe(title, () => {
      it(`${title}: needs a Temporal server, and CI must provide one`, () => {
        throw new Error('TEMPORAL_ADDRESS is not set: in CI the tests must run through scripts/with-temporal.sh');
      });
    });
  } else {
    describe.skip(`${title} (skipped: needs a Temporal server, and TEMPORAL_ADDRESS is not set)`, body);
  }
}

/** The settings of the test server. */
export function testSettings(): TemporalSettings {
  return loadTemporalSettings(process.env);
}

/** A Temporal client on the test server; `close()` closes its connection. */
export async function connectTestClient(): Promise<{ client: Client; close(): Promise<void> }> {
  const settings = testSettings();
  const connection = await Connection.connect(settings.connectionOptions as Parameters<typeof Connection.connect>[0]);
  return { client: new Client({ connection, namespace: settings.namespace }), close: () => connection.close() };
}

/** Starts a worker in this process on `taskQueue`; `stop()` shuts it down and waits. */
export async function startWorker(taskQueue: string, activityDeps: ActivityDeps): Promise<{ stop(): Promise<void> }> {
  const { worker, run } = await createWorker(testSettings(), { taskQueue, activityDeps });
  const running = run();
  return {
    async stop() {
      worker.shutdown();
      await running;
    },
  };
}

/** A `teamctl worker` child process. */
export interface WorkerProcess {
  pid: number;
  output(): string;
  /** Sends `signal` and waits for the process to exit; resolves to its exit code or signal. */
  kill(signal: NodeJS.Signals): Promise<number | NodeJS.Signals | null>;
}

/**
 * Spawns `teamctl worker --task-queue Q ARGS…` (as a user runs it) with `env` added, and waits until it
 * says it is polling (bundling the workflows takes a few seconds). Throws with its output when it
 * exits first.
 */
export async function spawnWorker(taskQueue: string, env: Record<string, string>, args: string[] = []): Promise<WorkerProcess> {
  const child = spawn(process.execPath, ['bin/teamctl.ts', 'worker', '--task-queue', taskQueue, ...args], {
    cwd: repoRoot,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr.on('data', (c: Buffer) => (output += c.toString()));
  const exited = new Promise<number | NodeJS.Signals | null>((done) => child.on('exit', (code, signal) => done(signal ?? code)));
  await new Promise<void>((ready, fail) => {
    const timer = setTimeout(() => {
      // Not left running behind a failed test.
      child.kill('SIGKILL');
      fail(new Error(`worker did not start within 120 s:\n${output}`));
    }, 120_000);
    const check = () => {
      if (output.includes('polling task queue')) {
        clearTimeout(timer);
        ready();
      }
    };
    child.stderr.on('data', check);
    void exited.then(() => {
      clearTimeout(timer);
      fail(new Error(`worker exited before polling:\n${output}`));
    });
  });
  return {
    pid: child.pid!,
    output: () => output,
    kill(signal) {
      child.kill(signal);
      return exited;
    },
  };
}

/**
 * A history as text in which every payload's bytes are decoded, so a secret that any input,
 * result or failure carried can be found by a plain search.
 */
export function historyText(history: unknown): string {
  // Protobuf messages turn payload bytes into base64 in their toJSON; decode them back.
  return JSON.stringify(history, function (this: Record<string, unknown>, key: string, value: unknown) {
    const raw = this[key];
    if (raw instanceof Uint8Array) return Buffer.from(raw).toString('utf8');
    if ((key === 'data' || key === 'encoding') && typeof value === 'string') return Buffer.from(value, 'base64').toString('utf8');
    return value;
  });
}
