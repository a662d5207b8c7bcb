import { createAnthropic } from '@ai-sdk/anthropic';
import { aiSdkProvider } from './ai-sdk.ts';
import type { ReplyProvider } from './types.ts';

/** The default of `ANTHROPIC_BASE_URL` (contract §8): an origin, as Anthropic's official SDK reads it. */
export const DEFAULT_ANTHROPIC_BASE_URL = 'https://api.anthropic.com';

/**
 * Anthropic's Messages API: `POST {origin}/v1/messages` with `x-api-key: <key>` (contract §8).
 * The origin is `ANTHROPIC_BASE_URL` of the service's environment, default
 * {@link DEFAULT_ANTHROPIC_BASE_URL}. The AI SDK's own base URL includes the `/v1` (and its own
 * reading of that variable would leave it out), so the adapter appends it and passes it explicitly.
 */
export function createAnthropicProvider(settings: { baseUrl?: string | undefined } = {}): ReplyProvider {
  const origin = (settings.baseUrl || DEFAULT_ANTHROPIC_BASE_URL).replace(/\/+$/, '');
  return aiSdkProvider('anthropic', (apiKey, model) => createAnthropic({ apiKey, baseURL: `${origin}/v1` })(model));
}
