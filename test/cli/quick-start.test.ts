/**
 * The README's quick start works when pasted into a shell as a whole: its block runs as one
 * bash script on a terminal (a pseudo-terminal, with job control as an interactive shell has it,
 * and `npx` as a newcomer types it), each line after the server's start finds what it needs, the
 * server started in the background keeps its log off the terminal, and the last line, `kill $!`,
 * leaves no process running. The only changes to the block: a free port for 8080 and a temporary
 * file for `dev.json`, so it can run beside other tests.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { runOnPty } from '../support/pty.ts';

const root = resolve(import.meta.dirname, '../..');
const run = promisify(execFile);

/** The first sh block under "## Quick start by hand". */
function quickStartBlock(): string {
  const readme = readFileSync(resolve(root, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Quick start by hand'));
  const match = /```sh\n([\s\S]*?)```/.exec(section);
  if (!match) throw new Error('no sh block under "## Quick start by hand" in README.md');
  return match[1]!;
}

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  const { port } = probe.address() as AddressInfo;
  await new Promise((r) => probe.close(r));
  return port;
}

/** Pids of processes whose command line contains `marker`. */
async function processesWith(marker: string): Promise<number[]> {
  const { stdout } = await run('ps', ['-eo', 'pid=,args=']);
  return stdout
    .split('\n')
    .filter((line) => line.includes(marker) && !line.includes('ps -eo'))
    .map((line) => Number(line.trim().split(/\s+/)[0]));
}

/** The README's paragraph above the quick start's block, as one line. */
function quickStartWords(): string {
  const readme = readFileSync(resolve(root, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Quick start by hand'));
  return section.slice(0, section.indexOf('```sh')).replace(/\s+/g, ' ');
}

describe('README quick start', () => {
  it('the README says where the log goes when the server is not in the background of a terminal, and it goes there: its first two lines run by a script without a terminal log every request to stdout, as JSON', async () => {
    expect(quickStartWords()).toContain('Started with `&` from an interactive shell on a terminal, as here, the server keeps to one line on the terminal (where it listens) and writes its request log to `acs-server.log` in the current directory.');
    expect(quickStartWords()).toContain('without a terminal (CI, output piped or redirected) — the log goes to its standard output, as JSON lines unless that is a terminal');
    const port = await freePort();
    const credentials = join(await mkdtemp(join(tmpdir(), 'teamctl-quick-start-')), 'dev.json');
    const [start, wait] = quickStartBlock().replaceAll('8080', String(port)).replace(/(\.\/)?dev\.json/g, credentials).split('\n');
    expect(start).toMatch(/&$/);
    const { ACS_BASE_URL: _url, ACS_API_KEY: _key, CI: _ci, ...env } = process.env;
    try {
      // A script's output piped (no terminal): the server's log is in it, the wait's requests included.
      const { stdout } = await run('bash', ['-c', `set -euo pipefail\n${start}\n${wait}\nkill $!\nwait`], { cwd: root, env, timeout: 180_000 });
      expect(stdout).toContain(`acs-server listening on http://127.0.0.1:${port} (console: http://127.0.0.1:${port}/)\n`);
      const requests = stdout.split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as { url?: string });
      expect(requests.some((line) => line.url === '/api/v1/organizations')).toBe(true);
    } finally {
      for (const pid of await processesWith(`--port ${port}`)) process.kill(pid, 'SIGKILL');
    }
  }, 240_000);


  it('pasted as a whole into an interactive shell on a terminal, it runs to the end; the server in the background keeps to one line, its log going to a file; kill $! leaves nothing running', async () => {
    const port = await freePort();
    const credentials = join(await mkdtemp(join(tmpdir(), 'teamctl-quick-start-')), 'dev.json');
    const script = quickStartBlock().replaceAll('8080', String(port)).replace(/(\.\/)?dev\.json/g, credentials);
    expect(script).toContain('kill $!');
    const logFile = resolve(root, 'acs-server.log');
    const logBefore = existsSync(logFile) ? readFileSync(logFile, 'utf8').length : undefined;
    const { ACS_BASE_URL: _url, ACS_API_KEY: _key, TEMPORAL_ADDRESS: _temporal, CI: _ci, NO_COLOR: _noColor, ...env } = process.env;
    // As a person's shell runs it: on a terminal, with job control (the `&` job in a process group of its own).
    const shell = runOnPty(['bash', '-c', `set -m -euo pipefail\n${script}`], { rows: 40, columns: 120, cwd: root, env: { ...env, TERM: 'xterm-256color', TEAMCTL_CONFIG: '/nonexistent/teamctl.yaml' } });
    const code = await shell.exited;
    const output = shell.output();
    try {
      expect(code, output).toBe(0);
      expect(output).toContain('examples/acme-research.yaml: valid.');
      expect(output).toContain('Apply complete:');
      expect(output).toContain('scout: echo: Find papers on durable execution');
      expect(output).toMatch(/output: /);
      // The server's one line, and none of its log: that is in acs-server.log.
      expect(output.match(/acs-server listening on/g)).toHaveLength(1);
      expect(output).toContain(`acs-server listening on http://127.0.0.1:${port} (console: http://127.0.0.1:${port}/; log: acs-server.log)`);
      expect(output).not.toMatch(/Server listening at|"level":|\bINFO\b/);
      const log = readFileSync(logFile, 'utf8').slice(logBefore ?? 0);
      expect(log).toContain('POST /api/v1/organizations');
      expect(log).toContain(`Server listening at http://127.0.0.1:${port}`);
      // The server (npx → npm → node) stops once npx is killed; allow it the time to close.
      const deadline = Date.now() + 30_000;
      while ((await processesWith(`--port ${port}`)).length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 250));
      expect(await processesWith(`--port ${port}`)).toEqual([]);
    } finally {
      for (const pid of await processesWith(`--port ${port}`)) process.kill(pid, 'SIGKILL');
      if (logBefore === undefined) rmSync(logFile, { force: true });
    }
  }, 240_000);
});
