/**
 * Synthetic definitions of any size, for tests and benchmarks of apply: `teams` teams, each with
 * `agents` agents (no provider), `humans` humans and `edges` edges between distinct pairs of its
 * participants, in a fixed order.
 */
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

/** The desired state of organization `orgName` with teams of `size`. Throws when `edges` exceeds the pairs available. */
export function syntheticDefinition(orgName: string, size: SyntheticSize): DesiredState {
  const teams = [];
  for (let t = 0; t < size.teams; t++) {
    const agents = Array.from({ length: size.agents }, (_, i) => ({ name: `agent-${i}`, description: `agent ${i} of team ${t}` }));
    const humans = Array.from({ length: size.humans ?? 0 }, (_, i) => ({ name: `human-${i}`, email: `human-${i}@team-${t}.example` }));
    const names = [...agents.map((a) => a.name), ...humans.map((h) => h.name)];
    const edges: Array<readonly [string, string]> = [];
    for (let i = 0; i < names.length && edges.length < size.edges; i++) {
      for (let j = i + 1; j < names.length && edges.length < size.edges; j++) edges.push([names[i]!, names[j]!] as const);
    }
    if (edges.length < size.edges) throw new Error(`team of ${names.length} participants has fewer than ${size.edges} pairs`);
    teams.push({ name: `team-${String(t).padStart(3, '0')}`, description: `synthetic team ${t}`, agents, humans, edges });
  }
  return { organization: { name: orgName }, teams };
}
