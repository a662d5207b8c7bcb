/**
 * The limits of a turn and how its tool calls fail (contract §11): `max_steps`, 32 calls per step,
 * unknown tools and arguments that do not fit, an ask whose answer must fit `reply_schema`, an ask
 * nobody answers in time, a remote tool slower than `tool_timeout_seconds`, a result over 64 KiB,
 * and tools removed while a turn waits. Each failure is a record the model is told of; the turn
 * goes on and ends with a reply. The model is the OpenAI-compatible stand-in; remote tools are
 * server-everything's, behind the counting proxy.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { maxToolResultBytes } from '../../api/agent-tools.ts';
import { SLOW_TOOL, startCountedEverything, type CountedEverything } from '../support/mcp-everything.ts';
import { callTool, type Conversation, type ModelScript, type ScriptReply } from '../support/model-script.ts';
import { scriptedToolCompletions, startOpenAiStub, textOf, toolCallCompletion, type OpenAiStub, type StubAnswer } from '../support/openai-stub.ts';
import { startHarness, waitForThread, type Harness } from './helpers.ts';
import { askAnswer, makeTeam, messagesOf, openThread, toolCalls, waitForToolCalls } from './turn-helpers.ts';

const cleanups: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

/** Scripts by the agent's instructions (the system prompt's first word): each test sets its own. */
const scripts = new Map<string, ModelScript>();
const byInstructions: ModelScript = (c: Conversation): ScriptReply | Promise<ScriptReply> => scripts.get((c.system ?? '').split(/\s/)[0]!)?.(c);

/** Once the step's calls have results, a reply listing each: `tool: text` (the text cut at 300 characters). */
const report = (c: Conversation) => c.turnResults.map((r) => `${r.toolName}: ${r.text.slice(0, 300)}`).join('\n');

let openai: OpenAiStub;
let everything: CountedEverything;
let h: Harness;

beforeAll(async () => {
  [openai, everything] = await Promise.all([startOpenAiStub(scriptedToolCompletions(byInstructions)), startCountedEverything()]);
  cleanups.push(() => openai.close(), () => everything.close());
  // One turn at a time in this process: a turn that waits must not hold the slot (contract §11).
  h = await startHarness({ inMemory: true, agentConcurrency: 1, webhooks: { allowPrivate: true }, env: { ...process.env, OPENAI_BASE_URL: `${openai.origin}/v1` } });
  cleanups.push(() => h.server.close());
  expect((await h.call('PUT', `/api/v1/organizations/${h.orgId}/api-keys/openai`, { api_key: 'openai-key' })).status).toBe(200);
});

/** A team of dana and one agent `name` (instructions = `key`, with `extra` fields), on an edge; the script `key` drives it. */
async function soloTeam(key: string, script: ModelScript, extra: Record<string, unknown> = {}) {
  scripts.set(key, script);
  const team = await makeTeam(h, {
    humans: ['dana'],
    agents: [{ name: 'worker', provider: 'openai', model: 'gpt-stub', instructions: key, tools: { team: true }, ...extra }],
    edges: [['dana', 'worker']],
  });
  /** Dana writes `content` to the agent; resolves with the thread, its messages once the agent replied, and the tool calls. */
  const ask = async (content: string) => {
    const thread = await openThread(h, team.edgeOf('dana', 'worker'), team.id.dana!, content);
    const messages = await waitForThread(h, thread, (ms) => ms.some((m) => m.sender_id === team.id.worker));
    return { thread, messages, reply: messages.at(-1)!.content, calls: await toolCalls(h, thread) };
  };
  return { team, ask };
}

