/**
 * Approvals (contract §11): before a tool that `approval.tools` names runs, the turn asks the
 * human `approval.by` in a thread on their edge with the agent — the question names the tool and
 * its arguments — and waits. Approved, the call is made (the counting proxy in front of
 * server-everything sees it once); rejected, it is not made at all and the model is told. The
 * model is the OpenAI-compatible stand-in.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolCall } from '../../api/agent-tools.ts';
import { startCountedEverything, type CountedEverything } from '../support/mcp-everything.ts';
import { callTool, type ModelScript } from '../support/model-script.ts';
import { scriptedToolCompletions, startOpenAiStub, textOf, type OpenAiStub } from '../support/openai-stub.ts';
import { startHarness, waitForThread, type Harness } from './helpers.ts';
import { makeTeam, messagesOf, openThread, orgEvents, signIn, toolCalls, waitForToolCalls, type BuiltTeam } from './turn-helpers.ts';

const cleanups: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

/**
 * The model: `echo <text>` makes it call everything__echo with that message; `tell <thread> <text>`
 * makes it send_message there. Once the call has a result it says what came of it.
 */
const script: ModelScript = (c) => {
  const done = c.turnResults.at(-1);
  if (done) return `${done.toolName} said: ${done.text}`;
  const text = c.lastUserText ?? '';
  const tell = /^tell (\S+) (.+)$/.exec(text);
  if (tell) return callTool('send_message', { thread_id: tell[1], content: tell[2] });
  return callTool('everything__echo', { message: text.replace(/^echo /, '') });
};

let openai: OpenAiStub;
let everything: CountedEverything;
let h: Harness;
let team: BuiltTeam;

beforeAll(async () => {
  [openai, everything] = await Promise.all([startOpenAiStub(scriptedToolCompletions(script)), startCountedEverything()]);
  cleanups.push(() => openai.close(), () => everything.close());
  h = await startHarness({ inMemory: true, webhooks: { allowPrivate: true }, env: { ...process.env, OPENAI_BASE_URL: `${openai.origin}/v1` } });
  cleanups.push(() => h.server.close());
  expect((await h.call('PUT', `/api/v1/organizations/${h.orgId}/api-keys/openai`, { api_key: 'openai-key' })).status).toBe(200);
  team = await makeTeam(h, {
    humans: ['dana', 'erin'],
    agents: [
      {
        name: 'lead',
        provider: 'openai',
        model: 'gpt-stub',
        instructions: 'lead',
        tools: { team: true, mcp: [{ name: 'everything', url: everything.url, allow: ['echo'] }], approval: { by: 'dana', tools: ['everything.echo', 'send_message'] } },
      },
      { name: 'researcher' },
    ],
    edges: [
      ['erin', 'lead'],
      ['dana', 'lead'],
      ['lead', 'researcher'],
    ],
  });
});

/** Erin asks lead; resolves with the call once it waits for dana's approval. */
async function awaitingApproval(content: string): Promise<{ thread: string; call: ToolCall }> {
  const thread = await openThread(h, team.edgeOf('erin', 'lead'), team.id.erin!, content);
  const [call] = await waitForToolCalls(h, thread, (calls) => calls[0]?.waiting_on !== null && calls[0]?.waiting_on !== undefined);
  return { thread, call: call! };
}

/** The echo calls the proxy forwarded with `message`. */
const echoed = (message: string) => everything.proxy.toolCalls.filter((c) => c.tool === 'echo' && (c.arguments as { message?: string })?.message === message).length;

