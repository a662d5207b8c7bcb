/**
 * Where `acs-server start` writes its log, read as a person sees it on a terminal (a
 * pseudo-terminal): in the foreground, on the terminal, saying it listens once; with `--log-file`,
 * in that file, the terminal keeping one line. (In the background of a terminal it writes to a
 * file by default: test/cli/quick-start.test.ts runs the README's block so.) The rule for where a
 * background server's file goes is checked directly.
 */
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { defaultLogFile, inBackgroundOfTerminal } from '../../service/logging.ts';
import { runOnPty } from '../support/pty.ts';

const root = resolve(import.meta.dirname, '../..');

/** `acs-server start --in-memory --port 0 ARGS` in the foreground of a terminal. */
function onTerminal(args: string[]) {
  const { CI: _ci, NO_COLOR: _noColor, ...env } = process.env;
  return runOnPty([process.execPath, resolve(root, 'bin/acs-server.ts'), 'start', '--in-memory', '--port', '0', ...args], { rows: 24, columns: 120, cwd: root, env: { ...env, TERM: 'xterm-256color' } });
}

/** Kills what a test left running (nothing, when it passed). */
async function stop(run: ReturnType<typeof onTerminal>): Promise<void> {
  try {
    process.kill(await run.pid, 'SIGKILL');
  } catch {
    // Already gone.
  }
}

/** The URL of the `acs-server listening on URL` line. */
async function urlOf(run: ReturnType<typeof onTerminal>): Promise<string> {
  await run.waitFor(/acs-server listening on http:\/\/\S+/);
  return /acs-server listening on (http:\/\/[^\s(]+)/.exec(run.output())![1]!;
}

describe('acs-server start: where the log goes', () => {
  it('in the foreground of a terminal: the request log on the terminal, and "listening" said once', async () => {
    const run = onTerminal([]);
    try {
      const url = await urlOf(run);
      await fetch(`${url}/api/v1/organizations`);
      await run.waitFor('GET /api/v1/organizations 401');
      // One line says where it listens and where the console is; the log does not say it again.
      expect(run.output().match(/listening/gi)).toHaveLength(1);
      expect(run.output()).toContain(`acs-server listening on ${url} (console: ${url}/)`);
      process.kill(await run.pid, 'SIGINT');
      expect(await run.exited).toBe(0);
    } finally {
      await stop(run);
    }
  }, 120_000);

  it('--log-file FILE: the log is appended to FILE (JSON lines), the terminal keeps the one line naming it', async () => {
    const file = join(await mkdtemp(join(tmpdir(), 'acs-log-')), 'logs', 'server.log');
    const run = onTerminal(['--log-file', file]);
    try {
      const url = await urlOf(run);
      expect(run.output()).toContain(`; log: ${file})`);
      await fetch(`${url}/api/v1/organizations`);
      process.kill(await run.pid, 'SIGTERM');
      expect(await run.exited).toBe(0);
      const lines = (await readFile(file, 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as { msg: string });
      expect(lines.map((l) => l.msg)).toContainEqual(expect.stringMatching(/^GET \/api\/v1\/organizations 401/));
      expect(run.output()).not.toContain('GET /api/v1/organizations');
    } finally {
      await stop(run);
    }
  }, 120_000);

  it('a background server\'s log file is beside its data: in the data dir on disk, in the current directory for memory or PostgreSQL', () => {
    expect(defaultLogFile({ dataDir: '.acs-data', inMemory: false })).toBe(join('.acs-data', 'acs-server.log'));
    expect(defaultLogFile({ dataDir: '.acs-data', inMemory: true })).toBe('acs-server.log');
    expect(defaultLogFile({ dataDir: '.acs-data', inMemory: false, databaseUrl: 'postgres://db/acs' })).toBe('acs-server.log');
    // Not on a terminal (this test's own stdout is a pipe): never "in the background of" one.
    expect(inBackgroundOfTerminal(false)).toBe(false);
  });
});
