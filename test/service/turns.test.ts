/**
 * Turns of provider agents with tools (contract §11), end to end against acs-server: delegation
 * chains with `ask` driven by the OpenAI-compatible and the Anthropic-compatible stand-ins, a
 * question to a person answered through the console's route, a turn of 100 tool calls, and the
 * tokens of every step counted toward the agent's usage and budget. The stand-ins tell the
 * agents apart by their instructions (the system prompt), as one vendor serves a whole team.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolCall } from '../../api/agent-tools.ts';
import { scriptedMessages, startAnthropicStub, type AnthropicRequest, type AnthropicStub } from '../support/anthropic-stub.ts';
import { callTool, type Conversation, type ModelScript, type ScriptReply } from '../support/model-script.ts';
import { scriptedToolCompletions, startOpenAiStub, textOf, type OpenAiStub, type StubRequest } from '../support/openai-stub.ts';
import { request, startHarness, waitForThread, type Harness } from './helpers.ts';
import { askAnswer, makeTeam, messagesOf, openThread, orgEvents, signIn, toolCalls, until, waitForToolCalls } from './turn-helpers.ts';

const cleanups: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

/** Scripts by the agent's instructions (the system prompt's first word): each test adds its own. */
const scripts = new Map<string, ModelScript>();
const byInstructions: ModelScript = (c: Conversation): ScriptReply | Promise<ScriptReply> => {
  const script = scripts.get((c.system ?? '').split(/\s/)[0]!);
  return script ? script(c) : undefined;
};

let openai: OpenAiStub;
let anthropic: AnthropicStub;
let h: Harness;

beforeAll(async () => {
  openai = await startOpenAiStub(scriptedToolCompletions(byInstructions));
  cleanups.push(() => openai.close());
  anthropic = await startAnthropicStub(scriptedMessages(byInstructions));
  cleanups.push(() => anthropic.close());
  h = await startHarness({ inMemory: true, env: { ...process.env, OPENAI_BASE_URL: `${openai.origin}/v1`, ANTHROPIC_BASE_URL: anthropic.origin } });
  cleanups.push(() => h.server.close());
  for (const provider of ['openai', 'anthropic']) {
    expect((await h.call('PUT', `/api/v1/organizations/${h.orgId}/api-keys/${provider}`, { api_key: `${provider}-key` })).status).toBe(200);
  }
});

/** An agent of `provider` whose instructions start with `key` (the script's key), with the team tools. */
function agent(name: string, provider: 'openai' | 'anthropic', key: string, extra: Record<string, unknown> = {}) {
  return { name, provider, model: provider === 'openai' ? 'gpt-stub' : 'claude-stub', instructions: `${key} — scripted`, tools: { team: true }, ...extra };
}

/** The requests of the OpenAI stand-in made for the agent whose instructions start with `key`. */
function openaiRequestsOf(key: string): StubRequest[] {
  return openai.requests.filter((r) => r.body.messages.some((m) => (m.role === 'system' || m.role === 'developer') && textOf(m.content).startsWith(key)));
}

/** The requests of the Anthropic stand-in made for the agent whose instructions start with `key`. */
function anthropicRequestsOf(key: string): AnthropicRequest[] {
  return anthropic.requests.filter((r) => {
    const system = typeof r.body.system === 'string' ? r.body.system : (r.body.system ?? []).map((b) => b.text).join('');
    return system.startsWith(key);
  });
}

/** Delegates to `peer` until the ask has an answer, then answers `prefix: <the answer>`. */
function delegate(peer: string, prefix: string): ModelScript {
  return (c) => {
    const answer = askAnswer(c.resultOf('ask'));
    return answer ? `${prefix}: ${answer.content}` : callTool('ask', { peer, content: `Please look into: ${c.lastUserText}` });
  };
}

