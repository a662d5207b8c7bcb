/**
 * The README's quick start works when pasted into a shell as a whole: its block runs as one
 * bash script (with `npx`, as a newcomer types it), each line after the server's start finds
 * what it needs, and its last line, `kill $!`, leaves no process running. The only changes to
 * the block: a free port for 8080 and a temporary file for `dev.json`, so it can run beside
 * other tests.
 */
import { execFile, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

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

describe('README quick start', () => {
  it('pasted as a whole into bash, it runs to the end and kill $! leaves nothing running', async () => {
    const port = await freePort();
    const credentials = join(await mkdtemp(join(tmpdir(), 'teamctl-quick-start-')), 'dev.json');
    const script = quickStartBlock().replaceAll('8080', String(port)).replace(/(\.\/)?dev\.json/g, credentials);
    expect(script).toContain('kill $!');
    const { ACS_BASE_URL: _url, ACS_API_KEY: _key, TEMPORAL_ADDRESS: _temporal, ...env } = process.env;
    const child = spawn('bash', ['-c', `set -euo pipefail\n${script}`], { cwd: root, env: { ...env, TEAMCTL_CONFIG: '/nonexistent/teamctl.yaml' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => void (output += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => void (output += c));
    const code = await new Promise<number | null>((r) => child.on('exit', r));
    try {
      expect(code, output).toBe(0);
      expect(output).toContain('examples/acme-research.yaml: valid.');
      expect(output).toContain('Apply complete:');
      expect(output).toContain('scout: echo: Find papers on durable execution');
      expect(output).toMatch(/output: /);
      // The server (npx → npm → sh → node) stops once npx is killed; allow it the time to close.
      const deadline = Date.now() + 30_000;
      while ((await processesWith(`--port ${port}`)).length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 250));
      expect(await processesWith(`--port ${port}`)).toEqual([]);
    } finally {
      for (const pid of await processesWith(`--port ${port}`)) process.kill(pid, 'SIGKILL');
    }
  }, 240_000);
});
