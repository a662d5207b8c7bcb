import { mkdtemp, rm } from 'node:fs/promises';
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
