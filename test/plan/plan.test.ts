import { describe, expect, it } from 'vitest';
import type { Agent, Edge, Human, Organization, Team } from '../../api/schemas.ts';
import { DefinitionSchema } from '../../definitions/schema.ts';
import { desiredState } from '../../plan/desired.ts';
import { computePlan, SENSITIVE } from '../../plan/plan.ts';
import type { DesiredState, ObservedState } from '../../plan/types.ts';

const at = '2026-11-22T09:15:02.123Z';
/** A definition as the file would hold it, through the same schema and conversion as `plan` uses. */
const desiredOf = (teams: unknown[]): DesiredState =>
  desiredState(DefinitionSchema.parse({ apiVersion: 'teamctl/v1', organization: { name: 'acme', providerKeys: { echo: '${env:ECHO_KEY}' } }, teams }));
const desired = desiredOf([
  {
    name: 'review',
    description: 'Finds papers',
    agents: [{ name: 'scout', provider: 'echo', model: 'echo-1', instructions: 'Find.' }, { name: 'archivist' }],
    humans: [{ name: 'alice', email: 'alice@example.com' }],
    edges: [['alice', 'scout'], ['scout', 'archivist']],
  },
]);

const org: Organization = { org_id: 'o1', org_name: 'acme', team_count: 1, human_count: 2, is_personal: false, created_at: at };
const team: Team = { team_id: 't1', org_id: 'o1', team_name: 'review', description: 'Finds papers', agent_count: 2, edge_count: 2, engine_id: 'e', created_at: at };
const agent = (id: string, name: string, extra: Partial<Agent> = {}): Agent => ({
  agent_id: id, team_id: 't1', name, description: '', provider: null, model: null, instructions: '', status: 'active', created_at: at, ...extra,
});
const alice: Human = { human_id: 'h1', team_id: 't1', name: 'alice', email: 'alice@example.com', created_at: at };
const edge = (id: string, a: string, b: string): Edge => ({ edge_id: id, team_id: 't1', participants: [a, b], created_at: at });

function inSync(): ObservedState {
  return {
    organization: org,
    providerKeys: [{ provider: 'echo', key_hint: 'abcd', matchesDesired: true }],
    teams: [
      {
        team: { ...team },
        agents: [agent('a1', 'scout', { provider: 'echo', model: 'echo-1', instructions: 'Find.' }), agent('a2', 'archivist')],
        humans: [alice],
        edges: [edge('e1', 'h1', 'a1'), edge('e2', 'a2', 'a1')],
      },
    ],
  };
}

describe('plan', () => {
  it('plan: an empty service gets every resource created, in dependency order', () => {
    const plan = computePlan(desired, { organization: null, providerKeys: [], teams: [] });
    expect(plan.changes.map((c) => `${c.action} ${c.kind} ${c.name}`)).toEqual([
      'create organization acme',
      'create provider_key echo',
      'create team review',
      'create agent scout',
      'create agent archivist',
      'create human alice',
      'create edge alice<->scout',
      'create edge scout<->archivist',
    ]);
  });

  it('plan: a live state that matches (edges in either order) has no changes', () => {
    expect(computePlan(desired, inSync()).changes).toEqual([]);
  });

  it('plan: drifted fields become one update with the live and desired values', () => {
    const observed = inSync();
    observed.teams[0]!.agents[0]!.instructions = 'Something else.';
    observed.teams[0]!.team.description = '';
    const plan = computePlan(desired, observed);
    expect(plan.changes).toEqual([
      { action: 'update', kind: 'team', name: 'review', address: 'team/review', id: 't1', fields: { description: 'Finds papers' }, diff: { description: { from: '', to: 'Finds papers' } } },
      {
        action: 'update',
        kind: 'agent',
        name: 'scout',
        team: 'review',
        address: 'team/review/agent/scout',
        id: 'a1',
        fields: { instructions: 'Find.' },
        diff: { instructions: { from: 'Something else.', to: 'Find.' } },
      },
    ]);
  });

  it('plan: a status the definition does not set is not managed', () => {
    const observed = inSync();
    observed.teams[0]!.agents[1]!.status = 'paused';
    expect(computePlan(desired, observed).changes).toEqual([]);
  });

  it('plan: a provider key whose hint differs is updated, and its value is never shown', () => {
    const observed = inSync();
    observed.providerKeys[0]!.matchesDesired = false;
    const plan = computePlan(desired, observed);
    expect(plan.changes).toHaveLength(1);
    expect(plan.changes[0]).toMatchObject({ action: 'update', kind: 'provider_key', name: 'echo', fields: { api_key: SENSITIVE } });
  });

  it('plan: a missing edge and participant are created while the rest stays', () => {
    const observed = inSync();
    observed.teams[0]!.humans = [];
    observed.teams[0]!.edges = [edge('e2', 'a2', 'a1')];
    const plan = computePlan(desired, observed);
    expect(plan.changes.map((c) => `${c.action} ${c.kind} ${c.name}`)).toEqual(['create human alice', 'create edge alice<->scout']);
  });
});