describe('turns: delegation over edges', () => {
  it('a delegation chain of three OpenAI agents: lead asks researcher, researcher asks analyst, and lead\'s reply carries the answer back up', async () => {
    scripts.set('chain-lead', delegate('researcher', 'Plan'));
    scripts.set('chain-researcher', delegate('analyst', 'Findings'));
    scripts.set('chain-analyst', (c) => `analysed (${c.lastUserText})`);
    const team = await makeTeam(h, {
      humans: ['dana'],
      agents: [agent('lead', 'openai', 'chain-lead'), agent('researcher', 'openai', 'chain-researcher'), agent('analyst', 'openai', 'chain-analyst')],
      edges: [
        ['dana', 'lead'],
        ['lead', 'researcher'],
        ['researcher', 'analyst'],
      ],
    });
    const eventsBefore = (await orgEvents(h)).at(-1)?.seq ?? 0;
    const thread = await openThread(h, team.edgeOf('dana', 'lead'), team.id.dana!, 'ticket 7: the build is slow');

    const messages = await waitForThread(h, thread, (ms) => ms.some((m) => m.sender_id === team.id.lead));
    const reply = messages.find((m) => m.sender_id === team.id.lead)!;
    expect(reply.content).toBe(
      'Plan: Findings: analysed (Please look into: Please look into: ticket 7: the build is slow)',
    );
    expect(messages).toHaveLength(2);

    // Lead's turn: one ask, completed with researcher's answer; it waited in a thread on lead–researcher.
    const leadCalls = await toolCalls(h, thread);
    expect(leadCalls).toEqual([
      expect.objectContaining({
        agent_id: team.id.lead,
        thread_id: thread,
        message_id: messages[0]!.message_id,
        step: 1,
        tool: 'ask',
        server: null,
        arguments: { peer: 'researcher', content: 'Please look into: ticket 7: the build is slow' },
        status: 'completed',
        error: null,
        waiting_on: expect.objectContaining({ participant_id: team.id.researcher }),
        finished_at: expect.any(String),
      }),
    ]);
    const asked = leadCalls[0]!.waiting_on!;
    const leadResearcher = await messagesOf(h, asked.thread_id);
    expect(leadResearcher.map((m) => [m.sender_id, m.content])).toEqual([
      [team.id.lead, 'Please look into: ticket 7: the build is slow'],
      [team.id.researcher, 'Findings: analysed (Please look into: Please look into: ticket 7: the build is slow)'],
    ]);
    expect(asked.message_id).toBe(leadResearcher[0]!.message_id);
    expect(leadCalls[0]!.result).toMatchObject({
      from: { participant_id: team.id.researcher, name: 'researcher', kind: 'agent' },
      thread_id: asked.thread_id,
      message_id: leadResearcher[1]!.message_id,
      content: leadResearcher[1]!.content,
    });

    // Researcher's turn answered lead's question with its own ask to analyst.
    const researcherCalls = await toolCalls(h, asked.thread_id);
    expect(researcherCalls).toEqual([
      expect.objectContaining({ agent_id: team.id.researcher, tool: 'ask', status: 'completed', arguments: { peer: 'analyst', content: expect.stringContaining('ticket 7') } }),
    ]);
    const researcherAnalyst = await messagesOf(h, researcherCalls[0]!.waiting_on!.thread_id);
    expect(researcherAnalyst.map((m) => m.sender_id)).toEqual([team.id.researcher, team.id.analyst]);
    expect(await toolCalls(h, researcherCalls[0]!.waiting_on!.thread_id)).toEqual([]);

    // Each call has its started and finished events, carrying the record.
    const events = (await orgEvents(h, 'tool_call.started,tool_call.finished')).filter((e) => e.seq > eventsBefore);
    for (const record of [leadCalls[0]!, researcherCalls[0]!]) {
      const mine = events.filter((e) => e.data.tool_call_id === record.tool_call_id);
      expect(mine.map((e) => [e.type, e.data.status])).toEqual([
        ['tool_call.started', 'running'],
        ['tool_call.finished', 'completed'],
      ]);
      expect(mine[0]!.team_id).toBe(team.teamId);
      expect(mine[1]!.data).toEqual(record);
    }
    expect(events).toHaveLength(4);

    // Lead's model was given researcher's answer as the ask's result, in the request that wrote the reply.
    const leadRequests = openaiRequestsOf('chain-lead');
    expect(leadRequests).toHaveLength(2);
    const last = leadRequests[1]!.body.messages;
    const call = last.find((m) => m.role === 'assistant')!.tool_calls![0]!;
    expect(call.function.name).toBe('ask');
    const result = last.find((m) => m.role === 'tool')!;
    expect(result.tool_call_id).toBe(call.id);
    expect(JSON.parse(textOf(result.content))).toMatchObject({ content: leadResearcher[1]!.content, from: { name: 'researcher' } });
    // The first request offered the team tools, the task tools and ask, never wait_for_messages.
    const offered = (leadRequests[0]!.body.tools ?? []).map((t) => t.function.name).sort();
    expect(offered).toEqual(['add_artifact', 'ask', 'get_task', 'list_edges', 'list_tasks', 'list_threads', 'open_thread', 'read_thread', 'send_message', 'update_task', 'whoami']);
  });

  it('a delegation chain driven by the Anthropic stand-in: tool_use for the ask, and the answer goes back as a tool_result', async () => {
    scripts.set('claude-lead', delegate('researcher', 'Plan'));
    scripts.set('claude-researcher', delegate('analyst', 'Findings'));
    scripts.set('claude-analyst', (c) => `analysed (${c.lastUserText})`);
    const team = await makeTeam(h, {
      humans: ['dana'],
      agents: [agent('lead', 'anthropic', 'claude-lead'), agent('researcher', 'anthropic', 'claude-researcher'), agent('analyst', 'openai', 'claude-analyst')],
      edges: [
        ['dana', 'lead'],
        ['lead', 'researcher'],
        ['researcher', 'analyst'],
      ],
    });
    const thread = await openThread(h, team.edgeOf('dana', 'lead'), team.id.dana!, 'ticket 8');
    const messages = await waitForThread(h, thread, (ms) => ms.some((m) => m.sender_id === team.id.lead));
    expect(messages.at(-1)!.content).toBe('Plan: Findings: analysed (Please look into: Please look into: ticket 8)');

    const [leadCall] = await toolCalls(h, thread);
    expect(leadCall).toMatchObject({ tool: 'ask', status: 'completed', arguments: { peer: 'researcher' } });
    const requests = anthropicRequestsOf('claude-lead');
    expect(requests).toHaveLength(2);
    const [assistant, toolResult] = requests[1]!.body.messages.slice(-2);
    expect(assistant!.role).toBe('assistant');
    const use = (assistant!.content as Array<{ type: string; id?: string; name?: string }>).find((b) => b.type === 'tool_use')!;
    expect(use).toMatchObject({ name: 'ask', id: expect.stringMatching(/^toolu_/) });
    const block = (toolResult!.content as Array<{ type: string; tool_use_id?: string; content?: unknown; is_error?: boolean }>).find((b) => b.type === 'tool_result')!;
    expect(block.tool_use_id).toBe(use.id);
    expect(block.is_error ?? false).toBe(false);
    expect(JSON.stringify(block.content)).toContain('Findings: analysed');
    expect(anthropicRequestsOf('claude-researcher')).toHaveLength(2);
  });
});

