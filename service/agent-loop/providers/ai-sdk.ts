/**
 * The one call every vendor adapter makes: the Vercel AI SDK's `generateText` on the adapter's
 * language model, with the agent's instructions as the system prompt and the thread as the
 * messages, and the SDK's failures turned into {@link ProviderFailure}s the loop acts on.
 */
import { APICallError, generateText, jsonSchema, streamText, tool, type LanguageModel, type ModelMessage } from 'ai';
import { redactKey } from './redact-key.ts';
import { ProviderFailure, type ProviderReply, type ReplyProvider, type ReplyRequest, type StepReply, type StepRequest } from './types.ts';

// The SDK prints its warnings (an unsupported setting, say) on the console; the service logs JSON
// only, and nothing in a warning is for an operator to act on.
(globalThis as { AI_SDK_LOG_WARNINGS?: unknown }).AI_SDK_LOG_WARNINGS = false;

/**
 * How long a provider asked to wait, in milliseconds, from `retry-after-ms` (OpenAI) or
 * `Retry-After` (RFC 9110: seconds or an HTTP date); undefined when neither says.
 */
export function retryAfterMs(headers: Record<string, string> | undefined, now = Date.now()): number | undefined {
  if (!headers) return undefined;
  const lower = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
  const ms = Number.parseFloat(lower['retry-after-ms'] ?? '');
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const value = lower['retry-after'];
  if (value === undefined) return undefined;
  const seconds = Number(value.trim());
  if (value.trim() !== '' && Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/**
 * Classifies a failed SDK call: HTTP 429 → `rate_limited` (with the wait the provider asked
 * for), 401/403 → `key_refused`, anything else → `failed`. The message names the status and the
 * vendor's short explanation, never the key or the request body.
 */
export function toProviderFailure(error: unknown, apiKey: string): ProviderFailure {
  if (error instanceof ProviderFailure) return error;
  if (APICallError.isInstance(error)) {
    const status = error.statusCode;
    const message = redactKey(`HTTP ${status ?? '(no status)'}: ${error.message}`, apiKey).slice(0, 500);
    if (status === 429) return new ProviderFailure('rate_limited', message, { status, retryAfterMs: retryAfterMs(error.responseHeaders) });
    if (status === 401 || status === 403) return new ProviderFailure('key_refused', message, { status });
    return new ProviderFailure('failed', message, { status });
  }
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return new ProviderFailure('failed', redactKey(text, apiKey).slice(0, 500));
}

/** What one model call is asked: the system prompt, the messages, the tools (none for a plain reply). */
interface ModelCall {
  instructions: string;
  messages: ModelMessage[];
  tools: StepRequest['tools'];
  apiKey: string;
  signal: AbortSignal;
  onText?: ((text: string) => void) | undefined;
}

/** What one model call gave, as both the reply and the step need it. */
interface ModelAnswer {
  text: string;
  toolCalls: StepReply['toolCalls'];
  assistant: unknown[];
  usage: ProviderReply['usage'];
  modelId: string;
}

/**
 * One call of `model` through the AI SDK, with no retries inside (the loop decides when to try
 * again) and aborted by `call.signal`. With `onText` the answer is streamed (`streamText`) and each
 * piece of its text handed to `onText` as it comes (§13: replies as they are written); without,
 * it is asked whole (`generateText`). Tools are given without `execute`: the SDK returns after one
 * model call with the calls asked for, unchecked (the turn checks them); an unknown tool or input
 * that is not JSON comes back `invalid`. Errors: a {@link ProviderFailure}.
 */
async function callModel(model: LanguageModel, call: ModelCall): Promise<ModelAnswer> {
  const settings = {
    model,
    ...(call.instructions.trim() === '' ? {} : { instructions: call.instructions }),
    messages: call.messages,
    ...(call.tools.length > 0
      ? { tools: Object.fromEntries(call.tools.map((t) => [t.name, tool({ description: t.description, inputSchema: jsonSchema(t.inputSchema) })])) }
      : {}),
    maxRetries: 0,
    abortSignal: call.signal,
  };
  try {
    if (!call.onText) {
      const result = await generateText(settings);
      return answerOf(result.text, result.toolCalls, result.response, result.usage, call.apiKey);
    }
    let failure: unknown;
    const result = streamText({ ...settings, onError: () => {} });
    // Read below only after the stream ended well; a failed stream rejects them unread.
    for (const settled of [result.text, result.toolCalls, result.response, result.usage, result.finishReason, result.rawFinishReason]) Promise.resolve(settled).catch(() => {});
    for await (const part of result.fullStream) {
      if (part.type === 'text-delta') call.onText(part.text);
      else if (part.type === 'error') failure ??= part.error;
    }
    if (failure !== undefined) throw failure;
    call.signal.throwIfAborted();
    // A stream that a proxy or the vendor closed before its finish event ends without an error: the
    // SDK says `interrupted` (or `other`, with no reason of the vendor's). Its text is half a reply,
    // which must not be posted as the whole: it is a failure, tried again (§13: the stream then
    // says the reply restarted).
    const [finish, rawFinish] = await Promise.all([result.finishReason, result.rawFinishReason]);
    if (finish === 'interrupted' || (finish === 'other' && rawFinish === undefined)) {
      throw new ProviderFailure('failed', 'the provider\'s stream ended before the reply was finished');
    }
    const [text, toolCalls, response, usage] = await Promise.all([result.text, result.toolCalls, result.response, result.usage]);
    return answerOf(text, toolCalls, response, usage, call.apiKey);
  } catch (error) {
    throw toProviderFailure(error, call.apiKey);
  }
}

/** The parts of an SDK result the loop keeps, in its own shapes. */
function answerOf(
  text: string,
  calls: ReadonlyArray<{ toolCallId: string; toolName: string; input: unknown }>,
  response: { modelId: string; messages: ReadonlyArray<{ role: string }> },
  usage: { inputTokens: number | undefined; outputTokens: number | undefined },
  apiKey: string,
): ModelAnswer {
  return {
    text,
    toolCalls: calls.map((c) => ({
      id: c.toolCallId,
      name: c.toolName,
      input: c.input,
      invalid: 'invalid' in c && c.invalid ? redactKey(errorText((c as { error?: unknown }).error), apiKey).slice(0, 500) : undefined,
    })),
    // Only the model's own messages: results of invalid calls the SDK may add are the turn's to give.
    assistant: response.messages.filter((message) => message.role === 'assistant'),
    usage: { inputTokens: usage.inputTokens ?? 0, outputTokens: usage.outputTokens ?? 0 },
    modelId: response.modelId,
  };
}

/**
 * Asks `model` for one reply to `request` through the AI SDK (no retries inside: the loop decides
 * when to try again; aborted by `request.signal`), streamed to `request.onText` when given.
 * Output: the reply text, the tokens the provider reported (0 where it reported none) and the
 * model id it answered with (else `requestedModel`). Errors: a {@link ProviderFailure}; an empty
 * reply is `failed`, with what it cost as `paid`.
 */
export async function replyWithModel(model: LanguageModel, request: ReplyRequest, requestedModel: string): Promise<ProviderReply> {
  const answer = await callModel(model, {
    instructions: request.instructions,
    messages: request.conversation.map((turn) => ({ role: turn.role, content: turn.content })),
    tools: [],
    apiKey: request.apiKey,
    signal: request.signal,
    onText: request.onText,
  });
  const answeredBy = answer.modelId || requestedModel;
  // An empty answer cost tokens all the same: the loop records them (and counts them against the budget).
  if (answer.text.trim() === '') throw new ProviderFailure('failed', 'the provider returned an empty reply', { paid: { usage: answer.usage, model: answeredBy } });
  return { text: answer.text, usage: answer.usage, model: answeredBy };
}

/** An error's message, whatever was thrown. */
function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Asks `model` for one step of a turn (contract §11) through the AI SDK, streamed to
 * `request.onText` when given: the tools are given without `execute` (the turn runs them itself,
 * recording each call before its result is used), so the SDK returns after one model call with
 * the tool calls asked for. Their input is not checked here (the turn checks it against each
 * tool's schema and tells the model what is wrong); an unknown tool or input that is not JSON
 * comes back `invalid`. Output: {@link StepReply}, whose `assistant` holds the SDK's assistant
 * messages as they are (provider metadata included, which some vendors need back in the next
 * step). Errors: a {@link ProviderFailure}; an empty answer (no text, no tool call) is `failed`,
 * with what it cost as `paid`.
 */
export async function stepWithModel(model: LanguageModel, request: StepRequest, requestedModel: string): Promise<StepReply> {
  const answer = await callModel(model, {
    instructions: request.instructions,
    messages: request.messages as ModelMessage[],
    tools: request.tools,
    apiKey: request.apiKey,
    signal: request.signal,
    onText: request.onText,
  });
  const answeredBy = answer.modelId || requestedModel;
  if (answer.toolCalls.length === 0 && answer.text.trim() === '') {
    throw new ProviderFailure('failed', 'the provider returned an empty reply', { paid: { usage: answer.usage, model: answeredBy } });
  }
  return { text: answer.text, toolCalls: answer.toolCalls, assistant: answer.assistant, usage: answer.usage, model: answeredBy };
}

/** The agent's model, which the service requires for every provider but echo. Errors: `failed` when missing. */
export function requireModel(request: { model: string | null }, provider: string): string {
  if (!request.model) throw new ProviderFailure('failed', `the agent has no model (required for ${provider})`);
  return request.model;
}

/**
 * A vendor's provider over the AI SDK: one reply (§8) and one step with tools (§11), with the
 * model that `languageModel` makes for the organization's key. Input: the provider's name (for
 * errors) and the model factory. Output: the {@link ReplyProvider}.
 */
export function aiSdkProvider(name: string, languageModel: (apiKey: string, model: string) => LanguageModel): ReplyProvider {
  return {
    async reply(request) {
      const model = requireModel(request, name);
      return replyWithModel(languageModel(request.apiKey, model), request, model);
    },
    async step(request) {
      const model = requireModel(request, name);
      return stepWithModel(languageModel(request.apiKey, model), request, model);
    },
  };
}
