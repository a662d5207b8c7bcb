/**
 * The plan of `teamctl destroy`: deletes only. Pure, like `plan.ts`: the workflow makes it again
 * from the live state it reads.
 *
 * Without `--target`/`--exclude`, the organization's delete, which takes everything along (its
 * teams with their graphs and threads, its keys and provider keys). With them, the plan of a
 * definition from which the selected resources were taken out (a team with its graph, a
 * participant with its edges, an edge, a provider key, a webhook), its deletes only, selected as `apply`
 * selects (`selection.ts`): a target's dependencies come along (a participant's edges), and a
 * team stays when something under it is excluded (only the rest of its graph goes).
 */
import { covers, edgeAddress, participantAddress, providerKeyAddress, teamAddress, webhookAddress } from './addresses.ts';
import { computePlan } from './plan.ts';
import { isPartial, selectChanges } from './selection.ts';
import type { Selection } from './selection.ts';
import type { DeleteChange, DesiredState, ObservedState } from './types.ts';

/** The deletes of `teamctl destroy` (see the module's comment). Output: in the order they can run. */
export function destroyPlan(desired: DesiredState, observed: ObservedState, selection: Selection = {}): DeleteChange[] {
  const org = observed.organization;
  if (!org) return [];
  if (!isPartial(selection)) return [{ action: 'delete', kind: 'organization', name: org.org_name, address: 'organization', id: org.org_id }];
  const deletes = computePlan(withoutSelected(desired, selection), observed).changes.filter((c): c is DeleteChange => c.action === 'delete');
  return selectChanges(deletes, selection).changes;
}

/** `desired` without the resources `selection` destroys (see the module's comment). */
function withoutSelected(desired: DesiredState, selection: Selection): DesiredState {
  const targets = selection.targets ?? [];
  const excludes = selection.excludes ?? [];
  const destroyed = (address: string) => (targets.length === 0 || targets.some((t) => covers(t, address))) && !excludes.some((e) => covers(e, address));
  // A team's delete would take along what is under it: it stays while any of that is excluded.
  const teamGoes = (address: string) => destroyed(address) && !excludes.some((e) => covers(address, e));
  const teams = desired.teams
    .filter((team) => !teamGoes(teamAddress(team.name)))
    .map((team) => {
      const agents = team.agents.filter((a) => !destroyed(participantAddress(team.name, 'agent', a.name)));
      const humans = team.humans.filter((h) => !destroyed(participantAddress(team.name, 'human', h.name)));
      const staying = new Set([...agents, ...humans].map((p) => p.name));
      const edges = team.edges.filter((pair) => pair.every((p) => staying.has(p)) && !destroyed(edgeAddress(team.name, pair)));
      return { ...team, agents, humans, edges };
    });
  const providerKeys = desired.organization.providerKeys.filter((k) => !destroyed(providerKeyAddress(k.provider)));
  const webhooks = desired.organization.webhooks?.filter((w) => !destroyed(webhookAddress(w.name)));
  return { organization: { ...desired.organization, providerKeys, ...(webhooks ? { webhooks } : {}) }, teams };
}
