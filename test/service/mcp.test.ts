/**
 * The MCP endpoint (contract §7) against a real acs-server on a free port, through the official
 * SDK's own Client over Streamable HTTP: every tool, every error path, a conversation between a
 * human (REST) and an external agent (MCP), isolation, and keys. Runs on PGlite and, in the
 * `postgres` project, on PostgreSQL, where two server instances on one database also show that
 * `wait_for_messages` is woken across processes.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { randomBytes } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReadThreadResult, SendMessageResult, WaitForMessagesResult, WhoamiResult } from '../../api/mcp-tools.ts';
import { startServer, type RunningServer } from '../../service/index.ts';
import { callTool, connectMcp, toolError } from '../support/mcp.ts';
import { createTestDatabase, postgresBackend, testDatabaseUrl, type TestDatabase } from '../support/postgres.ts';
import { request, startHarness, type Harness, type Reply } from './helpers.ts';
import { until } from './turn-helpers.ts';

const accept = { accept: 'application/json, text/event-stream' };
const unknownId = '6f1f3c1e-0000-4000-8000-000000000000';
const notFound = /^not_found: /;

let h: Harness;
const clients: Client[] = [];

/** REST as the harness organization (organization key). */
const rest = (method: string, path: string, body?: unknown): Promise<Reply> => h.call(method, `/api/v1${path}`, body);

async function created(method: string, path: string, body?: unknown, key = h.apiKey): Promise<any> {
  const reply = await request(`${h.server.url}/api/v1${path}`, method, body, { 'x-api-key': key });
  if (reply.status !== 201 && reply.status !== 200) throw new Error(`fixture ${method} ${path}: ${reply.status} ${JSON.stringify(reply.body)}`);
  return reply.body;
}

async function mcp(key: string, path?: string): Promise<Client> {
  const client = await connectMcp(h.server.url, key, path);
  clients.push(client);
  return client;
}

/** A fresh team: external agent `bot`, agent `carl`, human `ann`; edges ann–bot, bot–carl and ann–carl (bot not on it); bot's MCP client. */
async function scenario(key = h.apiKey, orgId = h.orgId) {
  const team = await created('POST', `/organizations/${orgId}/teams`, { team_name: `mcp-${randomBytes(4).toString('hex')}` }, key);
  const bot = await created('POST', `/teams/${team.team_id}/agents`, { name: 'bot', instructions: 'answer ann' }, key);
  const carl = await created('POST', `/teams/${team.team_id}/agents`, { name: 'carl' }, key);
  const ann = await created('POST', `/teams/${team.team_id}/humans`, { name: 'ann' }, key);
  const annBot = await created('POST', `/teams/${team.team_id}/edges`, { participants: [ann.human_id, bot.agent_id] }, key);
  const botCarl = await created('POST', `/teams/${team.team_id}/edges`, { participants: [bot.agent_id, carl.agent_id] }, key);
  const annCarl = await created('POST', `/teams/${team.team_id}/edges`, { participants: [ann.human_id, carl.agent_id] }, key);
  const mcpKey = await created('POST', `/agents/${bot.agent_id}/mcp-keys`, undefined, key);
  return {
    teamId: team.team_id as string,
    teamName: team.team_name as string,
    bot: bot.agent_id as string,
    carl: carl.agent_id as string,
    ann: ann.human_id as string,
    annBot: annBot.edge_id as string,
    botCarl: botCarl.edge_id as string,
    annCarl: annCarl.edge_id as string,
    mcpKey: mcpKey.mcp_key as string,
    mcpKeyId: mcpKey.key_id as string,
  };
}

/** ann opens a thread with bot over REST; returns its id and the first message's id. */
async function annOpens(s: Awaited<ReturnType<typeof scenario>>, content: string, subject = ''): Promise<{ threadId: string; firstId: string }> {
  const thread = await created('POST', `/edges/${s.annBot}/threads`, { sender_agent_id: s.ann, content, subject });
  const page = await rest('GET', `/threads/${thread.thread_id}`);
  return { threadId: thread.thread_id, firstId: page.body.messages[0].message_id };
}

async function annSays(s: Awaited<ReturnType<typeof scenario>>, threadId: string, content: string): Promise<string> {
  return (await created('POST', `/threads/${threadId}/messages`, { sender_agent_id: s.ann, content })).message_id;
}

/**
 * Checks that a wait is still held after a few round trips to the server, so what the test does
 * next happens while it waits (if not, the wait would still answer correctly, proving less).
 */
async function stillHeld(waiting: Promise<unknown>, roundTrip: () => Promise<unknown> = () => rest('GET', '/organizations')): Promise<void> {
  let settled = false;
  void waiting.then(
    () => (settled = true),
    () => (settled = true),
  );
  for (let i = 0; i < 3; i += 1) await roundTrip();
  expect(settled).toBe(false);
}

/** The wait's answer, which must come from a wake-up: a wait that is not woken answers only when its 30 s run out. */
async function woken<T>(waiting: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const outcome = await Promise.race([waiting, new Promise<'still held'>((resolve) => (timer = setTimeout(() => resolve('still held'), 15_000)))]);
  clearTimeout(timer);
  expect(outcome).not.toBe('still held');
  return outcome as T;
}

beforeAll(async () => {
  h = await startHarness();
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  await h.server.close();
});

