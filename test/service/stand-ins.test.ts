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
import { APICallError, generateText, stepCountIs, streamText, tool, type LanguageModel, type ModelMessage } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { anthropicError, messagesConversation, scriptedMessages, startAnthropicStub } from '../support/anthropic-stub.ts';
import { startCountedEverything, EVERYTHING_VERSION, QUICK_TOOL, SLOW_TOOL, type CountedEverything } from '../support/mcp-everything.ts';
import { callTool, paced, type ModelScript, type ScriptReply } from '../support/model-script.ts';
import type { ModelStub, RecordedRequest, StubOptions } from '../support/model-stub-server.ts';
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

/** A stand-in of each vendor, started with a script, and the AI SDK's model for it. */
interface Vendor {
  name: string;
  start(script: ModelScript, options?: StubOptions): Promise<{ stub: ModelStub<RecordedRequest<{ stream?: boolean; [key: string]: unknown }>>; model: LanguageModel }>;
  /** A 429 in the vendor's words, as a script's move. */
  rateLimited(): ScriptReply;
}

const vendors: Vendor[] = [
  {
    name: 'openai-stub',
    async start(script, options) {
      const stub = await startOpenAiStub(scriptedToolCompletions(script), options);
      cleanups.push(() => stub.close());
      return { stub, model: createOpenAI({ baseURL: `${stub.origin}/v1`, apiKey: 'x' }).chat('m') };
    },
    rateLimited: () => ({ answer: { status: 429, body: { error: { message: 'slow down', type: 'rate_limit_exceeded', param: null, code: null } } } }),
  },
  {
    name: 'anthropic-stub',
    async start(script, options) {
      const stub = await startAnthropicStub(scriptedMessages(script), options);
      cleanups.push(() => stub.close());
      return { stub, model: createAnthropic({ baseURL: `${stub.origin}/v1`, apiKey: 'x' })('claude-x') };
    },
    rateLimited: () => ({ answer: anthropicError(429, 'rate_limit_error', 'slow down') }),
  },
];

const REPLY = 'The quick brown fox jumps over the lazy dog, twice.';

/** Every part of a streamText call's full stream, the error it ended with (if any) included. */
async function partsOf(result: { fullStream: AsyncIterable<{ type: string }> }): Promise<Array<{ type: string; [key: string]: unknown }>> {
  const parts: Array<{ type: string; [key: string]: unknown }> = [];
  try {
    for await (const part of result.fullStream) parts.push(part as { type: string });
  } catch (error) {
    parts.push({ type: 'thrown', error });
  }
  return parts;
}

const textDeltas = (parts: Array<{ type: string; [key: string]: unknown }>) => parts.filter((p) => p.type === 'text-delta').map((p) => p.text as string);

