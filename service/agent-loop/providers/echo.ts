import { setTimeout as sleep } from 'node:timers/promises';
import type { ModelToolCall, ReplyProvider, ReplyRequest, StepRequest, StepReply } from './types.ts';

/** Echo's stand-in for a tokenizer: one token per 4 characters, rounded up. */
function tokensOf(text: string): number {
  return Math.ceil(text.length / 4);
}

/** A tool result as echo's reply shows it: the answer of an ask, else the result as short JSON, else the error. */
function shownResult(output: { type?: string; value?: unknown } | undefined): string {
  if (!output) return '(no result)';
  if (output.type === 'error-text' || output.type === 'error-json') return `failed: ${typeof output.value === 'string' ? output.value : JSON.stringify(output.value)}`;
  const value = output.value as Record<string, unknown> | string | undefined;
  if (value && typeof value === 'object' && typeof value['content'] === 'string') return JSON.stringify(value['content']);
  const json = typeof value === 'string' ? value : JSON.stringify(value);
  return json.length > 200 ? `${json.slice(0, 199)}…` : json;
}

/**
 * The tool calls echo makes for a message (its "model"): one per line of the form
 * `ask NAME: QUESTION` (the `ask` tool, to the peer named NAME) or `call TOOL` / `call TOOL {JSON}`
 * (any tool by the name models see, `SERVER__TOOL` for a remote one). Ids are `echo-1`, `echo-2`…
 */
export function echoToolCalls(message: string): ModelToolCall[] {
  const calls: ModelToolCall[] = [];
  for (const line of message.split(/\r?\n/)) {
    const ask = /^\s*ask\s+([^:]+?)\s*:\s*(.+?)\s*$/i.exec(line);
    if (ask) {
      calls.push({ id: `echo-${calls.length + 1}`, name: 'ask', input: { peer: ask[1]!, content: ask[2]! } });
      continue;
    }
    const call = /^\s*call\s+([A-Za-z0-9_.\-/]+)\s*(\{.*\})?\s*$/.exec(line);
    if (call) {
      let input: unknown = {};
      let invalid: string | undefined;
      if (call[2]) {
        try {
          input = JSON.parse(call[2]);
        } catch (error) {
          invalid = `the input is not JSON (${(error as Error).message})`;
          input = call[2];
        }
      }
      calls.push({ id: `echo-${calls.length + 1}`, name: call[1]!, input, ...(invalid ? { invalid } : {}) });
    }
  }
  return calls;
}

/**
 * Hands `text` to `onText` word by word (a word with the space after it), `paceMs` apart, as a model
 * streams its reply (§13). Errors: an abort of `signal` (an AbortError) between two words.
 */
async function streamWords(text: string, onText: (text: string) => void, paceMs: number, signal: AbortSignal): Promise<void> {
  const words = text.match(/\S+\s*|\s+/g) ?? [];
  for (const [i, word] of words.entries()) {
    signal.throwIfAborted();
    if (i > 0 && paceMs > 0) await sleep(paceMs, undefined, { signal });
    onText(word);
  }
}

/**
 * The development provider (contract §8): replies `echo: <the message it answers>`, no network,
 * no model needed. It reports token usage as if one token were 4 characters (the instructions
 * and the conversation in, the reply out), so that usage and budgets can be tried without a vendor.
 *
 * With tools (contract §11) it acts by a script, so that delegation, approvals and remote tools
 * can be shown and tested without a vendor: in a turn's first step it calls the tools the message
 * asks for ({@link echoToolCalls}); once their results are in, it replies `echo: <the message>`
 * followed by one line per tool call and what came of it (an ask's answer quoted). A message that
 * asks for no tool gets the plain echo.
 *
 * Asked to stream (§13), it writes its reply word by word, `paceMs` milliseconds apart
 * (`ACS_ECHO_STREAM_MS`; default 0: every word at once, each still its own piece), so a reply can be
 * watched growing in a demo and a stream tested without a vendor.
 */
export function createEchoProvider(options: { paceMs?: number } = {}): ReplyProvider {
  const paceMs = options.paceMs ?? 0;
  return {
    async reply(request: ReplyRequest) {
      const text = `echo: ${request.answering}`;
      if (request.onText) await streamWords(text, request.onText, paceMs, request.signal);
      const input = tokensOf(request.instructions) + request.conversation.reduce((sum, turn) => sum + tokensOf(turn.content), 0);
      return { text, usage: { inputTokens: input, outputTokens: tokensOf(text) }, model: request.model ?? 'echo' };
    },
    step: (request) => echoStep(request, paceMs),
  };
}

/** The echo provider with no pace (every word of a streamed reply at once). */
export const echoProvider: ReplyProvider = createEchoProvider();

/** One step of echo's script (see {@link createEchoProvider}). */
async function echoStep(request: StepRequest, paceMs: number): Promise<StepReply> {
  const messages = request.messages as Array<{ role: string; content: unknown }>;
  const input = tokensOf(request.instructions) + messages.reduce((sum, m) => sum + tokensOf(typeof m.content === 'string' ? m.content : JSON.stringify(m.content)), 0);
  const model = request.model ?? 'echo';
  const results = messages.filter((m) => m.role === 'tool').flatMap((m) => (Array.isArray(m.content) ? m.content : []) as Array<{ type: string; toolCallId: string; toolName: string; output?: { type?: string; value?: unknown } }>);
  const calls = results.length === 0 ? echoToolCalls(request.answering) : [];
  if (calls.length > 0) {
    const assistant = [{ role: 'assistant', content: calls.map((c) => ({ type: 'tool-call', toolCallId: c.id, toolName: c.name, input: c.input })) }];
    return { text: '', toolCalls: calls, assistant, usage: { inputTokens: input, outputTokens: tokensOf(JSON.stringify(calls)) }, model };
  }
  const lines = [`echo: ${request.answering}`];
  const asked = new Map<string, string>();
  for (const m of messages) {
    if (m.role !== 'assistant' || !Array.isArray(m.content)) continue;
    for (const part of m.content as Array<{ type: string; toolCallId: string; input?: { peer?: string } }>) {
      if (part.type === 'tool-call' && typeof part.input?.peer === 'string') asked.set(part.toolCallId, part.input.peer);
    }
  }
  for (const result of results.filter((r) => r.type === 'tool-result')) {
    const who = asked.get(result.toolCallId);
    lines.push(who ? `${who} answered: ${shownResult(result.output)}` : `${result.toolName}: ${shownResult(result.output)}`);
  }
  const text = lines.join('\n');
  if (request.onText) await streamWords(text, request.onText, paceMs, request.signal);
  return { text, toolCalls: [], assistant: [{ role: 'assistant', content: [{ type: 'text', text }] }], usage: { inputTokens: input, outputTokens: tokensOf(text) }, model };
}