describe('turns: tool errors as each vendor is told them', () => {
  it('a failed tool call goes back to an Anthropic model as a tool_result with is_error, carrying the recorded error', async () => {
    scripts.set('claude-err', (c) => {
      const result = c.turnResults.at(-1);
      return result ? `told (is_error ${String(result.isError)}): ${result.text}` : callTool('read_thread', { thread_id: 'not-an-id' });
    });
    const team = await makeTeam(h, { humans: ['dana'], agents: [agent('careless', 'anthropic', 'claude-err')], edges: [['dana', 'careless']] });
    const thread = await openThread(h, team.edgeOf('dana', 'careless'), team.id.dana!, 'read something');
    const messages = await waitForThread(h, thread, (ms) => ms.some((m) => m.sender_id === team.id.careless));
    const [call] = await toolCalls(h, thread);
    expect(call).toMatchObject({ tool: 'read_thread', status: 'failed', error: expect.stringMatching(/^invalid_arguments: thread_id: /) });
    expect(messages.at(-1)!.content).toBe(`told (is_error true): ${call!.error}`);
  });
});

describe('turns: delegation details', () => {
  it('delegation: the ask\'s result is the asked agent\'s reply, not a note it sent first with send_message, and the asking agent does not answer that reply', async () => {
    scripts.set('noted-lead', delegate('researcher', 'Plan'));
    scripts.set('noted-researcher', (c) => {
      const sent = c.resultOf('send_message');
      if (sent) return 'the answer is 42';
      const listed = c.resultOf('list_threads')?.json as { threads: Array<{ thread_id: string }> } | undefined;
      if (listed) return callTool('send_message', { thread_id: listed.threads[0]!.thread_id, content: 'working on it' });
      return callTool('list_threads', {});
    });
    const team = await makeTeam(h, {
      humans: ['dana'],
      agents: [agent('lead', 'openai', 'noted-lead'), agent('researcher', 'openai', 'noted-researcher')],
      edges: [
        ['dana', 'lead'],
        ['lead', 'researcher'],
      ],
    });
    const thread = await openThread(h, team.edgeOf('dana', 'lead'), team.id.dana!, 'what is the answer?');
    const messages = await waitForThread(h, thread, (ms) => ms.some((m) => m.sender_id === team.id.lead));
    expect(messages.at(-1)!.content).toBe('Plan: the answer is 42');
    const [call] = await toolCalls(h, thread);
    const asked = call!.waiting_on!.thread_id;
    // A second's wait: an answer of lead to researcher's reply would come within it.
    const page = await messagesOf(h, asked);
    const quiet = await h.call('GET', `/api/v1/threads/${asked}?after=${page.at(-1)!.message_id}&wait=1`);
    expect(quiet.body.messages).toEqual([]);
    expect(page.map((m) => [m.sender_id === team.id.lead ? 'lead' : 'researcher', m.content])).toEqual([
      ['lead', 'Please look into: what is the answer?'],
      ['researcher', 'working on it'],
      ['researcher', 'the answer is 42'],
    ]);
  });

  it('a turn that writes into its own thread with send_message still leaves the messages that came after the one it answers to later turns', async () => {
    scripts.set('noter', (c) => {
      if (c.resultOf('send_message')) return `done: ${c.lastUserText}`;
      const listed = c.resultOf('list_threads')?.json as { threads: Array<{ thread_id: string }> } | undefined;
      if (listed) return callTool('send_message', { thread_id: listed.threads[0]!.thread_id, content: `note on ${c.lastUserText}` });
      return callTool('list_threads', {});
    });
    const team = await makeTeam(h, { humans: ['dana'], agents: [agent('noter', 'openai', 'noter', { status: 'paused' })], edges: [['dana', 'noter']] });
    const thread = await openThread(h, team.edgeOf('dana', 'noter'), team.id.dana!, 'first');
    await h.call('POST', `/api/v1/threads/${thread}/messages`, { sender_agent_id: team.id.dana, content: 'second' });
    expect((await h.call('PATCH', `/api/v1/agents/${team.id.noter}`, { status: 'active' })).status).toBe(200);
    const messages = await waitForThread(h, thread, (ms) => ms.some((m) => m.content === 'done: second'), 15_000);
    expect(messages.map((m) => m.content)).toEqual(['first', 'second', 'note on first', 'done: first', 'note on second', 'done: second']);
  });

  it('an ask in the turn\'s own thread (thread_id): the person\'s answer resumes the turn, is not answered as a message of its own, and a later message gets its own turn', async () => {
    scripts.set('clarifier', (c) => {
      const answer = askAnswer(c.resultOf('ask'));
      if (answer) return `done: ${c.lastUserText} (${answer.content})`;
      const listed = c.resultOf('list_threads')?.json as { threads: Array<{ thread_id: string }> } | undefined;
      if (listed) return callTool('ask', { thread_id: listed.threads[0]!.thread_id, content: `clarify ${c.lastUserText}?` });
      return callTool('list_threads', {});
    });
    const team = await makeTeam(h, { humans: ['dana'], agents: [agent('clarifier', 'openai', 'clarifier', { status: 'paused' })], edges: [['dana', 'clarifier']] });
    const thread = await openThread(h, team.edgeOf('dana', 'clarifier'), team.id.dana!, 'first');
    await h.call('POST', `/api/v1/threads/${thread}/messages`, { sender_agent_id: team.id.dana, content: 'second' });
    await h.call('PATCH', `/api/v1/agents/${team.id.clarifier}`, { status: 'active' });
    for (const n of [1, 2]) {
      await waitForThread(h, thread, (ms) => ms.filter((m) => m.content.startsWith('clarify')).length === n);
      await h.call('POST', `/api/v1/threads/${thread}/messages`, { sender_agent_id: team.id.dana, content: `answer ${n}` });
    }
    const messages = await waitForThread(h, thread, (ms) => ms.some((m) => m.content.startsWith('done: second')));
    const quiet = await h.call('GET', `/api/v1/threads/${thread}?after=${messages.at(-1)!.message_id}&wait=1`);
    expect([...messages, ...quiet.body.messages].map((m) => m.content)).toEqual([
      'first',
      'second',
      'clarify first?',
      'answer 1',
      'done: first (answer 1)',
      'clarify second?',
      'answer 2',
      'done: second (answer 2)',
    ]);
  });

  it('delegation: one step asks two specialists side by side, and the turn resumes once both have answered', async () => {
    scripts.set('fan-lead', (c) => {
      if (c.turnResults.length === 2) return c.turnResults.map((r) => askAnswer(r)!.content).sort().join(' + ');
      return [callTool('ask', { peer: 'alpha', content: 'part A' }), callTool('ask', { peer: 'beta', content: 'part B' })];
    });
    scripts.set('fan-alpha', (c) => `alpha did ${c.lastUserText}`);
    scripts.set('fan-beta', (c) => `beta did ${c.lastUserText}`);
    const team = await makeTeam(h, {
      humans: ['dana'],
      agents: [agent('lead', 'openai', 'fan-lead'), agent('alpha', 'openai', 'fan-alpha'), agent('beta', 'anthropic', 'fan-beta')],
      edges: [
        ['dana', 'lead'],
        ['lead', 'alpha'],
        ['lead', 'beta'],
      ],
    });
    const thread = await openThread(h, team.edgeOf('dana', 'lead'), team.id.dana!, 'split it');
    const messages = await waitForThread(h, thread, (ms) => ms.some((m) => m.sender_id === team.id.lead));
    expect(messages.at(-1)!.content).toBe('alpha did part A + beta did part B');
    const calls = await toolCalls(h, thread);
    expect(calls.map((c) => [c.step, c.tool, c.status, (c.result as { from: { name: string } }).from.name])).toEqual([
      [1, 'ask', 'completed', 'alpha'],
      [1, 'ask', 'completed', 'beta'],
    ]);
    expect(openaiRequestsOf('fan-lead')).toHaveLength(2);
  });

  it('delegation with the echo provider: `ask NAME: QUESTION` lines delegate, and the reply quotes each answer', async () => {
    const team = await makeTeam(h, {
      humans: ['dana'],
      agents: [
        { name: 'lead', provider: 'echo', tools: { team: true } },
        { name: 'researcher', provider: 'echo' },
        { name: 'writer', provider: 'echo', tools: { team: true } },
      ],
      edges: [
        ['dana', 'lead'],
        ['lead', 'researcher'],
        ['lead', 'writer'],
      ],
    });
    expect((await h.call('PUT', `/api/v1/organizations/${h.orgId}/api-keys/echo`, { api_key: 'echo-key' })).status).toBe(200);
    const thread = await openThread(h, team.edgeOf('dana', 'lead'), team.id.dana!, 'ask researcher: find the numbers\nask writer: draft the memo');
    const messages = await waitForThread(h, thread, (ms) => ms.some((m) => m.sender_id === team.id.lead));
    expect(messages.at(-1)!.content).toBe(
      ['echo: ask researcher: find the numbers\nask writer: draft the memo', 'researcher answered: "echo: find the numbers"', 'writer answered: "echo: draft the memo"'].join('\n'),
    );
  });
});

