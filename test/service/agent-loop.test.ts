import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { Writable } from 'node:stream';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../../service/index.ts';
import { callTool, connectMcp } from '../support/mcp.ts';
import { postgresBackend } from '../support/postgres.ts';
import { buildTeam, holdLocks, lockWaitSeen, request, startHarness, startHarnessWithDb, waitForThread, type Msg } from './helpers.ts';

const cleanups: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

describe('agent loop', () => {
  it('agent loop: an echo agent answers each incoming message exactly once, also after a restart', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'acs-loop-'));
    cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
    let h = await startHarness({ dataDir });
    let server: RunningServer = h.server;
    cleanups.push(() => server.close());
    const ids = await buildTeam(h, { provider: 'echo' });
    const thread = await h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.humanId, content: 'hello' });
    const threadId: string = thread.body.thread_id;

    // Without an echo key the agent stays silent.
    const first = (await h.call('GET', `/api/v1/threads/${threadId}`)).body.next_after;
    const idle = await h.call('GET', `/api/v1/threads/${threadId}?after=${first}&wait=1`);
    expect(idle.body.messages).toEqual([]);

    expect((await h.call('PUT', `/organizations/${h.orgId}/api-keys/echo`, { api_key: 'any-key' })).status).toBe(200);
    const fromBot = (ms: Msg[]) => ms.filter((m) => m.sender_id === ids.agentId).map((m) => m.content);
    await waitForThread(h, threadId, (ms) => fromBot(ms).length >= 1);
    await h.call('POST', `/api/v1/threads/${threadId}/messages`, { sender_agent_id: ids.humanId, content: 'again' });
    await waitForThread(h, threadId, (ms) => fromBot(ms).includes('echo: again'));

    await server.close();
    const apiKey = h.apiKey;
    server = await startServer({ dataDir, port: 0, tickMs: 20 });
    h = { ...h, server, call: (method, path, body, headers = {}) => request(server.url + path, method, body, { 'x-api-key': apiKey, ...headers }) };
    await h.call('POST', `/api/v1/threads/${threadId}/messages`, { sender_agent_id: ids.humanId, content: 'third' });
    const all = await waitForThread(h, threadId, (ms) => fromBot(ms).includes('echo: third'));

    expect(all.map((m) => m.content)).toEqual(['hello', 'echo: hello', 'again', 'echo: again', 'third', 'echo: third']);
  });

  it('agent loop: two echo agents on one edge stop after the configured number of automatic replies', async () => {
    const h = await startHarness({ inMemory: true, autoReplyLimit: 4 });
    cleanups.push(() => h.server.close());
    await h.call('PUT', `/organizations/${h.orgId}/api-keys/echo`, { api_key: 'k' });
    const team = await h.call('POST', `/api/v1/organizations/${h.orgId}/teams`, { team_name: 'pingpong' });
    const a = await h.call('POST', `/api/v1/teams/${team.body.team_id}/agents`, { name: 'a', provider: 'echo' });
    const b = await h.call('POST', `/api/v1/teams/${team.body.team_id}/agents`, { name: 'b', provider: 'echo' });
    const edge = await h.call('POST', `/api/v1/teams/${team.body.team_id}/edges`, { participants: [a.body.agent_id, b.body.agent_id] });
    const thread = await h.call('POST', `/api/v1/edges/${edge.body.edge_id}/threads`, { sender_agent_id: a.body.agent_id, content: 'ping' });
    const messages = await waitForThread(h, thread.body.thread_id, (ms) => ms.length >= 5);
    expect(messages.map((m) => m.content)).toEqual(['ping', 'echo: ping', 'echo: echo: ping', 'echo: echo: echo: ping', 'echo: echo: echo: echo: ping']);
    const quiet = await h.call('GET', `/api/v1/threads/${thread.body.thread_id}?after=${messages[4]!.message_id}&wait=1`);
    expect(quiet.body.messages).toEqual([]);
    expect(quiet.body.message_count).toBe(5);
  });

  it('agent loop: a paused agent does not answer until it is made active', async () => {
    const h = await startHarness();
    cleanups.push(() => h.server.close());
    await h.call('PUT', `/organizations/${h.orgId}/api-keys/echo`, { api_key: 'k' });
    const ids = await buildTeam(h, { provider: 'echo', status: 'paused' });
    const thread = await h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.humanId, content: 'anyone?' });
    const first = (await h.call('GET', `/api/v1/threads/${thread.body.thread_id}`)).body.next_after;
    expect((await h.call('GET', `/api/v1/threads/${thread.body.thread_id}?after=${first}&wait=1`)).body.messages).toEqual([]);
    await h.call('PATCH', `/api/v1/agents/${ids.agentId}`, { status: 'active' });
    const messages = await waitForThread(h, thread.body.thread_id, (ms) => ms.length >= 2);
    expect(messages[1]).toMatchObject({ sender_id: ids.agentId, content: 'echo: anyone?' });
  });

  it('agent loop: a burst of messages sent before the key was set gets one reply per message, in order', async () => {
    const h = await startHarness();
    cleanups.push(() => h.server.close());
    const ids = await buildTeam(h, { provider: 'echo' });
    const thread = await h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.humanId, content: 'one' });
    await h.call('POST', `/api/v1/threads/${thread.body.thread_id}/messages`, { sender_agent_id: ids.humanId, content: 'two' });
    await h.call('POST', `/api/v1/threads/${thread.body.thread_id}/messages`, { sender_agent_id: ids.humanId, content: 'three' });
    await h.call('PUT', `/organizations/${h.orgId}/api-keys/echo`, { api_key: 'k' });
    const messages = await waitForThread(h, thread.body.thread_id, (ms) => ms.length >= 6);
    expect(messages.map((m) => m.content)).toEqual(['one', 'two', 'three', 'echo: one', 'echo: two', 'echo: three']);
  });

  it('agent loop: after the ping-pong guard stops two agents, a message written by hand is answered again', async () => {
    const h = await startHarness({ inMemory: true, autoReplyLimit: 2 });
    cleanups.push(() => h.server.close());
    await h.call('PUT', `/organizations/${h.orgId}/api-keys/echo`, { api_key: 'k' });
    const team = await h.call('POST', `/api/v1/organizations/${h.orgId}/teams`, { team_name: 'guarded' });
    const a = await h.call('POST', `/api/v1/teams/${team.body.team_id}/agents`, { name: 'a', provider: 'echo' });
    const b = await h.call('POST', `/api/v1/teams/${team.body.team_id}/agents`, { name: 'b', provider: 'echo' });
    const edge = await h.call('POST', `/api/v1/teams/${team.body.team_id}/edges`, { participants: [a.body.agent_id, b.body.agent_id] });
    const thread = await h.call('POST', `/api/v1/edges/${edge.body.edge_id}/threads`, { sender_agent_id: a.body.agent_id, content: 'ping' });
    const guarded = await waitForThread(h, thread.body.thread_id, (ms) => ms.length >= 3);
    const quiet = await h.call('GET', `/api/v1/threads/${thread.body.thread_id}?after=${guarded[2]!.message_id}&wait=1`);
    expect(quiet.body.messages).toEqual([]);
    await h.call('POST', `/api/v1/threads/${thread.body.thread_id}/messages`, { sender_agent_id: a.body.agent_id, content: 'by hand' });
    const messages = await waitForThread(h, thread.body.thread_id, (ms) => ms.some((m) => m.content === 'echo: by hand'));
    expect(messages.map((m) => m.content).slice(0, 5)).toEqual(['ping', 'echo: ping', 'echo: echo: ping', 'by hand', 'echo: by hand']);
  });

  it('agent loop: an external agent given a provider answers what came after its last message, not what it already answered over MCP', async () => {
    const h = await startHarness();
    cleanups.push(() => h.server.close());
    await h.call('PUT', `/organizations/${h.orgId}/api-keys/echo`, { api_key: 'k' });
    const ids = await buildTeam(h);
    const key = (await h.call('POST', `/api/v1/agents/${ids.agentId}/mcp-keys`)).body.mcp_key as string;
    const client = await connectMcp(h.server.url, key);
    cleanups.push(() => client.close());
    const thread = await h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.humanId, content: 'question one' });
    const threadId: string = thread.body.thread_id;
    await callTool(client, 'send_message', { thread_id: threadId, content: 'answer one, by hand' });
    await h.call('POST', `/api/v1/threads/${threadId}/messages`, { sender_agent_id: ids.humanId, content: 'question two' });

    expect((await h.call('PATCH', `/api/v1/agents/${ids.agentId}`, { provider: 'echo' })).status).toBe(200);
    const messages = await waitForThread(h, threadId, (ms) => ms.some((m) => m.content === 'echo: question two'));
    // A wait of a second more: an answer to the first question would come right after the second's.
    const quiet = await h.call('GET', `/api/v1/threads/${threadId}?after=${messages.at(-1)!.message_id}&wait=1`);
    expect([...messages, ...quiet.body.messages].map((m: Msg) => m.content)).toEqual(['question one', 'answer one, by hand', 'question two', 'echo: question two']);
  });

  it('agent loop: the answer to a message written as the agent with expects_reply is left to the program that awaits it; later messages are answered', async () => {
    const h = await startHarness();
    cleanups.push(() => h.server.close());
    await h.call('PUT', `/organizations/${h.orgId}/api-keys/echo`, { api_key: 'k' });
    const ids = await buildTeam(h, { provider: 'echo' });
    // A pipeline step speaking as the agent asks the human and waits for her answer.
    const thread = await h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.agentId, content: 'May we roll out v2?', expects_reply: true });
    const threadId: string = thread.body.thread_id;
    await h.call('POST', `/api/v1/threads/${threadId}/messages`, { sender_agent_id: ids.humanId, content: 'approve' });
    await h.call('POST', `/api/v1/threads/${threadId}/messages`, { sender_agent_id: ids.humanId, content: 'and thanks' });
    // The loop answers in order: had it answered 'approve', its answer would come before this one.
    const messages = await waitForThread(h, threadId, (ms) => ms.some((m) => m.content === 'echo: and thanks'));
    expect(messages.map((m) => m.content)).toEqual(['May we roll out v2?', 'approve', 'and thanks', 'echo: and thanks']);
  });

  it('agent loop: a re-ask with expects_reply leaves the next answer to the program too, and a message without it does not', async () => {
    const h = await startHarness();
    cleanups.push(() => h.server.close());
    await h.call('PUT', `/organizations/${h.orgId}/api-keys/echo`, { api_key: 'k' });
    const ids = await buildTeam(h, { provider: 'echo' });
    const thread = await h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.agentId, content: 'approve or reject?', expects_reply: true });
    const threadId: string = thread.body.thread_id;
    await h.call('POST', `/api/v1/threads/${threadId}/messages`, { sender_agent_id: ids.humanId, content: 'maybe' });
    await h.call('POST', `/api/v1/threads/${threadId}/messages`, { sender_agent_id: ids.agentId, content: 'please answer approve or reject', expects_reply: true });
    await h.call('POST', `/api/v1/threads/${threadId}/messages`, { sender_agent_id: ids.humanId, content: 'approve' });
    await h.call('POST', `/api/v1/threads/${threadId}/messages`, { sender_agent_id: ids.agentId, content: 'noted' });
    await h.call('POST', `/api/v1/threads/${threadId}/messages`, { sender_agent_id: ids.humanId, content: 'bye' });
    const messages = await waitForThread(h, threadId, (ms) => ms.some((m) => m.content === 'echo: bye'));
    expect(messages.map((m) => m.content)).toEqual(['approve or reject?', 'maybe', 'please answer approve or reject', 'approve', 'noted', 'bye', 'echo: bye']);
  });
});

