import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Writable } from 'node:stream';
import nock from 'nock';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type RunningServer, type ServerOptions } from '../../service/index.ts';
import { message, messageStream } from '../support/anthropic-stub.ts';
import { cutText, type StreamFrame } from '../support/model-stream.ts';
import { chatCompletionStream, completion, echoCompletion, startOpenAiStub, type OpenAiStub, type StubAnswer } from '../support/openai-stub.ts';
import { buildTeam, request, startHarness, threadMessages, waitForThread, type Harness } from './helpers.ts';
import { deltasOf, describe as describeItems, readThread, type Item, type ThreadReader } from './stream-helpers.ts';

const cleanups: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

/** A harness whose warnings are kept (parsed JSON lines, and the raw text to search for secrets). */
async function harness(options: ServerOptions): Promise<Harness & { warnings: Array<Record<string, unknown>>; logText: () => string }> {
  const warnings: Array<Record<string, unknown>> = [];
  let text = '';
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      text += chunk.toString('utf8');
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) warnings.push(JSON.parse(line));
      done();
    },
  });
  const h = await startHarness({ inMemory: true, logger: { level: 'warn', stream }, ...options });
  cleanups.push(() => h.server.close());
  return { ...h, warnings, logText: () => text };
}

async function until(condition: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** What a test reads back from a vendor request: model, system prompt, turns (role, text). */
interface Seen {
  model: string;
  system: string | undefined;
  turns: Array<{ role: string; text: string }>;
}

/** The text of an OpenAI-style message content: a string or text parts. */
const textOf = (content: unknown): string =>
  typeof content === 'string' ? content : (content as Array<{ text?: string }>).map((part) => part.text ?? '').join('');

/** One server-sent event as a vendor writes it on the wire, and the piece of the reply's text it carries (if any). */
interface WireFrame {
  wire: string;
  piece?: string;
}

/** The frames of a stand-in (model-stream.ts) on the wire: `event:` when named, `data:`, a blank line. */
function onTheWire(frames: StreamFrame[]): WireFrame[] {
  return frames.map((frame) => ({
    wire: `${frame.event === undefined ? '' : `event: ${frame.event}\n`}data: ${frame.data}\n\n`,
    ...(frame.content?.kind === 'text' ? { piece: frame.content.text } : {}),
  }));
}

/** A whole event stream as one text (a vendor that answers at once). */
const wholeStream = (frames: WireFrame[]): string => frames.map((frame) => frame.wire).join('');

/** What a vendor's answer cost, as the test's vendors report it. */
interface Cost {
  input: number;
  output: number;
}

const unixNow = (): number => Math.floor(Date.now() / 1000);

/**
 * OpenAI's Chat Completions stream (openai-stub.ts writes it): a `chat.completion.chunk` with the
 * role, one per piece, one with `finish_reason`, and — the AI SDK sends `stream_options:
 * {include_usage: true}` — one with `choices: []` and the usage; then `data: [DONE]`.
 */
function openAiStream(body: any, model: string, text: string, cost: Cost): WireFrame[] {
  const answer = completion(model, text, { prompt_tokens: cost.input, completion_tokens: cost.output }) as { body: unknown };
  return onTheWire(chatCompletionStream(body, answer.body, { size: 'word' })!);
}

/** Anthropic's Messages stream (anthropic-stub.ts writes it): `message_start` … `message_stop`, each event named. */
function anthropicStream(body: any, model: string, text: string, cost: Cost): WireFrame[] {
  const answer = message(model, text, { input_tokens: cost.input, output_tokens: cost.output }) as { body: unknown };
  return onTheWire(messageStream(body, answer.body, { size: 'word' })!);
}

/**
 * Gemini's `streamGenerateContent?alt=sse`: each event a whole `GenerateContentResponse` holding the
 * next piece of text, lines ended by CRLF as Google sends them, no `[DONE]` (the stream's end is the
 * end). Every chunk carries `usageMetadata` (the prompt's tokens while the reply is written); the
 * last also the `finishReason` and the reply's tokens. `modelVersion` names the model that answered.
 */
function geminiStream(_body: any, model: string, text: string, cost: Cost): WireFrame[] {
  const responseId = randomBytes(16).toString('base64url').slice(0, 22);
  const promptTokensDetails = [{ modality: 'TEXT', tokenCount: cost.input }];
  const pieces = cutText(text, 'word');
  return pieces.map((piece, i) => {
    const last = i === pieces.length - 1;
    const usageMetadata = last
      ? {
          promptTokenCount: cost.input,
          candidatesTokenCount: cost.output,
          totalTokenCount: cost.input + cost.output,
          promptTokensDetails,
          candidatesTokensDetails: [{ modality: 'TEXT', tokenCount: cost.output }],
        }
      : { promptTokenCount: cost.input, totalTokenCount: cost.input, promptTokensDetails };
    const chunk = {
      candidates: [{ content: { parts: [{ text: piece }], role: 'model' }, ...(last ? { finishReason: 'STOP' } : {}), index: 0 }],
      usageMetadata,
      modelVersion: model,
      responseId,
    };
    return { wire: `data: ${JSON.stringify(chunk)}\r\n\r\n`, piece };
  });
}

/**
 * Mistral's chat completions stream: `chat.completion.chunk`s (a role chunk with empty content, one
 * per piece), the last with `finish_reason: 'stop'` and the usage — Mistral needs no
 * `stream_options` and sends no `choices: []` chunk — each with the padding `p` Mistral adds to
 * hide the length of a piece; then `data: [DONE]`.
 */
function mistralStream(_body: any, model: string, text: string, cost: Cost): WireFrame[] {
  const head = { id: randomBytes(16).toString('hex'), object: 'chat.completion.chunk', created: unixNow(), model };
  const padding = (piece: string) => 'abcdefghijklmnopqrstuvwxyz0123456789'.slice(0, Math.max(4, 36 - piece.length));
  const chunk = (delta: object, finishReason: string | null, rest: object = {}) =>
    `data: ${JSON.stringify({ ...head, choices: [{ index: 0, delta, finish_reason: finishReason }], ...rest })}\n\n`;
  return [
    { wire: chunk({ role: 'assistant', content: '' }, null) },
    ...cutText(text, 'word').map((piece) => ({ wire: chunk({ content: piece }, null, { p: padding(piece) }), piece })),
    {
      wire: chunk({ content: '' }, 'stop', {
        usage: { prompt_tokens: cost.input, total_tokens: cost.input + cost.output, completion_tokens: cost.output, prompt_tokens_details: { cached_tokens: 0 } },
        p: padding(''),
      }),
    },
    { wire: 'data: [DONE]\n\n' },
  ];
}

/**
 * Groq's chat completions stream: OpenAI's chunks (`logprobs: null`, a `system_fingerprint`), the
 * first naming Groq's request in `x_groq.id`; the last — `delta: {}`, `finish_reason: 'stop'` —
 * carries the usage in `x_groq.usage` with Groq's timings (the AI SDK's Groq provider reads it
 * there and sends no `stream_options`); then `data: [DONE]`.
 */
function groqStream(_body: any, model: string, text: string, cost: Cost): WireFrame[] {
  const head = { id: `chatcmpl-${randomUUID()}`, object: 'chat.completion.chunk', created: unixNow(), model, system_fingerprint: 'fp_3f39ef8cf4' };
  const requestId = `req_${randomBytes(13).toString('hex')}`;
  const chunk = (delta: object, finishReason: string | null, xGroq?: object) =>
    `data: ${JSON.stringify({ ...head, choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }], ...(xGroq ? { x_groq: xGroq } : {}) })}\n\n`;
  const usage = {
    queue_time: 0.051,
    prompt_tokens: cost.input,
    prompt_time: 0.0021,
    completion_tokens: cost.output,
    completion_time: 0.0109,
    total_tokens: cost.input + cost.output,
    total_time: 0.013,
  };
  return [
    { wire: chunk({ role: 'assistant', content: '' }, null, { id: requestId }) },
    ...cutText(text, 'word').map((piece) => ({ wire: chunk({ content: piece }, null), piece })),
    { wire: chunk({}, 'stop', { id: requestId, usage }) },
    { wire: 'data: [DONE]\n\n' },
  ];
}

/**
 * OpenRouter's chat completions stream: first the comment `: OPENROUTER PROCESSING` it sends while
 * the upstream provider starts, then chunks naming the generation (`gen-…`), the upstream
 * `provider` and the model, each delta with the role, `native_finish_reason` beside
 * `finish_reason`; the usage (always sent, in OpenRouter's shape with its cost) comes in the last
 * chunk, with `choices: []`; then `data: [DONE]`.
 */
function openRouterStream(_body: any, model: string, text: string, cost: Cost): WireFrame[] {
  const created = unixNow();
  const head = { id: `gen-${created}-${randomBytes(10).toString('hex')}`, provider: 'Anthropic', model, object: 'chat.completion.chunk', created };
  const chunk = (delta: object, finishReason: string | null, nativeFinishReason: string | null) =>
    `data: ${JSON.stringify({ ...head, choices: [{ index: 0, delta, finish_reason: finishReason, native_finish_reason: nativeFinishReason, logprobs: null }] })}\n\n`;
  const usage = {
    prompt_tokens: cost.input,
    completion_tokens: cost.output,
    total_tokens: cost.input + cost.output,
    cost: 0.000114,
    is_byok: false,
    prompt_tokens_details: { cached_tokens: 0, cache_write_tokens: 0, audio_tokens: 0 },
    cost_details: { upstream_inference_cost: null, upstream_inference_prompt_cost: 0.000039, upstream_inference_completions_cost: 0.000075 },
    completion_tokens_details: { reasoning_tokens: 0, image_tokens: 0 },
  };
  return [
    { wire: ': OPENROUTER PROCESSING\n\n' },
    ...cutText(text, 'word').map((piece) => ({ wire: chunk({ role: 'assistant', content: piece }, null, null), piece })),
    { wire: chunk({ role: 'assistant', content: '' }, 'stop', 'end_turn') },
    { wire: `data: ${JSON.stringify({ ...head, choices: [], usage })}\n\n` },
    { wire: 'data: [DONE]\n\n' },
  ];
}

/** OpenAI Chat Completions and the APIs built like it (Mistral, Groq, OpenRouter), each with its own stream. */
function chatCompletions(origin: string, path: string, stream: Vendor['stream']): Omit<Vendor, 'provider' | 'model'> {
  return {
    origin,
    path,
    stream,
    usage: { input: 13, output: 5 },
    keyHeader: (key) => ['authorization', `Bearer ${key}`],
    read: (body) => ({
      model: body.model,
      system: body.messages.filter((m: { role: string }) => m.role === 'system').map((m: { content: unknown }) => textOf(m.content))[0],
      turns: body.messages.filter((m: { role: string }) => m.role !== 'system').map((m: { role: string; content: unknown }) => ({ role: m.role, text: textOf(m.content) })),
    }),
  };
}

interface Vendor {
  provider: string;
  model: string;
  origin: string;
  /** The path the AI SDK streams from (without the query). */
  path: string;
  /** The query it adds, when it adds one (Google's `alt=sse`). */
  query?: Record<string, string>;
  /** The vendor's event stream answering request `body` with `text` as `model`, cut word by word, costing `cost`. */
  stream(body: any, model: string, text: string, cost: Cost): WireFrame[];
  usage: Cost;
  /** Whether the AI SDK takes the answering model's id from the response (Google's provider keeps the requested one). */
  reportsModel?: false;
  /** The header that carries the key, and its value for `key`. */
  keyHeader(key: string): [string, string];
  read(body: any): Seen;
}

const vendors: Vendor[] = [
  { provider: 'openai', model: 'gpt-4o-mini', ...chatCompletions('https://api.openai.com', '/v1/chat/completions', openAiStream) },
  {
    provider: 'anthropic',
    model: 'claude-sonnet-4-5',
    origin: 'https://api.anthropic.com',
    path: '/v1/messages',
    stream: anthropicStream,
    usage: { input: 21, output: 8 },
    keyHeader: (key) => ['x-api-key', key],
    read: (body) => ({
      model: body.model,
      system: typeof body.system === 'string' ? body.system : body.system?.map((p: { text: string }) => p.text).join(''),
      turns: body.messages.map((m: { role: string; content: unknown }) => ({ role: m.role, text: textOf(m.content) })),
    }),
  },
  {
    provider: 'google',
    model: 'gemini-2.0-flash',
    origin: 'https://generativelanguage.googleapis.com',
    path: '/v1beta/models/gemini-2.0-flash:streamGenerateContent',
    query: { alt: 'sse' },
    stream: geminiStream,
    usage: { input: 17, output: 4 },
    reportsModel: false,
    keyHeader: (key) => ['x-goog-api-key', key],
    read: (body) => ({
      // The model is in the path, which the interceptor matches.
      model: 'gemini-2.0-flash',
      system: body.systemInstruction?.parts.map((p: { text: string }) => p.text).join(''),
      turns: body.contents.map((c: { role: string; parts: Array<{ text: string }> }) => ({
        role: c.role === 'model' ? 'assistant' : c.role,
        text: c.parts.map((p) => p.text).join(''),
      })),
    }),
  },
  { provider: 'mistral', model: 'mistral-small-latest', ...chatCompletions('https://api.mistral.ai', '/v1/chat/completions', mistralStream) },
  { provider: 'groq', model: 'llama-3.3-70b-versatile', ...chatCompletions('https://api.groq.com', '/openai/v1/chat/completions', groqStream) },
  { provider: 'openrouter', model: 'anthropic/claude-sonnet-4', ...chatCompletions('https://openrouter.ai', '/api/v1/chat/completions', openRouterStream) },
];

/** A promise with its resolver. */
function deferred<T>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/**
 * Writes `frames` to `out` as the vendor streams them, one piece of text at a time: once `ready`
 * resolves, each frame is written, and after a frame carrying a piece, the next waits until
 * `published(piece)` resolves (the service has shown that piece). Ends the stream whatever
 * happens, so a failed wait fails the test with its own message, not a hung reply.
 */
async function play(out: PassThrough, frames: WireFrame[], ready: Promise<unknown>, published: (piece: string) => Promise<unknown>): Promise<void> {
  try {
    await ready;
    for (const frame of frames) {
      out.write(frame.wire);
      if (frame.piece !== undefined) await published(frame.piece);
    }
  } finally {
    out.end();
  }
}

describe('providers: each vendor API (nock)', () => {
  beforeAll(() => {
    // Nothing leaves the machine: vendor hosts are answered by nock, everything else is refused.
    nock.disableNetConnect();
    nock.enableNetConnect('127.0.0.1');
  });
  afterEach(() => nock.cleanAll());
  afterAll(() => nock.enableNetConnect());

  /** The agent's n-th reply: six words, streamed one word a piece. */
  const replyText = (n: number) => `answer ${n} comes word by word`;

  it.each(vendors)(
    'providers: a $provider agent streams each reply from its vendor with its model, instructions, the thread with its roles and the stored key; each piece shows as it comes, and each reply is posted once',
    async (vendor) => {
      const seen: Seen[] = [];
      const key = `${vendor.provider}-stored-key-0001`;
      const readerOpen = deferred<ThreadReader>();
      const streams: Array<Promise<void>> = [];
      // The agent's text a reader of the thread must have seen as deltas so far, every reply's in turn.
      let written = '';
      let agentId = '';
      const deltaText = (items: readonly Item[]) =>
        items.filter((i) => i.event === 'message.delta' && i.data.sender_id === agentId).map((i) => i.data.text).join('');
      // Only a request carrying the organization's stored key matches; a key from the service's own
      // environment must never be used (contract §8).
      const interceptor = nock(vendor.origin).post(vendor.path);
      if (vendor.query) interceptor.query(vendor.query);
      const scope = interceptor
        .matchHeader(...vendor.keyHeader(key))
        .times(2)
        // nock 15 hands a reply function the Fetch API Request; a stream body is sent as it is written.
        .reply(async (request: Request) => {
          const body = await request.json();
          seen.push(vendor.read(body));
          const out = new PassThrough();
          const frames = vendor.stream(body, `${vendor.model}-2026`, replyText(seen.length), vendor.usage);
          // The vendor sends its next piece only once the service has published this one: the reply is
          // seen as it is written, not once it is whole.
          const piecePublished = async (piece: string) => {
            written += piece;
            const reader = await readerOpen.promise;
            await reader.until(() => deltaText(reader.items()) === written, `the delta of ${JSON.stringify(piece)} (so far: ${JSON.stringify(written)})`, 10_000);
          };
          streams.push(play(out, frames, readerOpen.promise, piecePublished));
          return [200, out, { 'content-type': 'text/event-stream' }];
        });
      const h = await harness({ env: { OPENAI_API_KEY: 'sk-from-env', ANTHROPIC_API_KEY: 'env-key', GOOGLE_GENERATIVE_AI_API_KEY: 'env-key' } });
      await h.call('PUT', `/organizations/${h.orgId}/api-keys/${vendor.provider}`, { api_key: key });
      const ids = await buildTeam(h, { provider: vendor.provider, model: vendor.model, instructions: 'You are terse.' });
      agentId = ids.agentId;
      const thread = await h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.humanId, content: 'hello' });
      const threadId: string = thread.body.thread_id;
      const reader = await readThread(h.server.url, threadId, { 'x-api-key': h.apiKey }, { after: '0' });
      cleanups.push(async () => reader.close());
      readerOpen.resolve(reader);
      await waitForThread(h, threadId, (ms) => ms.length >= 2);
      await h.call('POST', `/api/v1/threads/${threadId}/messages`, { sender_agent_id: ids.humanId, content: 'and now?' });
      const messages = await waitForThread(h, threadId, (ms) => ms.length >= 4);
      await Promise.all(streams);

      expect(messages.map((m) => [m.sender_id === ids.agentId ? 'agent' : 'human', m.content])).toEqual([
        ['human', 'hello'],
        ['agent', replyText(1)],
        ['human', 'and now?'],
        ['agent', replyText(2)],
      ]);
      // Each reply came as the vendor's pieces, one delta each, in order, all before the reply itself.
      const items = await reader.until((i) => i.event === 'message.created' && i.data.message_id === messages[3]!.message_id, 'the second reply');
      for (const [n, replyId] of [messages[1]!.message_id, messages[3]!.message_id].entries()) {
        const deltas = deltasOf(items, replyId);
        expect(deltas.map((d) => d.data.text), describeItems(items)).toEqual(cutText(replyText(n + 1), 'word'));
        expect(deltas.map((d) => d.data.index)).toEqual([0, 1, 2, 3, 4, 5]);
        expect(items.indexOf(deltas.at(-1)!)).toBeLessThan(items.findIndex((i) => i.event === 'message.created' && i.data.message_id === replyId));
      }
      expect(scope.isDone()).toBe(true);
      expect(seen).toEqual([
        { model: vendor.model, system: 'You are terse.', turns: [{ role: 'user', text: 'hello' }] },
        {
          model: vendor.model,
          system: 'You are terse.',
          turns: [
            { role: 'user', text: 'hello' },
            { role: 'assistant', text: replyText(1) },
            { role: 'user', text: 'and now?' },
          ],
        },
      ]);
      // What each streamed reply cost, as the stream's end reported it.
      const usage = (await h.call('GET', `/api/v1/agents/${ids.agentId}/usage`)).body;
      expect(usage.by_model).toEqual([
        { provider: vendor.provider, model: vendor.reportsModel === false ? vendor.model : `${vendor.model}-2026`, calls: 2, input_tokens: 2 * vendor.usage.input, output_tokens: 2 * vendor.usage.output },
      ]);
      // Nothing more is asked once each message has its reply.
      const quiet = await h.call('GET', `/api/v1/threads/${threadId}?after=${messages[3]!.message_id}&wait=1`);
      expect(quiet.body.messages).toEqual([]);
      expect(seen).toHaveLength(2);
    },
  );

  it('providers: ANTHROPIC_BASE_URL is an origin: the Messages API is called at {origin}/v1/messages', async () => {
    const scope = nock('https://llm-gateway.internal')
      .post('/v1/messages')
      .reply(async (request: Request) => {
        const body = await request.json();
        return [200, wholeStream(anthropicStream(body, 'claude-x', 'via gateway', { input: 3, output: 2 })), { 'content-type': 'text/event-stream' }];
      });
    const h = await harness({ env: { ANTHROPIC_BASE_URL: 'https://llm-gateway.internal/' } });
    await h.call('PUT', `/organizations/${h.orgId}/api-keys/anthropic`, { api_key: 'ant-key-0001' });
    const ids = await buildTeam(h, { provider: 'anthropic', model: 'claude-x' });
    const thread = await h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.humanId, content: 'hi' });
    const messages = await waitForThread(h, thread.body.thread_id, (ms) => ms.length >= 2);
    expect(messages[1]!.content).toBe('via gateway');
    expect(scope.isDone()).toBe(true);
  });
});

