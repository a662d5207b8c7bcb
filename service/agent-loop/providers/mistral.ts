import { createMistral } from '@ai-sdk/mistral';
import { replyWithModel, requireModel } from './ai-sdk.ts';
import type { ReplyProvider } from './types.ts';

/** Mistral's chat completions API (api.mistral.ai), through the AI SDK's Mistral provider. */
export function createMistralProvider(): ReplyProvider {
  return {
    async reply(request) {
      const model = requireModel(request, 'mistral');
      return replyWithModel(createMistral({ apiKey: request.apiKey })(model), request, model);
    },
  };
}