// PGlite runs one transaction at a time, so only PostgreSQL can hold the loop between its claim of
// a row and its parking of it, where a concurrent PATCH or PUT must still be seen.
describe.runIf(postgresBackend)('agent loop under concurrency', () => {
  it('agent loop: a budget raised while the loop holds the spent agent\'s claimed row wakes it at once, not at the next UTC day', async () => {
    const h = await startHarnessWithDb();
    cleanups.push(() => h.server.close());
    await h.call('PUT', `/organizations/${h.orgId}/api-keys/echo`, { api_key: 'k' });
    // 'hello' costs echo 2 input + 3 output tokens: the first reply spends the budget exactly.
    const ids = await buildTeam(h, { provider: 'echo', max_tokens_per_day: 5 });
    const thread = await h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.humanId, content: 'hello' });
    const threadId: string = thread.body.thread_id;
    await waitForThread(h, threadId, (ms) => ms.length >= 2);

    // The loop claims the row of the next message with the spent budget, then waits here to log it.
    const held = await holdLocks(h.db, `SELECT 1 FROM agent_daily_usage WHERE agent_id = $1 FOR UPDATE`, [ids.agentId]);
    try {
      await h.call('POST', `/api/v1/threads/${threadId}/messages`, { sender_agent_id: ids.humanId, content: 'again' });
      await lockWaitSeen(h.db, 'exhausted_logged');
      const raised = await h.call('PATCH', `/api/v1/agents/${ids.agentId}`, { max_tokens_per_day: 1000 });
      expect(raised.status).toBe(200);
    } finally {
      await held.release();
    }

    const all = await waitForThread(h, threadId, (ms) => ms.some((m) => m.content === 'echo: again'), 15_000);
    expect(all.map((m) => m.content)).toEqual(['hello', 'echo: hello', 'again', 'echo: again']);
  });
});