describe('providers: an OpenAI-compatible server on loopback (OPENAI_BASE_URL)', () => {
  let stub: OpenAiStub;
  let answer: (request: Parameters<typeof echoCompletion>[0]) => StubAnswer | Promise<StubAnswer> = echoCompletion;
  beforeAll(async () => {
    stub = await startOpenAiStub((request) => answer(request));
    cleanups.push(() => stub.close());
  });
  afterEach(() => {
    answer = echoCompletion;
    stub.requests.length = 0;
  });

  const env = () => ({ OPENAI_BASE_URL: `${stub.origin}/v1`, OPENAI_API_KEY: 'sk-from-env' });

  /** A team whose agent `bot` runs openai model `local-llama`, its key set to `key`. */
  async function openaiTeam(h: Harness, key: string) {
    await h.call('PUT', `/organizations/${h.orgId}/api-keys/openai`, { api_key: key });
    return buildTeam(h, { provider: 'openai', model: 'local-llama', instructions: 'Answer in one line.' });
  }

  it('providers: an openai agent answers through the server at OPENAI_BASE_URL with the stored key, once per message', async () => {
    const h = await harness({ env: env() });
    const ids = await buildTeam(h, { provider: 'openai', model: 'local-llama', instructions: 'Answer in one line.' });
    const thread = await h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.humanId, content: 'hello' });
    // No key yet: the agent stays idle and the server hears nothing.
    const first = (await threadMessages(h, thread.body.thread_id))[0]!;
    expect((await h.call('GET', `/api/v1/threads/${thread.body.thread_id}?after=${first.message_id}&wait=1`)).body.messages).toEqual([]);
    expect(stub.requests).toEqual([]);

    await h.call('PUT', `/organizations/${h.orgId}/api-keys/openai`, { api_key: 'sk-local-0001' });
    const messages = await waitForThread(h, thread.body.thread_id, (ms) => ms.length >= 2);
    expect(messages.map((m) => m.content)).toEqual(['hello', 'reply to: hello']);
    expect(stub.requests).toHaveLength(1);
    expect(stub.requests[0]).toMatchObject({ path: '/v1/chat/completions', headers: { authorization: 'Bearer sk-local-0001' } });
    expect(stub.requests[0]!.body).toMatchObject({
      model: 'local-llama',
      messages: [
        { role: 'system', content: 'Answer in one line.' },
        { role: 'user', content: 'hello' },
      ],
    });
    expect((await h.call('GET', `/api/v1/agents/${ids.agentId}/usage`)).body).toMatchObject({ calls: 1, input_tokens: 11, output_tokens: 7, by_model: [{ provider: 'openai', model: 'local-llama' }] });
  });

  it('providers: a 429 is retried no sooner than its Retry-After, and the message is answered once', async () => {
    answer = (request) =>
      request.n === 1 ? { status: 429, headers: { 'retry-after': '2' }, body: { error: { message: 'slow down', type: 'rate_limit_error' } } } : echoCompletion(request);
    const h = await harness({ env: env() });
    const ids = await openaiTeam(h, 'sk-local-0002');
    const thread = await h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.humanId, content: 'busy?' });
    const messages = await waitForThread(h, thread.body.thread_id, (ms) => ms.length >= 2);
    expect(messages.map((m) => m.content)).toEqual(['busy?', 'reply to: busy?']);
    expect(stub.requests).toHaveLength(2);
    expect(stub.requests[1]!.at - stub.requests[0]!.at).toBeGreaterThanOrEqual(2000);
    expect(h.warnings).toEqual([expect.objectContaining({ msg: expect.stringContaining('rate limit'), retry_in_ms: 2000, status: 429 })]);
  });

  it("providers: a 401 pauses the organization's provider (logged once, without the key) until the key is replaced", async () => {
    // As OpenAI answers: the key masked, its first and last characters shown.
    const refusedKey = 'sk-revoked-Kq7wTxZpLm';
    answer = (request) =>
      request.headers.authorization === `Bearer ${refusedKey}` ? { status: 401, body: { error: { message: 'Incorrect API key provided: sk-revo*************ZpLm. You can find your API key at https://platform.openai.com/account/api-keys.' } } } : echoCompletion(request);
    const h = await harness({ env: env() });
    const ids = await openaiTeam(h, refusedKey);
    const one = await h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.humanId, content: 'first' });
    const two = await h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.humanId, content: 'second' });
    await until(() => h.warnings.some((w) => String(w.msg).includes('refused')), 'the refusal to be logged');
    // Many ticks (20 ms each) later: no retry with the refused key, no reply.
    await new Promise((r) => setTimeout(r, 1500));
    const refusedCalls = stub.requests.length;
    expect(refusedCalls).toBeGreaterThanOrEqual(1);
    expect(refusedCalls).toBeLessThanOrEqual(2); // at most the two calls already in flight together
    expect((await threadMessages(h, one.body.thread_id)).map((m) => m.content)).toEqual(['first']);
    expect((await threadMessages(h, two.body.thread_id)).map((m) => m.content)).toEqual(['second']);
    expect(h.warnings.filter((w) => String(w.msg).includes('refused'))).toEqual([expect.objectContaining({ org_id: h.orgId, provider: 'openai', status: 401 })]);
    expect(h.logText()).not.toContain(refusedKey);
    expect(h.logText()).not.toContain('ZpLm');
    expect(h.logText()).not.toContain('sk-revo');
    expect(h.logText()).toContain('HTTP 401: Incorrect API key provided: [redacted]');

    await h.call('PUT', `/organizations/${h.orgId}/api-keys/openai`, { api_key: 'sk-renewed-0003' });
    await waitForThread(h, one.body.thread_id, (ms) => ms.length >= 2);
    await waitForThread(h, two.body.thread_id, (ms) => ms.length >= 2);
    const renewed = stub.requests.slice(refusedCalls);
    expect(renewed.map((r) => r.headers.authorization)).toEqual(['Bearer sk-renewed-0003', 'Bearer sk-renewed-0003']);
    expect((await threadMessages(h, one.body.thread_id)).map((m) => m.content)).toEqual(['first', 'reply to: first']);
  });

  it('providers: an empty reply is not posted, but the tokens it cost are recorded and spend the budget', async () => {
    answer = (request) => completion(request.body.model, '', { prompt_tokens: 11, completion_tokens: 7 });
    const h = await harness({ env: env() });
    await h.call('PUT', `/organizations/${h.orgId}/api-keys/openai`, { api_key: 'sk-local-0007' });
    const ids = await buildTeam(h, { provider: 'openai', model: 'local-llama', max_tokens_per_day: 18 });
    const thread = await h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.humanId, content: 'say nothing' });
    await until(() => h.warnings.some((w) => String(w.msg).includes('budget spent')), 'the budget to be spent');

    expect(stub.requests).toHaveLength(1);
    expect(h.warnings[0]).toMatchObject({ msg: 'agent reply failed', reason: 'the provider returned an empty reply' });
    expect((await h.call('GET', `/api/v1/agents/${ids.agentId}/usage`)).body).toMatchObject({
      calls: 1,
      input_tokens: 11,
      output_tokens: 7,
      by_model: [{ provider: 'openai', model: 'local-llama', calls: 1 }],
      tokens_today: 18,
      budget_exhausted_until: expect.any(String),
    });
    expect((await threadMessages(h, thread.body.thread_id)).map((m) => m.content)).toEqual(['say nothing']);
  });

  it('providers: a reply whose thread was deleted during the call is not posted, but the call is recorded in the team\'s usage', async () => {
    let answerNow!: () => void;
    const held = new Promise<void>((resolve) => (answerNow = resolve));
    answer = async (request) => {
      await held;
      return echoCompletion(request);
    };
    const h = await harness({ env: env() });
    const ids = await openaiTeam(h, 'sk-local-0009');
    await h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.humanId, content: 'are you there?' });
    await stub.received(1);
    expect((await h.call('DELETE', `/api/v1/edges/${ids.edgeId}`)).status).toBe(200);
    answerNow();

    // The answer comes once the thread is gone: its usage shows once the loop is done with it.
    const deadline = Date.now() + 15_000;
    let usage = (await h.call('GET', `/api/v1/teams/${ids.teamId}/usage`)).body;
    while (usage.calls === 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
      usage = (await h.call('GET', `/api/v1/teams/${ids.teamId}/usage`)).body;
    }
    expect(usage).toMatchObject({ calls: 1, input_tokens: 11, output_tokens: 7 });
    expect(stub.requests).toHaveLength(1);
  });

  it('providers: a call that outlives its timeout is aborted and tried again; one reply is posted', async () => {
    answer = (request) => (request.n === 1 ? 'hang' : echoCompletion(request));
    const h = await harness({ env: env(), providerTimeoutMs: 500 });
    const ids = await openaiTeam(h, 'sk-local-0004');
    const thread = await h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.humanId, content: 'slow?' });
    const messages = await waitForThread(h, thread.body.thread_id, (ms) => ms.length >= 2);
    expect(messages.map((m) => m.content)).toEqual(['slow?', 'reply to: slow?']);
    expect(stub.requests).toHaveLength(2);
    expect(stub.requests[0]!.aborted).toBe(true);
    expect(h.warnings).toEqual([expect.objectContaining({ msg: 'agent reply failed', reason: 'timed out after 500 ms', failures: 1 })]);
  });

  it('providers: calls in flight never exceed the configured concurrency', async () => {
    answer = async (request) => {
      await new Promise((r) => setTimeout(r, 150));
      return echoCompletion(request);
    };
    const h = await harness({ env: env(), agentConcurrency: 2 });
    const ids = await openaiTeam(h, 'sk-local-0005');
    const threads = [];
    for (let i = 0; i < 6; i++) threads.push((await h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.humanId, content: `q${i}` })).body.thread_id);
    for (const id of threads) await waitForThread(h, id, (ms) => ms.length >= 2);
    expect(stub.requests).toHaveLength(6);
    expect(stub.maxInFlight()).toBeLessThanOrEqual(2);
  });

  it('providers: a message that came while the process did not run the provider is answered once a restart runs it', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'acs-providers-'));
    cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
    const h = await harness({ inMemory: false, dataDir, env: { ...env(), ACS_AGENT_PROVIDERS: 'echo' } });
    const ids = await openaiTeam(h, 'sk-local-0008');
    const thread = await h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.humanId, content: 'anyone?' });
    const first = (await threadMessages(h, thread.body.thread_id))[0]!;
    // Ticks of 20 ms for a second: the loop has looked at the thread and left it, as it must.
    expect((await h.call('GET', `/api/v1/threads/${thread.body.thread_id}?after=${first.message_id}&wait=1`)).body.messages).toEqual([]);
    await h.server.close();
    expect(stub.requests).toEqual([]);

    const server: RunningServer = await startServer({ dataDir, port: 0, tickMs: 20, env: env() });
    cleanups.push(() => server.close());
    const again = { call: (method: string, path: string, body?: unknown) => request(server.url + path, method, body, { 'x-api-key': h.apiKey }) };
    const messages = await waitForThread(again, thread.body.thread_id, (ms) => ms.length >= 2, 15_000);
    expect(messages.map((m) => m.content)).toEqual(['anyone?', 'reply to: anyone?']);
    expect(stub.requests).toHaveLength(1);
  });

  it('providers: stopping the service aborts a call in flight, and after a restart the message is answered once', async () => {
    answer = () => 'hang';
    const dataDir = await mkdtemp(join(tmpdir(), 'acs-providers-'));
    cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
    const h = await harness({ inMemory: false, dataDir, env: env() });
    const ids = await openaiTeam(h, 'sk-local-0006');
    const thread = await h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.humanId, content: 'still there?' });
    const hung = await stub.received(1);
    // The call's own timeout is 120 s, longer than this test may run: only the shutdown can end it.
    await h.server.close();
    await until(() => hung.aborted, 'the call to be aborted');

    answer = echoCompletion;
    const server: RunningServer = await startServer({ dataDir, port: 0, tickMs: 20, env: env() });
    cleanups.push(() => server.close());
    const again = { call: (method: string, path: string, body?: unknown) => request(server.url + path, method, body, { 'x-api-key': h.apiKey }) };
    const messages = await waitForThread(again, thread.body.thread_id, (ms) => ms.length >= 2);
    expect(messages.map((m) => m.content)).toEqual(['still there?', 'reply to: still there?']);
    expect(stub.requests).toHaveLength(2);
  });
});
