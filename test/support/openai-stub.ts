/**
 * A real HTTP server on loopback standing in for an OpenAI-compatible model server (vLLM, Ollama,
 * LiteLLM…): it serves `POST …/chat/completions`, records every request and answers as a test
 * says — text, or tool calls in the Chat Completions format (`choices[0].message.tool_calls`,
 * `finish_reason: 'tool_calls'`). The service reaches it through `OPENAI_BASE_URL`, as it would
 * reach a real one. A request with `stream: true` gets a 200 answer as the Chat Completions event
 * stream (`chat.completion.chunk` frames, then `data: [DONE]`; see {@link chatCompletionStream}),
 * cut and paced as the test says, and holdable half-way (model-stub-server.ts); an error status
 * stays a JSON error, as OpenAI sends it. Tool-calling scripts: see
 * {@link scriptedToolCompletions} and model-script.ts.
 */
import { randomBytes } from 'node:crypto';
import { conversationOf, parseJson, scriptedAnswer, type Conversation, type ConversationEvent, type ModelScript, type OfferedTool, type ScriptedToolCall } from './model-script.ts';
import { startModelStub, type ModelStub, type RecordedRequest, type StubAnswer as Answer, type StubOptions } from './model-stub-server.ts';
import { cutArguments, cutText, type ChunkPace, type StreamFrame } from './model-stream.ts';

export type { ChunkPace, SentChunk, SentFrame, StubOptions } from './model-stub-server.ts';

/** A tool call as Chat Completions writes it (in a response, and in an assistant message of a request). */
export interface ChatToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** A message of a Chat Completions request. `content` is a string, text parts, or null (an assistant message that only calls tools). */
export interface ChatMessage {
  role: string;
  /** Read it as text with {@link textOf}. */
  content: string | null | Array<{ type: string; text?: string }>;
  tool_calls?: ChatToolCall[];
  /** On a `role: 'tool'` message: the call it answers. */
  tool_call_id?: string;
  name?: string;
}

/** A tool offered in a Chat Completions request (`body.tools`). */
export interface ChatTool {
  type: 'function';
  function: { name: string; description?: string; parameters?: unknown; strict?: boolean };
}

/** One request as the stub received it. */
export interface StubRequest extends RecordedRequest<ChatBody> {}

/** The body of a Chat Completions request (the fields the stub reads; others pass as they are). */
export interface ChatBody {
  model: string;
  messages: ChatMessage[];
  tools?: ChatTool[];
  /** `true`: answer with an event stream. */
  stream?: boolean;
  /** `include_usage: true` (the AI SDK always sends it with `stream: true`): the stream ends with a usage chunk. */
  stream_options?: { include_usage?: boolean };
  [key: string]: unknown;
}

/** How the stub answers one request: a status, headers and a JSON body, or never (`hang`). */
export type StubAnswer = Answer;

/** The text of a message content: a string, text parts joined, or '' for null. */
export function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((part: { text?: unknown }) => (typeof part?.text === 'string' ? part.text : '')).join('');
  return '';
}