describe('MCP endpoint: tools', () => {
  let s: Awaited<ReturnType<typeof scenario>>;
  let bot: Client;
  beforeAll(async () => {
    s = await scenario();
    bot = await mcp(s.mcpKey);
  });

  it('tools/list: offers the seven tools of §7 and the four task tools of §12, each with an object input schema and an object output schema', async () => {
    const { tools } = await bot.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([
      'add_artifact',
      'get_task',
      'list_edges',
      'list_tasks',
      'list_threads',
      'open_thread',
      'read_thread',
      'send_message',
      'update_task',
      'wait_for_messages',
      'whoami',
    ]);
    for (const tool of tools) {
      expect(tool.inputSchema.type, tool.name).toBe('object');
      expect(tool.outputSchema?.type, tool.name).toBe('object');
      expect(tool.description?.length, tool.name).toBeGreaterThan(20);
    }
  });

  it('tools/list: input schemas are the REST bodies without the sender (the key fixes it), unknown arguments refused', async () => {
    const { tools } = await bot.listTools();
    const input = (name: string) => tools.find((t) => t.name === name)!.inputSchema as { properties: Record<string, any>; required?: string[]; additionalProperties?: boolean };
    expect(Object.keys(input('send_message').properties).sort()).toEqual(['attachments', 'content', 'expects_reply', 'thread_id']);
    expect(Object.keys(input('open_thread').properties).sort()).toEqual(['channel', 'content', 'edge_id', 'expects_reply', 'subject']);
    expect(Object.keys(input('read_thread').properties).sort()).toEqual(['after', 'limit', 'thread_id']);
    expect(input('wait_for_messages').required).toContain('timeout_seconds');
    expect(input('wait_for_messages').properties.timeout_seconds).toMatchObject({ minimum: 0, maximum: 30 });
    expect(input('send_message').properties.content).toMatchObject({ minLength: 1, maxLength: 32768 });
    for (const tool of tools) expect(input(tool.name).additionalProperties, tool.name).toBe(false);
  });

  it('whoami: names the key\'s agent, its team and its organization', async () => {
    const me = WhoamiResult.parse(await callTool(bot, 'whoami'));
    expect(me).toMatchObject({ team_id: s.teamId, team_name: s.teamName, org_id: h.orgId, org_name: 'acme' });
    expect(me.agent).toMatchObject({ agent_id: s.bot, name: 'bot', instructions: 'answer ann', provider: null });
  });

  it('list_edges: the agent\'s edges with each peer\'s id, kind and name, and not the edge it is not on', async () => {
    const { edges } = await callTool(bot, 'list_edges');
    expect(edges.map((e: any) => e.edge_id)).toEqual([s.annBot, s.botCarl]);
    expect(edges.map((e: any) => e.peer)).toEqual([
      { participant_id: s.ann, kind: 'human', name: 'ann' },
      { participant_id: s.carl, kind: 'agent', name: 'carl' },
    ]);
    expect(edges[0]).toMatchObject({ team_id: s.teamId, participants: [s.ann, s.bot] });
  });

  it('open_thread: opens a thread on the agent\'s edge with the agent as sender, as REST shows it', async () => {
    const thread = await callTool(bot, 'open_thread', { edge_id: s.botCarl, content: 'hello carl', subject: 'Plans', channel: 'chat' });
    expect(thread).toMatchObject({ edge_id: s.botCarl, team_id: s.teamId, subject: 'Plans', channel: 'chat', message_count: 1, unread_count: 0 });
    const page = await rest('GET', `/threads/${thread.thread_id}`);
    expect(page.body.messages.map((m: any) => [m.sender_id, m.content])).toEqual([[s.bot, 'hello carl']]);
  });

  it('send_message: appends a message as the agent; REST sees it after the earlier ones', async () => {
    const { threadId } = await annOpens(s, 'first');
    const message = SendMessageResult.parse(await callTool(bot, 'send_message', { thread_id: threadId, content: '  reply  ' }));
    expect(message).toMatchObject({ thread_id: threadId, sender_id: s.bot, content: 'reply', attachments: [] });
    const page = await rest('GET', `/threads/${threadId}`);
    expect(page.body.messages.map((m: any) => m.content)).toEqual(['first', 'reply']);
    expect(page.body.messages[1].message_id).toBe(message.message_id);
  });

  it('send_message: attachments of the organization can be named; an attachment of another organization is unknown_reference and nothing is written', async () => {
    const { threadId } = await annOpens(s, 'send me the file');
    const file = await created('POST', '/attachments', { filename: 'a.txt', content_type: 'text/plain', data_base64: Buffer.from('hi').toString('base64') });
    const sent = await callTool(bot, 'send_message', { thread_id: threadId, content: 'here', attachments: [file.attachment_id] });
    expect(sent.attachments).toEqual([file.attachment_id]);
    const other = await h.server.provisionOrganization(`files-${randomBytes(3).toString('hex')}`);
    const foreign = await created('POST', '/attachments', { filename: 'b.txt', content_type: 'text/plain', data_base64: 'aGk=' }, other.api_key);
    expect(await toolError(bot, 'send_message', { thread_id: threadId, content: 'steal', attachments: [foreign.attachment_id] })).toMatch(/^unknown_reference: /);
    expect((await rest('GET', `/threads/${threadId}`)).body.message_count).toBe(2);
  });

  it('read_thread: a page as REST gives it; marks the returned messages read for the agent, and the opener\'s REST unread_count follows', async () => {
    const opened = await callTool(bot, 'open_thread', { edge_id: s.annBot, content: 'question for ann' });
    const threadId = opened.thread_id;
    await annSays(s, threadId, 'a1');
    await annSays(s, threadId, 'a2');
    expect((await rest('GET', `/threads/${threadId}`)).body.unread_count).toBe(2);
    const listed = async () => (await callTool(bot, 'list_threads', { edge_id: s.annBot })).threads.find((t: any) => t.thread_id === threadId);
    expect((await listed()).unread_count).toBe(2);

    const page = ReadThreadResult.parse(await callTool(bot, 'read_thread', { thread_id: threadId, limit: 2 }));
    const viaRest = await rest('GET', `/threads/${threadId}?limit=2`);
    expect(page.messages).toEqual(viaRest.body.messages);
    expect(page).toMatchObject({ has_more: true, next_after: viaRest.body.next_after, message_count: 3 });
    // Read up to a1: a2 is still unread, for MCP and for REST's opener count alike.
    expect(page.unread_count).toBe(1);
    expect((await listed()).unread_count).toBe(1);
    expect((await rest('GET', `/threads/${threadId}`)).body.unread_count).toBe(1);

    const rest2 = await callTool(bot, 'read_thread', { thread_id: threadId, after: page.next_after });
    expect(rest2.messages.map((m: any) => m.content)).toEqual(['a2']);
    expect(rest2).toMatchObject({ has_more: false, unread_count: 0 });
    expect((await rest('GET', `/threads/${threadId}`)).body.unread_count).toBe(0);

    await annSays(s, threadId, 'a3');
    expect((await listed()).unread_count).toBe(1);
    expect((await rest('GET', `/threads/${threadId}`)).body.unread_count).toBe(1);
  });

  it('read_thread: the agent\'s unread_count on a thread it did not open counts its peer\'s messages after its read mark', async () => {
    const { threadId } = await annOpens(s, 'q1');
    await annSays(s, threadId, 'q2');
    expect((await callTool(bot, 'list_threads', { edge_id: s.annBot, unread_only: true })).threads.map((t: any) => t.thread_id)).toContain(threadId);
    const page = await callTool(bot, 'read_thread', { thread_id: threadId });
    expect(page.unread_count).toBe(0);
    // ann opened it: her REST unread_count counts bot's messages, untouched by bot's reads.
    await callTool(bot, 'send_message', { thread_id: threadId, content: 'answer' });
    expect((await rest('GET', `/threads/${threadId}`)).body.unread_count).toBe(1);
    expect((await callTool(bot, 'list_threads', { edge_id: s.annBot, unread_only: true })).threads.map((t: any) => t.thread_id)).not.toContain(threadId);
  });

  it('read_thread: reading an earlier page again does not move the read mark back', async () => {
    const { threadId } = await annOpens(s, 'r1');
    await annSays(s, threadId, 'r2');
    expect((await callTool(bot, 'read_thread', { thread_id: threadId })).unread_count).toBe(0);
    const again = await callTool(bot, 'read_thread', { thread_id: threadId, limit: 1 });
    expect(again.messages.map((m: any) => m.content)).toEqual(['r1']);
    expect(again.unread_count).toBe(0);
    expect(await callTool(bot, 'wait_for_messages', { timeout_seconds: 0, thread_id: threadId })).toEqual({ messages: [], has_more: false });
  });

  it('read_thread: an after that names no message of the thread is an invalid_cursor tool error', async () => {
    const { threadId } = await annOpens(s, 'cursor');
    expect(await toolError(bot, 'read_thread', { thread_id: threadId, after: unknownId })).toMatch(/^invalid_cursor: /);
  });

  it('list_threads: newest first, filtered by edge and by unread_only', async () => {
    const t = await scenario();
    const client = await mcp(t.mcpKey);
    const first = await annOpens(t, 'one');
    const second = await callTool(client, 'open_thread', { edge_id: t.botCarl, content: 'two' });
    const all = (await callTool(client, 'list_threads')).threads.map((x: any) => x.thread_id);
    expect(all).toEqual([second.thread_id, first.threadId]);
    expect((await callTool(client, 'list_threads', { edge_id: t.botCarl })).threads.map((x: any) => x.thread_id)).toEqual([second.thread_id]);
    expect((await callTool(client, 'list_threads', { unread_only: true })).threads.map((x: any) => x.thread_id)).toEqual([first.threadId]);
  });
});

