/**
 * What teamctl loads to start: every package a command loads costs it start-up (Temporal's
 * client, gRPC and OpenTelemetry alone weighed 0.2–0.35 s; docs/performance.md, "Start-up"), so
 * a command loads only its own module and what it uses: `--version` the argument parser alone,
 * `validate` the definition's parser and schema (the CEL parser and the JSON Schema compiler,
 * 0.1–0.25 s, only for a definition with an expression or a typed reply), and only the commands
 * that talk to Temporal its client.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '../..');
const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

/** The packages a process started by {@link start} has loaded so far. */
const loadedSoFar = async (file: string): Promise<string[]> => (await readFile(file, 'utf8').catch(() => '')).split('\n').filter(Boolean);

/** Starts teamctl with `args` under the hook (Temporal, where a command looks for it, at a closed port). */
async function start(args: string[]) {
  const dir = await mkdtemp(join(tmpdir(), 'teamctl-startup-'));
  dirs.push(dir);
  const file = join(dir, 'loaded.txt');
  const env: NodeJS.ProcessEnv = { ...process.env, LOADED_PACKAGES_FILE: file, TEAMCTL_CONFIG: join(dir, 'none.yaml'), NO_COLOR: '1', TEMPORAL_ADDRESS: '127.0.0.1:1' };
  for (const name of ['TEMPORAL_PROFILE', 'TEMPORAL_CONFIG_FILE']) delete env[name];
  const child = spawn(process.execPath, ['--import', resolve(root, 'test/support/loaded-packages.mjs'), resolve(root, 'bin/teamctl.mjs'), ...args], { env, stdio: 'ignore' });
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  return { file, child, exited };
}

const temporalOnly = ['@temporalio/client', '@grpc/grpc-js', '@opentelemetry/sdk-trace-base', 'protobufjs'];

describe('teamctl start-up', () => {
  it('teamctl --version loads the argument parser and no other package', async () => {
    const { file, exited } = await start(['--version']);
    expect(await exited).toBe(0);
    expect(await loadedSoFar(file)).toEqual(['commander']);
  });

  it("teamctl validate loads the definition's parser and schema, and nothing that connects or draws", async () => {
    const { file, exited } = await start(['validate', '-f', resolve(root, 'examples/acme-research.yaml')]);
    expect(await exited).toBe(0);
    const loaded = await loadedSoFar(file);
    expect(loaded).toEqual(expect.arrayContaining(['commander', 'yaml', 'zod']));
    expect(loaded.filter((name) => name.startsWith('@temporalio/'))).toEqual([]);
    for (const name of [...temporalOnly, 'ora', 'p-retry', '@pnpm/tabtab']) expect(loaded).not.toContain(name);
  });

  it('teamctl --help lists every command, loading each command\'s module', async () => {
    const { file, exited } = await start(['--help']);
    expect(await exited).toBe(0);
    // The modules of plan/apply (the local engine's retries) and completion are among them.
    expect(await loadedSoFar(file)).toEqual(expect.arrayContaining(['p-retry', '@pnpm/tabtab']));
  });

  it('teamctl validate loads the CEL and JSON Schema libraries only for a definition with an expression or a typed reply', async () => {
    const plain = await start(['validate', '-f', resolve(root, 'examples/acme-research.yaml')]);
    expect(await plain.exited).toBe(0);
    const loadedPlain = await loadedSoFar(plain.file);
    for (const name of ['@bufbuild/cel', 'ajv']) expect(loadedPlain).not.toContain(name);
    const deciding = await start(['validate', '-f', resolve(root, 'examples/triage.yaml')]);
    expect(await deciding.exited).toBe(0);
    expect(await loadedSoFar(deciding.file)).toEqual(expect.arrayContaining(['@bufbuild/cel', 'ajv']));
  });

  it('teamctl schedules list, which talks to Temporal, does load its client', async () => {
    const { file, child, exited } = await start(['schedules', 'list', '--org', 'acme']);
    // No Temporal listens there: the command loads the client, then tries for 10 s to connect.
    const deadline = Date.now() + 20_000;
    while (!(await loadedSoFar(file)).includes('@temporalio/client') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    child.kill('SIGKILL');
    await exited;
    expect(await loadedSoFar(file)).toContain('@temporalio/client');
  });
});
