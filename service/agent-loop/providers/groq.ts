import { createGroq } from '@ai-sdk/groq';
import { aiSdkProvider } from './ai-sdk.ts';
import type { ReplyProvider } from './types.ts';

/** Groq's OpenAI-style chat completions API (api.groq.com/openai/v1), through the AI SDK's Groq provider. */
export function createGroqProvider(): ReplyProvider {
  return aiSdkProvider('groq', (apiKey, model) => createGroq({ apiKey })(model));
}
