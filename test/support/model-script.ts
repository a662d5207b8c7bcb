/**
 * Scripts for the model stand-ins (openai-stub.ts, anthropic-stub.ts), in one vocabulary whatever
 * the vendor: a script reads a {@link Conversation} — the request as the model would see it: its
 * system prompt, user messages, the tools offered, the tool calls made and their results — and
 * returns the model's next move: text, tool calls, or a raw answer. Each stand-in turns its own
 * request format into a Conversation and the move into its own response format, so one script
 * can drive both vendors.
 *
 * A delegation chain reads as the test would tell it:
 *
 * ```ts
 * const script: ModelScript = (c) => {
 *   if (c.system?.startsWith('You lead')) {
 *     const answer = c.resultOf('ask');
 *     return answer ? `Plan: ${answer.text}` : callTool('ask', { peer: 'researcher', content: c.lastUserText });
 *   }
 *   return undefined; // everyone else: the stand-in's default (an echo)
 * };
 * ```
 */
import type { StubAnswer } from './model-stub-server.ts';
import type { ChunkPace } from './model-stream.ts';

/** A tool the request offers the model. */
export interface OfferedTool {
  name: string;
  description: string | undefined;
  /** The JSON Schema of its input, as sent (OpenAI's `parameters`, Anthropic's `input_schema`). */
  inputSchema: unknown;
}

/** A tool call the model made earlier in the conversation (an assistant message's). */
export interface SeenToolCall {
  id: string;
  name: string;
  /** The arguments, parsed (OpenAI sends them as a JSON string: unparsable ones stay that string). */
  input: unknown;
}

/** A tool result the request carries back to the model. */
export interface SeenToolResult {
  /** The id of the call it answers (OpenAI's `tool_call_id`, Anthropic's `tool_use_id`). */
  toolCallId: string;
  /** The name of that call's tool, from the conversation's earlier call with this id; undefined when none has it. */
  toolName: string | undefined;
  /** The result as text (text parts joined). */
  text: string;
  /** `text` parsed as JSON; undefined when it is not JSON. */
  json: unknown;
  /** Anthropic's `is_error` flag; always undefined for OpenAI, whose format has none (the AI SDK sends an error as `{"error": …}` text). */
  isError: boolean | undefined;
}

/** A request to a model stand-in, as a script reads it. */
export interface Conversation {
  /** The model the request names. */
  model: string;
  /** The system prompt (system messages' text joined by a blank line); undefined when there is none. */
  system: string | undefined;
  /** The text of every user message that has text, oldest first (tool results are not user text). */
  userTexts: string[];
  /** The last of {@link userTexts}: the message the current turn answers. */
  lastUserText: string | undefined;
  /** The tools offered, in the request's order. */
  tools: OfferedTool[];
  /** Every tool call the model made in the conversation, oldest first. */
  toolCalls: SeenToolCall[];
  /** Every tool result in the conversation, oldest first. */
  toolResults: SeenToolResult[];
  /**
   * The tool results of the current turn, oldest first: those after the model's last text reply
   * (an assistant message without tool calls), so a thread's earlier turns are left out.
   */
  turnResults: SeenToolResult[];
  /** The latest result of the current turn for a call of `toolName`; undefined when there is none. */
  resultOf(toolName: string): SeenToolResult | undefined;
}

/** One tool call a scripted reply makes. */
export interface ScriptedToolCall {
  name: string;
  /**
   * The arguments. OpenAI's stand-in sends them JSON-encoded, or as they are when a string (to
   * script arguments that are not JSON); Anthropic's sends them as `input` unchanged.
   */
  input: unknown;
  /** The call's id; default: a fresh one in the vendor's style (`call_…`, `toolu_…`). */
  id?: string;
}

/** A text reply or a step of tool calls, streamed at a pace of its own (see {@link paced}). */
export interface PacedReply {
  paced: string | ScriptedToolCall | ScriptedToolCall[];
  chunk: ChunkPace;
}

/**
 * The model's next move, as a script returns it: a string is a text reply (the turn's end); a
 * call or calls (see {@link callTool}) is a step of tool calls; {@link paced} is either of them
 * streamed at a pace of its own; `{answer}` is a raw answer of the stand-in (an HTTP error,
 * `'hang'`, or a reply with chosen usage); undefined leaves the request to the stand-in's default
 * answer (an echo of the last user text).
 */
