/** The providers acs-server runs, by name (contract §5 lists them; §8 says how each is reached). */
import { Providers, type Provider } from '../../../api/schemas.ts';
import { createEchoProvider } from './echo.ts';
import { ProviderFailure, type ReplyProvider } from './types.ts';

/**
 * A provider whose adapter module (and the vendor SDK under it) is loaded at its first call, not
 * when the server starts: the Vercel AI SDK and its vendor packages stay resident once loaded, and
 * a server whose agents are all `echo` or external never needs them (docs/performance.md has the
 * figures of the three deferred loads together). A failed load is not kept, so the
 * next call tries again. Input: how to load the adapter. Output: the provider.
 */
function lazyProvider(load: () => Promise<ReplyProvider>): ReplyProvider {
  let loading: Promise<ReplyProvider> | undefined;
  const loaded = () =>
    (loading ??= load().catch((error: unknown) => {
      loading = undefined;
      throw error;
    }));
  return {
    async reply(request) {
      return (await loaded()).reply(request);
    },
    async step(request) {
      const provider = await loaded();
      if (!provider.step) throw new ProviderFailure('failed', 'this provider cannot call tools');
      return provider.step(request);
    },
  };
}

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
 * The echo provider's pace of streaming, from `ACS_ECHO_STREAM_MS` (milliseconds between two words,
 * 0–10,000; default 0). Errors: throws naming the variable for anything else.
 */
export function echoPaceMs(value: string | undefined): number {
  if (value === undefined || value.trim() === '') return 0;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 10_000) throw new Error(`ACS_ECHO_STREAM_MS: must be an integer of milliseconds from 0 to 10000, got "${value}"`);
  return n;
}

/**
 * The providers of this build, configured from the service's environment: `OPENAI_BASE_URL`
 * (default https://api.openai.com/v1) and `ANTHROPIC_BASE_URL` (an origin, default
 * https://api.anthropic.com), as contract §8 spells them; `ACS_AGENT_PROVIDERS` limits which run
 * (agents of the others stay idle); `ACS_ECHO_STREAM_MS` paces echo's streamed replies. Never reads
 * a provider key from the environment: calls use the organization's stored key. Errors: throws for
 * an unknown name in `ACS_AGENT_PROVIDERS` or a malformed `ACS_ECHO_STREAM_MS`.
 */
export function defaultProviders(env: NodeJS.ProcessEnv = process.env): ReadonlyMap<string, ReplyProvider> {
  const openAiBase = env.OPENAI_BASE_URL;
  const anthropicBase = env.ANTHROPIC_BASE_URL;
  const all: Record<Provider, () => ReplyProvider> = {
    echo: () => createEchoProvider({ paceMs: echoPaceMs(env.ACS_ECHO_STREAM_MS) }),
    openai: () => lazyProvider(async () => (await import('./openai.ts')).createOpenAiProvider({ baseUrl: openAiBase })),
    anthropic: () => lazyProvider(async () => (await import('./anthropic.ts')).createAnthropicProvider({ baseUrl: anthropicBase })),
    google: () => lazyProvider(async () => (await import('./google.ts')).createGoogleProvider()),
    mistral: () => lazyProvider(async () => (await import('./mistral.ts')).createMistralProvider()),
    groq: () => lazyProvider(async () => (await import('./groq.ts')).createGroqProvider()),
    openrouter: () => lazyProvider(async () => (await import('./openrouter.ts')).createOpenRouterProvider()),
  };
  return new Map(enabledProviders(env.ACS_AGENT_PROVIDERS).map((name) => [name, all[name]()]));
}