describe('MCP endpoint: wait_for_messages', () => {
  it('wait_for_messages: returns the unread messages at once, oldest first, and marks them read', async () => {
    const s = await scenario();
    const bot = await mcp(s.mcpKey);
    const { threadId } = await annOpens(s, 'm1');
    await annSays(s, threadId, 'm2');
    const got = WaitForMessagesResult.parse(await callTool(bot, 'wait_for_messages', { timeout_seconds: 30 }));
    expect(got.messages.map((m) => [m.thread_id, m.sender_id, m.content])).toEqual([
      [threadId, s.ann, 'm1'],
      [threadId, s.ann, 'm2'],
    ]);
    expect(got.has_more).toBe(false);
    expect(await callTool(bot, 'wait_for_messages', { timeout_seconds: 0 })).toEqual({ messages: [], has_more: false });
    expect((await callTool(bot, 'list_threads', { unread_only: true })).threads).toEqual([]);
  });

  it('wait_for_messages: never returns the agent\'s own messages', async () => {
    const s = await scenario();
    const bot = await mcp(s.mcpKey);
    await callTool(bot, 'open_thread', { edge_id: s.annBot, content: 'mine' });
    expect(await callTool(bot, 'wait_for_messages', { timeout_seconds: 0 })).toEqual({ messages: [], has_more: false });
  });

  it('wait_for_messages: with nothing unread, a REST append wakes it with that message', async () => {
    const s = await scenario();
    const bot = await mcp(s.mcpKey);
    const { threadId } = await annOpens(s, 'hello');
    await callTool(bot, 'wait_for_messages', { timeout_seconds: 0 });
    const waiting = callTool(bot, 'wait_for_messages', { timeout_seconds: 30 });
    await stillHeld(waiting);
    const appended = await annSays(s, threadId, 'are you there?');
    const got = await woken(waiting);
    expect(got.messages.map((m: any) => m.message_id)).toEqual([appended]);
  });

  it('wait_for_messages: a thread a human opens with the agent while it waits on all threads wakes it', async () => {
    const s = await scenario();
    const bot = await mcp(s.mcpKey);
    const waiting = callTool(bot, 'wait_for_messages', { timeout_seconds: 30 });
    await stillHeld(waiting);
    const { threadId } = await annOpens(s, 'new topic');
    const got = await woken(waiting);
    expect(got.messages.map((m: any) => [m.thread_id, m.content])).toEqual([[threadId, 'new topic']]);
  });

  it('wait_for_messages: with thread_id, messages of the agent\'s other threads are left unread', async () => {
    const s = await scenario();
    const bot = await mcp(s.mcpKey);
    const one = await annOpens(s, 'on one');
    const two = await callTool(bot, 'open_thread', { edge_id: s.botCarl, content: 'to carl' });
    await created('POST', `/threads/${two.thread_id}/messages`, { sender_agent_id: s.carl, content: 'carl answers' });
    const got = await callTool(bot, 'wait_for_messages', { timeout_seconds: 5, thread_id: two.thread_id });
    expect(got.messages.map((m: any) => m.content)).toEqual(['carl answers']);
    const rest1 = await callTool(bot, 'wait_for_messages', { timeout_seconds: 0 });
    expect(rest1.messages.map((m: any) => [m.thread_id, m.content])).toEqual([[one.threadId, 'on one']]);
  });

  it('wait_for_messages: limit returns the oldest messages with has_more; the next call returns the rest, each message once', async () => {
    const s = await scenario();
    const bot = await mcp(s.mcpKey);
    const { threadId } = await annOpens(s, 'p0');
    for (let i = 1; i < 5; i += 1) await annSays(s, threadId, `p${i}`);
    const first = await callTool(bot, 'wait_for_messages', { timeout_seconds: 0, limit: 3 });
    expect(first.messages.map((m: any) => m.content)).toEqual(['p0', 'p1', 'p2']);
    expect(first.has_more).toBe(true);
    const second = await callTool(bot, 'wait_for_messages', { timeout_seconds: 0, limit: 3 });
    expect(second.messages.map((m: any) => m.content)).toEqual(['p3', 'p4']);
    expect(second.has_more).toBe(false);
  });

  it('wait_for_messages: two clients of one agent waiting at once get each message exactly once between them', async () => {
    const s = await scenario();
    const [c1, c2] = [await mcp(s.mcpKey), await mcp(s.mcpKey)];
    const { threadId } = await annOpens(s, 'x0');
    for (let i = 1; i < 6; i += 1) await annSays(s, threadId, `x${i}`);
    const results = await Promise.all([c1, c2, c1, c2].map((c) => callTool(c, 'wait_for_messages', { timeout_seconds: 0, limit: 2 })));
    const seen = results.flatMap((r) => r.messages.map((m: any) => m.content));
    expect(seen.sort()).toEqual(['x0', 'x1', 'x2', 'x3', 'x4', 'x5']);
  });

  it('wait_for_messages: a wait held when its key is revoked takes nothing that arrives after: an invalid_api_key tool error, the message left unread', async () => {
    const s = await scenario();
    const bot = await mcp(s.mcpKey);
    const { threadId } = await annOpens(s, 'before');
    await callTool(bot, 'wait_for_messages', { timeout_seconds: 0 });
    const waiting = bot.callTool({ name: 'wait_for_messages', arguments: { timeout_seconds: 30 } });
    await stillHeld(waiting);
    expect((await rest('DELETE', `/agents/${s.bot}/mcp-keys/${s.mcpKeyId}`)).status).toBe(200);
    await annSays(s, threadId, 'after the revocation');

    const answer = (await woken(waiting)) as { isError?: boolean; content: Array<{ text: string }> };
    expect(answer.isError).toBe(true);
    expect(answer.content[0]!.text).toMatch(/^invalid_api_key: /);
    const fresh = await mcp((await created('POST', `/agents/${s.bot}/mcp-keys`)).mcp_key);
    const unread = await callTool(fresh, 'wait_for_messages', { timeout_seconds: 0 });
    expect(unread.messages.map((m: any) => m.content)).toEqual(['after the revocation']);
  });

  it('wait_for_messages: timeout 0 with nothing unread answers at once with no messages', async () => {
    const s = await scenario();
    const bot = await mcp(s.mcpKey);
    expect(await callTool(bot, 'wait_for_messages', { timeout_seconds: 0 })).toEqual({ messages: [], has_more: false });
  });
});

