/**
 * Deletion protection as a plan sees it: which protected resources (contract §4
 * `deletion_protection`) a delete would remove — the resource itself and, for a team or the
 * organization, what it takes along. The service refuses such a delete with 409
 * `deletion_protected` whoever asks; the plan refuses it first, naming each, so that nothing of
 * the plan is applied. Pure: the workflow's orchestration checks again over the state it reads.
 */
import type { ProtectedResource } from '../api/schemas.ts';
import type { DeleteChange, ObservedState, ObservedTeam } from './types.ts';

/** The protected agents and humans of a team's graph, and the team itself when it is. */
function protectedInTeam(team: ObservedTeam): ProtectedResource[] {
  return [
    ...(team.team.deletion_protection ? [{ kind: 'team' as const, id: team.team.team_id, name: team.team.team_name }] : []),
    ...team.agents.filter((a) => a.deletion_protection).map((a) => ({ kind: 'agent' as const, id: a.agent_id, name: a.name })),
    ...team.humans.filter((h) => h.deletion_protection).map((h) => ({ kind: 'human' as const, id: h.human_id, name: h.name })),
  ];
}

/**
 * The protected resources `change` would delete, the resource itself first; empty when none is.
 * Input: a delete of the plan and the live state it was planned from. Raises nothing.
 */
export function protectedBy(change: DeleteChange, observed: ObservedState): ProtectedResource[] {
  switch (change.kind) {
    case 'organization': {
      const org = observed.organization;
      const own = org?.deletion_protection ? [{ kind: 'organization' as const, id: org.org_id, name: org.org_name }] : [];
      return [...own, ...observed.teams.flatMap(protectedInTeam)];
    }
    case 'team': {
      const team = observed.teams.find((t) => t.team.team_id === change.id);
      return team ? protectedInTeam(team) : [];
    }
    case 'agent':
    case 'human': {
      const all = observed.teams.flatMap(protectedInTeam);
      return all.filter((p) => p.id === change.id);
    }
    default:
      return [];
  }
}

/** The deletes of `changes` that would remove something protected, each with what. */
export function protectedDeletes(changes: readonly DeleteChange[], observed: ObservedState): Array<{ change: DeleteChange; protected: ProtectedResource[] }> {
  return changes.flatMap((change) => {
    const found = protectedBy(change, observed);
    return found.length > 0 ? [{ change, protected: found }] : [];
  });
}

/** A protected resource as messages name it: `agent x`, `team intake`, with where the file names it when known. */
export type ProtectedLabel = (resource: ProtectedResource) => string;

/**
 * The message of a plan refused for deletion protection (code `deletion_protected`): each delete
 * and the protected resources it would remove, labelled by `label` (the CLI adds file positions),
 * and what to do. Output: one line.
 */
export function protectionMessage(refused: ReadonlyArray<{ change: DeleteChange; protected: ProtectedResource[] }>, label: ProtectedLabel = (p) => `${p.kind} ${p.name}`): string {
  const parts = refused.map(({ change, protected: found }) => `${change.address} (protected: ${found.map(label).join('; ')})`);
  return `the plan deletes protected resources: ${parts.join(', ')}; nothing was changed. To delete one, set protect: false on it (or clear its deletion_protection), apply, then remove it`;
}
