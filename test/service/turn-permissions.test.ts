/**
 * Edges are the permission (contract §11): a provider agent's model that names a participant it
 * has no edge to — by id (threads and edges of others, of another team, made up) or by name —
 * gets a tool error `not_on_your_edges` that is recorded, and nothing is written anywhere. The
 * model is the OpenAI-compatible stand-in, scripted to try every way off its edges at once.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callTool, type ModelScript, type ScriptedToolCall } from '../support/model-script.ts';
import { scriptedToolCompletions, startOpenAiStub, type OpenAiStub } from '../support/openai-stub.ts';
import { startHarness, waitForThread, type Harness } from './helpers.ts';
import { makeTeam, messagesOf, openThread, orgEvents, threadsOn, toolCalls, type BuiltTeam } from './turn-helpers.ts';

const cleanups: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

let attempts: ScriptedToolCall[] = [];
/** The model: the attempts in one step, then a reply that counts how many were refused. */
const script: ModelScript = (c) => {
  if (c.turnResults.length === 0) return attempts;
  return `refused: ${c.turnResults.filter((r) => r.text.includes('not_on_your_edges')).length} of ${c.turnResults.length}`;
};

let openai: OpenAiStub;
let h: Harness;
beforeAll(async () => {
  openai = await startOpenAiStub(scriptedToolCompletions(script));
  cleanups.push(() => openai.close());
  h = await startHarness({ inMemory: true, env: { ...process.env, OPENAI_BASE_URL: `${openai.origin}/v1` } });
  cleanups.push(() => h.server.close());
  expect((await h.call('PUT', `/api/v1/organizations/${h.orgId}/api-keys/openai`, { api_key: 'openai-key' })).status).toBe(200);
});