describe('MCP endpoint: a conversation between a human over REST and an external agent over MCP', () => {
  it('conversation: ann asks over REST, bot waits, reads and answers over MCP, ann long-polls the answer; then bot opens a thread and ann answers', async () => {
    const s = await scenario();
    const bot = await mcp(s.mcpKey);

    // The agent listens before anyone writes.
    const listening = callTool(bot, 'wait_for_messages', { timeout_seconds: 30 });
    await stillHeld(listening);
    const { threadId, firstId } = await annOpens(s, 'What is 2 + 2?', 'Arithmetic');
    const incoming = await woken(listening);
    expect(incoming.messages.map((m: any) => [m.message_id, m.content])).toEqual([[firstId, 'What is 2 + 2?']]);

    // ann long-polls for the answer while bot reads the thread and replies.
    const annWaits = rest('GET', `/threads/${threadId}?after=${firstId}&wait=30`);
    const page = await callTool(bot, 'read_thread', { thread_id: threadId });
    expect(page).toMatchObject({ subject: 'Arithmetic', unread_count: 0 });
    const answer = await callTool(bot, 'send_message', { thread_id: threadId, content: '4' });
    const annGot = await woken(annWaits);
    expect(annGot.body.messages.map((m: any) => [m.message_id, m.sender_id, m.content])).toEqual([[answer.message_id, s.bot, '4']]);
    expect(annGot.body.unread_count).toBe(1);

    // Follow-up in the same thread.
    const next = callTool(bot, 'wait_for_messages', { timeout_seconds: 30, thread_id: threadId });
    await stillHeld(next);
    await annSays(s, threadId, 'And 3 + 3?');
    expect((await woken(next)).messages.map((m: any) => m.content)).toEqual(['And 3 + 3?']);
    await callTool(bot, 'send_message', { thread_id: threadId, content: '6' });

    // The agent starts a conversation of its own; ann answers it over REST.
    const opened = await callTool(bot, 'open_thread', { edge_id: s.annBot, subject: 'Done', content: 'Anything else?' });
    const reply = callTool(bot, 'wait_for_messages', { timeout_seconds: 30 });
    await stillHeld(reply);
    await annSays(s, opened.thread_id, 'No, thanks');
    expect((await woken(reply)).messages.map((m: any) => [m.thread_id, m.content])).toEqual([[opened.thread_id, 'No, thanks']]);

    const whole = await rest('GET', `/threads/${threadId}`);
    expect(whole.body.messages.map((m: any) => [m.sender_id === s.bot ? 'bot' : 'ann', m.content])).toEqual([
      ['ann', 'What is 2 + 2?'],
      ['bot', '4'],
      ['ann', 'And 3 + 3?'],
      ['bot', '6'],
    ]);
    const threads = (await rest('GET', `/edges/${s.annBot}/threads`)).body.threads;
    expect(threads.map((t: any) => t.thread_id)).toEqual([opened.thread_id, threadId]);
  });
});

