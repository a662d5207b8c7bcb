import { createGroq } from '@ai-sdk/groq';
import { replyWithModel, requireModel } from './ai-sdk.ts';
import type { ReplyProvider } from './types.ts';

/** Groq's OpenAI-style chat completions API (api.groq.com/openai/v1), through the AI SDK's Groq provider. */
export function createGroqProvider(): ReplyProvider {
  return {
    async reply(request) {
      const model = requireModel(request, 'groq');
      return replyWithModel(createGroq({ apiKey: request.apiKey })(model), request, model);
    },
  };
}
