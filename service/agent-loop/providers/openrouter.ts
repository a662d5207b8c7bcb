import { createOpenRouter } from '@openrouter/ai-sdk-provider';
import { replyWithModel, requireModel } from './ai-sdk.ts';
import type { ReplyProvider } from './types.ts';

/**
 * OpenRouter's chat completions API (openrouter.ai/api/v1), through OpenRouter's own AI SDK
 * provider; models are named as OpenRouter names them (`anthropic/claude-sonnet-4`).
 */
export function createOpenRouterProvider(): ReplyProvider {
  return {
    async reply(request) {
      const model = requireModel(request, 'openrouter');
      return replyWithModel(createOpenRouter({ apiKey: request.apiKey }).chat(model), request, model);
    },
  };
}