describe('turns: approvals', () => {
  it('approval approved: the question names the tool and its arguments, dana approves in the console, and the remote tool is called once', async () => {
    const { thread, call } = await awaitingApproval('echo ship v2');
    expect(call).toMatchObject({ tool: 'echo', server: 'everything', status: 'awaiting_approval', arguments: { message: 'ship v2' }, waiting_on: { participant_id: team.id.dana } });
    const question = await messagesOf(h, call.waiting_on!.thread_id);
    expect(question).toHaveLength(1);
    expect(question[0]).toMatchObject({ message_id: call.waiting_on!.message_id, sender_id: team.id.lead });
    expect(question[0]!.content).toContain('lead asks for your approval to call everything.echo with:');
    expect(question[0]!.content).toContain('"message": "ship v2"');
    // Nothing is called while it waits.
    expect(echoed('ship v2')).toBe(0);

    const dana = await signIn(h, team.id.dana!);
    const inbox = await dana.call('GET', '/api/v1/me/threads');
    expect(inbox.body.threads).toEqual(expect.arrayContaining([expect.objectContaining({ thread_id: call.waiting_on!.thread_id, awaiting_reply: true, subject: 'Approval: everything.echo' })]));
    expect((await dana.call('POST', `/api/v1/me/threads/${call.waiting_on!.thread_id}/messages`, { content: 'approve' })).status).toBe(201);

    const messages = await waitForThread(h, thread, (ms) => ms.some((m) => m.sender_id === team.id.lead));
    expect(messages.at(-1)!.content).toMatch(/^everything__echo said: \{"content":\[.*"Echo: ship v2"/);
    expect(echoed('ship v2')).toBe(1);
    const [done] = await toolCalls(h, thread);
    expect(done).toMatchObject({ tool_call_id: call.tool_call_id, status: 'completed', error: null, result: { content: [{ type: 'text', text: 'Echo: ship v2' }] } });
    const events = (await orgEvents(h, 'tool_call.started,tool_call.finished')).filter((e) => e.data.tool_call_id === call.tool_call_id);
    expect(events.map((e) => [e.type, e.data.status])).toEqual([
      ['tool_call.started', 'awaiting_approval'],
      ['tool_call.started', 'running'],
      ['tool_call.finished', 'completed'],
    ]);
  });

  it('approval rejected: the call is rejected with dana\'s reason, never made, and the model is told', async () => {
    const { thread, call } = await awaitingApproval('echo drop the database');
    expect((await h.call('POST', `/api/v1/threads/${call.waiting_on!.thread_id}/messages`, { sender_agent_id: team.id.dana, content: 'reject: not on a Friday' })).status).toBe(201);
    const messages = await waitForThread(h, thread, (ms) => ms.some((m) => m.sender_id === team.id.lead));
    const [done] = await toolCalls(h, thread);
    expect(done).toMatchObject({ status: 'rejected', error: 'rejected: dana rejected it: not on a Friday', result: null, finished_at: expect.any(String) });
    expect(echoed('drop the database')).toBe(0);
    // OpenAI's format has no error flag: the AI SDK sends a tool error as {"error": …}.
    expect(messages.at(-1)!.content).toBe('everything__echo said: {"error":"rejected: dana rejected it: not on a Friday"}');
    const told = openai.requests.at(-1)!.body.messages.find((m) => m.role === 'tool')!;
    expect(textOf(told.content)).toContain('rejected: dana rejected it: not on a Friday');
    const events = (await orgEvents(h, 'tool_call.started,tool_call.finished')).filter((e) => e.data.tool_call_id === call.tool_call_id);
    expect(events.map((e) => [e.type, e.data.status])).toEqual([
      ['tool_call.started', 'awaiting_approval'],
      ['tool_call.finished', 'rejected'],
    ]);
  });

  it('approval: an answer that is neither approve nor reject is asked again; a typed JSON reply then approves a send_message, which writes once', async () => {
    const target = await openThread(h, team.edgeOf('lead', 'researcher'), team.id.lead!, 'notes');
    const { thread, call } = await awaitingApproval(`tell ${target} the release is approved`);
    expect(call).toMatchObject({ tool: 'send_message', server: null, status: 'awaiting_approval' });
    const approvals = call.waiting_on!.thread_id;
    await h.call('POST', `/api/v1/threads/${approvals}/messages`, { sender_agent_id: team.id.dana, content: 'hmm, which release?' });
    const reasked = await waitForThread(h, approvals, (ms) => ms.length >= 3);
    expect(reasked[2]).toMatchObject({ sender_id: team.id.lead, content: expect.stringContaining('Please answer approve, or reject') });
    expect((await toolCalls(h, thread))[0]).toMatchObject({ status: 'awaiting_approval', waiting_on: { message_id: reasked[2]!.message_id } });
    expect((await messagesOf(h, target)).map((m) => m.content)).toEqual(['notes']);

    await h.call('POST', `/api/v1/threads/${approvals}/messages`, { sender_agent_id: team.id.dana, content: '{"decision": "approve", "comment": "the v2 one"}' });
    await waitForThread(h, thread, (ms) => ms.some((m) => m.sender_id === team.id.lead));
    expect((await toolCalls(h, thread))[0]).toMatchObject({ status: 'completed' });
    expect((await messagesOf(h, target)).map((m) => m.content)).toEqual(['notes', 'the release is approved']);
  });

  it('approval: nobody answering within ask_timeout_seconds rejects the call (approval_timeout), and it is not made', async () => {
    const hurried = await makeTeam(h, {
      humans: ['dana'],
      agents: [
        {
          name: 'hurried',
          provider: 'openai',
          model: 'gpt-stub',
          instructions: 'hurried',
          tools: { ask_timeout_seconds: 1, mcp: [{ name: 'everything', url: everything.url, allow: ['echo'] }], approval: { by: 'dana', tools: ['everything.echo'] } },
        },
      ],
      edges: [['dana', 'hurried']],
    });
    const thread = await openThread(h, hurried.edgeOf('dana', 'hurried'), hurried.id.dana!, 'echo in a hurry');
    const messages = await waitForThread(h, thread, (ms) => ms.some((m) => m.sender_id === hurried.id.hurried));
    const [call] = await toolCalls(h, thread);
    expect(call).toMatchObject({ status: 'rejected', error: 'rejected: nobody approved it within 1 s (approval_timeout)' });
    expect(messages.at(-1)!.content).toContain('approval_timeout');
    expect(echoed('in a hurry')).toBe(0);
  });

  it('approval: an approver who shares no edge with the agent cannot be asked: the call fails approval_unavailable and is not made', async () => {
    const solo = await makeTeam(h, {
      humans: ['dana', 'erin'],
      agents: [
        {
          name: 'solo',
          provider: 'openai',
          model: 'gpt-stub',
          instructions: 'solo',
          tools: { mcp: [{ name: 'everything', url: everything.url }], approval: { by: 'dana', tools: ['everything.echo'] } },
        },
      ],
      edges: [['erin', 'solo']],
    });
    const thread = await openThread(h, solo.edgeOf('erin', 'solo'), solo.id.erin!, 'echo unapproved');
    const messages = await waitForThread(h, thread, (ms) => ms.some((m) => m.sender_id === solo.id.solo));
    const [call] = await toolCalls(h, thread);
    expect(call).toMatchObject({ status: 'failed', error: expect.stringMatching(/^approval_unavailable: dana shares no edge/) });
    expect(messages.at(-1)!.content).toContain('approval_unavailable');
    expect(echoed('unapproved')).toBe(0);
  });
});
