/**
 * Remote A2A agents as teammates (contract §12, "A2A participants"), end to end: a live
 * acs-server (loopback URLs allowed, as `--webhook-allow-private` does) and a remote agent written
 * with `@a2a-js/sdk`'s server in a process of its own (test/a2a/remote-agent.ts): a person's
 * message and its answer, a task and its artifact, an input-required round trip (with a person, and
 * with a provider agent that asks with `ask`), the remote killed mid-task and started again, a
 * remote answering nonsense, its header secret kept out of events, logs and errors, the ping-pong
 * guard between remotes and agents, the remote's files kept as attachments, and its artifact
 * streamed in chunks seen as the reply's deltas on the thread's stream (§13; also killed mid-stream,
 * and called over our own A2A server). The provider agent
 * is scripted over the OpenAI stand-in (test/support/openai-stub.ts). Runs on PGlite and, in the
 * `postgres` project, on PostgreSQL.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../service/storage/db.ts';
import { parkRow } from '../../service/agent-loop/work.ts';
import { callTool, type Conversation, type ModelScript, type ScriptReply } from '../support/model-script.ts';
import { scriptedToolCompletions, startOpenAiStub, type OpenAiStub } from '../support/openai-stub.ts';
import { startHarnessWithDb, type Harness } from '../service/helpers.ts';
import { askAnswer, makeTeam, messagesOf, orgEvents, until } from '../service/turn-helpers.ts';
import type { StreamResponse } from '@a2a-js/sdk';
import { agentCardUrl } from '../../api/a2a.ts';
import { a2aClient, partText, sendRequest, userMessage } from './a2a-helpers.ts';
import { createdOf, deltasOf, readThread, rebuiltText, type Item } from '../service/stream-helpers.ts';

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

/** The ping-pong guard of this file's server: a run of this many automatic replies stops a thread. */
const autoReplyLimit = 4;
/** Scripts of the OpenAI stand-in by the agent's instructions (the system prompt's first word). */
const scripts = new Map<string, ModelScript>();
const byInstructions: ModelScript = (c: Conversation): ScriptReply | Promise<ScriptReply> => scripts.get((c.system ?? '').split(/\s/)[0]!)?.(c);

