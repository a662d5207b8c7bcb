/** What the agent loop asks of an LLM provider, and how a provider call can fail (contract §8). */

/** One turn of the conversation as the agent sees it: its own messages are `assistant`, its peer's `user`. */
export interface Turn {
  role: 'user' | 'assistant';
  content: string;
}

/** What an agent asks its provider for: one reply to `answering`, in the context of `conversation`. */
export interface ReplyRequest {
  /** The organization's stored key for this provider, decrypted only for the call. */
  apiKey: string;
  /** The agent's model; null only for `echo` (the service refuses other agents without one). */
  model: string | null;
  /** The agent's instructions: the system prompt ("" = none). */
  instructions: string;
  /** The thread, oldest first (its latest messages), ending with the message being answered. */
  conversation: Turn[];
  /** The peer message this reply answers. */
  answering: string;
  /** Aborts the call: its timeout, or the service shutting down. */
  signal: AbortSignal;
  /**
   * When given, the reply is streamed: each piece of its text is handed here as the model writes
   * it (§13), before the whole reply is returned. Providers that cannot stream ignore it.
   */
  onText?: ((text: string) => void) | undefined;
}

/** Tokens one reply cost, as the provider reported them (0 when it reported none). */
export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
}

/** A provider's answer: the reply text, its token usage and the model that produced it. */
export interface ProviderReply {
  text: string;
  usage: TokenUsage;
  /** The model id the provider answered with (its own spelling, e.g. a dated version), else the requested one. */
  model: string;
}

/** A tool a model may call in a step (contract §11): its name as the model sees it, what it does, and its input's JSON Schema. */
export interface StepTool {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

/** One tool call a model asked for. `invalid` says why it cannot run as asked (an unknown tool, input that is not JSON). */
export interface ModelToolCall {
  /** The model's id of the call, which its result must name. */
  id: string;
  name: string;
  input: unknown;
  invalid?: string | undefined;
}

/**
 * One step of a turn (contract §11): the model is asked, with the tools it may call, to go on from
 * `messages` (the thread as the agent sees it, then the turn's earlier steps and their tool
 * results, as the Vercel AI SDK's `ModelMessage`s in JSON).
 */
export interface StepRequest {
  apiKey: string;
  model: string | null;
  instructions: string;
  /** `ModelMessage`s of the AI SDK (JSON, as stored between steps). */
  messages: unknown[];
  tools: StepTool[];
  /** The peer message the turn answers (echo answers from it). */
  answering: string;
  signal: AbortSignal;
  /** As {@link ReplyRequest.onText}: the step's text as it is written. */
  onText?: ((text: string) => void) | undefined;
}

/** A step's answer: text (the reply, when there is no tool call), tool calls, and the model's messages to keep for the next step. */
export interface StepReply {
  text: string;
  toolCalls: ModelToolCall[];
  /** The assistant messages of this step (AI SDK `ModelMessage`s in JSON), stored with the turn. */
  assistant: unknown[];
  usage: TokenUsage;
  model: string;
}

/**
 * An LLM vendor as the agent loop uses it: one reply (§8), and one step of a turn with tools
 * (§11; every built-in provider has it). Implementations must never put `apiKey` into an error
 * message. Errors: rejects with a {@link ProviderFailure} (or any error, treated as `failed`).
 */
export interface ReplyProvider {
  reply(request: ReplyRequest): Promise<ProviderReply>;
  step?(request: StepRequest): Promise<StepReply>;
}

/** Why a provider call failed, as far as the loop acts on it. */
export const ProviderFailureKinds = {
  /** 429: wait as the provider says (`Retry-After`), then try again. */
  rate_limited: 'rate_limited',
  /** 401/403: the organization's key is refused; stop until the key changes. */
  key_refused: 'key_refused',
  /** Anything else (5xx, network, timeout, a malformed answer): back off and try again. */
  failed: 'failed',
} as const;
export type ProviderFailureKind = (typeof ProviderFailureKinds)[keyof typeof ProviderFailureKinds];

/** A failed provider call, classified; the message never holds the key. */
export class ProviderFailure extends Error {
  readonly kind: ProviderFailureKind;
  /** The vendor's HTTP status, when it answered. */
  readonly status: number | undefined;
  /** For `rate_limited`: how long the provider asked to wait, in milliseconds, when it said. */
  readonly retryAfterMs: number | undefined;
  /**
   * What the call cost when the provider answered and was paid but the answer is unusable (an
   * empty reply), and the model that answered: recorded as usage like a reply's.
   */
  readonly paid: { usage: TokenUsage; model: string } | undefined;

  constructor(
    kind: ProviderFailureKind,
    message: string,
    options: { status?: number | undefined; retryAfterMs?: number | undefined; paid?: { usage: TokenUsage; model: string } | undefined } = {},
  ) {
    super(message);
    this.name = 'ProviderFailure';
    this.kind = kind;
    this.status = options.status;
    this.retryAfterMs = options.retryAfterMs;
    this.paid = options.paid;
  }
}