describe('turns: limits', () => {
  it('max_steps: a turn that reaches it ends with a reply saying so, and the calls of its last step are recorded failed (max_steps), not made', async () => {
    const { ask } = await soloTeam('steps', () => [callTool('list_edges', {}), callTool('whoami', {})], { max_steps: 3 });
    const { reply, calls } = await ask('keep looking');
    expect(reply).toBe('(This turn reached its limit of 3 steps (max_steps) before it finished; the tool calls of its last step were not made.)');
    expect(calls.map((c) => [c.step, c.tool, c.status])).toEqual([
      [1, 'list_edges', 'completed'],
      [1, 'whoami', 'completed'],
      [2, 'list_edges', 'completed'],
      [2, 'whoami', 'completed'],
      [3, 'list_edges', 'failed'],
      [3, 'whoami', 'failed'],
    ]);
    expect(calls[4]!.error).toMatch(/^max_steps: the turn reached its limit of 3 steps/);
    expect(calls[4]!.finished_at).not.toBeNull();
  });

  it('32 calls per step: the calls past the 32nd fail too_many_tool_calls, the first 32 are made', async () => {
    const { reply, calls } = await (
      await soloTeam('many', (c) => (c.turnResults.length > 0 ? `made ${c.turnResults.filter((r) => !r.text.includes('too_many_tool_calls')).length}` : Array.from({ length: 34 }, () => callTool('whoami', {}))))
    ).ask('all at once');
    expect(reply).toBe('made 32');
    expect(calls).toHaveLength(34);
    expect(calls.slice(0, 32).every((c) => c.status === 'completed')).toBe(true);
    expect(calls.slice(32).map((c) => [c.status, c.error?.split(':')[0]])).toEqual([
      ['failed', 'too_many_tool_calls'],
      ['failed', 'too_many_tool_calls'],
    ]);
  });

  it('a tool the agent does not have fails unknown_tool, and arguments that do not fit (or are not JSON) fail invalid_arguments; the model is told each', async () => {
    const { team, ask } = await soloTeam('sloppy', (c) => {
      if (c.turnResults.length > 0) return report(c);
      // Arguments that are not JSON need a raw answer: the stand-in sends strings as they are.
      return { answer: toolCallCompletion(c.model, [callTool('launch_rockets', {}), callTool('send_message', { content: 42 }), callTool('read_thread', '{"thread_id": '), callTool('whoami', {})]) as StubAnswer };
    });
    const { reply, calls, thread } = await ask('be sloppy');
    expect(calls.map((c) => [c.tool, c.status, c.error?.split(':')[0] ?? null])).toEqual([
      ['launch_rockets', 'failed', 'unknown_tool'],
      ['send_message', 'failed', 'invalid_arguments'],
      ['read_thread', 'failed', 'invalid_arguments'],
      ['whoami', 'completed', null],
    ]);
    expect(calls[1]!.error).toContain('thread_id');
    expect(calls[1]!.error).toContain('content');
    expect(reply).toContain('launch_rockets: {"error":"unknown_tool:');
    expect(reply).toContain('send_message: {"error":"invalid_arguments:');
    // Nothing was written by the refused send_message.
    expect((await messagesOf(h, thread)).filter((m) => m.sender_id === team.id.worker)).toHaveLength(1);
  });

  it('ask with reply_schema: an answer that does not fit is asked again, and the one that fits is the result, with its value', async () => {
    scripts.set('scorer', (c) => (c.userTexts.length === 1 ? 'I would say it looks good' : '{"score": 7}'));
    scripts.set('typed', (c) => {
      const answer = askAnswer(c.resultOf('ask'));
      if (answer) return `score ${JSON.stringify(answer.value)}`;
      return callTool('ask', { peer: 'scorer', content: 'Score the design from 1 to 10', reply_schema: { type: 'object', properties: { score: { type: 'integer', minimum: 1, maximum: 10 } }, required: ['score'] } });
    });
    const team = await makeTeam(h, {
      humans: ['dana'],
      agents: [
        { name: 'typed', provider: 'openai', model: 'gpt-stub', instructions: 'typed', tools: { team: true } },
        { name: 'scorer', provider: 'openai', model: 'gpt-stub', instructions: 'scorer' },
      ],
      edges: [
        ['dana', 'typed'],
        ['typed', 'scorer'],
      ],
    });
    const thread = await openThread(h, team.edgeOf('dana', 'typed'), team.id.dana!, 'how good is it?');
    const messages = await waitForThread(h, thread, (ms) => ms.some((m) => m.sender_id === team.id.typed));
    expect(messages.at(-1)!.content).toBe('score {"score":7}');
    const [call] = await toolCalls(h, thread);
    expect(call).toMatchObject({ tool: 'ask', status: 'completed', result: { content: '{"score": 7}', value: { score: 7 }, from: { name: 'scorer' } } });
    const asked = await messagesOf(h, call!.waiting_on!.thread_id);
    expect(asked.map((m) => m.sender_id)).toEqual([team.id.typed, team.id.scorer, team.id.typed, team.id.scorer]);
    expect(asked[0]!.content).toContain('Score the design from 1 to 10');
    expect(asked[0]!.content).toContain('fits this JSON Schema');
    expect(asked[1]!.content).toBe('I would say it looks good');
    expect(call!.waiting_on!.message_id).toBe(asked[2]!.message_id);
    expect(asked[3]!.content).toBe('{"score": 7}');
  });

  it('ask_timeout_seconds: an ask nobody answers in time fails ask_timeout, the model is told, and the turn completes', async () => {
    const { team, ask } = await soloTeam(
      'impatient',
      (c) => {
        const result = c.resultOf('ask');
        return result ? `no answer: ${result.text}` : callTool('ask', { peer: 'dana', content: 'Are you there?' });
      },
      { tools: { team: true, ask_timeout_seconds: 1 } },
    );
    const { reply, calls } = await ask('ping me back');
    expect(calls).toEqual([expect.objectContaining({ tool: 'ask', status: 'failed', error: 'ask_timeout: no answer from dana within 1 s', waiting_on: expect.objectContaining({ participant_id: team.id.dana }) })]);
    expect(reply).toBe('no answer: {"error":"ask_timeout: no answer from dana within 1 s"}');
    // An answer after the timeout is too late for the turn: nothing more happens to the call.
    await h.call('POST', `/api/v1/threads/${calls[0]!.waiting_on!.thread_id}/messages`, { sender_agent_id: team.id.dana, content: 'yes, now' });
    expect((await toolCalls(h, calls[0]!.thread_id))[0]).toMatchObject({ status: 'failed', error: 'ask_timeout: no answer from dana within 1 s' });
  });

  it('tool_timeout_seconds: a remote tool slower than it fails tool_timeout, and the turn goes on', async () => {
    const { reply, calls } = await (
      await soloTeam('slow', (c) => (c.turnResults.length > 0 ? report(c) : callTool(`everything__${SLOW_TOOL}`, { duration: 4, steps: 1 })), {
        tools: { tool_timeout_seconds: 1, mcp: [{ name: 'everything', url: everything.url, allow: [SLOW_TOOL] }] },
      })
    ).ask('take your time');
    expect(calls).toEqual([expect.objectContaining({ server: 'everything', tool: SLOW_TOOL, status: 'failed', error: `tool_timeout: everything.${SLOW_TOOL} took longer than 1 s` })]);
    expect(reply).toContain('tool_timeout');
    expect(everything.proxy.callsOf(SLOW_TOOL)).toBe(1);
  });

  it('a result over 64 KiB is cut: the record and the model get {truncated: true, bytes, text} with its first 64 KiB', async () => {
    const big = 'x'.repeat(70_000);
    const { reply, calls } = await (
      await soloTeam('big', (c) => (c.turnResults.length > 0 ? `got ${c.turnResults[0]!.text.length} characters, truncated: ${String((c.turnResults[0]!.json as { truncated?: boolean })?.truncated)}` : callTool('everything__echo', { message: big })), {
        tools: { mcp: [{ name: 'everything', url: everything.url, allow: ['echo'] }] },
      })
    ).ask('echo something big');
    const [call] = calls;
    expect(call!.status).toBe('completed');
    const result = call!.result as { truncated: boolean; bytes: number; text: string };
    expect(result.truncated).toBe(true);
    expect(result.bytes).toBeGreaterThan(70_000);
    expect(Buffer.byteLength(result.text)).toBeLessThanOrEqual(maxToolResultBytes);
    expect(result.text.startsWith('{"content":[{"')).toBe(true);
    expect(reply).toMatch(/^got \d+ characters, truncated: true$/);
    const sentLength = Number(/^got (\d+)/.exec(reply)![1]);
    expect(sentLength).toBeLessThan(maxToolResultBytes + 200);
  });

  it('a suspended turn holds no loop slot: with one slot, another agent answers while the turn waits for a person', async () => {
    scripts.set('waiter', (c) => {
      const answer = askAnswer(c.resultOf('ask'));
      return answer ? `thanks for ${answer.content}` : callTool('ask', { peer: 'dana', content: 'Your call?' });
    });
    scripts.set('chatty', (c) => `chatty heard ${c.lastUserText}`);
    const team = await makeTeam(h, {
      humans: ['dana'],
      agents: [
        { name: 'waiter', provider: 'openai', model: 'gpt-stub', instructions: 'waiter', tools: { team: true } },
        { name: 'chatty', provider: 'openai', model: 'gpt-stub', instructions: 'chatty' },
      ],
      edges: [
        ['dana', 'waiter'],
        ['dana', 'chatty'],
      ],
    });
    const waiting = await openThread(h, team.edgeOf('dana', 'waiter'), team.id.dana!, 'decide something');
    const [call] = await waitForToolCalls(h, waiting, (calls) => calls[0]?.waiting_on !== null && calls[0]?.waiting_on !== undefined);
    const chat = await openThread(h, team.edgeOf('dana', 'chatty'), team.id.dana!, 'hello');
    const answered = await waitForThread(h, chat, (ms) => ms.some((m) => m.sender_id === team.id.chatty));
    expect(answered.at(-1)!.content).toBe('chatty heard hello');
    expect((await toolCalls(h, waiting))[0]!.status).toBe('running');
    await h.call('POST', `/api/v1/threads/${call!.waiting_on!.thread_id}/messages`, { sender_agent_id: team.id.dana, content: 'option B' });
    const done = await waitForThread(h, waiting, (ms) => ms.some((m) => m.sender_id === team.id.waiter));
    expect(done.at(-1)!.content).toBe('thanks for option B');
  });

  it('tools removed (PATCH tools: null) while a turn waits on an ask: its calls fail tools_removed and the message is answered plainly', async () => {
    const { team } = await soloTeam('removed', (c) => (c.tools.length === 0 ? `plain answer to: ${c.lastUserText}` : callTool('ask', { peer: 'dana', content: 'May I?' })));
    const thread = await openThread(h, team.edgeOf('dana', 'worker'), team.id.dana!, 'do the thing');
    await waitForToolCalls(h, thread, (calls) => calls[0]?.status === 'running' && calls[0]?.waiting_on !== null);
    expect((await h.call('PATCH', `/api/v1/agents/${team.id.worker}`, { tools: null })).status).toBe(200);
    const [call] = await toolCalls(h, thread);
    expect(call).toMatchObject({ status: 'failed', error: expect.stringMatching(/^tools_removed: /), finished_at: expect.any(String) });
    const messages = await waitForThread(h, thread, (ms) => ms.some((m) => m.sender_id === team.id.worker));
    expect(messages.map((m) => m.content)).toEqual(['do the thing', 'plain answer to: do the thing']);
    // The last request offered no tools.
    const last = openai.requests.at(-1)!.body;
    expect(last.tools ?? []).toEqual([]);
    expect(textOf(last.messages.at(-1)!.content)).toBe('do the thing');
  });
});
