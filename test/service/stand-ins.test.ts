/**
 * The stand-ins that agent tests run against speak the real protocols: the OpenAI-compatible and
 * Anthropic-compatible model servers as the AI SDK's own providers call them, and server-everything
 * behind the counting proxy as the official MCP SDK's client calls it.
 */
import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateMessageRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { generateText, stepCountIs, tool, type ModelMessage } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { messagesConversation, scriptedMessages, startAnthropicStub } from '../support/anthropic-stub.ts';
import { startCountedEverything, EVERYTHING_VERSION, QUICK_TOOL, SLOW_TOOL, type CountedEverything } from '../support/mcp-everything.ts';
import { callTool, type ModelScript } from '../support/model-script.ts';
import { chatConversation, scriptedToolCompletions, startOpenAiStub, type StubRequest } from '../support/openai-stub.ts';

// The SDK's warnings (an unknown model's output limit, say) are about the stand-ins' made-up models.
(globalThis as { AI_SDK_LOG_WARNINGS?: unknown }).AI_SDK_LOG_WARNINGS = false;

const cleanups: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

/** A tool the model may call and the test answers (no `execute`: generateText stops at the call). */
const lookup = tool({ description: 'Looks a fact up', inputSchema: z.object({ query: z.string() }) });

/** Looks the fact up until there is a result, then answers with it; an error result is said as such. */
const lookupScript: ModelScript = (c) => {
  const found = c.resultOf('lookup');
  if (!found) return callTool('lookup', { query: c.lastUserText });
  return found.isError ? `lookup failed: ${found.text}` : `The answer is ${(found.json as { value: number }).value}`;
};

/** The conversation of a second request: the question, the model's tool call, and the test's result for it. */
function withResult(question: string, first: { response: { messages: ModelMessage[] } }, toolCallId: string, output: { type: 'json'; value: { value: number } } | { type: 'error-text'; value: string }): ModelMessage[] {
  return [{ role: 'user', content: question }, ...first.response.messages, { role: 'tool', content: [{ type: 'tool-result', toolCallId, toolName: 'lookup', output }] }];
}

describe('model stand-ins, called by the AI SDK', () => {
  it('openai-stub: a scripted tool call reaches generateText as a tool call, and the tool result sent back is read from the request', async () => {
    const stub = await startOpenAiStub(scriptedToolCompletions(lookupScript));
    cleanups.push(() => stub.close());
    const model = createOpenAI({ baseURL: `${stub.origin}/v1`, apiKey: 'x' }).chat('m');

    const first = await generateText({ model, tools: { lookup }, messages: [{ role: 'user', content: 'meaning of life' }], maxRetries: 0 });
    expect(first.finishReason).toBe('tool-calls');
    expect(first.toolCalls).toEqual([expect.objectContaining({ type: 'tool-call', toolName: 'lookup', input: { query: 'meaning of life' } })]);
    expect(first.usage).toMatchObject({ inputTokens: 11, outputTokens: 7 });
    const offered = chatConversation(stub.requests[0]!).tools;
    expect(offered).toEqual([{ name: 'lookup', description: 'Looks a fact up', inputSchema: expect.objectContaining({ type: 'object', properties: { query: { type: 'string' } } }) }]);

    const toolCallId = first.toolCalls[0]!.toolCallId;
    const second = await generateText({ model, tools: { lookup }, messages: withResult('meaning of life', first, toolCallId, { type: 'json', value: { value: 42 } }), maxRetries: 0 });
    expect(second.text).toBe('The answer is 42');
    expect(second.finishReason).toBe('stop');
    const sent = await stub.received(2);
    expect(sent.body.messages.filter((m) => m.role !== 'user')).toEqual([
      { role: 'assistant', content: null, tool_calls: [{ id: toolCallId, type: 'function', function: { name: 'lookup', arguments: '{"query":"meaning of life"}' } }] },
      { role: 'tool', tool_call_id: toolCallId, content: '{"value":42}' },
    ]);
    expect(chatConversation(sent).turnResults).toEqual([{ toolCallId, toolName: 'lookup', text: '{"value":42}', json: { value: 42 }, isError: undefined }]);
  });

  it('anthropic-stub: a scripted tool_use reaches generateText as a tool call, and the tool_result sent back is read from the request', async () => {
    const stub = await startAnthropicStub(scriptedMessages(lookupScript));
    cleanups.push(() => stub.close());
    const model = createAnthropic({ baseURL: `${stub.origin}/v1`, apiKey: 'x' })('claude-x');

    const first = await generateText({ model, tools: { lookup }, messages: [{ role: 'user', content: 'meaning of life' }], maxRetries: 0 });
    expect(first.finishReason).toBe('tool-calls');
    expect(first.toolCalls).toEqual([expect.objectContaining({ type: 'tool-call', toolName: 'lookup', input: { query: 'meaning of life' } })]);
    expect(first.usage).toMatchObject({ inputTokens: 21, outputTokens: 8 });
    expect(stub.requests[0]).toMatchObject({ path: '/v1/messages', headers: { 'x-api-key': 'x', 'anthropic-version': '2023-06-01' }, body: { model: 'claude-x' } });
    expect(messagesConversation(stub.requests[0]!).tools).toEqual([
      { name: 'lookup', description: 'Looks a fact up', inputSchema: expect.objectContaining({ type: 'object', properties: { query: { type: 'string' } } }) },
    ]);

    const toolCallId = first.toolCalls[0]!.toolCallId;
    expect(toolCallId).toMatch(/^toolu_/);
    const second = await generateText({ model, tools: { lookup }, messages: withResult('meaning of life', first, toolCallId, { type: 'error-text', value: 'index offline' }), maxRetries: 0 });
    expect(second.text).toBe('lookup failed: index offline');
    const sent = await stub.received(2);
    expect(sent.body.messages.at(-1)).toEqual({ role: 'user', content: [{ type: 'tool_result', tool_use_id: toolCallId, content: 'index offline', is_error: true }] });
    expect(messagesConversation(sent).turnResults).toEqual([{ toolCallId, toolName: 'lookup', text: 'index offline', json: undefined, isError: true }]);
  });

  it('a script plays a delegation chain: lead asks researcher, researcher asks analyst, and each answer comes back up as the tool result', async () => {
    // One stand-in serves three "agents", told apart by their instructions, as acs-server's agents would be.
    const script: ModelScript = (c) => {
      const next = c.system === 'lead' ? 'researcher' : c.system === 'researcher' ? 'analyst' : undefined;
      if (!next) return `analysed: ${c.lastUserText}`;
      const answer = c.resultOf('ask');
      return answer ? `${c.system} says: ${answer.text}` : callTool('ask', { peer: next, content: c.lastUserText });
    };
    const stub = await startOpenAiStub(scriptedToolCompletions(script));
    cleanups.push(() => stub.close());
    const model = createOpenAI({ baseURL: `${stub.origin}/v1`, apiKey: 'x' }).chat('m');
    const turn = async (agent: string, content: string): Promise<string> => {
      const ask = tool({ inputSchema: z.object({ peer: z.string(), content: z.string() }), execute: async ({ peer, content: question }) => turn(peer, question) });
      const result = await generateText({ model, instructions: agent, tools: { ask }, messages: [{ role: 'user', content }], stopWhen: stepCountIs(5), maxRetries: 0 });
      return result.text;
    };

    expect(await turn('lead', 'ticket 7')).toBe('lead says: researcher says: analysed: ticket 7');
    expect(stub.requests.map((r: StubRequest) => chatConversation(r).system)).toEqual(['lead', 'researcher', 'analyst', 'researcher', 'lead']);
  });

  it('a conversation: results of a thread\'s earlier turn are not results of the turn being answered', async () => {
    const stub = await startOpenAiStub(scriptedToolCompletions(lookupScript));
    cleanups.push(() => stub.close());
    const model = createOpenAI({ baseURL: `${stub.origin}/v1`, apiKey: 'x' }).chat('m');
    const first = await generateText({ model, tools: { lookup }, messages: [{ role: 'user', content: 'q1' }], maxRetries: 0 });
    const history: ModelMessage[] = [...withResult('q1', first, first.toolCalls[0]!.toolCallId, { type: 'json', value: { value: 1 } }), { role: 'assistant', content: 'The answer is 1' }, { role: 'user', content: 'q2' }];

    const next = await generateText({ model, tools: { lookup }, messages: history, maxRetries: 0 });
    expect(next.toolCalls).toEqual([expect.objectContaining({ toolName: 'lookup', input: { query: 'q2' } })]);
    const seen = chatConversation(stub.requests[1]!);
    expect(seen.toolResults).toHaveLength(1);
    expect(seen.turnResults).toEqual([]);
  });
});

