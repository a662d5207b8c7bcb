/**
 * The client's methods for a thread's tool calls (contract §11, `GET /threads/{id}/tool-calls`)
 * against a real acs-server: an echo agent with the team tools makes one tool call per `call`
 * line of the message it answers, so a thread's calls are known in advance.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AcsApiError, AcsClient } from '../../client/index.ts';
import { startServer, type RunningServer } from '../../service/index.ts';

let server: RunningServer;
let client: AcsClient;
let threadId: string;

/** The tools the message below asks echo to call, in order. */
const asked = ['whoami', 'list_edges', 'whoami', 'list_threads', 'whoami'];

beforeAll(async () => {
  server = await startServer({ inMemory: true, port: 0, tickMs: 20, logger: false });
  const org = await server.provisionOrganization('client-tool-calls');
  client = new AcsClient({ baseUrl: server.url, apiKey: org.api_key });
  await client.putProviderKey(org.org_id, 'echo', 'echo-key');
  const team = await client.createTeam(org.org_id, { team_name: 'desk' });
  const dana = (await client.createHuman(team.team_id, { name: 'dana' })).human_id;
  const clerk = (await client.createAgent(team.team_id, { name: 'clerk', provider: 'echo', tools: { team: true } })).agent_id;
  const edge = await client.createEdge(team.team_id, [dana, clerk]);
  threadId = (await client.openThread(edge.edge_id, { sender_agent_id: dana, content: asked.map((tool) => `call ${tool}`).join('\n') })).thread_id;
  // The turn is over when clerk's reply is in the thread.
  for (let i = 0; i < 600; i++) {
    const page = await client.getThread(threadId, { limit: 10 });
    if (page.messages.some((m) => m.sender_id === clerk)) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error('clerk did not reply');
});

afterAll(async () => {
  await server?.close();
});

async function failure(promise: Promise<unknown>): Promise<AcsApiError> {
  const error = await promise.then(() => undefined, (e: unknown) => e);
  expect(error).toBeInstanceOf(AcsApiError);
  return error as AcsApiError;
}

describe('client: tool calls', () => {
  it("client: listToolCalls gives a page of the thread's tool calls, oldest first, and next_after continues it", async () => {
    const first = await client.listToolCalls(threadId, { limit: 2 });
    expect(first.tool_calls.map((c) => c.tool)).toEqual(asked.slice(0, 2));
    expect(first.next_after).toBe(first.tool_calls[1]!.tool_call_id);
    const second = await client.listToolCalls(threadId, { after: first.next_after!, limit: 2 });
    expect(second.tool_calls.map((c) => c.tool)).toEqual(asked.slice(2, 4));
    const whole = await client.listToolCalls(threadId);
    expect(whole.tool_calls.map((c) => [c.tool, c.server, c.status, c.step])).toEqual(asked.map((tool) => [tool, null, 'completed', 1]));
    expect(whole.tool_calls.every((c) => c.thread_id === threadId && c.finished_at !== null)).toBe(true);
  });

  it('client: allToolCalls walks every page and returns what one page holds, in the same order', async () => {
    const one = (await client.listToolCalls(threadId, { limit: 500 })).tool_calls;
    const walked = await client.allToolCalls(threadId, { pageSize: 2 });
    expect(walked.map((c) => c.tool_call_id)).toEqual(one.map((c) => c.tool_call_id));
    expect(walked).toHaveLength(asked.length);
    const rest = await client.allToolCalls(threadId, { after: one[2]!.tool_call_id, pageSize: 1 });
    expect(rest.map((c) => c.tool_call_id)).toEqual(one.slice(3).map((c) => c.tool_call_id));
  });

  it('client: an unknown thread is not_found, and an after that is no tool call of the thread is invalid_cursor', async () => {
    expect(await failure(client.listToolCalls('00000000-0000-4000-8000-000000000000'))).toMatchObject({ status: 404, code: 'not_found' });
    expect(await failure(client.allToolCalls(threadId, { after: '00000000-0000-4000-8000-000000000000' }))).toMatchObject({ status: 400, code: 'invalid_cursor' });
  });
});