describe('agent loop: a key encrypted with another encryption key', () => {
  it('agent loop: a provider key that another encryption key sealed is logged once, naming the fix, and the agent answers once the key is set again', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'acs-loop-key-'));
    cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
    const before = await startHarness({ dataDir, env: { ACS_ENCRYPTION_KEY: randomBytes(32).toString('hex') } });
    const ids = await buildTeam(before, { provider: 'echo' });
    expect((await before.call('PUT', `/api/v1/organizations/${before.orgId}/api-keys/echo`, { api_key: 'stored-before' })).status).toBe(200);
    await before.server.close();

    // The same data, another process key: the stored key no longer decrypts.
    const lines: Array<{ level: number; msg: string; org_id?: string; provider?: string }> = [];
    const stream = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(line));
        done();
      },
    });
    const server = await startServer({ dataDir, port: 0, tickMs: 20, env: { ACS_ENCRYPTION_KEY: randomBytes(32).toString('hex') }, logger: { level: 'warn', stream } });
    cleanups.push(() => server.close());
    const h = { ...before, server, call: (method: string, path: string, body?: unknown) => request(server.url + path, method, body, { 'x-api-key': before.apiKey }) };
    const unreadable = () => lines.filter((l) => l.msg.startsWith("the organization's echo key was encrypted with another encryption key"));
    const thread = await h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.humanId, content: 'one' });
    const deadline = Date.now() + 30_000;
    while (unreadable().length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(unreadable()[0]).toMatchObject({ level: 50, org_id: before.orgId, provider: 'echo' });
    expect(unreadable()[0]!.msg).toBe(
      `the organization's echo key was encrypted with another encryption key than this process's: processes sharing a database must share ACS_ENCRYPTION_KEY (or one data dir); if the key was lost, set the provider key again (PUT /api/v1/organizations/${before.orgId}/api-keys/echo)`,
    );
    // Another message, over retries: still the one line, and nothing written in the agent's name.
    await h.call('POST', `/api/v1/threads/${thread.body.thread_id}/messages`, { sender_agent_id: ids.humanId, content: 'two' });
    const cursor = (await h.call('GET', `/api/v1/threads/${thread.body.thread_id}`)).body.next_after;
    const quiet = await h.call('GET', `/api/v1/threads/${thread.body.thread_id}?after=${cursor}&wait=1`);
    expect(quiet.body.messages).toEqual([]);
    expect(unreadable()).toHaveLength(1);
    expect(JSON.stringify(lines)).not.toContain('stored-before');

    // Set again under this process's key: the agent answers what waited.
    expect((await h.call('PUT', `/api/v1/organizations/${before.orgId}/api-keys/echo`, { api_key: 'stored-after' })).status).toBe(200);
    const all = await waitForThread(h, thread.body.thread_id, (ms) => ms.filter((m) => m.sender_id === ids.agentId).length >= 2);
    expect(all.map((m) => m.content)).toEqual(['one', 'two', 'echo: one', 'echo: two']);
  });
});