describe('MCP endpoint: tool errors', () => {
  let s: Awaited<ReturnType<typeof scenario>>;
  let bot: Client;
  let threadId: string;
  beforeAll(async () => {
    s = await scenario();
    bot = await mcp(s.mcpKey);
    threadId = (await annOpens(s, 'baseline')).threadId;
  });

  /** What REST shows of the organization's threads of this scenario: nothing may change on an error. */
  const state = async () => {
    const edges = [s.annBot, s.botCarl, s.annCarl];
    const threads = await Promise.all(edges.map(async (e) => (await rest('GET', `/edges/${e}/threads`)).body.threads));
    const pages = await Promise.all(threads.flat().map(async (t: any) => (await rest('GET', `/threads/${t.thread_id}`)).body));
    return JSON.stringify(pages);
  };

  it('tool errors: ids that do not exist are not_found tool errors for every tool that takes one, and nothing is written', async () => {
    const before = await state();
    expect(await toolError(bot, 'read_thread', { thread_id: unknownId })).toMatch(notFound);
    expect(await toolError(bot, 'send_message', { thread_id: unknownId, content: 'x' })).toMatch(notFound);
    expect(await toolError(bot, 'open_thread', { edge_id: unknownId, content: 'x' })).toMatch(notFound);
    expect(await toolError(bot, 'list_threads', { edge_id: unknownId })).toMatch(notFound);
    expect(await toolError(bot, 'wait_for_messages', { timeout_seconds: 0, thread_id: unknownId })).toMatch(notFound);
    expect(await state()).toBe(before);
  });

  it('tool errors: invalid arguments are tool errors naming the argument, for every tool, and nothing is written', async () => {
    const before = await state();
    const cases: Array<[string, Record<string, unknown>, RegExp]> = [
      ['whoami', { extra: 1 }, /extra/],
      ['list_edges', { extra: 1 }, /extra/],
      ['list_threads', { unread_only: 'yes' }, /unread_only/],
      ['read_thread', { thread_id: 'not-a-uuid' }, /thread_id/],
      ['read_thread', { thread_id: threadId, limit: 500 }, /limit/],
      ['send_message', { thread_id: threadId }, /content/],
      ['send_message', { thread_id: threadId, content: '   ' }, /content/],
      ['send_message', { thread_id: threadId, content: 'x'.repeat(32_769) }, /content/],
      ['send_message', { thread_id: threadId, content: 'x', sender_agent_id: s.ann }, /sender_agent_id/],
      ['open_thread', { edge_id: s.annBot, content: 'x', channel: 'Bad Channel' }, /channel/],
      ['open_thread', { content: 'x' }, /edge_id/],
      ['wait_for_messages', {}, /timeout_seconds/],
      ['wait_for_messages', { timeout_seconds: 31 }, /timeout_seconds/],
    ];
    for (const [name, args, mentions] of cases) {
      const text = await toolError(bot, name, args);
      expect(text, `${name} ${JSON.stringify(args).slice(0, 80)}`).toMatch(/Input validation error/);
      expect(text, name).toMatch(mentions);
    }
    expect(await state()).toBe(before);
  });

  it('tool errors: an unknown tool is a tool error too', async () => {
    expect(await toolError(bot, 'delete_everything')).toMatch(/not found/);
  });
});

