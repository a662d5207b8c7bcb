// Contract §11, durable turns: acs-server killed with SIGKILL while a turn waits on `ask`, and
// while one of its tool calls runs on a real MCP server; after a restart on the same storage each
// turn completes and no tool call is made twice (the MCP server's proxy counts every tools/call).
// Real processes (bin/acs-server.ts) on a PGlite data dir, or on PostgreSQL in the `postgres` project.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { spawnAcsServer, type AcsProcess } from '../support/acs-process.ts';
import { SLOW_TOOL, QUICK_TOOL, startCountedEverything, type CountedEverything } from '../support/mcp-everything.ts';
import { callTool, type ModelScript } from '../support/model-script.ts';
import { scriptedToolCompletions, startOpenAiStub, type OpenAiStub } from '../support/openai-stub.ts';
import { createTestDatabase, postgresBackend, testDatabaseUrl } from '../support/postgres.ts';
import { request, type Reply } from './helpers.ts';

const cleanups: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
});

/** Where the servers keep their data: a fresh data dir, or a fresh PostgreSQL database in the `postgres` project. */
async function storageArgs(): Promise<{ args: string[]; env: Record<string, string> }> {
  if (postgresBackend && testDatabaseUrl) {
    const database = await createTestDatabase(testDatabaseUrl);
    cleanups.push(() => database.drop());
    return { args: ['--database-url', database.url], env: { ACS_ENCRYPTION_KEY: 'ab'.repeat(32) } };
  }
  const dir = await mkdtemp(join(tmpdir(), 'acs-turns-crash-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return { args: ['--data-dir', join(dir, 'data')], env: {} };
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 90_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** One acs-server process at a time on one storage, restartable; calls go with the dev organization's key. */
interface Service {
  call(method: string, path: string, body?: unknown): Promise<Reply>;
  orgId: string;
  kill(): Promise<void>;
  restart(): Promise<void>;
  output(): string;
}

async function startService(stub: OpenAiStub): Promise<Service> {
  const storage = await storageArgs();
  const dir = await mkdtemp(join(tmpdir(), 'acs-turns-crash-creds-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  const credentials = join(dir, 'dev.json');
  const env = { ...storage.env, OPENAI_BASE_URL: `${stub.origin}/v1`, ACS_PROVIDER_TIMEOUT: '20' };
  const args = [...storage.args, '--tick-ms', '50', '--webhook-allow-private', '--dev-credentials', credentials];
  let server: AcsProcess = await spawnAcsServer(args, env);
  let log = '';
  cleanups.push(async () => {
    server.child.kill('SIGKILL');
    await server.exited;
  });
  const dev = await until('the dev credentials', async () => {
    try {
      return JSON.parse(await readFile(credentials, 'utf8')) as { api_key: string; org_id: string };
    } catch {
      return undefined;
    }
  });
  return {
    orgId: dev.org_id,
    call: (method, path, body) => request(server.url + path, method, body, { 'x-api-key': dev.api_key }),
    async kill() {
      log += server.output();
      server.child.kill('SIGKILL');
      await server.exited;
    },
    async restart() {
      server = await spawnAcsServer(args, env);
    },
    output: () => log + server.output(),
  };
}

/** A team: a human, `lead` (openai, with the team tools and the MCP server), and a second human `bob` lead may ask. */
async function team(service: Service, mcp: CountedEverything): Promise<{ dana: string; bob: string; lead: string; thread: string }> {
  const call = service.call;
  expect((await call('PUT', `/api/v1/organizations/${service.orgId}/api-keys/openai`, { api_key: 'sk-crash-test-key' })).status).toBe(200);
  const teamId = (await call('POST', `/api/v1/organizations/${service.orgId}/teams`, { team_name: `crash-${Date.now()}` })).body.team_id;
  const dana = (await call('POST', `/api/v1/teams/${teamId}/humans`, { name: 'dana' })).body.human_id;
  const bob = (await call('POST', `/api/v1/teams/${teamId}/humans`, { name: 'bob' })).body.human_id;
  const lead = await call('POST', `/api/v1/teams/${teamId}/agents`, {
    name: 'lead',
    provider: 'openai',
    model: 'stand-in',
    instructions: 'lead',
    tools: { team: true, mcp: [{ name: 'everything', url: mcp.url, allow: [QUICK_TOOL, SLOW_TOOL] }] },
  });
  expect(lead.status, JSON.stringify(lead.body)).toBe(201);
  const edge = (await call('POST', `/api/v1/teams/${teamId}/edges`, { participants: [dana, lead.body.agent_id] })).body.edge_id;
  await call('POST', `/api/v1/teams/${teamId}/edges`, { participants: [lead.body.agent_id, bob] });
  const thread = (await call('POST', `/api/v1/edges/${edge}/threads`, { sender_agent_id: dana, content: 'go' })).body.thread_id;
  return { dana, bob, lead: lead.body.agent_id, thread };
}

async function toolCalls(service: Service, threadId: string): Promise<Array<Record<string, any>>> {
  const reply = await service.call('GET', `/api/v1/threads/${threadId}/tool-calls`);
  return reply.status === 200 ? reply.body.tool_calls : [];
}

async function replyOf(service: Service, threadId: string, agentId: string): Promise<string | undefined> {
  const page = await service.call('GET', `/api/v1/threads/${threadId}?limit=200`);
  if (page.status !== 200) return undefined;
  return (page.body.messages as Array<{ sender_id: string; content: string }>).find((m) => m.sender_id === agentId)?.content;
}

describe('durable turns across a kill -9 of acs-server', () => {
  it('turns: a turn suspended on ask survives a kill -9; after the restart the answer wakes it, the next tool call is made once and the turn replies', async () => {
    const mcp = await startCountedEverything();
    cleanups.push(() => mcp.close());
    const script: ModelScript = (c) => {
      const asked = c.resultOf('ask');
      if (!asked) return callTool('ask', { peer: 'bob', content: 'may I go on?' });
      const echoed = c.resultOf(`everything__${QUICK_TOOL}`);
      if (!echoed) return callTool(`everything__${QUICK_TOOL}`, { message: 'after the answer' });
      return `done: ${asked.text.includes('yes, go on') ? 'bob agreed' : 'no answer'}, ${echoed.text.includes('after the answer') ? 'echoed' : 'not echoed'}`;
    };
    const stub = await startOpenAiStub(scriptedToolCompletions(script));
    cleanups.push(() => stub.close());
    const service = await startService(stub);
    const ids = await team(service, mcp);

    const ask = await until('the ask to wait on bob', async () => (await toolCalls(service, ids.thread)).find((c) => c.tool === 'ask' && c.status === 'running' && c.waiting_on));
    await service.kill();
    await service.restart();

    // bob answers in the thread the question was asked in, through the restarted process.
    const answered = await service.call('POST', `/api/v1/threads/${ask.waiting_on.thread_id}/messages`, { sender_agent_id: ids.bob, content: 'yes, go on' });
    expect(answered.status).toBe(201);
    const reply = await until('the lead to reply', () => replyOf(service, ids.thread, ids.lead));

    expect(reply).toBe('done: bob agreed, echoed');
    const calls = await toolCalls(service, ids.thread);
    expect(calls.map((c) => [c.tool, c.status])).toEqual([
      ['ask', 'completed'],
      [QUICK_TOOL, 'completed'],
    ]);
    expect(mcp.proxy.callsOf(QUICK_TOOL)).toBe(1);
    // One reply: the restarted process did not answer the message again.
    const page = await service.call('GET', `/api/v1/threads/${ids.thread}?limit=200`);
    expect((page.body.messages as Array<{ sender_id: string }>).filter((m) => m.sender_id === ids.lead)).toHaveLength(1);
  });

  it('turns: a tool call running when acs-server is killed is never made again: after the restart it is failed (interrupted), the model is told, and the turn replies', async () => {
    const mcp = await startCountedEverything();
    cleanups.push(() => mcp.close());
    const script: ModelScript = (c) => {
      const slow = c.resultOf(`everything__${SLOW_TOOL}`);
      if (!slow) return callTool(`everything__${SLOW_TOOL}`, { duration: 30, steps: 30 });
      return `the slow call: ${slow.text}`;
    };
    const stub = await startOpenAiStub(scriptedToolCompletions(script));
    cleanups.push(() => stub.close());
    const service = await startService(stub);
    const ids = await team(service, mcp);

    await until('the slow tool call to reach the MCP server', async () => (mcp.proxy.callsOf(SLOW_TOOL) > 0 ? true : undefined));
    const running = await toolCalls(service, ids.thread);
    expect(running.map((c) => [c.tool, c.status])).toEqual([[SLOW_TOOL, 'running']]);
    await service.kill();
    await service.restart();

    const reply = await until('the lead to reply', () => replyOf(service, ids.thread, ids.lead));
    expect(reply).toMatch(/^the slow call: .*interrupted/);
    const calls = await toolCalls(service, ids.thread);
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ tool: SLOW_TOOL, server: 'everything', status: 'failed' });
    expect(calls[0]!.error).toMatch(/^interrupted: /);
    expect(mcp.proxy.callsOf(SLOW_TOOL)).toBe(1);
  });
});
