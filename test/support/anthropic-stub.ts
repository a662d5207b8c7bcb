/**
 * A real HTTP server on loopback standing in for Anthropic's Messages API: it serves
 * `POST …/v1/messages`, records every request and answers as a test says — `text` content
 * blocks, or `tool_use` blocks (`stop_reason: 'tool_use'`) — with usage `{input_tokens,
 * output_tokens}`. The AI SDK's provider reaches it with `createAnthropic({baseURL:
 * `${origin}/v1`})` (it posts to `{baseURL}/messages` with `x-api-key` and `anthropic-version`);
 * acs-server with `ANTHROPIC_BASE_URL` = `origin` (it appends the `/v1`). A request with
 * `stream: true` gets a 200 answer as the Messages event stream (`message_start` …
 * `message_stop`; see {@link messageStream}), cut and paced as the test says, and holdable
 * half-way (model-stub-server.ts); an error status stays a JSON error, as Anthropic sends it.
 * Same API as openai-stub.ts; scripts: model-script.ts.
 */
import { randomBytes } from 'node:crypto';
import { conversationOf, parseJson, scriptedAnswer, type Conversation, type ConversationEvent, type ModelScript, type OfferedTool, type ScriptedToolCall } from './model-script.ts';
import { startModelStub, type ModelStub, type RecordedRequest, type StubAnswer, type StubOptions } from './model-stub-server.ts';
import { cutArguments, cutText, type ChunkPace, type StreamFrame } from './model-stream.ts';

export type { ChunkPace, SentChunk, SentFrame, StubAnswer, StubOptions } from './model-stub-server.ts';

/** A content block of a Messages request or response (the kinds a test reads; others pass as they are). */
export type AnthropicBlock =
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id: string; name: string; input: unknown }
  | { type: 'tool_result'; tool_use_id: string; content?: string | Array<{ type: string; text?: string }>; is_error?: boolean }
  | { type: string; [key: string]: unknown };

/** A message of a Messages request: `content` is a string or blocks. */
export interface AnthropicMessage {
  role: 'user' | 'assistant';
  content: string | AnthropicBlock[];
}

/** A tool offered in a Messages request (`body.tools`). */
export interface AnthropicTool {
  name: string;
  description?: string;
  input_schema?: unknown;
  [key: string]: unknown;
}

/** The body of a Messages request. */
export interface MessagesBody {
  model: string;
  max_tokens?: number;
  system?: string | Array<{ type: 'text'; text: string }>;
  messages: AnthropicMessage[];
  tools?: AnthropicTool[];
  /** `true`: answer with an event stream. */
  stream?: boolean;
  [key: string]: unknown;
}

/** One request as the stub received it. */
export interface AnthropicRequest extends RecordedRequest<MessagesBody> {}

/** Token usage of an answer, as Anthropic reports it. */
export interface AnthropicUsage {
  input_tokens: number;
  output_tokens: number;
}

const DEFAULT_USAGE: AnthropicUsage = { input_tokens: 21, output_tokens: 8 };

function messageAnswer(model: string, content: object[], stopReason: string, usage: AnthropicUsage): StubAnswer {
  return {
    status: 200,
    body: { id: `msg_${randomBytes(12).toString('hex')}`, type: 'message', role: 'assistant', model, content, stop_reason: stopReason, stop_sequence: null, usage },
  };
}

/** A Messages response answering `text` (one text block, `stop_reason: 'end_turn'`), with the given usage. */
export function message(model: string, text: string, usage: AnthropicUsage = DEFAULT_USAGE): StubAnswer {
  return messageAnswer(model, [{ type: 'text', text }], 'end_turn', usage);
}

/**
 * A Messages response calling `calls`: one `tool_use` block each (`input` as given, id `id` or a
 * fresh `toolu_…`), `stop_reason: 'tool_use'`, with the given usage.
 */
export function toolUseMessage(model: string, calls: readonly ScriptedToolCall[], usage: AnthropicUsage = DEFAULT_USAGE): StubAnswer {
  const blocks = calls.map((call) => ({ type: 'tool_use', id: call.id ?? `toolu_${randomBytes(12).toString('hex')}`, name: call.name, input: call.input }));
  return messageAnswer(model, blocks, 'tool_use', usage);
}