describe('turns: a question to a person', () => {
  it('a question to a person: lead asks dana, dana answers in the console, and the turn resumes with her answer', async () => {
    scripts.set('person-lead', (c) => {
      const answer = askAnswer(c.resultOf('ask'));
      return answer ? `Going with ${answer.content} (asked ${answer.from?.name})` : callTool('ask', { peer: 'dana', content: 'Which region should we deploy to?', subject: 'Region' });
    });
    const team = await makeTeam(h, {
      humans: ['dana', 'erin'],
      agents: [agent('lead', 'openai', 'person-lead')],
      edges: [
        ['erin', 'lead'],
        ['dana', 'lead'],
      ],
    });
    const thread = await openThread(h, team.edgeOf('erin', 'lead'), team.id.erin!, 'deploy v2');
    const [asking] = await waitForToolCalls(h, thread, (calls) => calls[0]?.waiting_on !== null && calls[0]?.waiting_on !== undefined);
    expect(asking).toMatchObject({ tool: 'ask', status: 'running', waiting_on: { participant_id: team.id.dana } });

    const dana = await signIn(h, team.id.dana!);
    const inbox = await dana.call('GET', '/api/v1/me/threads');
    expect(inbox.status).toBe(200);
    const question = inbox.body.threads.find((t: { thread_id: string }) => t.thread_id === asking!.waiting_on!.thread_id);
    expect(question).toMatchObject({ awaiting_reply: true, subject: 'Region', unread_count: 1 });
    // A suspended turn makes no provider call while it waits.
    const requestsWhileWaiting = openaiRequestsOf('person-lead').length;
    expect(requestsWhileWaiting).toBe(1);

    const answered = await dana.call('POST', `/api/v1/me/threads/${asking!.waiting_on!.thread_id}/messages`, { content: 'eu-west-1' });
    expect(answered.status).toBe(201);
    const messages = await waitForThread(h, thread, (ms) => ms.some((m) => m.sender_id === team.id.lead));
    expect(messages.at(-1)!.content).toBe('Going with eu-west-1 (asked dana)');
    expect(openaiRequestsOf('person-lead')).toHaveLength(2);

    // Her session sees the tool calls of her own threads, and only those.
    const erinThreadCalls = await dana.call('GET', `/api/v1/me/threads/${thread}/tool-calls`);
    expect(erinThreadCalls.status).toBe(404);
    const erin = await signIn(h, team.id.erin!);
    const seen = await erin.call('GET', `/api/v1/me/threads/${thread}/tool-calls`);
    expect(seen.status).toBe(200);
    expect(seen.body.tool_calls).toEqual([
      expect.objectContaining({ tool_call_id: asking!.tool_call_id, status: 'completed', result: expect.objectContaining({ content: 'eu-west-1', from: expect.objectContaining({ name: 'dana' }) }) }),
    ]);
    expect(seen.body.tool_calls).toEqual(await toolCalls(h, thread));
    // The question's thread has no tool calls of its own.
    expect((await dana.call('GET', `/api/v1/me/threads/${asking!.waiting_on!.thread_id}/tool-calls`)).body).toEqual({ tool_calls: [], next_after: null });
  });
});

