/**
 * Agents that can never answer: an agent with a `provider` answers through the organization's key
 * for that provider, and an organization without one leaves the agent silent (the service keeps its
 * messages waiting). The definition names the organization's keys (`organization.providerKeys`),
 * and `apply` deletes the keys it does not name, so a file can tell — before anything is sent —
 * which agents will wait for a key. `validate`, `plan` and `apply` warn about them.
 */
import type { Definition } from './schema.ts';

/** The agents of one provider that have no key for it. */
export interface AgentsWithoutKey {
  provider: string;
  /** `team/agent`, in file order. */
  agents: string[];
}

/**
 * The agents with a provider for which the organization will have no key, by provider in the
 * order they first appear. Input: the definition, and providers that keep a key whatever the file
 * says (a live key a `plan` leaves in place, e.g. one excluded with `--exclude`). Output: one entry
 * per provider without a key; empty when every agent can answer.
 */
export function agentsWithoutKey(definition: Definition, keptProviders: Iterable<string> = []): AgentsWithoutKey[] {
  const named = Object.entries(definition.organization.providerKeys ?? {}).filter(([, ref]) => ref !== undefined);
  const keyed = new Set([...named.map(([provider]) => provider), ...keptProviders]);
  const missing = new Map<string, string[]>();
  for (const team of definition.teams) {
    for (const agent of team.agents) {
      if (!agent.provider || keyed.has(agent.provider)) continue;
      const agents = missing.get(agent.provider) ?? [];
      agents.push(`${team.name}/${agent.name}`);
      missing.set(agent.provider, agents);
    }
  }
  return [...missing].map(([provider, agents]) => ({ provider, agents }));
}

/**
 * The warning about one provider's agents without a key: which agents, which key, how to set it.
 * `warning: no openai key in organization.providerKeys: agents intake/helper, … will not answer
 * (their messages wait for a key); add "openai: ${env:OPENAI_API_KEY}" under
 * organization.providerKeys, export OPENAI_API_KEY, and apply`.
 */
export function withoutKeyWarning(entry: AgentsWithoutKey): string {
  const variable = `${entry.provider.toUpperCase()}_API_KEY`;
  const who = `agent${entry.agents.length === 1 ? '' : 's'} ${entry.agents.join(', ')} will not answer`;
  return `warning: no ${entry.provider} key in organization.providerKeys: ${who} (their messages wait for a key); add "${entry.provider}: \${env:${variable}}" under organization.providerKeys, export ${variable}, and apply`;
}
