import { createGoogleGenerativeAI } from '@ai-sdk/google';
import { aiSdkProvider } from './ai-sdk.ts';
import type { ReplyProvider } from './types.ts';

/**
 * Google's Gemini API (`generateContent` on generativelanguage.googleapis.com, key in
 * `x-goog-api-key`), through the AI SDK's Google provider.
 */
export function createGoogleProvider(): ReplyProvider {
  return aiSdkProvider('google', (apiKey, model) => createGoogleGenerativeAI({ apiKey })(model));
}
