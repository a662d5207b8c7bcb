import { createOpenRouter } from '@openrouter/ai-sdk-provider';
import { aiSdkProvider } from './ai-sdk.ts';
import type { ReplyProvider } from './types.ts';

/**
 * OpenRouter's chat completions API (openrouter.ai/api/v1), through OpenRouter's own AI SDK
 * provider; models are named as OpenRouter names them (`anthropic/claude-sonnet-4`).
 */
export function createOpenRouterProvider(): ReplyProvider {
  return aiSdkProvider('openrouter', (apiKey, model) => createOpenRouter({ apiKey }).chat(model));
}
