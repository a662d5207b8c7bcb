/**
 * `teamctl export`: a definition of a live organization such that `plan` on it finds nothing to
 * change — how a team that started by hand moves to code. Each resource's fields come back under
 * their definition keys by the one declaration of its fields (`fromWire`), leaving out what holds
 * its default (a paused agent keeps `status: paused`, an active one leaves `status` unmanaged).
 * Provider keys, which the service never returns, become `${env:NAME}` references to variables
 * the user fills in.
 */
import { AgentFields, HumanFields, OrganizationFields, TeamFields } from '../api/schemas.ts';
import type { Provider } from '../api/schemas.ts';
import { participantNames } from '../client/team-names.ts';
import type { ObservedState } from './types.ts';

/** A provider key as exported: the variable chosen for it and the hint of the live key. */
export interface ExportedProviderKey {
  provider: Provider;
  variable: string;
  /** The last characters of the live key (`key_hint`), so the user can tell which key to put there. */
  keyHint: string;
}

/** The variable an exported definition names for a provider's key: `OPENAI_PROVIDER_KEY`. */
export function providerKeyVariable(provider: Provider): string {
  return `${provider.toUpperCase()}_PROVIDER_KEY`;
}

/**
 * The definition (as plain data, in the file's layout) of an observed organization, and the
 * provider keys' variables it names. Input: the organization's observed state (it must exist).
 * Output: `{ definition, providerKeys }`; teams, agents and humans in the service's order, edges
 * as pairs of participant names. Raises nothing.
 */
export function exportDefinition(observed: ObservedState & { organization: NonNullable<ObservedState['organization']> }): {
  definition: Record<string, unknown>;
  providerKeys: ExportedProviderKey[];
} {
  const providerKeys = [...observed.providerKeys]
    .sort((a, b) => (a.provider < b.provider ? -1 : 1))
    .map((k) => ({ provider: k.provider, variable: providerKeyVariable(k.provider), keyHint: k.key_hint }));
  const organization = {
    ...OrganizationFields.fromWire(observed.organization),
    ...(providerKeys.length > 0 ? { providerKeys: Object.fromEntries(providerKeys.map((k) => [k.provider, `\${env:${k.variable}}`])) } : {}),
  };
  const teams = observed.teams.map(({ team, agents, humans, edges }) => {
    const names = participantNames({ agents, humans });
    return {
      ...TeamFields.fromWire(team),
      ...(agents.length > 0 ? { agents: agents.map((a) => AgentFields.fromWire(a)) } : {}),
      ...(humans.length > 0 ? { humans: humans.map((h) => HumanFields.fromWire(h)) } : {}),
      ...(edges.length > 0 ? { edges: edges.map((e) => e.participants.map((id) => names.get(id) ?? id)) } : {}),
    };
  });
  return { definition: { apiVersion: 'teamctl/v1', organization, teams }, providerKeys };
}
