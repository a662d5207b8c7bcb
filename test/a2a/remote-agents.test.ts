/**
 * Remote A2A agents as teammates (contract §12, "A2A participants"), end to end: a live
 * acs-server (loopback URLs allowed, as `--webhook-allow-private` does) and a remote agent written
 * with `@a2a-js/sdk`'s server in a process of its own (test/a2a/remote-agent.ts): a person's
 * message and its answer, a task and its artifact, an input-required round trip, the remote killed
 * mid-task and started again, a remote answering nonsense, and its header secret kept out of
 * events, logs and errors. Runs on PGlite and, in the `postgres` project, on PostgreSQL.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../service/helpers.ts';
import { makeTeam, messagesOf, orgEvents, until } from '../service/turn-helpers.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '../..');
const SECRET = 'Bearer s3cr3t-remote-token-9f8e7d';

/** A free loopback port (nothing listens on it once this returns). */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

/** A remote agent process (test/a2a/remote-agent.ts) listening on `port`. */
interface Remote {
  port: number;
  url: string;
  child: ChildProcess;
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/** Starts the remote agent on `port` (a free one by default) with `args` and `env`; resolves once it listens. */
async function startRemote(options: { port?: number; args?: string[]; env?: Record<string, string> } = {}): Promise<Remote> {
  const port = options.port ?? (await freePort());
  const child = spawn(join(root, 'node_modules/.bin/node'), [join(root, 'test/a2a/remote-agent.ts'), '--port', String(port), ...(options.args ?? [])], {
    cwd: root,
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let errors = '';
  child.stderr!.on('data', (chunk: Buffer) => (errors += chunk.toString()));
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('listening')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`the remote agent exited (${code}): ${errors}`)));
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    child,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
}

/** Every line the server logs, as text. */
function logCapture(): { stream: Writable; text: () => string } {
  let text = '';
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      text += chunk.toString('utf8');
      done();
    },
  });
  return { stream, text: () => text };
}

let h: Harness;
const log = logCapture();
const remotes: Remote[] = [];
let helper: Remote;
beforeAll(async () => {
  h = await startHarness({ inMemory: true, webhooks: { allowPrivate: true }, logger: { level: 'info', stream: log.stream } });
  helper = await startRemote();
  remotes.push(helper);
});
afterAll(async () => {
  for (const remote of remotes) await remote.stop('SIGKILL');
  await h?.server.close();
});

/** A team of dana and a remote agent `helper` at `url` (with `headers`), on one edge. */
async function teamWithRemote(url: string, headers?: Record<string, string>) {
  const team = await makeTeam(h, { humans: ['dana'], agents: [{ name: 'helper', a2a: { url, ...(headers ? { headers } : {}) } }], edges: [['dana', 'helper']] });
  return { team, dana: team.id.dana!, agent: team.id.helper!, edge: team.edgeOf('dana', 'helper') };
}

/** Asks a task of the remote as dana. Output: the task's id and thread. */
async function askTask(edge: string, dana: string, text: string): Promise<{ taskId: string; threadId: string }> {
  const created = await h.call('POST', `/api/v1/edges/${edge}/tasks`, { requester_id: dana, parts: [{ text }] });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return { taskId: created.body.task_id, threadId: created.body.thread_id };
}

/** The task as it is now. */
async function taskOf(taskId: string) {
  const got = await h.call('GET', `/api/v1/tasks/${taskId}`);
  expect(got.status).toBe(200);
  return got.body as { state: string; status_message: { content: string; expects_reply: boolean; sender_id: string } | null; artifacts: Array<{ name: string | null; parts: Array<{ text?: string }> }> };
}

const waitForState = (taskId: string, state: string, timeoutMs = 30_000) => until(() => taskOf(taskId), (t) => t.state === state, `task ${state}`, timeoutMs);

