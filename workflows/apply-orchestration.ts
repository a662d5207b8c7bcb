/**
 * The orchestration of `apply`, shared by both engines: read the live state, compute the plan,
 * then run its changes through the activities in dependency order — the organization, then
 * provider keys and teams, then participants, then edges — each phase in parallel up to a bound.
 *
 * It knows activities only as types and does no I/O itself, so the Temporal workflow runs it in
 * its sandbox and the local engine runs it in-process, unchanged.
 */
import type { ApplyActivities, EnsureResult } from '../activities/apply-activities.ts';
import type { Connection } from '../activities/connection.ts';
import { agentFields, humanFields, teamFields } from '../plan/plan.ts';
import { computePlan } from '../plan/plan.ts';
import type { Change, DesiredState, ObservedState } from '../plan/types.ts';
import { mapBounded } from './bounded.ts';

/** Input of an apply: where the service is (a key *reference*) and the desired state. */
export interface ApplyInput {
  connection: Connection;
  desired: DesiredState;
  /** Most changes in flight at once (default 4). */
  parallelism?: number;
}

/** One change as carried out. */
export interface AppliedChange extends Change {
  outcome: EnsureResult['outcome'];
}

/** Result of an apply: the organization's id and the changes carried out, in plan order. */
export interface ApplyResult {
  orgId: string;
  applied: AppliedChange[];
}

/** Called as each change completes (the local engine shows progress with it). */
export type ProgressListener = (change: AppliedChange) => void;

/**
 * Runs one apply. Raises the first activity failure after the changes in flight settle; a re-run
 * picks up from the live state, so an interrupted apply converges.
 */
export async function orchestrateApply(input: ApplyInput, acts: ApplyActivities, onProgress?: ProgressListener): Promise<ApplyResult> {
  const { connection, desired } = input;
  const limit = input.parallelism ?? 4;
  const observed = await acts.readState({ connection, desired });
  const plan = computePlan(desired, observed);
  const applied: AppliedChange[] = [];
  const done = (change: Change, result: EnsureResult): EnsureResult => {
    const entry = { ...change, outcome: result.outcome };
    applied.push(entry);
    onProgress?.(entry);
    return result;
  };
  const byKind = (kind: Change['kind']) => plan.changes.filter((c) => c.kind === kind);

  const orgChange = byKind('organization')[0];
  const orgId = orgChange
    ? done(orgChange, await acts.ensureOrganization({ connection, name: desired.organization.name })).id
    : (observed.organization as NonNullable<ObservedState['organization']>).org_id;

  const teamIds = new Map(observed.teams.map((t) => [t.team.team_name, t.team.team_id]));
  const phase2 = [...byKind('provider_key'), ...byKind('team')];
  await mapBounded(phase2, limit, async (change) => {
    if (change.kind === 'provider_key') {
      const provider = change.name as keyof NonNullable<DesiredState['organization']['providerKeys']>;
      const secretRef = desired.organization.providerKeys?.[provider] as string;
      const result = await acts.putProviderKey({ connection, orgId, provider, secretRef });
      // PUT cannot tell a new key from a replaced one; the plan can.
      return done(change, { ...result, outcome: change.action === 'create' ? 'created' : 'updated' });
    }
    const team = desired.teams.find((t) => t.name === change.name);
    if (change.action === 'update' && change.id) {
      return done(change, await acts.updateTeam({ connection, teamId: change.id, patch: change.fields }));
    }
    const result = done(change, await acts.ensureTeam({ connection, orgId, fields: teamFields(team!) }));
    teamIds.set(change.name, result.id);
    return result;
  });

  const participantIds = new Map<string, string>();
  const key = (team: string, name: string) => `${team}\u0000${name}`;
  for (const t of observed.teams) {
    for (const a of t.agents) participantIds.set(key(t.team.team_name, a.name), a.agent_id);
    for (const h of t.humans) participantIds.set(key(t.team.team_name, h.name), h.human_id);
  }
  const phase3 = [...byKind('agent'), ...byKind('human')];
  await mapBounded(phase3, limit, async (change) => {
    const team = desired.teams.find((t) => t.name === change.team)!;
    const teamId = teamIds.get(team.name)!;
    let result: EnsureResult;
    if (change.kind === 'agent') {
      result = change.action === 'update' && change.id
        ? await acts.updateAgent({ connection, agentId: change.id, patch: change.fields })
        : await acts.ensureAgent({ connection, teamId, fields: agentFields(team.agents.find((a) => a.name === change.name)!) });
    } else {
      result = change.action === 'update' && change.id
        ? await acts.updateHuman({ connection, humanId: change.id, patch: change.fields })
        : await acts.ensureHuman({ connection, teamId, fields: humanFields(team.humans.find((h) => h.name === change.name)!) });
    }
    participantIds.set(key(team.name, change.name), result.id);
    return done(change, result);
  });

  await mapBounded(byKind('edge'), limit, async (change) => {
    const team = change.team!;
    const [a, b] = change.fields.participants as [string, string];
    const participants: [string, string] = [participantIds.get(key(team, a))!, participantIds.get(key(team, b))!];
    return done(change, await acts.ensureEdge({ connection, teamId: teamIds.get(team)!, participants }));
  });

  return { orgId, applied: sortByPlan(applied, plan.changes) };
}

/** Parallel phases finish in any order; results are reported in plan order. */
function sortByPlan(applied: AppliedChange[], changes: Change[]): AppliedChange[] {
  const rank = (c: Change) => changes.findIndex((p) => p.kind === c.kind && p.name === c.name && p.team === c.team);
  return [...applied].sort((x, y) => rank(x) - rank(y));
}
