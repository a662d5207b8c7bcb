import type { ReplyProvider, ReplyRequest } from './types.ts';

/** Echo's stand-in for a tokenizer: one token per 4 characters, rounded up. */
function tokensOf(text: string): number {
  return Math.ceil(text.length / 4);
}

/**
 * The development provider (contract §8): replies `echo: <the message it answers>`, no network,
 * no model needed. It reports token usage as if one token were 4 characters (the instructions
 * and the conversation in, the reply out), so that usage and budgets can be tried without a vendor.
 */
export const echoProvider: ReplyProvider = {
  async reply(request: ReplyRequest) {
    const text = `echo: ${request.answering}`;
    const input = tokensOf(request.instructions) + request.conversation.reduce((sum, turn) => sum + tokensOf(turn.content), 0);
    return { text, usage: { inputTokens: input, outputTokens: tokensOf(text) }, model: request.model ?? 'echo' };
  },
};
