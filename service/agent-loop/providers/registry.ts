/** The providers acs-server runs, by name (contract §5 lists them; §8 says how each is reached). */
import { Providers, type Provider } from '../../../api/schemas.ts';
import { createAnthropicProvider } from './anthropic.ts';
import { echoProvider } from './echo.ts';
import { createGoogleProvider } from './google.ts';
import { createGroqProvider } from './groq.ts';
import { createMistralProvider } from './mistral.ts';
import { createOpenAiProvider } from './openai.ts';
import { createOpenRouterProvider } from './openrouter.ts';
import type { ReplyProvider } from './types.ts';

/**
 * Which providers the loop may call, from `ACS_AGENT_PROVIDERS` (comma-separated names; `none`
 * for no provider at all). Unset: every provider. Errors: throws naming an unknown provider.
 */
export function enabledProviders(value: string | undefined): Provider[] {
  if (value === undefined || value.trim() === '') return [...Providers];
  const names = value.split(',').map((name) => name.trim()).filter((name) => name !== '');
  if (names.length === 1 && names[0] === 'none') return [];
  for (const name of names) {
    if (!(Providers as readonly string[]).includes(name)) {
      throw new Error(`ACS_AGENT_PROVIDERS: unknown provider "${name}" (known: ${Providers.join(', ')}, or none)`);
    }
  }
  return names as Provider[];
}

/**
 * The providers of this build, configured from the service's environment: `OPENAI_BASE_URL`
 * (default https://api.openai.com/v1) and `ANTHROPIC_BASE_URL` (an origin, default
 * https://api.anthropic.com), as contract §8 spells them; `ACS_AGENT_PROVIDERS` limits which run
 * (agents of the others stay idle). Never reads a provider key from the environment: calls use
 * the organization's stored key. Errors: throws for an unknown name in `ACS_AGENT_PROVIDERS`.
 */
export function defaultProviders(env: NodeJS.ProcessEnv = process.env): ReadonlyMap<string, ReplyProvider> {
  const all: Record<Provider, () => ReplyProvider> = {
    echo: () => echoProvider,
    openai: () => createOpenAiProvider({ baseUrl: env.OPENAI_BASE_URL }),
    anthropic: () => createAnthropicProvider({ baseUrl: env.ANTHROPIC_BASE_URL }),
    google: createGoogleProvider,
    mistral: createMistralProvider,
    groq: createGroqProvider,
    openrouter: createOpenRouterProvider,
  };
  return new Map(enabledProviders(env.ACS_AGENT_PROVIDERS).map((name) => [name, all[name]()]));
}