describe('server-everything behind the counting proxy, called by the MCP SDK client', () => {
  let everything: CountedEverything;
  beforeAll(async () => {
    const started = Date.now();
    everything = await startCountedEverything();
    cleanups.push(() => everything.close());
    console.log(`server-everything ${EVERYTHING_VERSION} answered after ${Date.now() - started} ms`);
  });

  async function connect(capabilities: ConstructorParameters<typeof Client>[1] = {}): Promise<Client> {
    const client = new Client({ name: 'stand-ins-test', version: '1.0.0' }, capabilities);
    await client.connect(new StreamableHTTPClientTransport(new URL(everything.url)));
    cleanups.push(() => client.close());
    return client;
  }

  it('the counting proxy: a client lists the tools and calls echo through it, and it counts exactly that one call', async () => {
    const before = everything.proxy.toolCalls.length;
    const client = await connect();
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining([QUICK_TOOL, SLOW_TOOL]));
    expect(tools.find((t) => t.name === SLOW_TOOL)!.inputSchema.properties).toHaveProperty('duration');

    const result = (await client.callTool({ name: QUICK_TOOL, arguments: { message: 'hello' } })) as CallToolResult;
    expect(result.content).toEqual([{ type: 'text', text: 'Echo: hello' }]);
    expect(everything.proxy.toolCalls.slice(before)).toEqual([{ tool: QUICK_TOOL, arguments: { message: 'hello' }, sessionId: expect.any(String), at: expect.any(Number) }]);
    expect(everything.proxy.callsOf(QUICK_TOOL)).toBe(1);
  });

  it('the counting proxy: a server request on a tool call\'s SSE stream reaches the client while the stream is open (nothing is buffered)', async () => {
    // trigger-sampling-request asks the client for a completion in the middle of its SSE answer
    // and waits for it: a proxy that held the stream until its end would never let it finish.
    const client = await connect({ capabilities: { sampling: {} } });
    client.setRequestHandler(CreateMessageRequestSchema, async () => ({ model: 'stand-in', role: 'assistant', content: { type: 'text', text: 'sampled by the client' } }));
    const result = (await client.callTool({ name: 'trigger-sampling-request', arguments: { prompt: 'hi' } }, undefined, { timeout: 15_000 })) as CallToolResult;
    expect(JSON.stringify(result.content)).toContain('sampled by the client');
    expect(everything.proxy.callsOf('trigger-sampling-request')).toBe(1);
  });
});