describe('turns: edges are the permission', () => {
  let team: BuiltTeam;
  let other: BuiltTeam;
  let threads: { strangerErin: string; researcherStranger: string; otherTeam: string };

  beforeAll(async () => {
    // lead's edges: dana and researcher. stranger and erin are in its team, off its edges.
    team = await makeTeam(h, {
      humans: ['dana', 'erin'],
      agents: [
        { name: 'lead', provider: 'openai', model: 'gpt-stub', instructions: 'lead', tools: { team: true } },
        { name: 'researcher' },
        { name: 'stranger' },
      ],
      edges: [
        ['dana', 'lead'],
        ['lead', 'researcher'],
        ['stranger', 'erin'],
        ['researcher', 'stranger'],
      ],
    });
    other = await makeTeam(h, { humans: ['olga'], agents: [{ name: 'ghost' }], edges: [['olga', 'ghost']] });
    threads = {
      strangerErin: await openThread(h, team.edgeOf('stranger', 'erin'), team.id.erin!, 'between stranger and erin'),
      researcherStranger: await openThread(h, team.edgeOf('researcher', 'stranger'), team.id.researcher!, 'between researcher and stranger'),
      otherTeam: await openThread(h, other.edgeOf('olga', 'ghost'), other.id.olga!, 'in another team'),
    };
  });

  it('20 attempts to reach participants off the agent\'s edges (by id, by name, another team\'s thread, made-up ids) are each refused with not_on_your_edges, and nothing is written', async () => {
    const madeUp = randomUUID();
    const say = (n: number) => `attempt ${n}: psst`;
    attempts = [
      // By id: threads of others in the team, of another team, and made up.
      callTool('send_message', { thread_id: threads.strangerErin, content: say(1) }),
      callTool('send_message', { thread_id: threads.researcherStranger, content: say(2) }),
      callTool('send_message', { thread_id: threads.otherTeam, content: say(3) }),
      callTool('send_message', { thread_id: madeUp, content: say(4) }),
      callTool('read_thread', { thread_id: threads.strangerErin }),
      callTool('read_thread', { thread_id: threads.otherTeam }),
      callTool('read_thread', { thread_id: madeUp }),
      // By id: edges of others, of another team, and made up.
      callTool('open_thread', { edge_id: team.edgeOf('stranger', 'erin'), content: say(8) }),
      callTool('open_thread', { edge_id: team.edgeOf('researcher', 'stranger'), content: say(9) }),
      callTool('open_thread', { edge_id: other.edgeOf('olga', 'ghost'), content: say(10) }),
      callTool('open_thread', { edge_id: madeUp, content: say(11) }),
      callTool('list_threads', { edge_id: team.edgeOf('stranger', 'erin') }),
      callTool('list_threads', { edge_id: other.edgeOf('olga', 'ghost') }),
      // By name: peers it has no edge to, in its team and in another, and a name nobody has.
      callTool('ask', { peer: 'stranger', content: say(14) }),
      callTool('ask', { peer: 'erin', content: say(15) }),
      callTool('ask', { peer: 'ghost', content: say(16) }),
      callTool('ask', { peer: 'nobody-at-all', content: say(17) }),
      // ask by id: an edge and a thread off its edges, and an edge of its own with a thread that is not on it.
      callTool('ask', { edge_id: team.edgeOf('stranger', 'erin'), content: say(18) }),
      callTool('ask', { thread_id: threads.otherTeam, content: say(19) }),
      callTool('ask', { edge_id: madeUp, content: say(20) }),
    ];
    expect(attempts).toHaveLength(20);
    const before = await orgEvents(h);
    const counts = async () => ({
      strangerErin: (await messagesOf(h, threads.strangerErin)).length,
      researcherStranger: (await messagesOf(h, threads.researcherStranger)).length,
      otherTeam: (await messagesOf(h, threads.otherTeam)).length,
      onEdges: await Promise.all(
        [team.edgeOf('stranger', 'erin'), team.edgeOf('researcher', 'stranger'), team.edgeOf('lead', 'researcher'), other.edgeOf('olga', 'ghost')].map(async (e) => (await threadsOn(h, e)).length),
      ),
    });
    const countsBefore = await counts();

    const thread = await openThread(h, team.edgeOf('dana', 'lead'), team.id.dana!, 'reach out to everyone you can');
    const messages = await waitForThread(h, thread, (ms) => ms.some((m) => m.sender_id === team.id.lead));
    expect(messages.map((m) => m.content)).toEqual(['reach out to everyone you can', 'refused: 20 of 20']);

    const calls = await toolCalls(h, thread);
    expect(calls).toHaveLength(20);
    for (const [i, call] of calls.entries()) {
      expect({ i, tool: call.tool, status: call.status, error: call.error?.split(':')[0] }).toEqual({ i, tool: attempts[i]!.name, status: 'failed', error: 'not_on_your_edges' });
      expect(call.arguments).toEqual(attempts[i]!.input);
      expect(call.waiting_on).toBeNull();
      expect(call.result).toBeNull();
    }
    // Another team's thread is refused in the words of an id that does not exist: nothing is revealed.
    expect(calls[2]!.error!.replace(threads.otherTeam!, 'ID')).toBe(calls[3]!.error!.replace(madeUp, 'ID'));
    expect(calls[5]!.error!.replace(threads.otherTeam!, 'ID')).toBe(calls[6]!.error!.replace(madeUp, 'ID'));
    expect(calls[9]!.error!.replace(other.edgeOf('olga', 'ghost'), 'ID')).toBe(calls[10]!.error!.replace(madeUp, 'ID'));
    const leaked = JSON.stringify(calls.map((c) => c.error));
    for (const secret of ['between stranger and erin', 'between researcher and stranger', 'in another team', team.id.stranger!, other.id.ghost!]) expect(leaked).not.toContain(secret);

    // Nothing was written: no thread opened, no message anywhere but the request and lead's reply.
    expect(await counts()).toEqual(countsBefore);
    const written = (await orgEvents(h, 'message.created,thread.opened')).filter((e) => e.seq > (before.at(-1)?.seq ?? 0));
    expect(written.map((e) => [e.type, e.data.thread_id ?? e.data.thread?.thread_id])).toEqual([
      ['thread.opened', thread],
      ['message.created', thread],
      ['message.created', thread],
    ]);
    // The model was told each refusal.
    const told = openai.requests.at(-1)!.body.messages.filter((m) => m.role === 'tool');
    expect(told).toHaveLength(20);
    expect(told.every((m) => String(m.content).includes('not_on_your_edges'))).toBe(true);
  });

  it('a peer on the agent\'s edges named together with a thread of another edge is refused, and its own edges work', async () => {
    // Opened by lead itself (as its operator would, by hand): it has nothing there to answer.
    const ownThread = await openThread(h, team.edgeOf('lead', 'researcher'), team.id.lead!, 'a thread of lead and researcher');
    attempts = [
      // The thread exists but is not on the edge of the peer named: refused, nothing written.
      callTool('send_message', { thread_id: threads.strangerErin, content: 'no' }),
      callTool('ask', { peer: 'researcher', thread_id: threads.strangerErin, content: 'no' }),
      // Its own edges: allowed.
      callTool('list_edges', {}),
      callTool('read_thread', { thread_id: ownThread }),
      callTool('send_message', { thread_id: ownThread, content: 'on my edge' }),
    ];
    const thread = await openThread(h, team.edgeOf('dana', 'lead'), team.id.dana!, 'try again');
    await waitForThread(h, thread, (ms) => ms.some((m) => m.sender_id === team.id.lead));
    const calls = await toolCalls(h, thread);
    expect(calls.map((c) => [c.tool, c.status, c.error?.split(':')[0] ?? null])).toEqual([
      ['send_message', 'failed', 'not_on_your_edges'],
      ['ask', 'failed', 'not_on_your_edges'],
      ['list_edges', 'completed', null],
      ['read_thread', 'completed', null],
      ['send_message', 'completed', null],
    ]);
    const edges = (calls[2]!.result as { edges: Array<{ peer?: { name: string }; peer_name?: string; name?: string }> }).edges;
    expect(JSON.stringify(edges)).toContain('researcher');
    expect(JSON.stringify(edges)).not.toContain('stranger');
    expect((await messagesOf(h, ownThread)).map((m) => m.content)).toEqual(['a thread of lead and researcher', 'on my edge']);
    expect((await messagesOf(h, threads.strangerErin)).map((m) => m.content)).toEqual(['between stranger and erin']);
  });
});