describe('MCP endpoint: isolation', () => {
  let s: Awaited<ReturnType<typeof scenario>>;
  let bot: Client;
  const foreign: Array<{ label: string; threadId: string; edgeId: string; key: string; secret: string }> = [];

  beforeAll(async () => {
    s = await scenario();
    bot = await mcp(s.mcpKey);
    // Same team, an edge bot is not on.
    const sameTeam = await created('POST', `/edges/${s.annCarl}/threads`, { sender_agent_id: s.ann, subject: 'team secret', content: 'ann tells carl a team secret' });
    foreign.push({ label: 'another edge of its team', threadId: sameTeam.thread_id, edgeId: s.annCarl, key: h.apiKey, secret: 'team secret' });
    // Another team of the same organization.
    const other = await scenario();
    const otherThread = await created('POST', `/edges/${other.annBot}/threads`, { sender_agent_id: other.ann, subject: 'org secret', content: 'another team talks' });
    foreign.push({ label: 'another team', threadId: otherThread.thread_id, edgeId: other.annBot, key: h.apiKey, secret: 'org secret' });
    // Another organization.
    const org = await h.server.provisionOrganization(`elsewhere-${randomBytes(3).toString('hex')}`);
    const far = await scenario(org.api_key, org.org_id);
    const farThread = await created('POST', `/edges/${far.annBot}/threads`, { sender_agent_id: far.ann, subject: 'far secret', content: 'another organization talks' }, org.api_key);
    foreign.push({ label: 'another organization', threadId: farThread.thread_id, edgeId: far.annBot, key: org.api_key, secret: 'far secret' });
  });

  /** The foreign thread and its edge's threads as its own organization's key sees them. */
  const seenByOwner = async (f: (typeof foreign)[number]) => {
    const get = (path: string) => request(`${h.server.url}/api/v1${path}`, 'GET', undefined, { 'x-api-key': f.key });
    return JSON.stringify([(await get(`/threads/${f.threadId}`)).body, (await get(`/edges/${f.edgeId}/threads`)).body]);
  };

  it('isolation: a thread or edge of another edge, team or organization is a not_found tool error worded as for an unknown id, reveals nothing and writes nothing', async () => {
    const unknown = await toolError(bot, 'read_thread', { thread_id: unknownId });
    const unknownEdge = await toolError(bot, 'open_thread', { edge_id: unknownId, content: 'x' });
    for (const f of foreign) {
      const before = await seenByOwner(f);
      const errors = [
        await toolError(bot, 'read_thread', { thread_id: f.threadId }),
        await toolError(bot, 'send_message', { thread_id: f.threadId, content: 'intrusion' }),
        await toolError(bot, 'wait_for_messages', { timeout_seconds: 0, thread_id: f.threadId }),
      ];
      for (const text of errors.slice(0, 2)) expect(text, f.label).toBe(unknown);
      expect(errors[2], f.label).toMatch(notFound);
      expect(await toolError(bot, 'open_thread', { edge_id: f.edgeId, content: 'intrusion' }), f.label).toBe(unknownEdge);
      expect(await toolError(bot, 'list_threads', { edge_id: f.edgeId }), f.label).toMatch(notFound);
      for (const text of errors) expect(text, f.label).not.toContain(f.secret);
      expect(await seenByOwner(f), f.label).toBe(before);
    }
  });

  it('isolation: listings and waits show only the agent\'s own edges and threads', async () => {
    const { threads } = await callTool(bot, 'list_threads');
    const { edges } = await callTool(bot, 'list_edges');
    for (const f of foreign) {
      expect(threads.map((t: any) => t.thread_id), f.label).not.toContain(f.threadId);
      expect(edges.map((e: any) => e.edge_id), f.label).not.toContain(f.edgeId);
    }
    const got = await callTool(bot, 'wait_for_messages', { timeout_seconds: 0, limit: 200 });
    for (const f of foreign) expect(got.messages.map((m: any) => m.thread_id), f.label).not.toContain(f.threadId);
  });
});