/** An error answer in Anthropic's shape (`{type: 'error', error: {type, message}}`), e.g. 429 `rate_limit_error`. */
export function anthropicError(status: number, type: string, errorMessage: string, headers?: Record<string, string>): StubAnswer {
  return { status, ...(headers ? { headers } : {}), body: { type: 'error', error: { type, message: errorMessage } } };
}

/** The text of a content: a string, or its text blocks joined. */
export function blocksText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((b: { type?: unknown; text?: unknown }) => (b?.type === 'text' && typeof b.text === 'string' ? b.text : '')).join('');
  return '';
}

/** The default answer: `reply to: <the last user text>`, 21 input and 8 output tokens. */
export function echoMessage(request: AnthropicRequest): StubAnswer {
  const texts = request.body.messages.filter((m) => m.role === 'user').map((m) => blocksText(m.content)).filter((t) => t !== '');
  return message(request.body.model, `reply to: ${texts.at(-1) ?? ''}`);
}

/** The tools a request offers (`body.tools`), in its order; [] when none. */
export function offeredAnthropicTools(request: AnthropicRequest): OfferedTool[] {
  return (request.body.tools ?? []).map((t) => ({ name: t.name, description: t.description, inputSchema: t.input_schema }));
}

/**
 * A request read as a script reads it (model-script.ts): system prompt, user texts, tools offered,
 * assistant `tool_use` blocks and the user messages' `tool_result` blocks (with `is_error`), each
 * with the name of the call its `tool_use_id` answers.
 */
export function messagesConversation(request: AnthropicRequest): Conversation {
  const { body } = request;
  const events: ConversationEvent[] = [];
  for (const m of body.messages) {
    const blocks: AnthropicBlock[] = typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content;
    if (m.role === 'assistant') {
      const uses = blocks.filter((b): b is Extract<AnthropicBlock, { type: 'tool_use' }> => b.type === 'tool_use');
      for (const use of uses) events.push({ call: { id: use.id, name: use.name, input: use.input } });
      if (uses.length === 0) events.push({ textReply: true });
      continue;
    }
    // A user message: its tool results, then its text (a turn's boundary is the model's text reply, not the user's text).
    let text: string | undefined;
    for (const block of blocks) {
      if (block.type === 'tool_result') {
        const result = block as Extract<AnthropicBlock, { type: 'tool_result' }>;
        const resultText = blocksText(result.content);
        events.push({ result: { toolCallId: result.tool_use_id, text: resultText, json: parseJson(resultText), isError: result.is_error ?? false } });
      } else if (block.type === 'text') text = (text ?? '') + (block as { text: string }).text;
    }
    if (text !== undefined) events.push({ userText: text });
  }
  const system = typeof body.system === 'string' ? body.system : body.system?.map((b) => b.text).join('\n\n');
  return conversationOf(body.model, system, offeredAnthropicTools(request), events);
}

/**
 * Answers by a tool-calling script (model-script.ts): each request is read with
 * {@link messagesConversation}, and the script's move becomes a {@link message} (text), a
 * {@link toolUseMessage} (calls), either with its own pace (`paced(…)`), the raw answer it
 * gives, or — when it returns undefined — {@link echoMessage}'s answer.
 */
export function scriptedMessages(script: ModelScript): (request: AnthropicRequest) => Promise<StubAnswer> {
  return async (request) =>
    scriptedAnswer(await script(messagesConversation(request)), {
      echo: () => echoMessage(request),
      text: (text) => message(request.body.model, text),
      calls: (calls) => toolUseMessage(request.body.model, calls),
    });
}

/** A Messages response as {@link message} and {@link toolUseMessage} write it (what {@link messageStream} reads). */
interface MessageResponse {
  id?: string;
  type: 'message';
  model?: string;
  content: AnthropicBlock[];
  stop_reason: string | null;
  stop_sequence?: string | null;
  usage?: Partial<AnthropicUsage>;
}

function isMessageResponse(body: unknown): body is MessageResponse {
  return (body as { type?: unknown } | null)?.type === 'message' && Array.isArray((body as { content?: unknown }).content);
}

