/**
 * The one call every vendor adapter makes: the Vercel AI SDK's `generateText` on the adapter's
 * language model, with the agent's instructions as the system prompt and the thread as the
 * messages, and the SDK's failures turned into {@link ProviderFailure}s the loop acts on.
 */
import { APICallError, generateText, jsonSchema, tool, type LanguageModel, type ModelMessage } from 'ai';
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

/**
 * Asks `model` for one reply to `request` through the AI SDK (no retries inside: the loop decides
 * when to try again; aborted by `request.signal`). Output: the reply text, the tokens the
 * provider reported (0 where it reported none) and the model id it answered with (else
 * `requestedModel`). Errors: a {@link ProviderFailure}; an empty reply is `failed`, with what it
 * cost as `paid`.
 */
export async function replyWithModel(model: LanguageModel, request: ReplyRequest, requestedModel: string): Promise<ProviderReply> {
  let result;
  try {
    result = await generateText({
      model,
      ...(request.instructions.trim() === '' ? {} : { instructions: request.instructions }),
      messages: request.conversation.map((turn) => ({ role: turn.role, content: turn.content })),
      maxRetries: 0,
      abortSignal: request.signal,
    });
  } catch (error) {
    throw toProviderFailure(error, request.apiKey);
  }
  const usage = { inputTokens: result.usage.inputTokens ?? 0, outputTokens: result.usage.outputTokens ?? 0 };
  const answeredBy = result.response.modelId || requestedModel;
  // An empty answer cost tokens all the same: the loop records them (and counts them against the budget).
  if (result.text.trim() === '') throw new ProviderFailure('failed', 'the provider returned an empty reply', { paid: { usage, model: answeredBy } });
  return { text: result.text, usage, model: answeredBy };
}

/** An error's message, whatever was thrown. */
function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Asks `model` for one step of a turn (contract §11) through the AI SDK: the tools are given
 * without `execute` (the turn runs them itself, recording each call before its result is used), so
 * the SDK returns after one model call with the tool calls asked for. Their input is not checked
 * here (the turn checks it against each tool's schema and tells the model what is wrong); an
 * unknown tool or input that is not JSON comes back `invalid`. Output: {@link StepReply}, whose
 * `assistant` holds the SDK's assistant messages as they are (provider metadata included, which
 * some vendors need back in the next step). Errors: a {@link ProviderFailure}; an empty answer
 * (no text, no tool call) is `failed`, with what it cost as `paid`.
 */
export async function stepWithModel(model: LanguageModel, request: StepRequest, requestedModel: string): Promise<StepReply> {
  let result;
  try {
    result = await generateText({
      model,
      ...(request.instructions.trim() === '' ? {} : { instructions: request.instructions }),
      messages: request.messages as ModelMessage[],
      ...(request.tools.length > 0
        ? { tools: Object.fromEntries(request.tools.map((t) => [t.name, tool({ description: t.description, inputSchema: jsonSchema(t.inputSchema) })])) }
        : {}),
      maxRetries: 0,
      abortSignal: request.signal,
    });
  } catch (error) {
    throw toProviderFailure(error, request.apiKey);
  }
  const usage = { inputTokens: result.usage.inputTokens ?? 0, outputTokens: result.usage.outputTokens ?? 0 };
  const answeredBy = result.response.modelId || requestedModel;
  const toolCalls = result.toolCalls.map((call) => ({
    id: call.toolCallId,
    name: call.toolName,
    input: call.input,
    invalid: 'invalid' in call && call.invalid ? redactKey(errorText((call as { error?: unknown }).error), request.apiKey).slice(0, 500) : undefined,
  }));
  if (toolCalls.length === 0 && result.text.trim() === '') {
    throw new ProviderFailure('failed', 'the provider returned an empty reply', { paid: { usage, model: answeredBy } });
  }
  // Only the model's own messages: results of invalid calls the SDK may add are the turn's to give.
  const assistant = result.response.messages.filter((message) => message.role === 'assistant');
  return { text: result.text, toolCalls, assistant, usage, model: answeredBy };
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
