/**
 * `acs-server` as a person and a script use it: `--version`, logs a person can read (one line
 * per request, pretty or JSON, `--log-level`, `--quiet`, never a key), and `acs-server wait`,
 * which lets a script go on only once a server started in the background serves — never on a
 * credentials file left over from an earlier run.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { mkdtemp } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { hostname, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '../..');
const children: ChildProcessWithoutNullStreams[] = [];

afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

/** `acs-server ARGS` as a child process, with its output collected. */
function acsServer(args: string[]): { child: ChildProcessWithoutNullStreams; out: () => string; exited: Promise<number | null> } {
  const child = spawn(process.execPath, [resolve(root, 'bin/acs-server.ts'), ...args], { cwd: root, stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1' } });
  children.push(child);
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => void (out += c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => void (out += c));
  return { child, out: () => out, exited: new Promise((r) => child.on('exit', (code) => r(code))) };
}

/** Resolves once `check` holds (polling), or rejects after `ms`. */
async function eventually(check: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Starts a server with `flags` and waits for its credentials; returns its URL and key. */
async function started(flags: string[]) {
  const dir = await mkdtemp(join(tmpdir(), 'acs-cli-'));
  const file = join(dir, 'dev.json');
  const server = acsServer(['start', '--in-memory', '--port', '0', '--dev-credentials', file, ...flags]);
  const waited = acsServer(['wait', '--dev-credentials', file, '--timeout', '60']);
  expect(await waited.exited).toBe(0);
  const { base_url: url, api_key: key } = JSON.parse(await readFile(file, 'utf8')) as { base_url: string; api_key: string };
  return { ...server, url, key, dir, file };
}

describe('acs-server: the command', () => {
  it('--version prints the version of package.json', async () => {
    const pkg = JSON.parse(await readFile(resolve(root, 'package.json'), 'utf8')) as { version: string };
    const run = acsServer(['--version']);
    expect(await run.exited).toBe(0);
    expect(run.out().trim()).toBe(pkg.version);
  });

  it('JSON logs: one line per request with method, path, status and time, and never the key', async () => {
    const server = await started(['--log-format', 'json']);
    await fetch(`${server.url}/api/v1/organizations`, { headers: { 'x-api-key': server.key } });
    await fetch(`${server.url}/api/v1/nowhere`, { headers: { 'x-api-key': server.key } });
    await eventually(() => server.out().includes('/api/v1/nowhere'), 10_000, 'the second request is logged');
    const lines = server.out().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
    const requests = lines.filter((l) => typeof l.method === 'string');
    expect(requests.filter((l) => l.url === '/api/v1/nowhere')).toEqual([expect.objectContaining({ method: 'GET', status: 404, msg: expect.stringMatching(/^GET \/api\/v1\/nowhere 404 [\d.]+ ms$/), ms: expect.any(Number), reqId: expect.any(String) })]);
    expect(lines.some((l) => l.msg === 'incoming request' || l.msg === 'request completed')).toBe(false);
    expect(server.out()).not.toContain(server.key);
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
  });

  it('pretty logs: a line a person reads per request', async () => {
    const server = await started(['--log-format', 'pretty']);
    await fetch(`${server.url}/healthz`);
    await eventually(() => /GET \/healthz 200/.test(server.out()), 10_000, 'the request is logged');
    expect(server.out()).toMatch(/^\[\d\d:\d\d:\d\d\] INFO: GET \/healthz 200 [\d.]+ ms$/m);
    expect(server.out()).not.toContain('{"level"');
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
  });

  it('--quiet logs no request and no "listening" line; --log-level warn logs no request', async () => {
    for (const flags of [['--quiet'], ['--log-level', 'warn', '--log-format', 'json']]) {
      const server = await started(flags);
      await fetch(`${server.url}/healthz`);
      server.child.kill('SIGTERM');
      expect(await server.exited).toBe(0);
      expect(server.out()).not.toContain('/healthz');
      if (flags[0] === '--quiet') expect(server.out()).toBe('');
    }
  });

  it('--dev-credentials: the file is written whole (mode 0600, no temporary file left)', async () => {
    const server = await started([]);
    expect((await stat(server.file)).mode & 0o777).toBe(0o600);
    expect(await readdir(server.dir)).toEqual(['dev.json']);
    server.child.kill('SIGTERM');
    await server.exited;
  });
});

describe('acs-server start on a port in use', () => {
  it('start: a port another program holds is said so in one line, with a hint (--port 0), and no stack or EADDRINUSE', async () => {
    const holder = createServer();
    await new Promise<void>((r) => holder.listen(0, '127.0.0.1', r));
    const { port } = holder.address() as AddressInfo;
    try {
      const run = acsServer(['start', '--in-memory', '--port', String(port)]);
      expect(await run.exited).toBe(1);
      expect(run.out()).toBe(
        `acs-server: cannot listen on 127.0.0.1:${port}: the port is in use by another program\n` +
          'hint: stop what holds it, or choose another port: --port 0 picks a free one (the address is printed, and written to --dev-credentials FILE)\n',
      );
    } finally {
      holder.close();
    }
  }, 60_000);

  it('start: a port an earlier acs-server holds names that server (by its credentials file, its pid)', async () => {
    const earlier = await started(['--quiet']);
    const port = new URL(earlier.url).port;
    const second = acsServer(['start', '--in-memory', '--port', port, '--dev-credentials', earlier.file]);
    expect(await second.exited).toBe(1);
    expect(second.out()).toContain(
      `acs-server: cannot listen on 127.0.0.1:${port}: the port is in use by the acs-server of pid ${earlier.child.pid} (it wrote ${earlier.file}), started earlier and still running\n` +
        `hint: stop it (kill ${earlier.child.pid}), or choose another port: --port 0 picks a free one`,
    );
    // Without the file, what answers there is still recognised.
    const third = acsServer(['start', '--in-memory', '--port', port]);
    expect(await third.exited).toBe(1);
    expect(third.out()).toContain(`the port is in use by an acs-server (one started earlier and still running?)`);
    // The earlier server's file is untouched.
    expect((JSON.parse(await readFile(earlier.file, 'utf8')) as { pid: number }).pid).toBe(earlier.child.pid);
  }, 120_000);
});

describe('acs-server start --metrics-listen', () => {
  it('--metrics-listen: the listening line names the metrics URL, which counts the requests the API answered; /metrics on the API port is 404', async () => {
    const server = await started(['--metrics-listen', '127.0.0.1:0']);
    await eventually(() => /metrics: http:\/\/127\.0\.0\.1:\d+\/metrics/.test(server.out()), 10_000, 'the listening line names the metrics');
    const metricsUrl = /metrics: (http:\/\/127\.0\.0\.1:\d+\/metrics)/.exec(server.out())![1]!;
    const counted = async () => {
      const text = await (await fetch(metricsUrl)).text();
      expect(text).not.toContain(server.key);
      return Number(/^acs_http_requests_total\{route="\/api\/v1\/organizations",method="GET",status="200"\} (\d+)$/m.exec(text)?.[1] ?? 0);
    };
    const before = await counted();
    for (let i = 0; i < 3; i++) expect((await fetch(`${server.url}/api/v1/organizations`, { headers: { 'x-api-key': server.key } })).status).toBe(200);
    expect((await fetch(`${server.url}/metrics`)).status).toBe(404);
    expect((await counted()) - before).toBe(3);
  });

  it('--metrics-listen: an address that is not HOST:PORT is a usage error naming the flag', async () => {
    const run = acsServer(['start', '--in-memory', '--port', '0', '--metrics-listen', '9464']);
    expect(await run.exited).toBe(1);
    expect(run.out()).toMatch(/--metrics-listen.*expected HOST:PORT/);
  });
});

describe('acs-server wait', () => {
  it('waits past a credentials file of an earlier run until the new server has written its own', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'acs-wait-'));
    const file = join(dir, 'dev.json');
    // An earlier run's file: a server long gone, and its key.
    await writeFile(file, JSON.stringify({ base_url: 'http://127.0.0.1:1', api_key: `acs_org_${'0'.repeat(40)}`, org_id: 'x' }));
    const waiting = acsServer(['wait', '--dev-credentials', file, '--timeout', '90']);
    await new Promise((r) => setTimeout(r, 1_000));
    expect(waiting.child.exitCode).toBeNull();
    const server = acsServer(['start', '--in-memory', '--port', '0', '--dev-credentials', file, '--quiet']);
    expect(await waiting.exited).toBe(0);
    const { base_url: url, api_key: key } = JSON.parse(await readFile(file, 'utf8')) as { base_url: string; api_key: string };
    expect(waiting.out()).toContain(`acs-server at ${url} is ready and accepts the key in ${file}`);
    expect((await fetch(`${url}/api/v1/organizations`, { headers: { 'x-api-key': key } })).status).toBe(200);
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
  }, 120_000);

  it('wait: a credentials file whose server process has exited is an earlier run\'s, even when its address answers and takes its key', async () => {
    const server = await started(['--quiet']);
    // The same file as the live server's, but written by a process that has exited since (a server
    // killed, then another started on the same port and data dir, which takes the same key).
    const gone = spawn(process.execPath, ['-e', '']);
    await new Promise((r) => gone.on('exit', r));
    const stale = join(server.dir, 'stale.json');
    await writeFile(stale, JSON.stringify({ ...JSON.parse(await readFile(server.file, 'utf8')), pid: gone.pid }));
    const waited = acsServer(['wait', '--dev-credentials', stale, '--timeout', '1']);
    expect(await waited.exited).toBe(1);
    expect(waited.out()).toContain(`acs-server: not ready after 1 s: ${stale} was written by an acs-server that has exited (pid ${gone.pid}): a file of an earlier run`);
    // The live server's own file is taken.
    const live = acsServer(['wait', '--dev-credentials', server.file, '--timeout', '30']);
    expect(await live.exited).toBe(0);
  }, 120_000);

  it('wait --pid: the file of another server still running is not taken for the start waited for, and the wait fails at once when that start exits', async () => {
    const earlier = await started(['--quiet']);
    // The start waited for: a process still starting (it has written nothing yet).
    const starting = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 600_000)']);
    children.push(starting as ChildProcessWithoutNullStreams);
    const waiting = acsServer(['wait', '--dev-credentials', earlier.file, '--pid', String(starting.pid), '--timeout', '3600']);
    // The earlier server answers at the file's address and takes its key: still not ready.
    await new Promise((r) => setTimeout(r, 2_000));
    expect(waiting.child.exitCode, waiting.out()).toBeNull();
    starting.kill('SIGKILL');
    // At once, not at the hour's timeout (the test's own timeout is far shorter).
    expect(await waiting.exited).toBe(1);
    expect(waiting.out()).toContain(
      `acs-server: the acs-server started as pid ${starting.pid} has exited (its own message says why); last seen: ${earlier.file} is the file of another acs-server (pid ${earlier.child.pid}), still running, not of the one started as pid ${starting.pid}`,
    );
  }, 120_000);

  it('wait --pid: takes the file of a server that process started (a launcher between them, as npx is)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'acs-wait-'));
    const file = join(dir, 'dev.json');
    // bash does not exec the server (a command follows it): the server is bash's child, as it is npm's under npx.
    const launcher = spawn('bash', ['-c', `"$0" bin/acs-server.ts start --in-memory --port 0 --quiet --dev-credentials "$1"; true`, process.execPath, file], { cwd: root });
    children.push(launcher as ChildProcessWithoutNullStreams);
    const waited = acsServer(['wait', '--dev-credentials', file, '--pid', String(launcher.pid), '--timeout', '90']);
    expect(await waited.exited, waited.out()).toBe(0);
    const written = JSON.parse(await readFile(file, 'utf8')) as { pid: number; host: string };
    expect(written.pid).not.toBe(launcher.pid);
    expect(written.host).toBe(hostname());
    process.kill(written.pid, 'SIGTERM');
    await new Promise((r) => launcher.on('exit', r));
  }, 120_000);

  it('gives up after --timeout, saying what it saw last', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'acs-wait-'));
    const run = acsServer(['wait', '--dev-credentials', join(dir, 'dev.json'), '--timeout', '1']);
    expect(await run.exited).toBe(1);
    expect(run.out()).toContain(`acs-server: not ready after 1 s: ${join(dir, 'dev.json')} does not exist yet`);
  });
});
