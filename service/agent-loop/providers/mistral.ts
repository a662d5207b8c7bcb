import { createMistral } from '@ai-sdk/mistral';
import { aiSdkProvider } from './ai-sdk.ts';
import type { ReplyProvider } from './types.ts';

/** Mistral's chat completions API (api.mistral.ai), through the AI SDK's Mistral provider. */
export function createMistralProvider(): ReplyProvider {
  return aiSdkProvider('mistral', (apiKey, model) => createMistral({ apiKey })(model));
}