export type ScriptReply = string | ScriptedToolCall | ScriptedToolCall[] | PacedReply | { answer: StubAnswer } | undefined;

/** A script: the next move for a conversation. It may be async (to wait on the test). */
export type ModelScript = (conversation: Conversation) => ScriptReply | Promise<ScriptReply>;

/** A tool call for a script to return: `callTool('ask', {peer: 'researcher', content: 'Find X'})`. */
export function callTool(name: string, input: unknown, id?: string): ScriptedToolCall {
  return id === undefined ? { name, input } : { name, input, id };
}

/**
 * A reply streamed at a pace of its own, over the stand-in's (model-stream.ts), when the request
 * asks for a stream (a JSON answer is unchanged): `paced('A long answer', {size: 'word', delayMs: 200})`.
 */
export function paced(reply: string | ScriptedToolCall | ScriptedToolCall[], chunk: ChunkPace): PacedReply {
  return { paced: reply, chunk };
}

/** How a stand-in words each kind of move (see {@link scriptedAnswer}). */
export interface AnswerWriters {
  echo(): StubAnswer;
  text(text: string): StubAnswer;
  calls(calls: ScriptedToolCall[]): StubAnswer;
}

/**
 * A script's move as the stand-in's answer: undefined is `echo()`, text is `text(…)`, calls are
 * `calls(…)`, `{answer}` is that answer, and a {@link paced} reply is its text or calls with its
 * pace.
 */
export function scriptedAnswer(reply: ScriptReply, write: AnswerWriters): StubAnswer {
  if (reply === undefined) return write.echo();
  if (typeof reply === 'string') return write.text(reply);
  if ('paced' in reply) {
    const answer = scriptedAnswer(reply.paced, write);
    return answer === 'hang' ? answer : { ...answer, chunk: reply.chunk };
  }
  const calls = toolCallsOf(reply);
  if (calls) return write.calls(calls);
  return (reply as { answer: StubAnswer }).answer;
}

/** The JSON value of `text`, or undefined when it is not JSON. */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * One thing a stand-in read from its request, in conversation order: a user message's text, a
 * tool call of the model, a tool result, or a text reply of the model (an assistant message
 * without tool calls, which ends a turn).
 */
export type ConversationEvent = { userText: string } | { call: SeenToolCall } | { result: Omit<SeenToolResult, 'toolName'> } | { textReply: true };

/**
 * Builds a {@link Conversation} from what a stand-in read of its request (the vendor-specific part):
 * `events` are the conversation's user texts, tool calls, tool results and text replies (assistant
 * messages without tool calls, which end a turn) in order.
 */
export function conversationOf(
  model: string,
  system: string | undefined,
  tools: OfferedTool[],
  events: readonly ConversationEvent[],
): Conversation {
  const userTexts: string[] = [];
  const toolCalls: SeenToolCall[] = [];
  const toolResults: SeenToolResult[] = [];
  let turnStart = 0;
  for (const event of events) {
    if ('userText' in event) {
      userTexts.push(event.userText);
    } else if ('textReply' in event) {
      turnStart = toolResults.length;
    } else if ('call' in event) {
      toolCalls.push(event.call);
    } else {
      // The latest call with that id names the tool (ids are unique within a conversation).
      const call = toolCalls.findLast((c) => c.id === event.result.toolCallId);
      toolResults.push({ ...event.result, toolName: call?.name });
    }
  }
  const turnResults = toolResults.slice(turnStart);
  return {
    model,
    system,
    userTexts,
    lastUserText: userTexts.at(-1),
    tools,
    toolCalls,
    toolResults,
    turnResults,
    resultOf: (toolName) => turnResults.findLast((r) => r.toolName === toolName),
  };
}

/** The reply's tool calls when it is a step of tool calls; undefined when it is anything else. */
export function toolCallsOf(reply: ScriptReply): ScriptedToolCall[] | undefined {
  if (Array.isArray(reply)) return reply;
  if (typeof reply === 'object' && 'name' in reply) return [reply];
  return undefined;
}
