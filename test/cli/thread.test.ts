/**
 * `teamctl thread send | show | list | follow | stop` against a real acs-server: in-process through
 * `runCli`, and `follow` as a user runs it (a child process stopped with Ctrl-C), piped (a reply
 * as it is written on a terminal: test/cli/terminal.test.ts). The tool calls of agents' turns
 * (contract §11) come from an echo agent with the team tools: echo calls one tool per `call TOOL`
 * or `ask PEER: …` line of the message it answers, so they are known ahead. Replies as they are
 * written (contract §13) come from an echo agent slowed down by `ACS_ECHO_STREAM_MS`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolCall } from '../../api/agent-tools.ts';
import { AcsClient } from '../../client/acs-client.ts';
import { startServer } from '../../service/index.ts';
import { durationText, shownValue } from '../../cli/commands/thread-tool-calls.ts';
import { runTeamctl } from '../support/cli.ts';
import type { CliRun } from '../support/cli.ts';
import { startStreamDropProxy } from './stream-drop-proxy.ts';
import type { CliIo } from '../../cli/io.ts';
import { createReplyPrinter, shownContent } from '../../cli/commands/thread-replies.ts';
import type { ThreadStreamItem } from '../../client/thread-stream.ts';

let server: Awaited<ReturnType<typeof startServer>>;
let apiKey: string;
let client: AcsClient;
let dana: string;
let triager: string;
let threadId: string;
/** Team ops: dana, clerk (echo with the team tools; list_edges needs dana's approval), researcher (echo); edges dana–clerk, clerk–researcher. */
let ops: { dana: string; clerk: string; edge: string };

const teamctl = (args: string[]): Promise<CliRun> => runTeamctl(args, { ACS_BASE_URL: server.url, ACS_API_KEY: apiKey });

beforeAll(async () => {
  server = await startServer({ inMemory: true, port: 0, tickMs: 50, logger: false });
  const org = await server.provisionOrganization('cli-threads');
  apiKey = org.api_key;
  client = new AcsClient({ baseUrl: server.url, apiKey });
  const team = await client.createTeam(org.org_id, { team_name: 'desk' });
  dana = (await client.createHuman(team.team_id, { name: 'dana' })).human_id;
  triager = (await client.createHuman(team.team_id, { name: 'triager' })).human_id;
  const eve = (await client.createHuman(team.team_id, { name: 'eve' })).human_id;
  const edge = await client.createEdge(team.team_id, [dana, triager]);
  await client.createEdge(team.team_id, [dana, eve]);
  threadId = (await client.openThread(edge.edge_id, { sender_agent_id: dana, subject: 'Ticket 7', content: 'The VPN is down' })).thread_id;
  await client.putProviderKey(org.org_id, 'echo', 'echo-key');
  const opsTeam = await client.createTeam(org.org_id, { team_name: 'ops' });
  const opsDana = (await client.createHuman(opsTeam.team_id, { name: 'dana' })).human_id;
  const clerk = (await client.createAgent(opsTeam.team_id, { name: 'clerk', provider: 'echo', tools: { team: true, approval: { by: 'dana', tools: ['list_edges'] } } })).agent_id;
  const researcher = (await client.createAgent(opsTeam.team_id, { name: 'researcher', provider: 'echo' })).agent_id;
  const opsEdge = await client.createEdge(opsTeam.team_id, [opsDana, clerk]);
  await client.createEdge(opsTeam.team_id, [clerk, researcher]);
  ops = { dana: opsDana, clerk, edge: opsEdge.edge_id };
});