function chatCompletion(model: string, message: object, finishReason: string, usage: { prompt_tokens: number; completion_tokens: number }): StubAnswer {
  return {
    status: 200,
    body: {
      id: `chatcmpl-${Math.random().toString(36).slice(2)}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model,
      choices: [{ index: 0, message, finish_reason: finishReason }],
      usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
    },
  };
}

/** A chat completion answering `content`, with the given token usage (OpenAI's response shape). */
export function completion(model: string, content: string, usage = { prompt_tokens: 11, completion_tokens: 7 }): StubAnswer {
  return chatCompletion(model, { role: 'assistant', content }, 'stop', usage);
}

/**
 * A chat completion whose message calls `calls` (content null, `finish_reason: 'tool_calls'`),
 * with the given token usage. Each call's `input` is sent JSON-encoded as `arguments` (a string
 * as it is), its id is `id` or a fresh `call_…`.
 */
export function toolCallCompletion(model: string, calls: readonly ScriptedToolCall[], usage = { prompt_tokens: 11, completion_tokens: 7 }): StubAnswer {
  const toolCalls: ChatToolCall[] = calls.map((call) => ({
    id: call.id ?? `call_${randomBytes(12).toString('hex')}`,
    type: 'function',
    function: { name: call.name, arguments: typeof call.input === 'string' ? call.input : JSON.stringify(call.input) },
  }));
  return chatCompletion(model, { role: 'assistant', content: null, tool_calls: toolCalls }, 'tool_calls', usage);
}

/** The default answer: `reply to: <the last user message>`, 11 input and 7 output tokens. */
export function echoCompletion(request: StubRequest): StubAnswer {
  const last = request.body.messages.filter((m) => m.role === 'user').at(-1);
  return completion(request.body.model, `reply to: ${textOf(last?.content)}`);
}

/** The tools a request offers (`body.tools`), in its order; [] when none. */
export function offeredTools(request: StubRequest): OfferedTool[] {
  return (request.body.tools ?? []).map((t) => ({ name: t.function.name, description: t.function.description, inputSchema: t.function.parameters }));
}

/**
 * A request read as a script reads it (model-script.ts): system prompt, user texts, tools offered,
 * the assistant messages' `tool_calls` (arguments parsed) and the `role: 'tool'` results, each
 * with the name of the call its `tool_call_id` answers.
 */
export function chatConversation(request: StubRequest): Conversation {
  const { body } = request;
  const system = body.messages.filter((m) => m.role === 'system' || m.role === 'developer').map((m) => textOf(m.content));
  const events: ConversationEvent[] = [];
  for (const m of body.messages) {
    if (m.role === 'user') events.push({ userText: textOf(m.content) });
    else if (m.role === 'assistant' && m.tool_calls?.length) {
      for (const call of m.tool_calls) {
        const parsed = parseJson(call.function.arguments);
        events.push({ call: { id: call.id, name: call.function.name, input: parsed === undefined ? call.function.arguments : parsed } });
      }
    } else if (m.role === 'assistant') events.push({ textReply: true });
    else if (m.role === 'tool') {
      const text = textOf(m.content);
      events.push({ result: { toolCallId: m.tool_call_id ?? '', text, json: parseJson(text), isError: undefined } });
    }
  }
  return conversationOf(body.model, system.length > 0 ? system.join('\n\n') : undefined, offeredTools(request), events);
}

/**
 * Answers by a tool-calling script (model-script.ts): each request is read with
 * {@link chatConversation}, and the script's move becomes a {@link completion} (text), a
 * {@link toolCallCompletion} (calls), either with its own pace (`paced(…)`), the raw answer it
 * gives, or — when it returns undefined — {@link echoCompletion}'s answer. The script sees only
 * the request's own conversation, so concurrent threads and tests do not shift one another.
 */
export function scriptedToolCompletions(script: ModelScript): (request: StubRequest) => Promise<StubAnswer> {
  return async (request) =>
    scriptedAnswer(await script(chatConversation(request)), {
      echo: () => echoCompletion(request),
      text: (text) => completion(request.body.model, text),
      calls: (calls) => toolCallCompletion(request.body.model, calls),
    });
}

/** A chat completion response as {@link completion} and {@link toolCallCompletion} write it (what {@link chatCompletionStream} reads). */
interface ChatCompletionBody {
  id?: string;
  created?: number;
  model?: string;
  choices: Array<{ message: { role?: string; content: string | null; tool_calls?: ChatToolCall[] }; finish_reason: string | null }>;
  usage?: unknown;
}

function isChatCompletion(body: unknown): body is ChatCompletionBody {
  const choices = (body as { choices?: unknown } | null)?.choices;
  return Array.isArray(choices) && choices.length > 0 && typeof (choices[0] as { message?: unknown }).message === 'object';
}

/**
 * A chat completion (`answerBody`, as {@link completion} and {@link toolCallCompletion} write it)
 * as OpenAI streams it: `chat.completion.chunk` frames of the same id, created and model — a first
 * chunk with `delta.role`, the content in `delta.content` pieces, each tool call as a chunk with
 * its `index`, `id`, `type` and `function.name` then `function.arguments` pieces, a chunk with
 * `finish_reason`, and, when the request's `stream_options.include_usage` is set, a chunk with
 * `choices: []` and the usage (every chunk then carries `usage: null` before it) — then
 * `data: [DONE]`. Text and arguments are cut as `pace.size` says. Undefined when `answerBody` is
 * not a chat completion (a raw answer is sent as JSON).
 */
export function chatCompletionStream(body: ChatBody, answerBody: unknown, pace: Pick<ChunkPace, 'size'>): StreamFrame[] | undefined {
  if (!isChatCompletion(answerBody)) return undefined;
  const includeUsage = body.stream_options?.include_usage === true;
  const head = {
    id: answerBody.id ?? `chatcmpl-${randomBytes(12).toString('hex')}`,
    object: 'chat.completion.chunk',
    created: answerBody.created ?? Math.floor(Date.now() / 1000),
    model: answerBody.model ?? body.model,
    system_fingerprint: null,
  };
  const frame = (delta: object, finishReason: string | null = null): string =>
    JSON.stringify({ ...head, choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }], ...(includeUsage ? { usage: null } : {}) });
  const { message, finish_reason: finishReason } = answerBody.choices[0]!;
  const frames: StreamFrame[] = [{ data: frame({ role: 'assistant', content: message.content === null ? null : '', refusal: null }) }];
  for (const piece of cutText(message.content ?? '', pace.size)) frames.push({ data: frame({ content: piece }), content: { kind: 'text', text: piece } });
  (message.tool_calls ?? []).forEach((call, index) => {
    frames.push({ data: frame({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.function.name, arguments: '' } }] }) });
    for (const piece of cutArguments(call.function.arguments, pace.size)) {
      frames.push({ data: frame({ tool_calls: [{ index, function: { arguments: piece } }] }), content: { kind: 'tool-input', text: piece } });
    }
  });
  frames.push({ data: frame({}, finishReason ?? 'stop') });
  if (includeUsage) frames.push({ data: JSON.stringify({ ...head, choices: [], usage: answerBody.usage ?? null }) });
  frames.push({ data: '[DONE]' });
  return frames;
}

/** A running stub. */
export interface OpenAiStub extends ModelStub<StubRequest> {
  /** `http://127.0.0.1:PORT`; give the service `${origin}/v1` (or any path prefix) as `OPENAI_BASE_URL`. */
  origin: string;
}

/**
 * Starts the stub on a free loopback port. `answer` decides each response (default
 * {@link echoCompletion}); a request to any path not ending in `/chat/completions` is 404, a body
 * that is not JSON is 400 (neither is recorded). A request with `stream: true` gets a 200 answer
 * as an event stream ({@link chatCompletionStream}) cut and paced as `options.chunk` says (or the
 * answer's own `chunk`); default word by word, at once.
 *
 * ```ts
 * const stub = await startOpenAiStub(() => completion('m', 'a long reply'), { chunk: { size: 'word', delayMs: 50 } });
 * ```
 */
export async function startOpenAiStub(answer: (request: StubRequest) => StubAnswer | Promise<StubAnswer> = echoCompletion, options: StubOptions = {}): Promise<OpenAiStub> {
  const error = (status: number, message: string, type: string): StubAnswer => ({ status, body: { error: { message, type, param: null, code: null } } });
  return startModelStub<ChatBody>({
    accepts: (path) => path.split('?')[0]!.endsWith('/chat/completions'),
    notFound: error(404, 'not found', 'invalid_request_error'),
    badRequest: error(400, 'the body is not JSON', 'invalid_request_error'),
    answer,
    wantsStream: (body) => body.stream === true,
    streamOf: chatCompletionStream,
    ...(options.chunk ? { chunk: options.chunk } : {}),
  });
}

/**
 * A rule of scripted replies: a request of `model` (any model when absent) whose last user
 * message matches `match` gets the N-th reply of `replies`, N being how many user messages of its
 * conversation match (so each thread follows the script on its own); past the end, the last one.
 */
export interface ScriptedRule {
  model?: string;
  match: RegExp;
  replies: string[];
}

/**
 * Answers by script, as a test of a conversation needs (an invalid reply, then a valid one;
 * `revise` twice, then `approve`): the first rule that matches a request answers it (see
 * {@link ScriptedRule}); a request no rule matches gets {@link echoCompletion}'s answer. The
 * script is read from each request's own conversation, so concurrent threads and tests do not
 * shift one another. For replies that call tools, see {@link scriptedToolCompletions}.
 */
export function scriptedCompletions(rules: readonly ScriptedRule[]): (request: StubRequest) => StubAnswer {
  return (request) => {
    const users = request.body.messages.filter((m) => m.role === 'user').map((m) => textOf(m.content));
    const last = users.at(-1) ?? '';
    const rule = rules.find((r) => (r.model === undefined || r.model === request.body.model) && r.match.test(last));
    if (!rule) return echoCompletion(request);
    const seen = users.filter((content) => rule.match.test(content)).length;
    return completion(request.body.model, rule.replies[Math.min(seen, rule.replies.length) - 1]!);
  };
}