describe.each(vendors)('$name, streamed to the AI SDK\'s streamText', (vendor) => {
  it('a scripted text reply arrives in several text-delta parts that join into it, each the stand-in recorded as a chunk', async () => {
    const { stub, model } = await vendor.start(() => REPLY);
    const result = streamText({ model, prompt: 'tell me', maxRetries: 0 });
    const parts = await partsOf(result);

    const deltas = textDeltas(parts);
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.join('')).toBe(REPLY);
    expect(await result.text).toBe(REPLY);
    expect(await result.finishReason).toBe('stop');
    const request = stub.requests[0]!;
    expect(request.body.stream).toBe(true);
    expect(request.streamed).toBe(true);
    expect(request.chunks.map((c) => c.text)).toEqual(deltas);
    expect(request.chunks.every((c) => c.kind === 'text')).toBe(true);
    expect(await request.ended).toEqual({ aborted: false });
  });

  it('a scripted tool call arrives in toolCalls with its arguments, which the stand-in sent in several fragments', async () => {
    const { stub, model } = await vendor.start((c) => callTool('lookup', { query: c.lastUserText }));
    const result = streamText({ model, tools: { lookup }, prompt: 'meaning of life', maxRetries: 0 });
    await partsOf(result);

    expect(await result.toolCalls).toEqual([expect.objectContaining({ type: 'tool-call', toolName: 'lookup', input: { query: 'meaning of life' } })]);
    expect(await result.finishReason).toBe('tool-calls');
    const fragments = stub.requests[0]!.chunks.filter((c) => c.kind === 'tool-input');
    expect(fragments.length).toBeGreaterThan(1);
    expect(fragments.map((c) => c.text).join('')).toBe('{"query":"meaning of life"}');
  });

  it('the usage of a streamed answer reaches the AI SDK as it does unstreamed', async () => {
    const { model } = await vendor.start(() => REPLY);
    const streamed = streamText({ model, prompt: 'tell me', maxRetries: 0 });
    await partsOf(streamed);
    const whole = await generateText({ model, prompt: 'tell me', maxRetries: 0 });
    const { inputTokens, outputTokens } = await streamed.usage;
    expect({ inputTokens, outputTokens }).toEqual({ inputTokens: whole.usage.inputTokens, outputTokens: whole.usage.outputTokens });
    expect(inputTokens).toBeGreaterThan(0);
  });

  it('an error status answers a streaming request as plain JSON, which the AI SDK reports as that status', async () => {
    const { stub, model } = await vendor.start(() => vendor.rateLimited());
    const parts = await partsOf(streamText({ model, prompt: 'tell me', maxRetries: 0 }));

    const failure = parts.find((p) => p.type === 'error' || p.type === 'thrown')!;
    expect(APICallError.isInstance(failure.error)).toBe(true);
    expect((failure.error as APICallError).statusCode).toBe(429);
    expect(stub.requests[0]!.streamed).toBe(false);
  });

  it('a paced reply: chunks of the size asked, recorded in order, at least the delay apart', async () => {
    const { stub, model } = await vendor.start(() => paced(REPLY, { size: 7, delayMs: 25 }), { chunk: { size: 'word', delayMs: 0 } });
    const deltas = textDeltas(await partsOf(streamText({ model, prompt: 'tell me', maxRetries: 0 })));

    const { chunks } = stub.requests[0]!;
    expect(chunks.map((c) => c.text)).toEqual(deltas);
    expect(chunks.map((c) => c.text.length)).toEqual([7, 7, 7, 7, 7, 7, 7, 2]);
    // The stand-in's own clock: a timer may fire up to 1 ms before its time.
    const gaps = chunks.slice(1).map((c, i) => c.at - chunks[i]!.at);
    expect(gaps.every((gap) => gap >= 24)).toBe(true);
    const frameTimes = stub.requests[0]!.frames.map((f) => f.at);
    expect(frameTimes).toEqual([...frameTimes].sort((a, b) => a - b));
  });

  it('the stand-in\'s pace: word by word by default, and the one it was started with otherwise', async () => {
    const { stub, model } = await vendor.start(() => REPLY, { chunk: { size: 20 } });
    await partsOf(streamText({ model, prompt: 'tell me', maxRetries: 0 }));
    expect(stub.requests[0]!.chunks.map((c) => c.text)).toEqual([REPLY.slice(0, 20), REPLY.slice(20, 40), REPLY.slice(40)]);

    const byWord = await vendor.start(() => REPLY);
    await partsOf(streamText({ model: byWord.model, prompt: 'tell me', maxRetries: 0 }));
    expect(byWord.stub.requests[0]!.chunks.map((c) => c.text)).toEqual(REPLY.split(/(?<= )/));
  });

  it('a held stream: aborting the AI SDK call mid-reply, once its text so far is read, shows on the request as aborted', async () => {
    const { stub, model } = await vendor.start(() => REPLY);
    stub.hold(3);
    const abort = new AbortController();
    const result = streamText({ model, prompt: 'tell me', maxRetries: 0, abortSignal: abort.signal });
    const read: string[] = [];
    const reading = (async () => {
      for await (const part of result.fullStream) {
        if (part.type !== 'text-delta') continue;
        read.push(part.text);
        if (read.length === 3) abort.abort();
      }
    })().catch(() => undefined);

    const request = await stub.held();
    expect(await request.ended).toEqual({ aborted: true });
    expect(request.aborted).toBe(true);
    await reading;
    expect(request.chunks.map((c) => c.text)).toEqual(REPLY.split(/(?<= )/).slice(0, 3));
    expect(read).toEqual(request.chunks.map((c) => c.text));
    stub.release();
  });

  it('a held stream goes on to its end once released, and a stream started after release is not held', async () => {
    const { stub, model } = await vendor.start(() => REPLY);
    stub.hold(2);
    const first = partsOf(streamText({ model, prompt: 'tell me', maxRetries: 0 }));
    const request = await stub.held();
    expect(request.chunks).toHaveLength(2);

    stub.release();
    expect(textDeltas(await first).join('')).toBe(REPLY);
    expect(await request.ended).toEqual({ aborted: false });
    expect(textDeltas(await partsOf(streamText({ model, prompt: 'again', maxRetries: 0 }))).join('')).toBe(REPLY);
  });

  it('a hanging answer to a streaming request sends nothing until the client gives up, which shows as aborted', async () => {
    const { stub, model } = await vendor.start(() => ({ answer: 'hang' }));
    const abort = new AbortController();
    const reading = partsOf(streamText({ model, prompt: 'tell me', maxRetries: 0, abortSignal: abort.signal }));
    const request = await stub.received(1);
    abort.abort();
    expect(await request.ended).toEqual({ aborted: true });
    expect(textDeltas(await reading)).toEqual([]);
    expect(request.frames).toEqual([]);
  });

  it('a request that does not ask for a stream is answered with JSON, as before', async () => {
    const { stub, model } = await vendor.start(() => REPLY, { chunk: { size: 3, delayMs: 50 } });
    const result = await generateText({ model, prompt: 'tell me', maxRetries: 0 });
    expect(result.text).toBe(REPLY);
    expect(stub.requests[0]).toMatchObject({ streamed: false, chunks: [], frames: [] });
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