/**
 * A Messages response (`answerBody`, as {@link message} and {@link toolUseMessage} write it) as
 * Anthropic streams it, each frame with its `event:` name: `message_start` (the message without
 * content, `stop_reason: null`, usage with the input tokens and 1 output token), a `ping`, then
 * for each content block `content_block_start` (a text block with `text: ''`, a `tool_use` block
 * with `input: {}`), its `content_block_delta`s (`text_delta` pieces of the text, `input_json_delta`
 * pieces of the JSON-encoded input; other blocks none) and `content_block_stop`; then
 * `message_delta` (`stop_reason`, `stop_sequence`, usage `{output_tokens}`) and `message_stop`.
 * Text and input are cut as `pace.size` says. Undefined when `answerBody` is not a Messages
 * response (a raw answer is sent as JSON).
 */
export function messageStream(body: MessagesBody, answerBody: unknown, pace: Pick<ChunkPace, 'size'>): StreamFrame[] | undefined {
  if (!isMessageResponse(answerBody)) return undefined;
  const event = (type: string, fields: object): StreamFrame => ({ event: type, data: JSON.stringify({ type, ...fields }) });
  const usage = { ...DEFAULT_USAGE, ...answerBody.usage };
  const frames: StreamFrame[] = [
    event('message_start', {
      message: {
        id: answerBody.id ?? `msg_${randomBytes(12).toString('hex')}`,
        type: 'message',
        role: 'assistant',
        model: answerBody.model ?? body.model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: usage.input_tokens, output_tokens: 1 },
      },
    }),
    event('ping', {}),
  ];
  answerBody.content.forEach((block, index) => {
    if (block.type === 'text') {
      frames.push(event('content_block_start', { index, content_block: { type: 'text', text: '' } }));
      for (const piece of cutText((block as { text: string }).text, pace.size)) {
        frames.push({ ...event('content_block_delta', { index, delta: { type: 'text_delta', text: piece } }), content: { kind: 'text', text: piece } });
      }
    } else if (block.type === 'tool_use') {
      const use = block as Extract<AnthropicBlock, { type: 'tool_use' }>;
      frames.push(event('content_block_start', { index, content_block: { type: 'tool_use', id: use.id, name: use.name, input: {} } }));
      for (const piece of cutArguments(JSON.stringify(use.input ?? {}), pace.size)) {
        frames.push({ ...event('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: piece } }), content: { kind: 'tool-input', text: piece } });
      }
    } else {
      frames.push(event('content_block_start', { index, content_block: block }));
    }
    frames.push(event('content_block_stop', { index }));
  });
  frames.push(event('message_delta', { delta: { stop_reason: answerBody.stop_reason, stop_sequence: answerBody.stop_sequence ?? null }, usage: { output_tokens: usage.output_tokens } }));
  frames.push(event('message_stop', {}));
  return frames;
}

/** A running stub. */
export interface AnthropicStub extends ModelStub<AnthropicRequest> {
  /** `http://127.0.0.1:PORT`: the AI SDK's `baseURL` is `${origin}/v1`; acs-server's `ANTHROPIC_BASE_URL` is `origin`. */
  origin: string;
}

/**
 * Starts the stub on a free loopback port. `answer` decides each response (default
 * {@link echoMessage}); a request to any path not ending in `/v1/messages` is 404
 * (`not_found_error`), a body that is not JSON is 400 (`invalid_request_error`); neither is
 * recorded. A request with `stream: true` gets a 200 answer as an event stream
 * ({@link messageStream}) cut and paced as `options.chunk` says (or the answer's own `chunk`);
 * default word by word, at once.
 */
export async function startAnthropicStub(answer: (request: AnthropicRequest) => StubAnswer | Promise<StubAnswer> = echoMessage, options: StubOptions = {}): Promise<AnthropicStub> {
  return startModelStub<MessagesBody>({
    accepts: (path) => path.split('?')[0]!.endsWith('/v1/messages'),
    notFound: anthropicError(404, 'not_found_error', 'not found'),
    badRequest: anthropicError(400, 'invalid_request_error', 'the body is not JSON'),
    answer,
    wantsStream: (body) => body.stream === true,
    streamOf: messageStream,
    ...(options.chunk ? { chunk: options.chunk } : {}),
  });
}
