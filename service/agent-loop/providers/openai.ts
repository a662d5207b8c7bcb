import { createOpenAI } from '@ai-sdk/openai';
import { aiSdkProvider } from './ai-sdk.ts';
import type { ReplyProvider } from './types.ts';

/** The default of `OPENAI_BASE_URL` (contract §8): OpenAI's API, as its official SDK reads it. */
export const DEFAULT_OPENAI_BASE_URL = 'https://api.openai.com/v1';

/**
 * OpenAI and every OpenAI-compatible server (vLLM, Ollama, LiteLLM…): Chat Completions,
 * `POST {baseUrl}/chat/completions` with `Authorization: Bearer <key>` (contract §8). The base
 * is `OPENAI_BASE_URL` of the service's environment, default {@link DEFAULT_OPENAI_BASE_URL};
 * the key is always the organization's stored one.
 */
export function createOpenAiProvider(settings: { baseUrl?: string | undefined } = {}): ReplyProvider {
  const baseURL = (settings.baseUrl || DEFAULT_OPENAI_BASE_URL).replace(/\/+$/, '');
  return aiSdkProvider('openai', (apiKey, model) => createOpenAI({ apiKey, baseURL }).chat(model));
}