describe('agent loop: an agent without a key', () => {
  it('agent loop: an agent whose organization has no key for its provider is logged once, however many messages wait for it, and once more after a key came and went', async () => {
    const warnings: Array<{ msg: string; agent?: string; provider?: string }> = [];
    const stream = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) warnings.push(JSON.parse(line));
        done();
      },
    });
    const h = await startHarness({ inMemory: true, logger: { level: 'warn', stream } });
    cleanups.push(() => h.server.close());
    const ids = await buildTeam(h, { provider: 'echo' });
    const noKey = () => warnings.filter((w) => w.msg.startsWith('agent bot has no echo key in its organization'));
    const first = await h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.humanId, content: 'one' });
    const deadline = Date.now() + 30_000;
    while (noKey().length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(noKey()[0]).toMatchObject({ agent: 'bot', provider: 'echo' });
    expect(noKey()[0]!.msg).toBe(
      `agent bot has no echo key in its organization: its messages wait until one is set (PUT /api/v1/organizations/${h.orgId}/api-keys/echo; with teamctl, organization.providerKeys in the definition)`,
    );
    // More messages, on another thread too, over many ticks: still the one line.
    await h.call('POST', `/api/v1/threads/${first.body.thread_id}/messages`, { sender_agent_id: ids.humanId, content: 'two' });
    const second = await h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.humanId, content: 'three' });
    await new Promise((r) => setTimeout(r, 1_000));
    expect(noKey()).toHaveLength(1);

    // A key: the agent answers what waited. Without it again: said once more.
    await h.call('PUT', `/api/v1/organizations/${h.orgId}/api-keys/echo`, { api_key: 'k' });
    await waitForThread(h, second.body.thread_id, (ms) => ms.some((m) => m.content === 'echo: three'));
    expect((await h.call('DELETE', `/api/v1/organizations/${h.orgId}/api-keys/echo`)).status).toBe(200);
    await h.call('POST', `/api/v1/threads/${second.body.thread_id}/messages`, { sender_agent_id: ids.humanId, content: 'four' });
    const again = Date.now() + 30_000;
    while (noKey().length < 2 && Date.now() < again) await new Promise((r) => setTimeout(r, 20));
    expect(noKey()).toHaveLength(2);
  });
});