describe('remote A2A agents', () => {
  it("a remote A2A agent: a person's message reaches it and its answer comes back into the thread", async () => {
    const { dana, agent, edge } = await teamWithRemote(helper.url);
    const opened = await h.call('POST', `/api/v1/edges/${edge}/threads`, { sender_agent_id: dana, content: 'hello there' });
    expect(opened.status).toBe(201);
    const messages = await until(() => messagesOf(h, opened.body.thread_id), (ms) => ms.some((m) => m.sender_id === agent), 'the remote agent\'s answer');
    const answer = messages.filter((m) => m.sender_id === agent);
    expect(answer.map((m) => m.content)).toEqual(['echo: hello there']);
    // The agent shows where it is, and is no provider agent.
    const shown = await h.call('GET', `/api/v1/agents/${agent}`);
    expect(shown.body).toMatchObject({ provider: null, a2a: { url: `${helper.url}/`, header_fingerprints: {} } });
  });

  it('a task to a remote A2A agent completes with its artifact, named as the remote named it', async () => {
    const { dana, edge } = await teamWithRemote(helper.url);
    const { taskId } = await askTask(edge, dana, 'summarise the quarter');
    const task = await waitForState(taskId, 'completed');
    expect(task.artifacts).toEqual([expect.objectContaining({ name: 'echo', parts: [{ text: 'echo: summarise the quarter' }] })]);
    expect(task.status_message?.content).toBe('echo: summarise the quarter');
  });

  it('a remote A2A agent that asks back (input-required) asks the requester in the thread, and her answer goes to the same remote task, which completes', async () => {
    const { dana, agent, edge } = await teamWithRemote(helper.url);
    const { taskId, threadId } = await askTask(edge, dana, 'ask me something');
    const asking = await waitForState(taskId, 'input-required');
    expect(asking.status_message).toMatchObject({ content: 'What is your name?', expects_reply: true, sender_id: agent });
    const answered = await h.call('POST', `/api/v1/threads/${threadId}/messages`, { sender_agent_id: dana, content: 'Dana' });
    expect(answered.status).toBe(201);
    const done = await waitForState(taskId, 'completed');
    // The remote greets by the answer only when it continues the task that asked (remote-agent.ts).
    expect(done.artifacts.map((a) => a.parts[0]?.text)).toEqual(['hello Dana']);
    expect(done.status_message?.content).toBe('hello Dana');
    const fromRemote = (await messagesOf(h, threadId)).filter((m) => m.sender_id === agent).map((m) => m.content);
    expect(fromRemote).toEqual(['What is your name?', 'hello Dana']);
  });

  it('a remote A2A agent killed mid-task (SIGKILL) and started again: the task stays working meanwhile, then completes, and no message is posted twice', async () => {
    const slow = await startRemote({ env: { SLOW_MS: '600000' } });
    remotes.push(slow);
    const { dana, agent, edge } = await teamWithRemote(slow.url);
    const { taskId, threadId } = await askTask(edge, dana, 'slow job');
    await until(() => messagesOf(h, threadId), (ms) => ms.some((m) => m.sender_id === agent && m.content === 'starting'), 'the remote to start');
    await slow.stop('SIGKILL');
    // Down: retried with backoff, the task is neither lost nor failed.
    const eventsBefore = (await orgEvents(h, 'task.updated')).length;
    await until(() => Promise.resolve(log.text()), (text) => text.includes('remote A2A agent unavailable'), 'a retry to be logged');
    expect((await taskOf(taskId)).state).toBe('working');
    const again = await startRemote({ port: slow.port, env: { SLOW_MS: '0' } });
    remotes.push(again);
    const done = await waitForState(taskId, 'completed');
    expect(done.artifacts.map((a) => a.parts[0]?.text)).toEqual(['done: slow job']);
    const fromRemote = (await messagesOf(h, threadId)).filter((m) => m.sender_id === agent).map((m) => m.content);
    // The restarted remote said "starting" again under the same id: recorded once.
    expect(fromRemote).toEqual(['starting', 'done: slow job']);
    expect((await orgEvents(h, 'task.updated')).length).toBeGreaterThan(eventsBefore);
  });

  it('a remote A2A agent answering what is not JSON fails the task with the reason, and is not asked again', async () => {
    const broken = await startRemote({ args: ['--nonsense'] });
    remotes.push(broken);
    const { dana, agent, edge } = await teamWithRemote(broken.url);
    const { taskId, threadId } = await askTask(edge, dana, 'do something');
    const failed = await waitForState(taskId, 'failed');
    expect(failed.status_message?.sender_id).toBe(agent);
    expect(failed.status_message?.content).toMatch(/could not be followed: .*JSON/);
    const messages = await messagesOf(h, threadId);
    expect(messages.filter((m) => m.sender_id === agent)).toHaveLength(1);
  });

  it("a remote A2A agent's header secret is sent to it and absent from the agent, events, logs and errors", async () => {
    const guarded = await startRemote({ env: { REMOTE_AUTH: SECRET } });
    remotes.push(guarded);
    const { dana, agent, edge } = await teamWithRemote(guarded.url, { Authorization: SECRET });
    const { taskId } = await askTask(edge, dana, 'guarded work');
    // The remote refuses every request without the header: a completed task means it was sent.
    await waitForState(taskId, 'completed');
    const shown = await h.call('GET', `/api/v1/agents/${agent}`);
    expect(Object.keys(shown.body.a2a.header_fingerprints)).toEqual(['Authorization']);
    // A wrong value is refused by the remote: the task fails, and its reason holds no header value.
    const wrong = await teamWithRemote(guarded.url, { Authorization: 'Bearer wr0ng-token-value-1234' });
    const refused = await askTask(wrong.edge, wrong.dana, 'guarded work');
    const failed = await waitForState(refused.taskId, 'failed');
    expect(failed.status_message?.content).toMatch(/401/);
    // A PATCH refused (a provider on a remote agent) says why without the value.
    const patched = await h.call('PATCH', `/api/v1/agents/${agent}`, { provider: 'echo' });
    expect(patched.status).toBe(400);
    expect(patched.body.errors).toEqual([expect.objectContaining({ path: 'a2a' })]);
    const everything = [JSON.stringify(shown.body), JSON.stringify(await orgEvents(h)), log.text(), JSON.stringify(patched.body), JSON.stringify(failed)].join('\n');
    for (const secret of [SECRET, 's3cr3t-remote-token-9f8e7d', 'wr0ng-token-value-1234']) expect(everything).not.toContain(secret);
  });

  it('a remote A2A agent is refused with a provider, and its URL follows the rules of remote MCP servers', async () => {
    const team = await makeTeam(h, { agents: [], edges: [] });
    const both = await h.call('POST', `/api/v1/teams/${team.teamId}/agents`, { name: 'both', provider: 'echo', a2a: { url: helper.url } });
    expect(both.status).toBe(400);
    expect(both.body.errors).toEqual([expect.objectContaining({ path: 'a2a' })]);
    const notUrl = await h.call('POST', `/api/v1/teams/${team.teamId}/agents`, { name: 'nourl', a2a: { url: 'ftp://example.com/agent' } });
    expect(notUrl.status).toBe(400);
  });
});