describe('turns: many tool calls', () => {
  it('a turn of 100 tool calls (25 whoami per step over 4 steps) completes with every call recorded completed and one reply', async () => {
    scripts.set('busy', (c) => {
      const done = c.turnResults.length;
      if (done >= 100) return `done after ${done} calls`;
      return Array.from({ length: 25 }, () => callTool('whoami', {}));
    });
    const team = await makeTeam(h, { humans: ['dana'], agents: [agent('busy', 'openai', 'busy', { max_steps: 6 })], edges: [['dana', 'busy']] });
    const thread = await openThread(h, team.edgeOf('dana', 'busy'), team.id.dana!, 'count to a hundred');
    const messages = await waitForThread(h, thread, (ms) => ms.some((m) => m.sender_id === team.id.busy), 60_000);
    expect(messages.map((m) => m.content)).toEqual(['count to a hundred', 'done after 100 calls']);
    const calls = await toolCalls(h, thread);
    expect(calls).toHaveLength(100);
    expect(calls.every((c) => c.status === 'completed' && c.tool === 'whoami')).toBe(true);
    expect(calls.map((c) => c.step)).toEqual([...Array(25).fill(1), ...Array(25).fill(2), ...Array(25).fill(3), ...Array(25).fill(4)]);
    expect(calls[99]!.result).toMatchObject({ agent: { agent_id: team.id.busy, name: 'busy' } });
    expect(new Set(calls.map((c) => c.tool_call_id)).size).toBe(100);

    // The listing pages by `after`, oldest first; a cursor of another thread is refused, and so is another organization's key.
    const pages: string[] = [];
    let after: string | null = null;
    for (;;) {
      const page: { body: { tool_calls: Array<{ tool_call_id: string }>; next_after: string | null } } = await h.call('GET', `/api/v1/threads/${thread}/tool-calls?limit=30${after ? `&after=${after}` : ''}`);
      pages.push(...page.body.tool_calls.map((c) => c.tool_call_id));
      if (page.body.tool_calls.length === 0) break;
      after = page.body.next_after;
    }
    expect(pages).toEqual(calls.map((c) => c.tool_call_id));
    // A cursor that names no tool call of this thread.
    const foreignCursor = await h.call('GET', `/api/v1/threads/${thread}/tool-calls?after=${crypto.randomUUID()}`);
    expect(foreignCursor.status).toBe(400);
    expect(foreignCursor.body.code).toBe('invalid_cursor');
    const other = await h.server.provisionOrganization(`other-${Math.random()}`);
    const outsider = await request(`${h.server.url}/api/v1/threads/${thread}/tool-calls`, 'GET', undefined, { 'x-api-key': other.api_key });
    expect(outsider.status).toBe(404);
    expect(JSON.stringify(outsider.body)).not.toContain(team.id.busy!);
  });
});