describe('MCP endpoint: keys and HTTP', () => {
  const rpc = { jsonrpc: '2.0', id: 1, method: 'tools/list' };
  const post = (headers: Record<string, string>, body: unknown = rpc, path = '/api/v1/mcp') => request(`${h.server.url}${path}`, 'POST', body, { ...accept, ...headers });

  it('keys: no key is 401 unauthenticated, an unknown key 401 invalid_api_key, an organization key 403 wrong_key_type, all problem+json', async () => {
    const none = await post({});
    expect(none.status).toBe(401);
    expect(none.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(none.body.code).toBe('unauthenticated');
    expect((await post({ 'x-api-key': `acs_mcp_${'x'.repeat(40)}` })).body).toMatchObject({ status: 401, code: 'invalid_api_key' });
    expect((await post({ 'x-api-key': h.apiKey })).body).toMatchObject({ status: 403, code: 'wrong_key_type' });
  });

  it('keys: the key is checked before the body is read: without a key, a body that is not JSON is 401, not 400', async () => {
    const reply = await request(`${h.server.url}/api/v1/mcp`, 'POST', '{not json', { ...accept, 'content-type': 'application/json' });
    expect(reply.body).toMatchObject({ status: 401, code: 'unauthenticated' });
  });

  it('keys: a revoked MCP key is refused at once with 401 invalid_api_key, and the SDK client cannot connect with it', async () => {
    const s = await scenario();
    const bot = await mcp(s.mcpKey);
    await callTool(bot, 'whoami');
    expect((await rest('DELETE', `/agents/${s.bot}/mcp-keys/${s.mcpKeyId}`)).status).toBe(200);
    expect((await post({ 'x-api-key': s.mcpKey })).body).toMatchObject({ status: 401, code: 'invalid_api_key' });
    await expect(bot.callTool({ name: 'whoami', arguments: {} })).rejects.toThrow();
    await expect(connectMcp(h.server.url, s.mcpKey)).rejects.toThrow();
  });

  it('keys: the problem documents never contain the key that was sent', async () => {
    const s = await scenario();
    await rest('DELETE', `/agents/${s.bot}/mcp-keys/${s.mcpKeyId}`);
    for (const key of [s.mcpKey, h.apiKey]) expect(JSON.stringify((await post({ 'x-api-key': key })).body)).not.toContain(key);
  });

  it('http: GET and DELETE on the endpoint are 405 method_not_allowed with Allow: POST (no sessions, no event stream)', async () => {
    const s = await scenario();
    for (const method of ['GET', 'DELETE']) {
      const reply = await request(`${h.server.url}/api/v1/mcp`, method, undefined, { ...accept, 'x-api-key': s.mcpKey });
      expect(reply.status, method).toBe(405);
      expect(reply.headers.get('allow')).toBe('POST');
      expect(reply.body.code).toBe('method_not_allowed');
    }
  });

  it('http: /v1/mcp is the same endpoint; answers are JSON, with no session id', async () => {
    const s = await scenario();
    const client = await mcp(s.mcpKey, '/v1/mcp');
    expect((await callTool(client, 'whoami')).agent.agent_id).toBe(s.bot);
    const init = await post({ 'x-api-key': s.mcpKey }, { jsonrpc: '2.0', id: 7, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } }, '/v1/mcp');
    expect(init.status).toBe(200);
    expect(init.headers.get('content-type')).toMatch(/^application\/json/);
    expect(init.headers.get('mcp-session-id')).toBeNull();
    expect(init.body).toMatchObject({ jsonrpc: '2.0', id: 7, result: { serverInfo: { name: 'acs-server' } } });
  });

  it('http: a request without initialize is served (stateless), and a notification gets 202 without a body', async () => {
    const s = await scenario();
    const call = await post({ 'x-api-key': s.mcpKey }, { jsonrpc: '2.0', id: 'a', method: 'tools/call', params: { name: 'whoami', arguments: {} } });
    expect(call.status).toBe(200);
    expect(call.body.result.structuredContent.agent.agent_id).toBe(s.bot);
    const note = await post({ 'x-api-key': s.mcpKey }, { jsonrpc: '2.0', method: 'notifications/initialized' });
    expect(note.status).toBe(202);
    expect(note.body).toBe('');
  });

  it('http: a Host header that is no URL authority is refused as a foreign one (403, the SDK\'s JSON-RPC error), not a 500', async () => {
    const s = await scenario();
    const { port } = new URL(h.server.url);
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'whoami', arguments: {} } });
    for (const host of ['not a host', 'acs.example:99999', '[::1']) {
      // fetch() sets Host itself; node:http sends the one given.
      const answer = await new Promise<{ status: number; body: any }>((resolve, reject) => {
        const req = httpRequest(
          { host: '127.0.0.1', port: Number(port), method: 'POST', path: '/api/v1/mcp', headers: { host, ...accept, 'content-type': 'application/json', 'x-api-key': s.mcpKey } },
          (res) => {
            let text = '';
            res.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
          },
        );
        req.on('error', reject);
        req.end(body);
      });
      expect(answer.status, host).toBe(403);
      expect(answer.body, host).toMatchObject({ jsonrpc: '2.0', error: { code: -32000 } });
    }
  });

  it('http: an Accept without text/event-stream is the SDK\'s 406 JSON-RPC error', async () => {
    const s = await scenario();
    const reply = await request(`${h.server.url}/api/v1/mcp`, 'POST', rpc, { accept: 'application/json', 'x-api-key': s.mcpKey });
    expect(reply.status).toBe(406);
    expect(reply.body).toMatchObject({ jsonrpc: '2.0', error: { code: -32000 } });
  });

  it('http: the OpenAPI document describes POST /mcp with the MCP key, a JSON-RPC body and its 401 and 403, and no GET', async () => {
    const doc = (await request(`${h.server.url}/api/v1/openapi.json`, 'GET')).body;
    const operation = doc.paths['/mcp'].post;
    expect(Object.keys(doc.paths['/mcp'])).toEqual(['post']);
    expect(operation.security).toEqual([{ mcpKey: [] }]);
    expect(doc.components.securitySchemes.mcpKey).toMatchObject({ type: 'apiKey', in: 'header' });
    expect(operation.requestBody.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/JsonRpcMessage' });
    expect(Object.keys(operation.responses)).toEqual(expect.arrayContaining(['200', '401', '403']));
    expect(operation.description).toMatch(/wait_for_messages/);
  });

  it('http: stopping the server ends a held wait_for_messages at once, answered with no messages', async () => {
    // Its metrics say when the wait is held: round trips alone do not prove that the call reached
    // the server, and a call that arrives after the stop began is refused 503 instead.
    const own = await startHarness({ metricsListen: { host: '127.0.0.1', port: 0 } });
    try {
      const team = await request(`${own.server.url}/api/v1/organizations/${own.orgId}/teams`, 'POST', { team_name: 'stopping' }, { 'x-api-key': own.apiKey });
      const agent = await request(`${own.server.url}/api/v1/teams/${team.body.team_id}/agents`, 'POST', { name: 'bot' }, { 'x-api-key': own.apiKey });
      const key = await request(`${own.server.url}/api/v1/agents/${agent.body.agent_id}/mcp-keys`, 'POST', undefined, { 'x-api-key': own.apiKey });
      const client = await connectMcp(own.server.url, key.body.mcp_key);
      const waiting = callTool(client, 'wait_for_messages', { timeout_seconds: 30 });
      const heldWaits = async () => /^acs_held_waits\{kind="mcp_wait"\} 1$/m.test(await (await fetch(own.server.metricsUrl!)).text());
      await until(heldWaits, (held) => held, 'the wait to be held');
      await stillHeld(waiting, () => request(`${own.server.url}/healthz`, 'GET'));
      const closing = own.server.close();
      expect(await woken(waiting)).toEqual({ messages: [], has_more: false });
      await closing;
      await client.close();
    } finally {
      await own.server.close();
    }
  });

  it('keys: an MCP key of an agent whose team or organization was deleted is refused at once', async () => {
    const child = await created('POST', '/organizations', { org_name: `mcp-child-${randomBytes(4).toString('hex')}` });
    const s = await scenario(h.apiKey, child.org_id);
    const bot = await mcp(s.mcpKey);
    await callTool(bot, 'whoami');
    expect((await rest('DELETE', `/organizations/${child.org_id}`)).status).toBe(200);
    expect((await post({ 'x-api-key': s.mcpKey })).body).toMatchObject({ status: 401, code: 'invalid_api_key' });
    await expect(bot.callTool({ name: 'whoami', arguments: {} })).rejects.toThrow();

    const other = await scenario();
    expect((await rest('DELETE', `/teams/${other.teamId}`)).status).toBe(200);
    expect((await post({ 'x-api-key': other.mcpKey })).body).toMatchObject({ status: 401, code: 'invalid_api_key' });
  });

  it('http: deleting the agent (after its edges) ends its MCP access', async () => {
    const s = await scenario();
    const bot = await mcp(s.mcpKey);
    await callTool(bot, 'whoami');
    for (const edge of [s.annBot, s.botCarl]) await rest('DELETE', `/edges/${edge}`);
    expect((await rest('DELETE', `/agents/${s.bot}`)).status).toBe(200);
    expect((await post({ 'x-api-key': s.mcpKey })).body).toMatchObject({ status: 401, code: 'invalid_api_key' });
  });
});

