/**
 * The launchers `bin/teamctl.mjs` and `bin/acs-server.mjs` (what `npx teamctl` and an installed
 * `teamctl` run first): the version from package.json, one line on a Node that is too old, and
 * no orphaned server when npm's process goes away (`kill $!` after `npx acs-server start … &`).
 */
import { execFile, execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = resolve(import.meta.dirname, '../..');
const pkg = JSON.parse(readFileSync(resolve(root, 'package.json'), 'utf8')) as { version: string; engines: { node: string } };

/** An installed Node older than 22, if this machine has one (the system Node of these machines is 20). */
function oldNode(): string | undefined {
  for (const candidate of ['/usr/bin/node', '/usr/local/bin/node']) {
    try {
      const version = execFileSync(candidate, ['--version'], { encoding: 'utf8' }).trim();
      if (Number(/^v(\d+)/.exec(version)?.[1]) < 22) return candidate;
    } catch {
      // Not there.
    }
  }
  return undefined;
}

/** Whether a process is alive. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Resolves once `check` holds, polling every 100 ms, or rejects after `ms`. */
async function eventually(check: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('launchers', () => {
  it('teamctl --version and acs-server --version print the version of package.json', async () => {
    for (const bin of ['bin/teamctl.mjs', 'bin/acs-server.mjs']) {
      const { stdout } = await run(process.execPath, [resolve(root, bin), '--version']);
      expect(stdout.trim()).toBe(pkg.version);
    }
  });

  const old = oldNode();
  const needsOld = old ? '' : ' (skipped: needs a Node older than 22 at /usr/bin/node or /usr/local/bin/node, as CI\'s Debian has)';
  it.skipIf(!old)(`on a Node older than engines.node, both commands print one line naming the Node they need and exit 1${needsOld}`, async () => {
    for (const name of ['teamctl', 'acs-server']) {
      const result = await run(old!, [resolve(root, `bin/${name}.mjs`), '--version']).then(
        () => ({ code: 0, stderr: '' }),
        (error: { code: number; stderr: string }) => error,
      );
      expect(result.code).toBe(1);
      const lines = result.stderr.trimEnd().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(new RegExp(`^${name}: needs Node\\.js 22\\.12\\.0 or later \\(a maintained release line: 22 or 24\\); this is Node\\.js 2\\d\\.`));
    }
  });

  it('started by npm, acs-server stops cleanly when npm\'s shell goes away instead of staying orphaned', async () => {
    // npm runs a bin as npm → sh -c → node; `; true` keeps the shell as the server's parent, as npm's does.
    const shell = spawn('sh', ['-c', `"${process.execPath}" "${resolve(root, 'bin/acs-server.mjs')}" start --in-memory --port 0 --log-format json; true`], {
      env: { ...process.env, npm_command: 'exec' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    shell.stdout.setEncoding('utf8').on('data', (chunk: string) => void (output += chunk));
    shell.stderr.setEncoding('utf8').on('data', (chunk: string) => void (output += chunk));
    await eventually(() => output.includes('acs-server listening on'), 60_000, 'the server listens');
    const { stdout } = await run('ps', ['-o', 'pid=', '--ppid', String(shell.pid)]);
    const server = Number(stdout.trim());
    expect(server).toBeGreaterThan(0);
    // What a SIGTERM to npm does to its shell: it ends, and the server's parent is gone.
    process.kill(shell.pid!, 'SIGKILL');
    await eventually(() => !alive(server), 30_000, 'the server stops');
    expect(output).toContain('acs-server stopping (SIGTERM)');
  }, 90_000);
});
