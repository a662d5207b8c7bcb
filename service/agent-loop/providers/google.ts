import { createGoogleGenerativeAI } from '@ai-sdk/google';
import { replyWithModel, requireModel } from './ai-sdk.ts';
import type { ReplyProvider } from './types.ts';

/**
 * Google's Gemini API (`generateContent` on generativelanguage.googleapis.com, key in
 * `x-goog-api-key`), through the AI SDK's Google provider.
 */
export function createGoogleProvider(): ReplyProvider {
  return {
    async reply(request) {
      const model = requireModel(request, 'google');
      return replyWithModel(createGoogleGenerativeAI({ apiKey: request.apiKey })(model), request, model);
    },
  };
}