/** Polls `read` until `done` holds (30 s at most), then returns what it read. */
async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, what: string): Promise<T> {
  for (let i = 0; i < 1200; i++) {
    const value = await read();
    if (done(value)) return value;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** Opens a thread from ops' dana to clerk with `content` and waits until clerk's turn has made `calls` tool calls. */
async function askClerk(content: string, calls: number): Promise<{ threadId: string; calls: ToolCall[] }> {
  const opened = await client.openThread(ops.edge, { sender_agent_id: ops.dana, content });
  const made = await until(() => client.allToolCalls(opened.thread_id), (c) => c.length === calls, `${calls} tool calls`);
  return { threadId: opened.thread_id, calls: made };
}

/** Waits until clerk's reply is in the thread (the turn is over). */
function clerkReplied(thread: string): Promise<unknown> {
  return until(() => client.getThread(thread), (page) => page.messages.some((m) => m.sender_id === ops.clerk), "clerk's reply");
}

/** Starts `teamctl ARGS` as a user runs it (piped: no terminal), its stdout and stderr collected in `output()`; on `at` (default the first server). */
function startTeamctl(args: string[], at: { url: string; key: string } = { url: server.url, key: apiKey }): { child: ChildProcess; output: () => string; exited: Promise<number | null> } {
  const child = spawn(process.execPath, ['bin/teamctl.ts', ...args], {
    cwd: resolve(import.meta.dirname, '..', '..'),
    env: { ...process.env, ACS_BASE_URL: at.url, ACS_API_KEY: at.key },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
  const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
  return { child, output: () => output, exited };
}

/** Waits until `text` is in what `output` returns (30 s at most). */
async function untilPrinted(output: () => string, text: string | RegExp): Promise<void> {
  for (let i = 0; i < 300 && !(typeof text === 'string' ? output().includes(text) : text.test(output())); i++) await new Promise((r) => setTimeout(r, 100));
  if (typeof text === 'string') expect(output()).toContain(text);
  else expect(output()).toMatch(text);
}

afterAll(async () => {
  await server?.close();
});

describe('teamctl thread', () => {
  it('thread send and show: a message sent by participant name shows up in order with names, and --json names the senders', async () => {
    const sent = await teamctl(['thread', 'send', threadId, '--from', 'triager', '--content', 'Looking into it']);
    expect(sent.code, sent.stderr).toBe(0);
    const shown = await teamctl(['thread', 'show', threadId]);
    expect(shown.code).toBe(0);
    const lines = shown.stdout.trim().split('\n');
    expect(lines[0]).toContain('Thread');
    expect(lines[0]).toContain('"Ticket 7" in team desk');
    expect(lines.slice(1).map((l) => l.replace(/^\S+ /, ''))).toEqual(['dana: The VPN is down', 'triager: Looking into it']);
    const json = JSON.parse((await teamctl(['thread', 'show', threadId, '--json'])).stdout) as { messages: Array<{ sender: string; content: string }> };
    expect(json.messages.map((m) => [m.sender, m.content])).toEqual([['dana', 'The VPN is down'], ['triager', 'Looking into it']]);
  });

  it('thread send: a participant who is not on the thread\'s edge is refused and nothing is written', async () => {
    const before = (await client.getThread(threadId)).message_count;
    const result = await teamctl(['thread', 'send', threadId, '--from', 'eve', '--content', 'me too']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('error[not_a_participant]');
    expect((await client.getThread(threadId)).message_count).toBe(before);
  });

  it('thread list: lists the team\'s threads with who is on them; --between keeps one pair, and a pair with no edge is refused by name', async () => {
    const all = await teamctl(['thread', 'list', '--team', 'desk']);
    expect(all.code).toBe(0);
    expect(all.stdout).toContain(threadId);
    expect(all.stdout).toContain('dana <-> triager');
    const none = await teamctl(['thread', 'list', '--team', 'desk', '--between', 'dana,eve']);
    expect(none.stdout.trim()).toBe('No threads in team desk between dana,eve.');
    const refused = await teamctl(['thread', 'list', '--team', 'desk', '--between', 'triager,eve']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('no edge joins triager and eve in team desk');
  });

  it('thread open: the same participant at both ends is refused by name, and no thread is opened', async () => {
    const before = (await teamctl(['thread', 'list', '--team', 'desk', '--json'])).stdout;
    const result = await teamctl(['thread', 'open', '--team', 'desk', '--from', 'dana', '--to', 'dana', '--content', 'hello me']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('--from and --to both name dana');
    expect((await teamctl(['thread', 'list', '--team', 'desk', '--json'])).stdout).toBe(before);
  });

  it('thread follow: prints the thread, then each message as it arrives, and Ctrl-C ends it with exit 0', async () => {
    const { child, output, exited } = startTeamctl(['thread', 'follow', threadId]);
    try {
      await untilPrinted(output, 'dana: The VPN is down');
      await client.appendMessage(threadId, { sender_agent_id: triager, content: 'Fixed: the certificate had expired' });
      await untilPrinted(output, 'triager: Fixed: the certificate had expired');
      child.kill('SIGINT');
      expect(await exited).toBe(0);
    } finally {
      child.kill('SIGKILL');
    }
  });
});

describe("teamctl thread: the tool calls of agents' turns", () => {
  it("thread show: an agent's tool calls are printed under its reply, one plain line each: tool, whom it reached, status, duration", async () => {
    const { threadId: thread } = await askClerk('ask researcher: what is X?\ncall list_threads\ncall nope', 3);
    await clerkReplied(thread);
    const shown = await teamctl(['thread', 'show', thread]);
    expect(shown.code, shown.stderr).toBe(0);
    const lines = shown.stdout.trimEnd().split('\n');
    const reply = lines.findIndex((l) => / clerk: echo: ask researcher/.test(l));
    expect(reply).toBeGreaterThan(1);
    // The reply's own lines (its content has several), then the turn.
    const turn = lines.indexOf("  clerk's turn: 3 tool calls");
    expect(turn).toBeGreaterThan(reply);
    expect(lines.slice(turn + 1).map((l) => l.replace(/\s+/g, ' ').trim())).toEqual([
      expect.stringMatching(/^ask -> researcher completed \d+(\.\d)? m?s$/),
      expect.stringMatching(/^list_threads - completed \d+(\.\d)? m?s$/),
      expect.stringMatching(/^nope - failed \(unknown_tool\) \d+(\.\d)? m?s$/),
    ]);
    // Collapsed: no arguments or results; and plain text off a terminal.
    expect(shown.stdout).not.toContain('arguments:');
    expect(shown.stdout).not.toContain('\u001b');
    // The message clerk answered (three lines) has nothing under it: the turn is under the reply.
    expect(lines.slice(1, 5)).toEqual([expect.stringMatching(/ dana: ask researcher: what is X\?$/), 'call list_threads', 'call nope', expect.stringMatching(/ clerk: echo: ask researcher/)]);
  });

  it('thread show --tool-calls: each call shows its arguments and its result (pretty JSON, long ones cut) or its error', async () => {
    const { threadId: thread } = await askClerk('ask researcher: what is Y?\ncall whoami\ncall nope', 3);
    await clerkReplied(thread);
    const shown = await teamctl(['thread', 'show', thread, '--tool-calls']);
    expect(shown.code, shown.stderr).toBe(0);
    const text = shown.stdout;
    expect(text).toContain('      arguments: {"peer":"researcher","content":"what is Y?"}');
    expect(text).toContain('        "content": "echo: what is Y?",');
    expect(text).toContain('      arguments: {}');
    expect(text).toMatch(/ {6}error: unknown_tool: no tool named nope/);
    // whoami's result (clerk with its tools and edges) is longer than 20 lines: cut, saying how to see it all.
    const whoami = text.slice(text.indexOf('    whoami'));
    expect(whoami).toContain('      result:\n        {\n          "agent": {');
    expect(whoami).toMatch(/ {8}… \(cut: \d+ more lines; -o json shows all\)/);
  });

  it('thread show -o json: the messages and the tool calls, each with the names of its agent and of whom it waited on', async () => {
    const { threadId: thread, calls } = await askClerk('ask researcher: what is Z?', 1);
    await clerkReplied(thread);
    for (const args of [['-o', 'json'], ['--json']]) {
      const shown = await teamctl(['thread', 'show', thread, ...args]);
      expect(shown.code, shown.stderr).toBe(0);
      const json = JSON.parse(shown.stdout) as { messages: Array<{ sender: string }>; tool_calls: Array<ToolCall & { agent: string; waiting_on_name: string | null }> };
      expect(json.messages.map((m) => m.sender)).toEqual(['dana', 'clerk']);
      expect(json.tool_calls).toEqual([{ ...(await client.allToolCalls(thread))[0], agent: 'clerk', waiting_on_name: 'researcher' }]);
      expect(json.tool_calls[0]!.tool_call_id).toBe(calls[0]!.tool_call_id);
    }
    const refused = await teamctl(['thread', 'show', thread, '-o', 'yaml']);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('yaml');
  });

  it('thread show: a turn still waiting for an approval shows under the message it answers, and under its reply once approved', async () => {
    const { threadId: thread, calls } = await askClerk('call list_edges', 1);
    const waiting = await until(() => client.allToolCalls(thread), (c) => c[0]!.status === 'awaiting_approval', 'the approval question');
    const open = await teamctl(['thread', 'show', thread]);
    expect(open.code, open.stderr).toBe(0);
    const lines = open.stdout.trimEnd().split('\n');
    expect(lines[1]).toMatch(/ dana: call list_edges$/);
    expect(lines[2]).toBe("  clerk's turn (no reply yet): 1 tool call");
    expect(lines[3]!.replace(/\s+/g, ' ').trim()).toMatch(/^list_edges approval by dana awaiting_approval \d+(\.\d)? m?s so far$/);
    // dana approves in the thread the question came in.
    const approved = await teamctl(['thread', 'send', waiting[0]!.waiting_on!.thread_id, '--from', 'dana', '--content', 'approve']);
    expect(approved.code, approved.stderr).toBe(0);
    await clerkReplied(thread);
    const done = (await teamctl(['thread', 'show', thread])).stdout.trimEnd().split('\n');
    expect(done[1]).toMatch(/ dana: call list_edges$/);
    expect(done[2]).toMatch(/ clerk: echo: call list_edges$/);
    const turn = done.indexOf("  clerk's turn: 1 tool call");
    expect(turn).toBeGreaterThan(2);
    expect(done[turn + 1]!.replace(/\s+/g, ' ').trim()).toMatch(/^list_edges approval by dana completed \d+(\.\d)? m?s$/);
    expect(calls[0]!.tool).toBe('list_edges');
  });

  it('thread follow: prints each tool call as it starts and ends, with the reply, until Ctrl-C', async () => {
    const opened = await client.openThread(ops.edge, { sender_agent_id: ops.dana, content: 'hello' });
    await clerkReplied(opened.thread_id);
    const { child, output, exited } = startTeamctl(['thread', 'follow', opened.thread_id]);
    try {
      await untilPrinted(output, 'clerk: echo: hello');
      const sent = await teamctl(['thread', 'send', opened.thread_id, '--from', 'dana', '--content', 'call list_edges']);
      expect(sent.code, sent.stderr).toBe(0);
      await untilPrinted(output, 'clerk -> list_edges (approval by dana): awaiting_approval');
      const [call] = await client.allToolCalls(opened.thread_id);
      await client.appendMessage(call!.waiting_on!.thread_id, { sender_agent_id: ops.dana, content: 'approve' });
      await untilPrinted(output, /clerk -> list_edges \(approval by dana\): completed, \d/);
      await untilPrinted(output, 'clerk: echo: call list_edges');
      // Each state once: the stream and the history overlap without repeating a line.
      expect(output().match(/list_edges \(approval by dana\): awaiting_approval/g)).toHaveLength(1);
      child.kill('SIGINT');
      expect(await exited).toBe(0);
    } finally {
      child.kill('SIGKILL');
    }
  });
});

describe('teamctl thread: replies as they are written, piped', () => {
  /** A server of its own whose echo writes a word every 60 ms (`ACS_ECHO_STREAM_MS`): replies slow enough to stop and to cut. */
  let paced: Awaited<ReturnType<typeof startServer>>;
  let pacedKey: string;
  let pacedClient: AcsClient;
  /** Team studio: dana, bob (humans), writer (echo); edges dana–writer, dana–bob. */
  let studio: { dana: string; writer: string; edge: string; bobEdge: string };
  const teamctlPaced = (args: string[]): Promise<CliRun> => runTeamctl(args, { ACS_BASE_URL: paced.url, ACS_API_KEY: pacedKey });
  /** `count` words, numbered so that every prefix of a reply differs. */
  const words = (count: number, label: string) => Array.from({ length: count }, (_, i) => `${label}${i + 1}`).join(' ');

  beforeAll(async () => {
    paced = await startServer({ inMemory: true, port: 0, tickMs: 50, logger: false, env: { ...process.env, ACS_ECHO_STREAM_MS: '60' } });
    const org = await paced.provisionOrganization('cli-streams');
    pacedKey = org.api_key;
    pacedClient = new AcsClient({ baseUrl: paced.url, apiKey: pacedKey });
    await pacedClient.putProviderKey(org.org_id, 'echo', 'echo-key');
    const team = await pacedClient.createTeam(org.org_id, { team_name: 'studio' });
    const danaId = (await pacedClient.createHuman(team.team_id, { name: 'dana' })).human_id;
    const bob = (await pacedClient.createHuman(team.team_id, { name: 'bob' })).human_id;
    const writer = (await pacedClient.createAgent(team.team_id, { name: 'writer', provider: 'echo' })).agent_id;
    const edge = (await pacedClient.createEdge(team.team_id, [danaId, writer])).edge_id;
    const bobEdge = (await pacedClient.createEdge(team.team_id, [danaId, bob])).edge_id;
    studio = { dana: danaId, writer, edge, bobEdge };
  });
  afterAll(async () => {
    await paced?.close();
  });

  /** A thread of dana with writer whose first exchange (`hello`, `echo: hello`) is done. */
  async function threadWithWriter(): Promise<string> {
    const opened = await pacedClient.openThread(studio.edge, { sender_agent_id: studio.dana, content: 'hello' });
    await until(() => pacedClient.getThread(opened.thread_id), (page) => page.messages.length === 2, "writer's first reply");
    return opened.thread_id;
  }

  /** Resolves once `count` deltas of a reply in `thread` were written (read on the thread's stream). */
  async function deltasWritten(thread: string, count: number): Promise<void> {
    const stop = new AbortController();
    let seen = 0;
    for await (const item of pacedClient.streamThread(thread, { after: '0', signal: stop.signal })) {
      if (item.type === 'message.delta' && ++seen === count) break;
    }
    stop.abort();
  }

  it('thread send --wait, piped: the reply is printed once it is posted, as one plain line; --json gives the message and the reply', async () => {
    const thread = await threadWithWriter();
    const content = words(12, 'piped');
    const sent = await teamctlPaced(['thread', 'send', thread, '--from', 'dana', '--content', content, '--wait', '60']);
    expect(sent.code, sent.stderr).toBe(0);
    const stored = (await pacedClient.getThread(thread)).messages;
    expect(sent.stdout).toBe(`Sent ${stored[2]!.message_id} to thread ${thread}.\nwriter: echo: ${content}\n`);
    // Off a terminal the pieces are not printed: no partial line, no control character.
    expect(sent.stdout).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f]/);
    const json = await teamctlPaced(['thread', 'send', thread, '--from', 'dana', '--content', 'once more', '--wait', '60', '--json']);
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({ message: { sender: 'dana', content: 'once more' }, reply: { sender: 'writer', content: 'echo: once more', stopped: false } });
  });

  it('thread send --wait: no reply within the wait exits 4 (timed_out), the message sent', async () => {
    const opened = await pacedClient.openThread(studio.bobEdge, { sender_agent_id: studio.dana, content: 'bob?' });
    const result = await teamctlPaced(['thread', 'send', opened.thread_id, '--from', 'dana', '--content', 'anyone there?', '--wait', '1']);
    expect(result.code).toBe(4);
    expect(result.stderr).toContain('error[timed_out]: no reply from bob within 1 s');
    expect((await pacedClient.getThread(opened.thread_id)).messages.map((m) => m.content)).toEqual(['bob?', 'anyone there?']);
  });

  it('thread stop: the reply being written stops; what was written is posted, and send --wait and thread show say [stopped]', async () => {
    const thread = await threadWithWriter();
    const content = words(120, 'long');
    const waiting = teamctlPaced(['thread', 'send', thread, '--from', 'dana', '--content', content, '--wait', '60']);
    await deltasWritten(thread, 4);
    const stopped = await teamctlPaced(['thread', 'stop', thread]);
    expect(stopped.code, stopped.stderr).toBe(0);
    expect(stopped.stdout).toBe(`Asked 1 agent to stop writing in thread ${thread}: what was written so far is posted as the reply, marked [stopped].\n`);
    const sent = await waiting;
    expect(sent.code, sent.stderr).toBe(0);
    const reply = (await pacedClient.getThread(thread)).messages.at(-1)!;
    expect(reply).toMatchObject({ sender_id: studio.writer, stopped: true });
    expect(`echo: ${content}`.startsWith(reply.content)).toBe(true);
    expect(reply.content.length).toBeLessThan(`echo: ${content}`.length);
    expect(sent.stdout.trimEnd().split('\n').at(-1)).toBe(`writer: ${reply.content} [stopped]`);
    const shown = await teamctlPaced(['thread', 'show', thread]);
    expect(shown.stdout.trimEnd().split('\n').at(-1)).toBe(`${reply.sent_at} writer: ${reply.content} [stopped]`);
    // Nothing is being written any more.
    expect((await teamctlPaced(['thread', 'stop', thread])).stdout).toBe(`Nothing was being written in thread ${thread}.\n`);
    expect(JSON.parse((await teamctlPaced(['thread', 'stop', thread, '--json'])).stdout)).toEqual({ thread_id: thread, stopping: 0 });
    expect((await pacedClient.getThread(thread)).messages.at(-1)!.message_id).toBe(reply.message_id);
  });

  it('thread follow, piped: a reply is printed whole once posted; its stream, cut three times, resumes from the last position and prints nothing twice', async () => {
    const proxy = await startStreamDropProxy(paced.url);
    const thread = await threadWithWriter();
    const { child, output, exited } = startTeamctl(['thread', 'follow', thread], { url: proxy.url, key: pacedKey });
    try {
      await untilPrinted(output, 'writer: echo: hello');
      const content = words(40, 'cut');
      await pacedClient.appendMessage(thread, { sender_agent_id: studio.dana, content });
      // Cut while the reply is written: after a few deltas, and again once the stream resumed.
      for (const [cut, deltas] of [[1, 3], [2, 8]] as const) {
        await until(async () => proxy.deltas(), (n) => n >= deltas, `${deltas} deltas relayed`);
        expect(proxy.dropStreams()).toBe(1);
        await until(async () => proxy.streamRequests.length, (n) => n > cut, `resume ${cut}`);
      }
      await untilPrinted(output, `writer: echo: ${content}`);
      // Cut between two messages, and a message written while it is down.
      expect(proxy.dropStreams()).toBe(1);
      await pacedClient.appendMessage(thread, { sender_agent_id: studio.dana, content: 'while you were away' });
      await untilPrinted(output, 'writer: echo: while you were away');
      child.kill('SIGINT');
      expect(await exited).toBe(0);
      // Each resume named where it left off.
      expect(proxy.streamRequests.length).toBeGreaterThanOrEqual(4);
      expect(proxy.streamRequests[0]).toBeNull();
      for (const position of proxy.streamRequests.slice(1)) expect(position).toMatch(/^\d+(\.\d+)?$/);
      const lines = output().trimEnd().split('\n').map((l) => l.replace(/^\S+ /, ''));
      expect(lines).toEqual(['dana: hello', 'writer: echo: hello', `dana: ${content}`, `writer: echo: ${content}`, 'dana: while you were away', 'writer: echo: while you were away']);
    } finally {
      child.kill('SIGKILL');
      await proxy.close();
    }
  });
});

describe('teamctl thread: how a reply is printed as it is written', () => {
  const reply = '00000000-0000-4000-8000-0000000000aa';
  const agent = '00000000-0000-4000-8000-0000000000bb';
  const thread = '00000000-0000-4000-8000-0000000000cc';
  const delta = (index: number, text: string): ThreadStreamItem => ({ id: `1.${index + 1}`, type: 'message.delta', data: { thread_id: thread, message_id: reply, sender_id: agent, index, text } });
  const posted = (content: string, stopped = false): ThreadStreamItem => ({
    id: '2',
    type: 'message.created',
    data: { message_id: reply, thread_id: thread, sender_id: agent, content, attachments: [], expects_reply: false, stopped, sent_at: '2026-12-06T09:00:00.000Z' },
  });
  /** A printer on a terminal (with `write`) or piped, and what it wrote. */
  function printer(terminal: boolean) {
    let out = '';
    const io: CliIo = { stdout: (t) => void (out += `${t}\n`), stderr: () => {}, env: {}, isTTY: terminal, ...(terminal ? { write: (t: string) => void (out += t) } : {}) };
    const p = createReplyPrinter(io, { nameOf: () => 'writer', lineOf: (m) => `writer: ${shownContent(m)}` });
    return { p, out: () => out };
  }

  it('on a terminal: the deltas are appended to one line (each once), which the posted reply ends; a stopped one says [stopped]', () => {
    const { p, out } = printer(true);
    for (const item of [delta(0, 'echo: '), delta(1, 'one '), delta(1, 'one '), delta(2, 'two')]) p.item(item);
    expect(out()).toBe('writer: echo: one two');
    p.item(posted('echo: one two', true));
    p.item(posted('echo: one two', true));
    expect(out()).toBe('writer: echo: one two [stopped]\n');
  });

  it('on a terminal: a step ends the line (that text was not the reply), a restart says so, and the reply starts afresh', () => {
    const { p, out } = printer(true);
    p.item(delta(0, 'Let me look.'));
    p.item({ id: '1.2', type: 'turn.step', data: { thread_id: thread, message_id: reply, sender_id: agent, step: 1, tool_call_ids: [] } });
    p.line('writer -> whoami: completed');
    p.item(delta(1, 'half'));
    p.item({ id: '1.4', type: 'turn.restarted', data: { thread_id: thread, message_id: reply, sender_id: agent } });
    p.item(delta(2, 'whole'));
    p.item(posted('whole'));
    expect(out()).toBe('writer: Let me look.\nwriter -> whoami: completed\nwriter: half [restarted]\nwriter: whole\n');
  });

  it('on a terminal: a line printed while a reply grows ends its line; the reply goes on after "…", and a reply that differs from what was shown is printed whole', () => {
    const { p, out } = printer(true);
    p.item(delta(0, 'first '));
    p.line('dana: hi');
    p.item(delta(1, 'second'));
    p.item(posted('first second and more'));
    expect(out()).toBe('writer: first \ndana: hi\nwriter: … second\nwriter: first second and more\n');
  });

  it('piped: only the posted reply is printed, once, as one line; a message printed before (the history) is not printed again', () => {
    const { p, out } = printer(false);
    for (const item of [delta(0, 'echo: '), delta(1, 'one')]) p.item(item);
    expect(out()).toBe('');
    p.item(posted('echo: one', true));
    p.item(posted('echo: one', true));
    expect(out()).toBe('writer: echo: one [stopped]\n');
    const again = printer(false);
    again.p.printed(reply);
    again.p.item(delta(0, 'x'));
    again.p.item(posted('x'));
    expect(again.out()).toBe('');
  });
});

describe('teamctl thread: how a tool call\'s values and durations read', () => {
  it('shownValue: a result the service cut at 64 KiB shows its text and says how long it was', () => {
    expect(shownValue({ truncated: true, bytes: 70_000, text: 'first part' })).toEqual(['first part', '(the service kept the first 64 KiB of 70000 bytes)']);
  });

  it('shownValue: one very long line is cut at 2,000 characters, saying how long it was', () => {
    const lines = shownValue('x'.repeat(5000));
    expect(lines).toEqual([`${'x'.repeat(2000)}…`, '… (cut: 5000 characters in all; -o json shows all)']);
  });

  it('durationText: milliseconds, seconds, minutes and hours as a person reads them', () => {
    expect([54, 1234, 184_000, 7_500_000].map(durationText)).toEqual(['54 ms', '1.2 s', '3 min 4 s', '2 h 5 min']);
  });
});
