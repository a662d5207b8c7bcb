/**
 * Ctrl-C as a person presses it: the terminal sends SIGINT to the whole foreground process
 * group — under `npx` that is npm, its shell and the command, and npm forwards the signal to its
 * child once more. Each command here runs through `npx` (as the README shows it) in a process
 * group of its own, which the test signals as a terminal does, and the test reads the status and
 * the words the person sees. Against a real acs-server; the worker against a real Temporal server.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AcsClient } from '../../client/acs-client.ts';
import { startServer } from '../../service/index.ts';
import { startFaultProxy } from '../support/fault-proxy.ts';
import { describeTemporal } from '../support/temporal.ts';

const root = resolve(import.meta.dirname, '../..');
const example = resolve(root, 'examples/acme-research.yaml');
let server: Awaited<ReturnType<typeof startServer>>;
let apiKey: string;
let threadId: string;

beforeAll(async () => {
  server = await startServer({ inMemory: true, port: 0, tickMs: 60_000, logger: false });
  const org = await server.provisionOrganization('ctrl-c');
  apiKey = org.api_key;
  const client = new AcsClient({ baseUrl: server.url, apiKey });
  const team = await client.createTeam(org.org_id, { team_name: 'desk' });
  const dana = (await client.createHuman(team.team_id, { name: 'dana' })).human_id;
  const bob = (await client.createHuman(team.team_id, { name: 'bob' })).human_id;
  const edge = await client.createEdge(team.team_id, [dana, bob]);
  threadId = (await client.openThread(edge.edge_id, { sender_agent_id: dana, content: 'Anyone there?' })).thread_id;
});

afterAll(async () => {
  await server?.close();
});

/** A command run as a person runs it in a terminal: `npx teamctl ARGS`, in a process group of its own. */
function npxTeamctl(args: string[], env: NodeJS.ProcessEnv) {
  const { CI: _ci, ...rest } = process.env;
  const child = spawn('npx', ['teamctl', ...args], { cwd: root, detached: true, env: { ...rest, TEAMCTL_CONFIG: '/nonexistent/teamctl.yaml', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => void (stdout += c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => void (stderr += c));
  // 'close', not 'exit': the last of its output may still be on its way when it exits.
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) => child.on('close', (code, signal) => done({ code, signal })));
  return {
    output: () => ({ stdout, stderr }),
    /** Resolves once `text` is in the output (stdout or stderr); fails after two minutes. */
    async waitFor(text: string) {
      for (let i = 0; i < 1200 && !(stdout + stderr).includes(text); i++) await new Promise((r) => setTimeout(r, 100));
      expect(stdout + stderr).toContain(text);
    },
    /** Ctrl-C: SIGINT to the whole process group, as the terminal sends it. */
    ctrlC: () => process.kill(-child.pid!, 'SIGINT'),
    /** The status the shell would show: the exit code, or 128 + the signal's number. */
    status: async () => {
      const { code, signal } = await exited;
      return code ?? 128 + (signal === 'SIGINT' ? 2 : signal === 'SIGTERM' ? 15 : 9);
    },
    kill: () => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // Already gone.
      }
    },
  };
}

describe('Ctrl-C through npx', () => {
  it('thread follow: Ctrl-C ends it with exit 0, through npx too', async () => {
    const run = npxTeamctl(['thread', 'follow', threadId], { ACS_BASE_URL: server.url, ACS_API_KEY: apiKey });
    try {
      await run.waitFor('dana: Anyone there?');
      run.ctrlC();
      expect(await run.status(), run.output().stderr).toBe(0);
    } finally {
      run.kill();
    }
  });

  it('apply: Ctrl-C says how far it got and that a re-run converges (exit 130), and the re-run does, making only what was left', { timeout: 180_000 }, async () => {
    // Every request slow (seconds of changes still to make after the first), so that Ctrl-C
    // lands between two changes however loaded the machine is.
    const proxy = await startFaultProxy({ target: server.url, delayMs: 1_500 });
    const file = join(await mkdtemp(join(tmpdir(), 'teamctl-ctrl-c-')), 'team.yaml');
    await writeFile(file, (await readFile(example, 'utf8')).replace('name: acme-research', 'name: ctrl-c-apply'));
    const env = { ACS_BASE_URL: proxy.url, ACS_API_KEY: apiKey, ECHO_PROVIDER_KEY: 'ctrl-c-echo' };
    try {
      const first = npxTeamctl(['apply', '-f', file, '--parallelism', '1'], env);
      try {
        await first.waitFor(': created');
        first.ctrlC();
        expect(await first.status()).toBe(130);
      } finally {
        first.kill();
      }
      const said = first.output().stderr.trim().split('\n').at(-1)!;
      expect(said).toMatch(
        /^interrupted by Ctrl-C \(SIGINT\) after \d+ of \d+ changes \(\d+ created, one in flight may have been made too\)\. Nothing is made twice: run the same apply again and it converges, making only what is left\.$/,
      );
      const [made, planned] = /after (\d+) of (\d+) changes/.exec(said)!.slice(1).map(Number) as [number, number];

      const again = npxTeamctl(['apply', '-f', file], env);
      expect(await again.status(), again.output().stderr).toBe(0);
      const summary = /Apply complete: (\d+) created, 0 updated, 0 deleted, (\d+) already in place\./.exec(again.output().stdout);
      expect(summary, again.output().stdout).not.toBeNull();
      // It made only what was left: the changes the first run did not finish (one of them perhaps
      // made by the request in flight, then found in place).
      const [created, inPlace] = summary!.slice(1).map(Number) as [number, number];
      expect(created + inPlace).toBeLessThanOrEqual(planned - made);
      expect(created + inPlace).toBeGreaterThanOrEqual(planned - made - 1);
      const plan = npxTeamctl(['plan', '-f', file, '--detailed-exitcode'], env);
      expect(await plan.status(), plan.output().stdout).toBe(0);
    } finally {
      await proxy.close();
    }
  });
});

describeTemporal('Ctrl-C through npx, on Temporal', () => {
  it('worker: Ctrl-C stops it cleanly with exit 0, through npx too', async () => {
    const run = npxTeamctl(['worker', '--task-queue', `ctrl-c-${process.pid}`], { TEMPORAL_ADDRESS: process.env.TEMPORAL_ADDRESS! });
    try {
      await run.waitFor('polling task queue');
      run.ctrlC();
      expect(await run.status(), run.output().stderr).toBe(0);
      expect(run.output().stderr).toContain('teamctl worker stopped');
    } finally {
      run.kill();
    }
  });
});