describe('turns: token usage', () => {
  it('usage: the tokens of every step of a turn count toward the agent\'s usage', async () => {
    scripts.set('usage-lead', (c) => (c.turnResults.length < 2 ? callTool('list_edges', {}) : 'two looks were enough'));
    const team = await makeTeam(h, { humans: ['dana'], agents: [agent('counter', 'openai', 'usage-lead')], edges: [['dana', 'counter']] });
    const thread = await openThread(h, team.edgeOf('dana', 'counter'), team.id.dana!, 'look around');
    await waitForThread(h, thread, (ms) => ms.some((m) => m.sender_id === team.id.counter));
    expect(await toolCalls(h, thread)).toHaveLength(2);
    // Three model calls (two steps of calls, then the reply), each 11 in + 7 out by the stand-in.
    const usage = await h.call('GET', `/api/v1/agents/${team.id.counter}/usage`);
    expect(usage.status).toBe(200);
    expect(usage.body).toMatchObject({ calls: 3, input_tokens: 33, output_tokens: 21, total_tokens: 54, tokens_today: 54 });
  });

  it('usage: a daily budget spent in the middle of a turn stops it before its next model call, and a raised budget resumes it where it stopped', async () => {
    // Each step costs 18 tokens; a budget of 30 lets two steps be asked for, and no third.
    scripts.set('budget-lead', (c) => (c.turnResults.length >= 3 ? 'enough' : callTool('whoami', {})));
    const team = await makeTeam(h, { humans: ['dana'], agents: [agent('spender', 'openai', 'budget-lead', { max_tokens_per_day: 30 })], edges: [['dana', 'spender']] });
    const thread = await openThread(h, team.edgeOf('dana', 'spender'), team.id.dana!, 'keep going');
    await until(
      () => h.call('GET', `/api/v1/agents/${team.id.spender}/usage`),
      (usage) => usage.body.budget_exhausted_until !== null,
      'the budget to be spent',
    );
    const calls = await waitForToolCalls(h, thread, (cs) => cs.length === 2 && cs.every((c) => c.status === 'completed'));
    expect(calls.map((c: ToolCall) => c.step)).toEqual([1, 2]);
    // The turn waits for the next day: no third model call, no reply.
    const quiet = await h.call('GET', `/api/v1/threads/${thread}?after=${(await messagesOf(h, thread))[0]!.message_id}&wait=1`);
    expect(quiet.body.messages).toEqual([]);
    expect(openaiRequestsOf('budget-lead')).toHaveLength(2);
    const usage = await h.call('GET', `/api/v1/agents/${team.id.spender}/usage`);
    expect(usage.body).toMatchObject({ calls: 2, total_tokens: 36, tokens_today: 36, max_tokens_per_day: 30 });

    // A raised budget: the same turn goes on at its third step; the first two are not asked again.
    expect((await h.call('PATCH', `/api/v1/agents/${team.id.spender}`, { max_tokens_per_day: 1000 })).status).toBe(200);
    const messages = await waitForThread(h, thread, (ms) => ms.some((m) => m.sender_id === team.id.spender));
    expect(messages.map((m) => m.content)).toEqual(['keep going', 'enough']);
    expect((await toolCalls(h, thread)).map((c) => [c.step, c.status])).toEqual([
      [1, 'completed'],
      [2, 'completed'],
      [3, 'completed'],
    ]);
    expect(openaiRequestsOf('budget-lead')).toHaveLength(4);
    expect((await h.call('GET', `/api/v1/agents/${team.id.spender}/usage`)).body).toMatchObject({ calls: 4, total_tokens: 72 });
  });
});
