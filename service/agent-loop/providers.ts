/** One turn of the conversation as a provider sees it: the agent's own turns are `assistant`. */
export interface Turn {
  role: 'user' | 'assistant';
  content: string;
}

/** What an agent asks its provider for: one reply to `answering`, in the context of `conversation`. */
export interface ReplyRequest {
  /** The organization's key for this provider (decrypted only for the call). */
  apiKey: string;
  model: string | null;
  /** The agent's instructions, used as the system prompt. */
  instructions: string;
  /** The thread, oldest first, ending with the message being answered. */
  conversation: Turn[];
  /** The peer message this reply answers. */
  answering: string;
}

/**
 * An LLM vendor as the agent loop uses it (contract §8). Implementations for `openai` and
 * `anthropic` plug in here; they must never put `apiKey` into an error message.
 */
export interface ReplyProvider {
  /** Returns the reply text. Errors: rejects on any failure; the loop retries with backoff. */
  reply(request: ReplyRequest): Promise<string>;
}

/** The development provider (contract §8): replies `echo: <the message it answers>`, no network. */
export const echoProvider: ReplyProvider = {
  async reply(request) {
    return `echo: ${request.answering}`;
  },
};

/** The providers this build can run, by provider name; agents of other providers stay idle. */
export function defaultProviders(): ReadonlyMap<string, ReplyProvider> {
  return new Map([['echo', echoProvider]]);
}
