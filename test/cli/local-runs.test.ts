/**
 * A run on the local engine says what it waits for, and other processes of the same user reach it
 * (issue 40, §2): `teamctl run` prints its run id and, when a step waits for a person, who answers,
 * the thread and the exact `teamctl thread send …` that answers — the line the Temporal engine
 * prints; `teamctl runs list | show | cancel`, run as other processes, find the live run through its
 * state file and control endpoint (engine/local-runs.ts) without asking a Temporal that nobody
 * configured; a cancelled run sends nothing more and is gone; a failed run's hint names what works
 * on the local engine. Against a real acs-server, each teamctl a process of its own.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AcsClient } from '../../client/acs-client.ts';
import { startServer } from '../../service/index.ts';
import { listensAt } from '../../temporal/settings.ts';

const root = resolve(import.meta.dirname, '../..');
const org = `local-runs-${crypto.randomUUID().slice(0, 8)}`;
const definition = `apiVersion: teamctl/v1
organization:
  name: ${org}
  providerKeys:
    echo: \${env:ECHO_PROVIDER_KEY}
teams:
  - name: desk
    agents:
      - { name: triager, provider: echo }
    humans:
      - { name: dana }
    edges: [[dana, triager]]
pipelines:
  - name: approval
    team: desk
    steps:
      - id: ask
        from: triager
        to: dana
        subject: Approve v2?
        content: May we roll out v2? Answer approve or reject.
        reply: { schema: { enum: [approve, reject] }, attempts: 1 }
    output: "{{ steps.ask.value }}"
`;

// Whatever listens at Temporal's default address decides what `runs` says when none is configured.
const temporalAtDefault = await listensAt('localhost:7233');

let server: Awaited<ReturnType<typeof startServer>>;
let dir: string;
let file: string;
let env: Record<string, string>;
let client: AcsClient;

beforeAll(async () => {
  server = await startServer({ inMemory: true, port: 0, tickMs: 20, logger: false });
  const provisioned = await server.provisionOrganization('local-runs-admin');
  dir = await mkdtemp(join(tmpdir(), 'teamctl-local-runs-'));
  file = join(dir, 'team.yaml');
  await writeFile(file, definition);
  // The whole environment: no TEMPORAL_* (no Temporal configured), a home and a state directory of the test's own.
  env = {
    PATH: process.env.PATH ?? '',
    HOME: dir,
    XDG_STATE_HOME: join(dir, 'state'),
    TEAMCTL_CONFIG: join(dir, 'no-config.yaml'),
    NO_COLOR: '1',
    ACS_BASE_URL: server.url,
    ACS_API_KEY: provisioned.api_key,
    ECHO_PROVIDER_KEY: 'echo-key-for-tests',
  };
  client = new AcsClient({ baseUrl: server.url, apiKey: provisioned.api_key });
  const applied = await teamctl(['apply', '-f', file, '--auto-approve']).exited;
  expect(applied.code, applied.stdout + applied.stderr).toBe(0);
});

afterAll(async () => {
  await server?.close();
  await rm(dir, { recursive: true, force: true });
});

/** `teamctl ARGS` as a process of its own, as a user runs it (no terminal); `until` waits for what it prints. */
function teamctl(args: string[]) {
  const child = spawn(process.execPath, ['bin/teamctl.ts', ...args], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<{ code: number | null; stdout: string; stderr: string }>((done) => child.on('exit', (code) => done({ code, stdout, stderr })));
  return {
    exited,
    /** Waits (60 s at most) until stderr matches `pattern`; its match. */
    async until(pattern: RegExp): Promise<RegExpExecArray> {
      for (let i = 0; i < 600; i++) {
        const match = pattern.exec(stderr);
        if (match) return match;
        if (child.exitCode !== null) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      child.kill('SIGKILL');
      throw new Error(`teamctl ${args.join(' ')} never printed ${pattern}:\n${stdout}\n${stderr}`);
    },
  };
}

/** The thread of the approval question opened most recently, with its messages' contents. */
async function questionThread(): Promise<{ threadId: string; contents: string[] }> {
  const found = (await client.listOrganizations()).find((o) => o.org_name === org)!;
  const team = (await client.listTeams(found.org_id))[0]!;
  const graph = await client.getTeam(team.team_id);
  const threads = await client.listThreads(graph.edges[0]!.edge_id);
  const latest = threads.sort((a, b) => (a.created_at < b.created_at ? 1 : -1))[0]!;
  const page = await client.getThread(latest.thread_id);
  return { threadId: latest.thread_id, contents: page.messages.map((m) => m.content) };
}

/** What a run prints first and when its step waits for dana: its id and the thread. */
async function startedAndWaiting(run: ReturnType<typeof teamctl>): Promise<{ runId: string; threadId: string; line: string }> {
  const runId = (await run.until(/^Started run (local\/\S+) in this process/m))[1]!;
  const waiting = await run.until(/^dana answers step ask \(thread ([0-9a-f-]{36}), from triager\): .*$/m);
  return { runId, threadId: waiting[1]!, line: waiting[0] };
}

describe('teamctl run on the local engine, and teamctl runs of other processes', () => {
  it('run: a step waiting for a person prints who answers, the thread and the command; runs list, show and cancel of other processes reach the live run; cancelled, it sends nothing more and is gone', async () => {
    const run = teamctl(['run', 'approval', '-f', file]);
    const { runId, threadId, line } = await startedAndWaiting(run);
    expect(runId).toMatch(new RegExp(`^local/${org}/approval/\\d{8}T\\d{6}Z-[0-9a-f]{12}$`));
    // The line the Temporal engine prints, to the letter: the command answers that very thread.
    expect(line).toBe(`dana answers step ask (thread ${threadId}, from triager): teamctl thread send ${threadId} --from dana --content '…'`);
    expect((await questionThread()).threadId).toBe(threadId);

    const listed = await teamctl(['runs', 'list', '--org', org, '--json']).exited;
    expect(listed.code, listed.stderr).toBe(0);
    expect(JSON.parse(listed.stdout).runs).toEqual([expect.objectContaining({ run_id: runId, status: 'running', engine: 'local', closed_at: null })]);
    // Temporal is not waited for when none is configured: said when nothing listens at its default address.
    if (!temporalAtDefault) expect(listed.stderr).toContain('Runs on Temporal are not listed: nothing listens at localhost:7233, and no Temporal server is configured');
    const otherOrg = await teamctl(['runs', 'list', '--org', `${org}-other`, '--json']).exited;
    expect(JSON.parse(otherOrg.stdout).runs.filter((r: { engine: string }) => r.engine === 'local')).toEqual([]);

    const shown = await teamctl(['runs', 'show', runId]).exited;
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout.split('\n')).toEqual([
      expect.stringMatching(new RegExp(`^${runId}  running  pipeline approval  started \\d{4}-`)),
      `  … ask (running)  thread ${threadId}  triager → dana, awaiting dana (waits by stream)`,
      line,
      '',
    ]);
    const json = JSON.parse((await teamctl(['runs', 'show', runId, '--json']).exited).stdout);
    expect(json).toMatchObject({ run_id: runId, engine: 'local', status: 'running', pipeline: 'approval' });
    expect(json.waiting).toEqual([{ step: 'ask', thread_id: threadId, from: 'triager', to: 'dana', answer_with: `teamctl thread send ${threadId} --from dana --content '…'`, wait_mode: 'stream' }]);

    const cancelled = await teamctl(['runs', 'cancel', runId]).exited;
    expect(cancelled.code, cancelled.stderr).toBe(0);
    expect(cancelled.stdout.trim()).toBe(`Cancellation of ${runId} requested.`);
    const ended = await run.exited;
    expect(ended.code).toBe(1);
    expect(ended.stdout).toContain(`⊘ ask (cancelled)  thread ${threadId}`);
    expect(ended.stderr).toContain(`error[run_failed]: run ${runId} was cancelled (teamctl runs cancel): its waiting steps stopped, and nothing more is sent`);
    // Nothing more was sent, and the run is no longer to be found: its state file went with it.
    expect((await questionThread()).contents).toEqual(['May we roll out v2? Answer approve or reject.']);
    expect(await readdir(join(dir, 'state', 'teamctl', 'runs'))).toEqual([]);
    const gone = await teamctl(['runs', 'show', runId]).exited;
    expect(gone.code).toBe(1);
    expect(gone.stderr).toContain(`error[run_not_found]: no local run ${runId} is running on this machine: a local run (teamctl run without --engine temporal) can be seen only while the teamctl run process that runs it lives`);
  }, 180_000);

  it('run: answered from the CLI the run completes; a reply that does not fit fails it with a hint naming the thread, not runs show, which a local run does not outlive', async () => {
    const answered = teamctl(['run', 'approval', '-f', file]);
    const first = await startedAndWaiting(answered);
    const sent = await teamctl(['thread', 'send', first.threadId, '--from', 'dana', '--content', 'approve']).exited;
    expect(sent.code, sent.stderr).toBe(0);
    const done = await answered.exited;
    expect(done.code, done.stderr).toBe(0);
    expect(done.stdout.trim().split('\n').at(-1)).toBe('output: approve');

    const misfit = teamctl(['run', 'approval', '-f', file]);
    const second = await startedAndWaiting(misfit);
    expect((await teamctl(['thread', 'send', second.threadId, '--from', 'dana', '--content', 'sure, why not']).exited).code).toBe(0);
    const failed = await misfit.exited;
    expect(failed.code).toBe(1);
    expect(failed.stderr).toContain('error[reply_invalid]: step ask: the reply does not fit its schema');
    const hint = failed.stderr.split('\n').find((l) => l.startsWith('hint: '));
    expect(hint).toBe(
      `hint: the step re-asked and the replies still did not fit: see them with teamctl thread show ${second.threadId}; loosen the schema, raise attempts, or say in the content what shape to answer in`,
    );
  }, 180_000);

  it.skipIf(temporalAtDefault)('runs show of a Temporal run id, with no Temporal configured and none at its default address, says so at once instead of trying for 10 s', async () => {
    const shown = await teamctl(['runs', 'show', `teamctl-run/${org}/approval/20261127T100000Z-3f9a1c0d2e4b`]).exited;
    expect(shown.code).toBe(1);
    expect(shown.stderr).toContain(
      `error[temporal_unreachable]: cannot look up teamctl-run/${org}/approval/20261127T100000Z-3f9a1c0d2e4b on Temporal: nothing listens at localhost:7233, and no Temporal server is configured (TEMPORAL_ADDRESS, TEMPORAL_PROFILE or TEMPORAL_CONFIG_FILE)`,
    );
    expect(shown.stderr).toContain('hint: start one with `npm run temporal:dev`');
    expect(shown.stderr).not.toContain('Failed to connect before the deadline');
  });
});
