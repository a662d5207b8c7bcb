/**
 * `--target` and `--exclude` over real plans (`computePlan` of synthetic definitions), and the
 * plan of `destroy`: exactly the selected addresses plus what they depend on.
 */
import { describe, expect, it } from 'vitest';
import { addressProblem, covers } from '../../plan/addresses.ts';
import { destroyPlan } from '../../plan/destroy.ts';
import { computePlan } from '../../plan/plan.ts';
import { selectChanges } from '../../plan/selection.ts';
import type { ObservedState } from '../../plan/types.ts';
import { syntheticDefinition } from '../support/synthetic.ts';

const at = '2026-11-22T09:15:02.123Z';
/** Two teams of two agents and a human, each agent joined to the human, as a fresh organization would get them. */
const desired = syntheticDefinition('acme', { teams: 2, agents: 2, humans: 1, edges: 3 });
const empty: ObservedState = { organization: null, providerKeys: [], teams: [] };
const addresses = (changes: Array<{ action: string; address: string }>) => changes.map((c) => `${c.action} ${c.address}`);

/** The live state in which `desired` was applied: ids are the addresses. */
function applied(): ObservedState {
  return {
    organization: { org_id: 'o', org_name: 'acme', team_count: 2, human_count: 3, is_personal: false, deletion_protection: false, created_at: at },
    providerKeys: [],
    teams: desired.teams.map((t) => {
      const id = (name: string) => `${t.name}/${name}`;
      return {
        team: { team_id: t.name, org_id: 'o', team_name: t.name, description: t.fields.description, agent_count: 2, edge_count: 3, engine_id: 'e', deletion_protection: false, created_at: at },
        agents: t.agents.map((a) => ({ max_tokens_per_day: null, ...a.fields, tools: null, a2a: null, agent_id: id(a.name), team_id: t.name, status: 'active' as const, created_at: at })),
        humans: t.humans.map((h) => ({ ...h.fields, human_id: id(h.name), team_id: t.name, created_at: at })),
        edges: t.edges.map(([a, b]) => ({ edge_id: id(`${a},${b}`), team_id: t.name, participants: [id(a), id(b)] as [string, string], created_at: at })),
      };
    }),
  };
}

describe('addresses', () => {
  it('addresses: the forms plan prints are accepted, anything else says what is expected', () => {
    for (const ok of ['organization', 'provider_key/openai', 'team/intake', 'team/intake/agent/triager', 'team/intake/human/dana', 'team/intake/edge/dana,triager', 'schedule/nightly']) {
      expect(addressProblem(ok), ok).toBeUndefined();
    }
    expect(addressProblem('teams/intake')).toMatch(/unknown resource kind "teams"/);
    expect(addressProblem('team/intake/edge/dana')).toMatch(/two participants/);
    expect(addressProblem('team/intake/robot/x')).toMatch(/expected organization/);
  });

  it('addresses: a team covers what is under it, and an edge is the same in either order', () => {
    expect(covers('team/a', 'team/a/agent/x')).toBe(true);
    expect(covers('team/a', 'team/ab')).toBe(false);
    expect(covers('team/a/edge/y,x', 'team/a/edge/x,y')).toBe(true);
  });
});

describe('selection', () => {
  it('selection: a target takes the changes under its address plus what they depend on, nothing else', () => {
    const changes = computePlan(desired, empty).changes;
    const edge = selectChanges(changes, { targets: ['team/team-001/edge/agent-0,human-0'] });
    expect(addresses(edge.changes)).toEqual([
      'create organization',
      'create team/team-001',
      'create team/team-001/agent/agent-0',
      'create team/team-001/human/human-0',
      'create team/team-001/edge/agent-0,human-0',
    ]);
    const team = selectChanges(changes, { targets: ['team/team-000'] });
    expect(team.changes.every((c) => c.address === 'organization' || c.address.startsWith('team/team-000'))).toBe(true);
    expect(team.changes).toHaveLength(1 + 1 + 3 + 3);
    expect(selectChanges(changes, { targets: ['team/nope'] })).toEqual({ changes: [], unmatchedTargets: ['team/nope'] });
  });

  it('selection: an exclude drops its address, what is under it and what depends on it', () => {
    const changes = computePlan(desired, empty).changes;
    const without = selectChanges(changes, { excludes: ['team/team-000/agent/agent-1'] });
    expect(addresses(changes).filter((a) => !addresses(without.changes).includes(a))).toEqual([
      'create team/team-000/agent/agent-1',
      'create team/team-000/edge/agent-0,agent-1',
      'create team/team-000/edge/agent-1,human-0',
    ]);
    expect(selectChanges(changes, { targets: ['team/team-001'], excludes: ['team/team-001'] }).changes).toEqual([
      expect.objectContaining({ address: 'organization' }),
    ]);
  });

  it('selection: a participant\'s delete brings its edges\' deletes along, and excluding one of those keeps the participant', () => {
    const live = applied();
    const smaller = { ...desired, teams: desired.teams.map((t) => ({ ...t, agents: t.agents.filter((a) => a.name !== 'agent-0'), edges: t.edges.filter((e) => !e.includes('agent-0')) })) };
    const changes = computePlan(smaller, live).changes;
    const one = selectChanges(changes, { targets: ['team/team-000/agent/agent-0'] });
    expect(addresses(one.changes)).toEqual(['delete team/team-000/edge/agent-0,agent-1', 'delete team/team-000/edge/agent-0,human-0', 'delete team/team-000/agent/agent-0']);
    expect(addresses(selectChanges(changes, { targets: ['team/team-000/agent/agent-0'], excludes: ['team/team-000/edge/human-0,agent-0'] }).changes)).toEqual([
      'delete team/team-000/edge/agent-0,agent-1',
    ]);
  });

  it('destroy: without a selection it is the organization\'s delete; with one, the selected resources\' deletes only', () => {
    const live = applied();
    expect(destroyPlan(desired, live)).toEqual([{ action: 'delete', kind: 'organization', name: 'acme', address: 'organization', id: 'o' }]);
    expect(destroyPlan(desired, empty)).toEqual([]);
    expect(addresses(destroyPlan(desired, live, { targets: ['team/team-001'] }))).toEqual(['delete team/team-001']);
    expect(addresses(destroyPlan(desired, live, { targets: ['team/team-001/human/human-0'] }))).toEqual([
      'delete team/team-001/edge/agent-0,human-0',
      'delete team/team-001/edge/agent-1,human-0',
      'delete team/team-001/human/human-0',
    ]);
    // Everything but one agent: the other team goes whole; this team stays, without the rest of its graph.
    expect(addresses(destroyPlan(desired, live, { excludes: ['team/team-000/agent/agent-0'] }))).toEqual([
      'delete team/team-000/edge/agent-0,agent-1',
      'delete team/team-000/edge/agent-0,human-0',
      'delete team/team-000/edge/agent-1,human-0',
      'delete team/team-000/agent/agent-1',
      'delete team/team-000/human/human-0',
      'delete team/team-001',
    ]);
  });
});
