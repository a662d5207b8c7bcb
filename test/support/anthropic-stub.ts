/**
 * A real HTTP server on loopback standing in for Anthropic's Messages API: it serves
 * `POST …/v1/messages`, records every request and answers as a test says — `text` content
 * blocks, or `tool_use` blocks (`stop_reason: 'tool_use'`) — with usage `{input_tokens,
 * output_tokens}`. The AI SDK's provider reaches it with `createAnthropic({baseURL:
 * `${origin}/v1`})` (it posts to `{baseURL}/messages` with `x-api-key` and `anthropic-version`);
 * acs-server with `ANTHROPIC_BASE_URL` = `origin` (it appends the `/v1`). Streaming
 * (`stream: true`) is not served. Same API as openai-stub.ts; scripts: model-script.ts.
 */
import { randomBytes } from 'node:crypto';
import { conversationOf, parseJson, toolCallsOf, type Conversation, type ConversationEvent, type ModelScript, type OfferedTool, type ScriptedToolCall } from './model-script.ts';
import { startModelStub, type ModelStub, type RecordedRequest, type StubAnswer } from './model-stub-server.ts';

export type { StubAnswer } from './model-stub-server.ts';

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
 * {@link toolUseMessage} (calls), the raw answer it gives, or — when it returns undefined —
 * {@link echoMessage}'s answer.
 */
export function scriptedMessages(script: ModelScript): (request: AnthropicRequest) => Promise<StubAnswer> {
  return async (request) => {
    const reply = await script(messagesConversation(request));
    if (reply === undefined) return echoMessage(request);
    if (typeof reply === 'string') return message(request.body.model, reply);
    const calls = toolCallsOf(reply);
    if (calls) return toolUseMessage(request.body.model, calls);
    return (reply as { answer: StubAnswer }).answer;
  };
}

/** A running stub. */
export interface AnthropicStub extends ModelStub<AnthropicRequest> {
  /** `http://127.0.0.1:PORT`: the AI SDK's `baseURL` is `${origin}/v1`; acs-server's `ANTHROPIC_BASE_URL` is `origin`. */
  origin: string;
}

/**
 * Starts the stub on a free loopback port. `answer` decides each response (default
 * {@link echoMessage}); a request to any path not ending in `/v1/messages` is 404
 * (`not_found_error`), a body that is not JSON is 400 (`invalid_request_error`); neither is recorded.
 */
export async function startAnthropicStub(answer: (request: AnthropicRequest) => StubAnswer | Promise<StubAnswer> = echoMessage): Promise<AnthropicStub> {
  return startModelStub<MessagesBody>({
    accepts: (path) => path.split('?')[0]!.endsWith('/v1/messages'),
    notFound: anthropicError(404, 'not_found_error', 'not found'),
    badRequest: anthropicError(400, 'invalid_request_error', 'the body is not JSON'),
    answer,
  });
}
