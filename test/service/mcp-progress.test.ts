/**
 * MCP and replies as they are written (contract §13): `wait_for_messages` still returns whole
 * messages, and a client that sends a progress token with the call (the official SDK's client,
 * `onprogress`) is sent `notifications/progress` while a provider agent writes its reply in the
 * thread it waits on; a client that sends none gets none.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult, JSONRPCMessage, Progress } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { paced } from '../support/model-script.ts';
import { callTool, connectMcp } from '../support/mcp.ts';
import { scriptedToolCompletions, startOpenAiStub, type OpenAiStub } from '../support/openai-stub.ts';
import { startHarness, type Harness } from './helpers.ts';
import { readThread } from './stream-helpers.ts';
import { makeTeam } from './turn-helpers.ts';

const cleanups: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

const words = 40;
const reply = Array.from({ length: words }, (_, i) => `p${i}`).join(' ');
let stub: OpenAiStub;
let h: Harness;

beforeAll(async () => {
  stub = await startOpenAiStub(scriptedToolCompletions(() => paced(reply, { size: 'word', delayMs: 10 })));
  cleanups.push(() => stub.close());
  h = await startHarness({ inMemory: true, env: { ...process.env, OPENAI_BASE_URL: `${stub.origin}/v1` } });
  cleanups.push(() => h.server.close());
  expect((await h.call('PUT', `/api/v1/organizations/${h.orgId}/api-keys/openai`, { api_key: 'openai-key' })).status).toBe(200);
});

afterEach(() => stub.release());

/**
 * An external agent `ext` (MCP) on an edge with the provider agent `writer`, its SDK client, and
 * every JSON-RPC message the client's transport received (to count notifications the client
 * would not hand on).
 */
async function externalAgent(): Promise<{ client: Client; received: JSONRPCMessage[]; writer: string; edge: string }> {
  const team = await makeTeam(h, { agents: [{ name: 'ext' }, { name: 'writer', provider: 'openai', model: 'gpt-stub', instructions: 'write' }], edges: [['ext', 'writer']] });
  const key = await h.call('POST', `/api/v1/agents/${team.id.ext}/mcp-keys`);
  expect(key.status).toBe(201);
  const client = await connectMcp(h.server.url, key.body.mcp_key);
  cleanups.push(() => client.close());
  const received: JSONRPCMessage[] = [];
  const transport = client.transport as StreamableHTTPClientTransport;
  const deliver = transport.onmessage!;
  transport.onmessage = (message: JSONRPCMessage) => {
    received.push(message);
    deliver(message);
  };
  return { client, received, writer: team.id.writer!, edge: team.edgeOf('ext', 'writer') };
}

/** Opens a thread to the writer and lets its reply start: the stand-in holds it after 3 words. Output: the thread's id. */
async function replyBeingWritten(client: Client, edge: string): Promise<string> {
  stub.hold(3);
  const thread = await callTool(client, 'open_thread', { edge_id: edge, content: 'write to me' });
  await stub.held();
  return thread.thread_id;
}

/**
 * Lets the held reply go on one word at a time — each word's delta written before the next — until
 * `done()` holds (a notification came: the wait follows the thread) or the words run out, then
 * lets the rest go. The wait's request may reach the server after some words: this does not race it.
 */
async function writeUntil(thread: string, done: () => boolean): Promise<void> {
  const reader = await readThread(h.server.url, thread, { 'x-api-key': h.apiKey }, { after: '0' });
  try {
    for (;;) {
      const held = await stub.held();
      const sent = held.chunks.map((c) => c.text).join('');
      await reader.until(() => reader.items().filter((i) => i.event === 'message.delta').map((i) => i.data.text).join('') === sent, 'the delta of the last word');
      // The last word ends the stream, which then holds no more.
      if (done() || held.chunks.length >= words - 1) return;
      stub.release();
      stub.hold(held.chunks.length + 1);
    }
  } finally {
    reader.close();
    stub.release();
  }
}

describe('MCP: progress while a reply is written', () => {
  it('mcp progress: wait_for_messages with a progress token gets notifications/progress while the provider agent writes, then the whole reply', async () => {
    const { client, writer, edge } = await externalAgent();
    const thread = await replyBeingWritten(client, edge);
    const log: Array<{ progress: Progress } | { result: CallToolResult }> = [];
    const waiting = client
      .callTool({ name: 'wait_for_messages', arguments: { thread_id: thread, timeout_seconds: 20 } }, undefined, {
        onprogress: (progress) => void log.push({ progress }),
        timeout: 30_000,
      })
      .then((result) => {
        log.push({ result: result as CallToolResult });
        return result as CallToolResult;
      });
    // The wait is held (the reply is not posted yet); the rest of the reply now streams.
    await writeUntil(thread, () => log.length > 0);
    const result = await waiting;
    const messages = (result.structuredContent as { messages: Array<{ sender_id: string; content: string }> }).messages;
    expect(messages.map((m) => [m.sender_id, m.content])).toEqual([[writer, reply]]);

    const progress = log.flatMap((entry) => ('progress' in entry ? [entry.progress] : []));
    expect(progress.length, JSON.stringify(log)).toBeGreaterThan(0);
    // Before the message: every notification came before the result.
    expect(log.at(-1)).toHaveProperty('result');
    // Progress only goes up (MCP requires it), and counts characters of the reply written so far.
    for (let i = 1; i < progress.length; i += 1) expect(progress[i]!.progress).toBeGreaterThan(progress[i - 1]!.progress);
    expect(progress.at(-1)!.progress).toBeLessThanOrEqual(reply.length);
    expect(progress[0]!.message).toContain(thread);
  });

  it('mcp progress: a wait on all the agent\'s threads (no thread_id) with a progress token is told of the reply being written too', async () => {
    const { client, writer, edge } = await externalAgent();
    const thread = await replyBeingWritten(client, edge);
    const progress: Progress[] = [];
    const waiting = client.callTool({ name: 'wait_for_messages', arguments: { timeout_seconds: 20 } }, undefined, { onprogress: (p) => void progress.push(p), timeout: 30_000 });
    await writeUntil(thread, () => progress.length > 0);
    const result = (await waiting) as CallToolResult;
    expect((result.structuredContent as { messages: Array<{ sender_id: string; thread_id: string }> }).messages.map((m) => [m.sender_id, m.thread_id])).toEqual([[writer, thread]]);
    expect(progress.length).toBeGreaterThan(0);
    expect(progress[0]!.message).toContain(thread);
  });

  it('mcp progress: wait_for_messages without a progress token gets no notification, only the whole reply', async () => {
    const { client, received, writer, edge } = await externalAgent();
    const thread = await replyBeingWritten(client, edge);
    const waiting = client.callTool({ name: 'wait_for_messages', arguments: { thread_id: thread, timeout_seconds: 20 } }, undefined, { timeout: 30_000 });
    stub.release();
    const result = (await waiting) as CallToolResult;
    const messages = (result.structuredContent as { messages: Array<{ sender_id: string; content: string }> }).messages;
    expect(messages.map((m) => [m.sender_id, m.content])).toEqual([[writer, reply]]);
    expect(received.filter((m) => 'method' in m && m.method === 'notifications/progress')).toEqual([]);
  });
});