let h: Harness & { db: Db };
let openai: OpenAiStub;
const log = logCapture();
const remotes: Remote[] = [];
let helper: Remote;
beforeAll(async () => {
  openai = await startOpenAiStub(scriptedToolCompletions(byInstructions));
  h = await startHarnessWithDb('acme', {
    options: {
      webhooks: { allowPrivate: true },
      logger: { level: 'info', stream: log.stream },
      autoReplyLimit,
      env: { ...process.env, OPENAI_BASE_URL: `${openai.origin}/v1` },
    },
  });
  expect((await h.call('PUT', `/api/v1/organizations/${h.orgId}/api-keys/openai`, { api_key: 'openai-key' })).status).toBe(200);
  expect((await h.call('PUT', `/api/v1/organizations/${h.orgId}/api-keys/echo`, { api_key: 'echo-key' })).status).toBe(200);
  helper = await startRemote();
  remotes.push(helper);
});
afterAll(async () => {
  for (const remote of remotes) await remote.stop('SIGKILL');
  await h?.server.close();
  await openai?.close();
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

/**
 * Waits until the agent loop has nothing left to do on `threadId`: every work row of the thread
 * (one per agent that answers there) has handled its latest message and is not claimed. From then
 * on nothing is sent or posted in the thread until someone writes to it. Output: the thread's
 * messages then.
 */
async function untilIdle(threadId: string) {
  await until(
    () => h.db.query<{ handled_seq: number; latest_seq: number; lease_token: string | null }>(`SELECT handled_seq, latest_seq, lease_token FROM agent_work WHERE thread_id = $1`, [threadId]),
    (rows) => rows.length > 0 && rows.every((r) => r.handled_seq >= r.latest_seq && r.lease_token === null),
    'the thread to go quiet',
  );
  return messagesOf(h, threadId);
}

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

  it("a remote A2A agent streaming its artifact in chunks: a reader of the thread's stream sees the reply's message.deltas before its message.created, under its id, joined equal to it", async () => {
    const { dana, agent, edge } = await teamWithRemote(helper.url);
    const { taskId, threadId } = await askTask(edge, dana, 'stream the tale');
    const reader = await readThread(h.server.url, threadId, { 'x-api-key': h.apiKey }, { after: '0' });
    try {
      const items = await reader.until((i) => i.event === 'message.created' && i.data.sender_id === agent, "the remote's reply");
      const reply = items.find((i) => i.event === 'message.created' && i.data.sender_id === agent)!;
      expect(reply.data.content).toBe('Once upon a time, stream the tale.');
      const deltas = deltasOf(items, reply.data.message_id);
      // Written as it came: more than one delta, all before the reply, numbered 0, 1, …
      expect(deltas.length).toBeGreaterThan(1);
      expect(deltas.map((d) => d.data.index)).toEqual(deltas.map((_, i) => i));
      expect(items.indexOf(deltas.at(-1)!)).toBeLessThan(items.indexOf(reply));
      expect(deltas.map((d) => d.data.text).join('')).toBe(reply.data.content);
      expect(deltas.every((d) => d.data.sender_id === agent)).toBe(true);
      expect(items.some((i) => i.event === 'turn.restarted')).toBe(false);
    } finally {
      reader.close();
    }
    // The chunks make one text on the task's artifact, as the remote named it.
    const done = await waitForState(taskId, 'completed');
    expect(done.artifacts.map((a) => ({ name: a.name, parts: a.parts }))).toEqual([{ name: 'story', parts: [{ text: 'Once upon a time, stream the tale.' }] }]);
  });

  it('a remote A2A agent that streams its artifact and ends with a message of its own: the streamed text is dropped (turn.restarted) before its reply, which is that message', async () => {
    const { dana, agent, edge } = await teamWithRemote(helper.url);
    const { taskId, threadId } = await askTask(edge, dana, 'stream and say it');
    const reader = await readThread(h.server.url, threadId, { 'x-api-key': h.apiKey }, { after: '0' });
    try {
      const items = await reader.until((i) => i.event === 'message.created' && i.data.sender_id === agent, "the remote's reply");
      const reply = items.find((i) => i.event === 'message.created' && i.data.sender_id === agent)!;
      expect(reply.data.content).toBe('The tale is told.');
      const deltas = deltasOf(items, reply.data.message_id);
      expect(deltas.map((d) => d.data.text).join('')).toBe('Once upon a time, stream and say it.');
      const restarted = items.findIndex((i) => i.event === 'turn.restarted' && i.data.message_id === reply.data.message_id);
      expect(restarted).toBeGreaterThan(items.indexOf(deltas.at(-1)!));
      expect(restarted).toBeLessThan(items.indexOf(reply));
      expect(rebuiltText(items, reply.data.message_id)).toBe('');
    } finally {
      reader.close();
    }
    const done = await waitForState(taskId, 'completed');
    expect(done.status_message?.content).toBe('The tale is told.');
    expect(done.artifacts.map((a) => a.parts)).toEqual([[{ text: 'Once upon a time, stream and say it.' }]]);
  });

  it("a remote A2A agent called over our A2A server streams too: its reply's deltas come as chunks of one artifact, which the remote's whole artifact then replaces under the same id", async () => {
    const team = await makeTeam(h, { agents: [{ name: 'caller' }, { name: 'helper', a2a: { url: helper.url } }], edges: [['caller', 'helper']] });
    const key = await h.call('POST', `/api/v1/agents/${team.id.caller}/mcp-keys`, {});
    expect(key.status).toBe(201);
    const client = await a2aClient(agentCardUrl(h.server.url, team.id.helper!), key.body.mcp_key);
    const events: StreamResponse[] = [];
    for await (const event of client.sendMessageStream(sendRequest(userMessage('stream over a2a')))) events.push(event);
    const last = events.at(-1)!.payload!;
    expect(last.$case === 'statusUpdate' && last.value.status?.message?.parts.map(partText).join('')).toBe('Once upon a time, stream over a2a.');
    const updates = events.flatMap((e) => (e.payload?.$case === 'artifactUpdate' ? [e.payload.value] : []));
    const chunks = updates.filter((u) => !u.lastChunk);
    expect(chunks.length).toBeGreaterThan(0);
    expect(chunks.map((u) => u.artifact!.parts.map(partText).join('')).join('')).toBe('Once upon a time, stream over a2a.');
    // One artifact in the end: the chunks' artifact, whole, not a second one beside it.
    expect(updates.filter((u) => u.lastChunk).map((u) => [u.artifact!.artifactId, u.append, u.artifact!.name, u.artifact!.parts.map(partText).join('')])).toEqual([
      [chunks[0]!.artifact!.artifactId, false, 'story', 'Once upon a time, stream over a2a.'],
    ]);
  });

  it('a remote A2A agent killed (SIGKILL) while it streams its artifact and started again: its chunks sent again are not read twice (turn.restarted), and its reply is posted once', async () => {
    const streamer = await startRemote({ env: { STREAM_HOLD_MS: '600000' } });
    remotes.push(streamer);
    const { dana, agent, edge } = await teamWithRemote(streamer.url);
    const { taskId, threadId } = await askTask(edge, dana, 'stream twice');
    const reader = await readThread(h.server.url, threadId, { 'x-api-key': h.apiKey }, { after: '0' });
    try {
      await reader.until((i) => i.event === 'message.delta' && i.data.sender_id === agent, 'a first delta');
      await streamer.stop('SIGKILL');
      const again = await startRemote({ port: streamer.port });
      remotes.push(again);
      const items: Item[] = await reader.until((i) => i.event === 'message.created' && i.data.sender_id === agent, "the remote's reply");
      const reply = items.find((i) => i.event === 'message.created' && i.data.sender_id === agent)!;
      expect(reply.data.content).toBe('Once upon a time, stream twice.');
      const restarted = items.findIndex((i) => i.event === 'turn.restarted' && i.data.message_id === reply.data.message_id);
      // The text of the first attempt is dropped by the restart; the deltas go on numbering.
      expect(restarted).toBeGreaterThan(items.indexOf(deltasOf(items, reply.data.message_id)[0]!));
      const indexes = deltasOf(items, reply.data.message_id).map((d) => d.data.index);
      expect(indexes).toEqual(indexes.map((_, i) => i));
      expect(rebuiltText(items, reply.data.message_id)).toBe(reply.data.content);
      expect(createdOf(items, reply.data.message_id)).toBeDefined();
    } finally {
      reader.close();
    }
    await waitForState(taskId, 'completed');
    const fromRemote = (await messagesOf(h, threadId)).filter((m) => m.sender_id === agent).map((m) => m.content);
    expect(fromRemote).toEqual(['Once upon a time, stream twice.']);
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

  it("a provider agent that asks a remote A2A agent with ask gets the remote's question (input-required) as the answer, answers it in the same thread, and the remote's task completes into its turn's reply", async () => {
    scripts.set('DELEGATOR', (c) => {
      const asked = c.turnResults.filter((r) => r.toolName === 'ask').map((r) => askAnswer(r) as { content: string; thread_id: string; expects_reply?: boolean });
      const last = asked.at(-1);
      if (!last) return callTool('ask', { peer: 'helper', content: 'ask me something' });
      // A question back is answered in its thread: the remote goes on with the same task.
      if (last.expects_reply) return callTool('ask', { peer: 'helper', thread_id: last.thread_id, content: 'Lee' });
      return `The helper said: ${last.content}`;
    });
    const team = await makeTeam(h, {
      humans: ['dana'],
      agents: [
        { name: 'lead', provider: 'openai', model: 'gpt-stub', instructions: 'DELEGATOR — scripted', tools: { team: true } },
        { name: 'helper', a2a: { url: helper.url } },
      ],
      edges: [
        ['dana', 'lead'],
        ['lead', 'helper'],
      ],
    });
    const opened = await h.call('POST', `/api/v1/edges/${team.edgeOf('dana', 'lead')}/threads`, { sender_agent_id: team.id.dana, content: 'get me a greeting' });
    expect(opened.status).toBe(201);
    const danaThread = await until(() => messagesOf(h, opened.body.thread_id), (ms) => ms.some((m) => m.sender_id === team.id.lead), "the lead's reply");
    // The remote greets by the answer only when it continues the task that asked (remote-agent.ts).
    expect(danaThread.map((m) => m.content)).toEqual(['get me a greeting', 'The helper said: hello Lee']);

    const threads = (await h.call('GET', `/api/v1/edges/${team.edgeOf('lead', 'helper')}/threads`)).body.threads as Array<{ thread_id: string }>;
    expect(threads).toHaveLength(1);
    // Once the lead and the helper have nothing left to do there: the lead's loop took neither of the helper's answers as a message to answer.
    const exchange = await untilIdle(threads[0]!.thread_id);
    expect(exchange.map((m) => [m.sender_id === team.id.lead ? 'lead' : 'helper', m.content])).toEqual([
      ['lead', 'ask me something'],
      ['helper', 'What is your name?'],
      ['lead', 'Lee'],
      ['helper', 'hello Lee'],
    ]);
    // Each of the remote's answers replies to the message it answers: the question to the first ask, the greeting to the second.
    const replyTo = await h.db.query<{ id: string; reply_to: string | null }>(`SELECT id, reply_to FROM messages WHERE thread_id = $1 ORDER BY seq`, [threads[0]!.thread_id]);
    expect(replyTo.map((m) => m.reply_to)).toEqual([null, exchange[0]!.message_id, null, exchange[2]!.message_id]);
    const calls = (await h.call('GET', `/api/v1/threads/${opened.body.thread_id}/tool-calls`)).body.tool_calls as Array<{
      tool: string;
      status: string;
      result: { content: string; message_id: string; thread_id: string; expects_reply?: boolean };
    }>;
    expect(calls.map((c) => [c.tool, c.status, c.result.content, c.result.expects_reply ?? false])).toEqual([
      ['ask', 'completed', 'What is your name?', true],
      ['ask', 'completed', 'hello Lee', false],
    ]);
    expect(calls.map((c) => [c.result.thread_id, c.result.message_id])).toEqual([
      [threads[0]!.thread_id, exchange[1]!.message_id],
      [threads[0]!.thread_id, exchange[3]!.message_id],
    ]);
  });

  it('a remote A2A agent that says it is working before it answers: an ask waits for its answer, not its status message', async () => {
    const chatty = await startRemote({ args: ['--chatty'] });
    remotes.push(chatty);
    scripts.set('WAITER', (c) => {
      const answer = askAnswer(c.resultOf('ask'));
      return answer ? `Got: ${answer.content}` : callTool('ask', { peer: 'chatty', content: 'summarise the week' });
    });
    const team = await makeTeam(h, {
      humans: ['dana'],
      agents: [
        { name: 'waiter', provider: 'openai', model: 'gpt-stub', instructions: 'WAITER — scripted', tools: { team: true } },
        { name: 'chatty', a2a: { url: chatty.url } },
      ],
      edges: [
        ['dana', 'waiter'],
        ['waiter', 'chatty'],
      ],
    });
    const opened = await h.call('POST', `/api/v1/edges/${team.edgeOf('dana', 'waiter')}/threads`, { sender_agent_id: team.id.dana, content: 'go' });
    const replied = await until(() => messagesOf(h, opened.body.thread_id), (ms) => ms.some((m) => m.sender_id === team.id.waiter), "the waiter's reply");
    expect(replied.map((m) => m.content)).toEqual(['go', 'Got: echo: summarise the week']);
  });

  it('the ping-pong guard: two remote A2A agents on one edge stop after the configured number of automatic replies, and a message written by hand starts them again', async () => {
    const team = await makeTeam(h, {
      agents: [
        { name: 'left', a2a: { url: helper.url } },
        { name: 'right', a2a: { url: helper.url } },
      ],
      edges: [['left', 'right']],
    });
    const opened = await h.call('POST', `/api/v1/edges/${team.edgeOf('left', 'right')}/threads`, { sender_agent_id: team.id.left, content: 'hello' });
    expect(opened.status).toBe(201);
    const threadId: string = opened.body.thread_id;
    const stopped = await untilIdle(threadId);
    expect(stopped.map((m) => m.content)).toEqual(['hello', 'echo: hello', 'echo: echo: hello', 'echo: echo: echo: hello', 'echo: echo: echo: echo: hello']);
    expect(stopped.map((m) => m.sender_id)).toEqual([team.id.left, team.id.right, team.id.left, team.id.right, team.id.left]);

    expect((await h.call('POST', `/api/v1/threads/${threadId}/messages`, { sender_agent_id: team.id.left, content: 'by hand' })).status).toBe(201);
    const again = await untilIdle(threadId);
    expect(again.slice(5, 7).map((m) => m.content)).toEqual(['by hand', 'echo: by hand']);
    expect(again).toHaveLength(5 + 1 + autoReplyLimit);
  });

  it("the ping-pong guard: a provider agent and a remote A2A agent that says it is working stop too: the remote's status messages count as automatic replies", async () => {
    const chatty = await startRemote({ args: ['--chatty'] });
    remotes.push(chatty);
    const team = await makeTeam(h, {
      agents: [
        { name: 'parrot', provider: 'echo' },
        { name: 'chatty', a2a: { url: chatty.url } },
      ],
      edges: [['parrot', 'chatty']],
    });
    const opened = await h.call('POST', `/api/v1/edges/${team.edgeOf('parrot', 'chatty')}/threads`, { sender_agent_id: team.id.parrot, content: 'hi' });
    const stopped = await untilIdle(opened.body.thread_id);
    expect(stopped[1]).toMatchObject({ sender_id: team.id.chatty, content: 'working on: hi' });
    // However the two interleave, the thread ends in a run of automatic replies no longer than the limit allows.
    expect(stopped.length).toBeGreaterThan(autoReplyLimit);
    expect(stopped.length).toBeLessThanOrEqual(1 + 2 * autoReplyLimit);
  });

  it("a remote A2A agent's files are kept as attachments of the organization: its bytes, and by URL (fetched under the remote URL rules, with the remote's headers on its own origin) unless larger than an attachment may be", async () => {
    const guarded = await startRemote({ env: { REMOTE_AUTH: SECRET } });
    remotes.push(guarded);
    const { dana, agent, edge } = await teamWithRemote(guarded.url, { Authorization: SECRET });
    const { taskId, threadId } = await askTask(edge, dana, 'file the quarter');
    const done = (await waitForState(taskId, 'completed')) as unknown as {
      artifacts: Array<{ name: string; parts: Array<{ text?: string; file?: { name: string; media_type: string; attachment_id: string } }> }>;
      status_message: { content: string; attachments: string[] };
    };
    expect(done.artifacts).toHaveLength(1);
    const [text, report, notes, big] = done.artifacts[0]!.parts;
    expect(text).toEqual({ text: 'report on file the quarter' });
    expect(report).toEqual({ file: { name: 'report.txt', media_type: 'text/plain', attachment_id: expect.any(String) } });
    expect(notes).toEqual({ file: { name: 'notes.md', media_type: 'text/markdown', attachment_id: expect.any(String) } });
    // Over 5 MiB: not fetched into an attachment, named with where it is.
    expect(big).toEqual({ text: expect.stringMatching(/big\.bin.*\/files\/big\.bin.*5 MiB/) });
    const content = async (id: string) => {
      const response = await fetch(`${h.server.url}/api/v1/attachments/${id}/content`, { headers: { 'x-api-key': h.apiKey } });
      expect(response.status).toBe(200);
      return { type: response.headers.get('content-type'), text: await response.text() };
    };
    expect(await content(report!.file!.attachment_id)).toEqual({ type: expect.stringContaining('text/plain'), text: 'contents of the report on file the quarter' });
    expect(await content(notes!.file!.attachment_id)).toEqual({ type: expect.stringContaining('text/markdown'), text: '# Notes\n\nFetched by URL.\n' });

    // The reply carries its own file and the artifact's as attachments of the thread's message.
    const reply = (await messagesOf(h, threadId)).find((m) => m.sender_id === agent) as unknown as { content: string; attachments: string[] };
    expect(reply.content).toMatch(/^Here is the report\./);
    expect(reply.attachments).toHaveLength(3);
    expect(reply.attachments).toEqual(expect.arrayContaining([report!.file!.attachment_id, notes!.file!.attachment_id]));
    const own = reply.attachments.find((id) => id !== report!.file!.attachment_id && id !== notes!.file!.attachment_id)!;
    expect(await content(own)).toEqual({ type: expect.stringContaining('text/plain'), text: 'one line of summary' });
    const meta = await h.call('GET', `/api/v1/attachments/${own}`);
    expect(meta.body).toMatchObject({ filename: 'summary.txt', org_id: h.orgId });
    expect(done.status_message.attachments).toEqual(reply.attachments);
  });

  it("a person's message with attachments reaches a remote A2A agent with their bytes, names and media types (our attachment URLs need our key)", async () => {
    const { dana, agent, edge } = await teamWithRemote(helper.url);
    const upload = async (filename: string, contentType: string, text: string) => {
      const created = await h.call('POST', '/api/v1/attachments', { filename, content_type: contentType, data_base64: Buffer.from(text).toString('base64') });
      expect(created.status).toBe(201);
      return created.body.attachment_id as string;
    };
    const attachments = [await upload('brief.md', 'text/markdown', '# Brief\n\nShip it.'), await upload('data.csv', 'text/csv', 'a,b\n1,2\n')];
    const opened = await h.call('POST', `/api/v1/edges/${edge}/threads`, { sender_agent_id: dana, content: 'files follow' });
    expect(opened.status).toBe(201);
    const threadId = opened.body.thread_id as string;
    await until(() => messagesOf(h, threadId), (ms) => ms.some((m) => m.sender_id === agent), "the remote agent's first answer");
    const posted = await h.call('POST', `/api/v1/threads/${threadId}/messages`, { sender_agent_id: dana, content: 'read these', attachments });
    expect(posted.status, JSON.stringify(posted.body)).toBe(201);
    await until(() => messagesOf(h, threadId), (ms) => ms.filter((m) => m.sender_id === agent).length === 2, "the remote agent's second answer");
    const sent = (await messagesOf(h, threadId)).find((m) => m.content === 'read these')!;
    const record = await remoteRecord(helper);
    expect(record.files.filter((f) => f.message_id === sent.message_id)).toEqual([
      {
        message_id: sent.message_id,
        files: [
          { name: 'brief.md', media_type: 'text/markdown', text: '# Brief\n\nShip it.' },
          { name: 'data.csv', media_type: 'text/csv', text: 'a,b\n1,2\n' },
        ],
      },
    ]);
  });
});

/** A remote agent's own record (remote-agent.ts `GET /calls`): the JSON-RPC calls it got, the tasks it made with the message that asked for each, and the files each message carried. */
async function remoteRecord(remote: Remote): Promise<{
  calls: Array<{ method: string; task_id: string | null; message_id: string | null }>;
  tasks: Array<{ task_id: string; message_id: string }>;
  files: Array<{ message_id: string; files: Array<{ name: string; media_type: string; text: string }> }>;
}> {
  const response = await fetch(`${remote.url}/calls`);
  expect(response.status).toBe(200);
  return (await response.json()) as Awaited<ReturnType<typeof remoteRecord>>;
}

describe('remote A2A agents: cancel', () => {
  it('a task canceled while its remote A2A agent works on it: the remote gets CancelTask for its own task, which it cancels, and nothing more is sent to it', async () => {
    const slow = await startRemote({ env: { SLOW_MS: '600000' } });
    remotes.push(slow);
    const { dana, agent, edge } = await teamWithRemote(slow.url);
    const { taskId, threadId } = await askTask(edge, dana, 'slow job');
    // The remote works (its stream open, its task named), and would for ten minutes.
    await until(() => messagesOf(h, threadId), (ms) => ms.some((m) => m.sender_id === agent && m.content === 'starting'), 'the remote to start');
    const asked = (await messagesOf(h, threadId))[0]!;
    const canceled = await h.call('POST', `/api/v1/tasks/${taskId}/cancel`);
    expect(canceled.body.state).toBe('canceled');

    const record = await until(() => remoteRecord(slow), (r) => r.calls.some((c) => c.method === 'CancelTask'), 'the remote to get CancelTask');
    const made = record.tasks.find((t) => t.message_id === asked.message_id);
    expect(made).toBeDefined();
    expect(record.calls.filter((c) => c.method === 'CancelTask')).toEqual([{ method: 'CancelTask', task_id: made!.task_id, message_id: null }]);
    // The remote answered that its task is canceled (the log holds its answer, noted on the exchange).
    const logged = (text: string) => text.split('\n').find((line) => line.includes('its task was canceled with ours') && line.includes(made!.task_id));
    const line = logged(await until(() => Promise.resolve(log.text()), (text) => logged(text) !== undefined, 'the answer to be logged'));
    expect(JSON.parse(line!)).toMatchObject({ agent_id: agent, thread_id: threadId, remote_task_id: made!.task_id, remote_state: 'canceled' });

    // Followed no more: a message written to the thread afterwards is not sent to the remote.
    await untilIdle(threadId);
    expect((await h.call('POST', `/api/v1/threads/${threadId}/messages`, { sender_agent_id: dana, content: 'slow again?' })).status).toBe(201);
    const after = await untilIdle(threadId);
    expect(after.filter((m) => m.sender_id === agent).map((m) => m.content)).toEqual(['starting']);
    const calls = (await remoteRecord(slow)).calls;
    expect(calls.slice(calls.findIndex((c) => c.method === 'CancelTask') + 1)).toEqual([]);
    expect(await taskOf(taskId)).toMatchObject({ state: 'canceled', artifacts: [] });
  });

  it('a task canceled while its remote A2A agent waits for the answer to its question (input-required): the remote gets CancelTask for that task', async () => {
    const { dana, agent, edge } = await teamWithRemote(helper.url);
    const { taskId, threadId } = await askTask(edge, dana, 'ask me, then never mind');
    await waitForState(taskId, 'input-required');
    const asked = (await messagesOf(h, threadId))[0]!;
    expect((await h.call('POST', `/api/v1/tasks/${taskId}/cancel`)).body.state).toBe('canceled');

    const record = await until(
      () => remoteRecord(helper),
      (r) => {
        const made = r.tasks.find((t) => t.message_id === asked.message_id);
        return made !== undefined && r.calls.some((c) => c.method === 'CancelTask' && c.task_id === made.task_id);
      },
      'the remote to get CancelTask',
    );
    const made = record.tasks.find((t) => t.message_id === asked.message_id)!;
    expect(record.calls.filter((c) => c.task_id === made.task_id).map((c) => c.method)).toEqual(['CancelTask']);
    const messages = await untilIdle(threadId);
    expect(messages.filter((m) => m.sender_id === agent).map((m) => m.content)).toEqual(['What is your name?']);
    expect(await taskOf(taskId)).toMatchObject({ state: 'canceled', artifacts: [] });
  });
  it("a task canceled while its remote A2A agent's exchange holds the thread's work row (it settles the remote's question as the cancel comes): once the row is parked, the remote gets CancelTask", async () => {
    const { dana, agent, edge } = await teamWithRemote(helper.url);
    const { taskId, threadId } = await askTask(edge, dana, 'ask me, then cancel as it parks');
    await waitForState(taskId, 'input-required');
    await untilIdle(threadId);
    const asked = (await messagesOf(h, threadId))[0]!;
    // The row held as by an exchange that has just settled the question and not parked yet.
    const token = '00000000-0000-4000-8000-000000000001';
    await h.db.query(`UPDATE agent_work SET lease_token = $3 WHERE agent_id = $1 AND thread_id = $2`, [agent, threadId, token]);
    expect((await h.call('POST', `/api/v1/tasks/${taskId}/cancel`)).body.state).toBe('canceled');
    // The exchange parks the row as the runner does after a question (due at once, its message handled).
    const [row] = await h.db.query<{ handled_seq: number; latest_seq: number }>(`SELECT handled_seq, latest_seq FROM agent_work WHERE agent_id = $1 AND thread_id = $2`, [agent, threadId]);
    await parkRow(h.db, { agent_id: agent, thread_id: threadId, token, failures: 0 }, { inMs: 0 }, { handledSeq: row!.latest_seq, failures: 0 });
    const record = await until(
      () => remoteRecord(helper),
      (r) => {
        const made = r.tasks.find((t) => t.message_id === asked.message_id);
        return made !== undefined && r.calls.some((c) => c.method === 'CancelTask' && c.task_id === made.task_id);
      },
      'the remote to get CancelTask',
    );
    const made = record.tasks.find((t) => t.message_id === asked.message_id)!;
    expect(record.calls.filter((c) => c.task_id === made.task_id).map((c) => c.method)).toEqual(['CancelTask']);
    expect(await taskOf(taskId)).toMatchObject({ state: 'canceled', artifacts: [] });
  });
});

describe('remote A2A agents: bounds on files', () => {
  // A server of its own, with small bounds on files (a2a/remote-files.ts `FileLimits`): all the
  // files of an exchange get 300 ms together (each alone up to ten minutes), a message sends at
  // most 30 bytes of attachments, and an exchange's call times out after 10 s.
  let bounded: Harness & { db: Db };
  let remote: Remote;
  beforeAll(async () => {
    bounded = await startHarnessWithDb('bounded', {
      options: {
        webhooks: { allowPrivate: true },
        logger: { level: 'info', stream: logCapture().stream },
        providerTimeoutMs: 10_000,
        remoteFileLimits: { fileTimeoutMs: 600_000, filesTimeoutMs: 300, stepBytes: 25 * 1024 * 1024, messageBytes: 30 },
      },
    });
    remote = await startRemote();
    remotes.push(remote);
  });
  afterAll(async () => {
    await bounded?.server.close();
  });

  const team = async () => {
    const made = await makeTeam(bounded, { humans: ['dana'], agents: [{ name: 'helper', a2a: { url: remote.url } }], edges: [['dana', 'helper']] });
    return { dana: made.id.dana!, agent: made.id.helper!, edge: made.edgeOf('dana', 'helper') };
  };

  it("a remote A2A agent whose file server never answers: its task completes, each file named as not kept because the answer's files took too long, and it is asked once", async () => {
    const { dana, edge } = await team();
    const created = await bounded.call('POST', `/api/v1/edges/${edge}/tasks`, { requester_id: dana, parts: [{ text: 'held files' }] });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const done = await until(
      async () => (await bounded.call('GET', `/api/v1/tasks/${created.body.task_id}`)).body as { state: string; artifacts: Array<{ parts: Array<{ text?: string; file?: unknown }> }> },
      (task) => task.state === 'completed',
      'the task to complete',
    );
    const parts = done.artifacts[0]!.parts;
    expect(parts[0]).toEqual({ text: 'held files for held files' });
    expect(parts.slice(1).map((p) => p.text)).toEqual(
      [1, 2, 3].map((n) => `[file: ${n}.bin (application/octet-stream) at ${remote.url.replace(/\/$/, '')}/held/${n}.bin, not kept: the files of this answer took more than 300 ms]`),
    );
    // Followed once: the slow files did not fail the exchange, which would be retried (GetTask, files fetched again).
    const asked = (await messagesOf(bounded, created.body.thread_id))[0]!;
    const record = await remoteRecord(remote);
    const made = record.tasks.find((t) => t.message_id === asked.message_id)!;
    expect(made).toBeDefined();
    expect(record.calls.filter((c) => c.task_id === made.task_id || c.message_id === asked.message_id).map((c) => c.method)).toEqual(['SendStreamingMessage']);
  });

  it("a person's message whose attachments pass what one message sends: the remote gets the bytes of those within it, and not the rest", async () => {
    const { dana, agent, edge } = await team();
    const upload = async (filename: string, text: string) => {
      const created = await bounded.call('POST', '/api/v1/attachments', { filename, content_type: 'text/plain', data_base64: Buffer.from(text).toString('base64') });
      expect(created.status).toBe(201);
      return created.body.attachment_id as string;
    };
    // 20 bytes each: the first fits in the 30 bytes a message sends, the second does not.
    const attachments = [await upload('first.txt', 'first file, 20 bytes'), await upload('second.txt', 'second file 20 bytes')];
    const opened = await bounded.call('POST', `/api/v1/edges/${edge}/threads`, { sender_agent_id: dana, content: 'files follow' });
    expect(opened.status, JSON.stringify(opened.body)).toBe(201);
    const threadId = opened.body.thread_id as string;
    await until(() => messagesOf(bounded, threadId), (ms) => ms.some((m) => m.sender_id === agent), "the remote agent's first answer");
    const posted = await bounded.call('POST', `/api/v1/threads/${threadId}/messages`, { sender_agent_id: dana, content: 'two files', attachments });
    expect(posted.status, JSON.stringify(posted.body)).toBe(201);
    await until(() => messagesOf(bounded, threadId), (ms) => ms.filter((m) => m.sender_id === agent).length === 2, "the remote agent's second answer");
    const sent = (await messagesOf(bounded, threadId)).find((m) => m.content === 'two files')!;
    const record = await remoteRecord(remote);
    expect(record.files.filter((f) => f.message_id === sent.message_id)).toEqual([{ message_id: sent.message_id, files: [{ name: 'first.txt', media_type: 'text/plain', text: 'first file, 20 bytes' }] }]);
  });
});
