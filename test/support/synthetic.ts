/**
 * Synthetic definitions of any size, for tests and benchmarks of apply: `teams` teams, each with
 * `agents` agents (no provider), `humans` humans and `edges` edges between distinct pairs of its
 * participants, in a fixed order.
 */
import { loadDefinitionFile } from '../../definitions/load.ts';
import { desiredState } from '../../plan/desired.ts';
import type { ResourceDefinition } from '../../plan/desired.ts';
import type { DesiredState } from '../../plan/types.ts';

/** Size of a synthetic definition. */
export interface SyntheticSize {
  teams: number;
  agents: number;
  humans?: number;
  edges: number;
}

/** Resources an apply of a fresh organization creates for `size` (organization included). */
export function resourceCount(size: SyntheticSize, providerKeys = 0): number {
  return 1 + providerKeys + size.teams * (1 + size.agents + (size.humans ?? 0) + size.edges);
}

/** The definition (organization and teams) of organization `orgName` with teams of `size`. Throws when `edges` exceeds the pairs available. */
export function syntheticResources(orgName: string, size: SyntheticSize): ResourceDefinition {
  const teams = [];
  for (let t = 0; t < size.teams; t++) {
    const agents = Array.from({ length: size.agents }, (_, i) => ({ name: `agent-${i}`, description: `agent ${i} of team ${t}` }));
    const humans = Array.from({ length: size.humans ?? 0 }, (_, i) => ({ name: `human-${i}`, email: `human-${i}@team-${t}.example` }));
    const names = [...agents.map((a) => a.name), ...humans.map((h) => h.name)];
    const edges: Array<[string, string]> = [];
    for (let i = 0; i < names.length && edges.length < size.edges; i++) {
      for (let j = i + 1; j < names.length && edges.length < size.edges; j++) edges.push([names[i]!, names[j]!]);
    }
    if (edges.length < size.edges) throw new Error(`team of ${names.length} participants has fewer than ${size.edges} pairs`);
    teams.push({ name: `team-${String(t).padStart(3, '0')}`, description: `synthetic team ${t}`, agents, humans, edges });
  }
  return { organization: { name: orgName }, teams };
}

/** The desired state of {@link syntheticResources}. */
export function syntheticDefinition(orgName: string, size: SyntheticSize): DesiredState {
  return desiredState(syntheticResources(orgName, size));
}

/** `desired` under another organization name (each test applies to an organization of its own). */
export function withOrganizationName(desired: DesiredState, name: string): DesiredState {
  return { ...desired, organization: { ...desired.organization, name, fields: { ...desired.organization.fields, org_name: name } } };
}

/** The desired state of a definition file (its organization and teams). */
export async function desiredFromFile(path: string | URL): Promise<DesiredState> {
  return desiredState(await loadDefinitionFile(path instanceof URL ? path.pathname : path));
}
