import { describe, expect, it } from 'vitest';
import type { Agent, Edge, Human, Organization, Team } from '../../api/schemas.ts';
import { DefinitionSchema } from '../../definitions/schema.ts';
import { desiredState } from '../../plan/desired.ts';
import { previewsNeeded, withCascades } from '../../plan/cascades.ts';
import { dependencies } from '../../plan/dependencies.ts';
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

const org: Organization = { org_id: 'o1', org_name: 'acme', team_count: 1, human_count: 2, is_personal: false, deletion_protection: false, created_at: at };
const team: Team = { team_id: 't1', org_id: 'o1', team_name: 'review', description: 'Finds papers', agent_count: 2, edge_count: 2, engine_id: 'e', deletion_protection: false, created_at: at };
const agent = (id: string, name: string, extra: Partial<Agent> = {}): Agent => ({
  agent_id: id, team_id: 't1', name, description: '', provider: null, model: null, instructions: '', status: 'active', deletion_protection: false, max_tokens_per_day: null, max_steps: 10, tools: null, created_at: at, ...extra,
});
const alice: Human = { human_id: 'h1', team_id: 't1', name: 'alice', email: 'alice@example.com', deletion_protection: false, created_at: at };
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

  it('plan: a daily token budget is created with the agent, a change to it is an update, and null sets it back to unlimited', () => {
    const withBudget = (maxTokensPerDay: number | null) =>
      desiredOf([
        {
          name: 'review',
          description: 'Finds papers',
          agents: [{ name: 'scout', provider: 'echo', model: 'echo-1', instructions: 'Find.', maxTokensPerDay }, { name: 'archivist' }],
          humans: [{ name: 'alice', email: 'alice@example.com' }],
          edges: [['alice', 'scout'], ['scout', 'archivist']],
        },
      ]);
    const create = computePlan(withBudget(50_000), { organization: null, providerKeys: [], teams: [] }).changes.find((c) => c.name === 'scout');
    expect(create).toMatchObject({ action: 'create', fields: { max_tokens_per_day: 50_000 } });
    expect(computePlan(withBudget(50_000), inSync()).changes).toEqual([
      {
        action: 'update',
        kind: 'agent',
        name: 'scout',
        team: 'review',
        address: 'team/review/agent/scout',
        id: 'a1',
        fields: { max_tokens_per_day: 50_000 },
        diff: { max_tokens_per_day: { from: null, to: 50_000 } },
      },
    ]);
    const live = inSync();
    live.teams[0]!.agents[0]!.max_tokens_per_day = 10;
    expect(computePlan(withBudget(null), live).changes).toEqual([
      {
        action: 'update',
        kind: 'agent',
        name: 'scout',
        team: 'review',
        address: 'team/review/agent/scout',
        id: 'a1',
        fields: { max_tokens_per_day: null },
        diff: { max_tokens_per_day: { from: 10, to: null } },
      },
    ]);
  });

  it('plan: a budget the definition does not set is not managed (a service without budgets plans no change)', () => {
    const live = inSync();
    live.teams[0]!.agents[0]!.max_tokens_per_day = 10;
    delete (live.teams[0]!.agents[1] as Partial<Agent>).max_tokens_per_day;
    expect(computePlan(desired, live).changes).toEqual([]);
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

/** The live state of `desired` plus a team, an agent, a human and edges the definition does not name. */
function withExtras(): ObservedState {
  const observed = inSync();
  const review = observed.teams[0]!;
  review.agents.push(agent('a3', 'retired'));
  review.humans.push({ human_id: 'h2', team_id: 't1', name: 'bob', email: null, deletion_protection: false, created_at: at });
  review.edges.push(edge('e3', 'a3', 'a1'), edge('e4', 'h2', 'a3'));
  observed.teams.push({ team: { ...team, team_id: 't2', team_name: 'old' }, agents: [], humans: [], edges: [] });
  observed.providerKeys.push({ provider: 'openai', key_hint: 'wxyz' });
  return observed;
}

describe('plan deletions', () => {
  it('plan: what the organization holds and the definition does not name is deleted, edges before participants, participants before teams, then provider keys', () => {
    const plan = computePlan(desired, withExtras());
    expect(plan.changes.map((c) => `${c.action} ${c.address}`)).toEqual([
      'delete team/review/edge/retired,scout',
      'delete team/review/edge/bob,retired',
      'delete team/review/agent/retired',
      'delete team/review/human/bob',
      'delete team/old',
      'delete provider_key/openai',
    ]);
    expect(plan.changes[0]).toMatchObject({ kind: 'edge', team: 'review', id: 'e3', participants: ['retired', 'scout'] });
  });

  it('plan: a participant deleted while the definition keeps an edge of its name deletes that edge too, and creates the new one after', () => {
    const observed = inSync();
    // scout is now a human of that name in the file: the agent scout goes, and its edges with it.
    const changed = desiredOf([
      {
        name: 'review',
        description: 'Finds papers',
        agents: [{ name: 'archivist' }],
        humans: [{ name: 'alice', email: 'alice@example.com' }, { name: 'scout' }],
        edges: [['alice', 'scout'], ['scout', 'archivist']],
      },
    ]);
    const plan = computePlan(changed, observed);
    expect(plan.changes.map((c) => `${c.action} ${c.address}`)).toEqual([
      'delete team/review/edge/alice,scout',
      'delete team/review/edge/archivist,scout',
      'delete team/review/agent/scout',
      'create team/review/human/scout',
      'create team/review/edge/alice,scout',
      'create team/review/edge/scout,archivist',
    ]);
  });

  it('plan: renamedFrom renames the live team and participant (an update of the name) and keeps their edges; a stale renamedFrom is harmless', () => {
    const renamed = desiredOf([
      {
        name: 'reviewers',
        renamedFrom: 'review',
        description: 'Finds papers',
        agents: [{ name: 'finder', renamedFrom: 'scout', provider: 'echo', model: 'echo-1', instructions: 'Find.' }, { name: 'archivist', renamedFrom: 'gone-long-ago' }],
        humans: [{ name: 'alice', email: 'alice@example.com' }],
        edges: [['alice', 'finder'], ['finder', 'archivist']],
      },
    ]);
    const plan = computePlan(renamed, inSync());
    expect(plan.changes).toEqual([
      {
        action: 'update',
        kind: 'team',
        name: 'reviewers',
        address: 'team/reviewers',
        id: 't1',
        renamedFrom: 'review',
        fields: { team_name: 'reviewers' },
        diff: { team_name: { from: 'review', to: 'reviewers' } },
      },
      {
        action: 'update',
        kind: 'agent',
        name: 'finder',
        team: 'reviewers',
        address: 'team/reviewers/agent/finder',
        id: 'a1',
        renamedFrom: 'scout',
        fields: { name: 'finder' },
        diff: { name: { from: 'scout', to: 'finder' } },
      },
    ]);
    // Once renamed, the same file has nothing left to do.
    const after = inSync();
    after.teams[0]!.team.team_name = 'reviewers';
    after.teams[0]!.agents[0]!.name = 'finder';
    expect(computePlan(renamed, after).changes).toEqual([]);
  });

  it('plan: a rename to a name that a deleted participant holds (agents and humans share names) waits for that delete, and a participant\'s delete waits for its edges\'', () => {
    const observed = withExtras();
    // The agent archivist takes the name bob, which the human bob (no longer in the file) holds.
    const renamed = desiredOf([{ ...desiredDefinitionTeam(), agents: [{ name: 'scout', provider: 'echo', model: 'echo-1', instructions: 'Find.' }, { name: 'bob', renamedFrom: 'archivist' }], edges: [['alice', 'scout'], ['scout', 'bob']] }]);
    const changes = computePlan(renamed, observed).changes;
    const waits = dependencies(changes);
    const at = (action: string, address: string) => changes.findIndex((c) => c.action === action && c.address === address);
    expect(waits[at('update', 'team/review/agent/bob')]).toEqual([at('delete', 'team/review/human/bob')]);
    expect(waits[at('delete', 'team/review/agent/retired')]?.sort()).toEqual([at('delete', 'team/review/edge/retired,scout'), at('delete', 'team/review/edge/bob,retired')].sort());
    // The edge scout–archivist stays: it joins the same two live participants, archivist now named bob.
    expect(changes.filter((c) => c.kind === 'edge' && c.action !== 'delete')).toEqual([]);
  });

  it('plan: cascade counts fill in from the deletion previews: a team\'s, an edge\'s threads, a participant\'s edges and their threads', () => {
    const changes = computePlan(desired, withExtras()).changes;
    expect(previewsNeeded(changes)).toEqual({ teams: ['t2'], edges: ['e3', 'e4'] });
    const filled = withCascades(changes, {
      teams: { t2: { agents: 2, humans: 1, edges: 1, threads: 4, messages: 40, attachments: 0 } },
      edges: { e3: { threads: 2, messages: 7 }, e4: { threads: 1, messages: 3 } },
    });
    const cascade = (address: string) => filled.flatMap((c) => (c.address === address && c.action === 'delete' ? [c.cascade] : []))[0];
    expect(cascade('team/old')).toEqual({ agents: 2, humans: 1, edges: 1, threads: 4, messages: 40, attachments: 0 });
    expect(cascade('team/review/edge/retired,scout')).toEqual({ threads: 2, messages: 7 });
    expect(cascade('team/review/agent/retired')).toEqual({ edges: 2, threads: 3, messages: 10 });
    expect(cascade('team/review/human/bob')).toEqual({ edges: 1, threads: 1, messages: 3 });
  });
});

/** The review team of `desired`, as a definition entry. */
function desiredDefinitionTeam() {
  return {
    name: 'review',
    description: 'Finds papers',
    agents: [{ name: 'scout', provider: 'echo', model: 'echo-1', instructions: 'Find.' }, { name: 'archivist' }],
    humans: [{ name: 'alice', email: 'alice@example.com' }],
    edges: [['alice', 'scout'], ['scout', 'archivist']],
  };
}