// Two acs-server instances on one PostgreSQL database, each with its own LISTEN connection: an
// agent waiting through one is woken by a human writing through the other.
const crossTitle = postgresBackend
  ? 'MCP endpoint across server instances on one PostgreSQL database'
  : 'MCP endpoint across server instances (skipped: runs in the postgres project, which needs ACS_TEST_DATABASE_URL)';

describe.skipIf(!postgresBackend || !testDatabaseUrl)(crossTitle, () => {
  let database: TestDatabase;
  let a: RunningServer;
  let b: RunningServer;
  let key: string;
  let orgId: string;
  const env = { ACS_ENCRYPTION_KEY: randomBytes(32).toString('hex') };

  const onB = async (method: string, path: string, body?: unknown) => {
    const reply = await request(`${b.url}/api/v1${path}`, method, body, { 'x-api-key': key });
    if (reply.status >= 300) throw new Error(`${method} ${path} on B: ${reply.status} ${JSON.stringify(reply.body)}`);
    return reply.body;
  };

  beforeAll(async () => {
    database = await createTestDatabase(testDatabaseUrl!);
    a = await startServer({ port: 0, tickMs: 60_000, databaseUrl: database.url, env });
    b = await startServer({ port: 0, tickMs: 60_000, databaseUrl: database.url, env });
    ({ api_key: key, org_id: orgId } = await a.provisionOrganization('two-instances'));
  });

  afterAll(async () => {
    await a?.close();
    await b?.close();
    await database?.drop();
  });

  it('cross-instance: a wait_for_messages held by instance A is woken by an append and by a new thread made through instance B', async () => {
    const team = await onB('POST', `/organizations/${orgId}/teams`, { team_name: 'cross' });
    const bot = await onB('POST', `/teams/${team.team_id}/agents`, { name: 'bot' });
    const ann = await onB('POST', `/teams/${team.team_id}/humans`, { name: 'ann' });
    const edge = await onB('POST', `/teams/${team.team_id}/edges`, { participants: [ann.human_id, bot.agent_id] });
    const mcpKey = (await onB('POST', `/agents/${bot.agent_id}/mcp-keys`)).mcp_key;
    const client = await connectMcp(a.url, mcpKey);
    try {
      // A thread opened through B wakes the wait on all threads held by A.
      const heldOnA = (waiting: Promise<unknown>) => stillHeld(waiting, () => onB('GET', '/organizations'));
      const first = callTool(client, 'wait_for_messages', { timeout_seconds: 30 });
      await heldOnA(first);
      const thread = await onB('POST', `/edges/${edge.edge_id}/threads`, { sender_agent_id: ann.human_id, content: 'opened on B' });
      expect((await woken(first)).messages.map((m: any) => [m.thread_id, m.content])).toEqual([[thread.thread_id, 'opened on B']]);
      // An append through B wakes a wait on that thread held by A, and one on all threads.
      const onThread = callTool(client, 'wait_for_messages', { timeout_seconds: 30, thread_id: thread.thread_id });
      await heldOnA(onThread);
      await onB('POST', `/threads/${thread.thread_id}/messages`, { sender_agent_id: ann.human_id, content: 'appended on B' });
      expect((await woken(onThread)).messages.map((m: any) => m.content)).toEqual(['appended on B']);
      const onAll = callTool(client, 'wait_for_messages', { timeout_seconds: 30 });
      await heldOnA(onAll);
      await onB('POST', `/threads/${thread.thread_id}/messages`, { sender_agent_id: ann.human_id, content: 'again on B' });
      expect((await woken(onAll)).messages.map((m: any) => m.content)).toEqual(['again on B']);
      // The agent's answer through A reaches a REST long poll held by B.
      const page = await onB('GET', `/threads/${thread.thread_id}`);
      const polling = request(`${b.url}/api/v1/threads/${thread.thread_id}?after=${page.next_after}&wait=30`, 'GET', undefined, { 'x-api-key': key });
      await stillHeld(polling, () => onB('GET', '/organizations'));
      await callTool(client, 'send_message', { thread_id: thread.thread_id, content: 'answered on A' });
      expect((await woken(polling)).body.messages.map((m: any) => m.content)).toEqual(['answered on A']);
    } finally {
      await client.close();
    }
  });
});
