import { describe, expect, it } from 'vitest';
import { parseDefinition } from '../../definitions/load.ts';
import { withHeaderRefs } from '../../plan/agent-tools.ts';
import { desiredState } from '../../plan/desired.ts';
import { computePlan } from '../../plan/plan.ts';
import type { DesiredState, ObservedAgent, ObservedState } from '../../plan/types.ts';

// A remote A2A agent's `a2a` in the plan (issue 38, teamctl side): compared by URL, header names
// and header fingerprints' verdicts; header values travel as templates beside the change, shown
// as (sensitive), never as values.

const at = '2026-11-22T09:15:02.123Z';

/** The desired state of team desk with remote agent scout at `url`. */
function desired(url = 'https://scout.example/a2a'): DesiredState {
  const text = `apiVersion: teamctl/v1
organization:
  name: acme
teams:
  - name: desk
    agents:
      - name: scout
        a2a:
          url: ${url}
          headers:
            Authorization: Bearer \${env:SCOUT_TOKEN}
`;
  return desiredState(parseDefinition(text, 'x.yaml'));
}

/** The live state with scout as the service returns it: `a2a` with its header as a fingerprint, and `headerMatches` as the reads judged it. */
function observed(a2a: ObservedAgent['a2a'], headerMatches?: ObservedAgent['headerMatches']): ObservedState {
  const scout: ObservedAgent = {
    agent_id: 'a1',
    team_id: 't1',
    name: 'scout',
    provider: null,
    model: null,
    description: '',
    instructions: '',
    status: 'active',
    max_tokens_per_day: null,
    max_steps: 10,
    deletion_protection: false,
    tools: null,
    a2a,
    created_at: at,
    ...(headerMatches ? { headerMatches } : {}),
  } as ObservedAgent;
  return {
    organization: { org_id: 'o', org_name: 'acme', team_count: 1, human_count: 0, is_personal: false, deletion_protection: false, created_at: at },
    providerKeys: [],
    teams: [
      {
        team: { team_id: 't1', org_id: 'o', team_name: 'desk', description: '', agent_count: 1, edge_count: 0, engine_id: 'e', deletion_protection: false, created_at: at },
        agents: [scout],
        humans: [],
        edges: [],
      },
    ],
  };
}

const live = { url: 'https://scout.example/a2a', header_fingerprints: { Authorization: 'hmac-sha256:salt:digest' } };

describe('plan: remote A2A agents', () => {
  it('plan: a new remote agent is a create showing its header value as (sensitive), the template beside it, which the activity gets back', () => {
    const plan = computePlan(desired(), { organization: observed(null).organization, providerKeys: [], teams: [] });
    const create = plan.changes.find((c) => c.kind === 'agent')!;
    expect(create).toMatchObject({ action: 'create', address: 'team/desk/agent/scout', fields: { a2a: { url: 'https://scout.example/a2a', headers: { Authorization: '(sensitive)' } } }, headerRefs: { '@a2a': { Authorization: 'Bearer ${env:SCOUT_TOKEN}' } } });
    if (create.action !== 'create' || create.kind !== 'agent') throw new Error('not an agent create');
    expect(withHeaderRefs(create.fields, create.headerRefs).a2a).toEqual({ url: 'https://scout.example/a2a', headers: { Authorization: 'Bearer ${env:SCOUT_TOKEN}' } });
  });

  it('plan: the same URL, header names and header value make no change', () => {
    expect(computePlan(desired(), observed(live, { '@a2a': { Authorization: true } })).changes).toEqual([]);
  });

  it('plan: another URL is an update of a2a, carrying its header template', () => {
    const [update] = computePlan(desired('https://scout.example/v2'), observed(live, { '@a2a': { Authorization: true } })).changes;
    expect(update).toMatchObject({
      action: 'update',
      id: 'a1',
      diff: { a2a: { from: { url: 'https://scout.example/a2a', headers: { Authorization: '(sensitive)' } }, to: { url: 'https://scout.example/v2', headers: { Authorization: '(sensitive)' } } } },
      fields: { a2a: { url: 'https://scout.example/v2', headers: { Authorization: '(sensitive)' } } },
      headerRefs: { '@a2a': { Authorization: 'Bearer ${env:SCOUT_TOKEN}' } },
    });
  });

  it('plan: a header value whose fingerprint is of another value is an update naming it in sensitiveChanges', () => {
    const [update] = computePlan(desired(), observed(live, { '@a2a': { Authorization: false } })).changes;
    expect(update).toMatchObject({ action: 'update', diff: { a2a: { sensitiveChanges: ['headers.Authorization'] } } });
    expect(JSON.stringify(update)).not.toContain('hmac-sha256');
  });

  it('plan: a live agent that is not remote becomes one by an update, and a remote one the file makes local loses its a2a', () => {
    const [toRemote] = computePlan(desired(), observed(null)).changes;
    expect(toRemote).toMatchObject({ action: 'update', diff: { a2a: { from: null, to: { url: 'https://scout.example/a2a' } } } });
    const local = desiredState(parseDefinition('apiVersion: teamctl/v1\norganization:\n  name: acme\nteams:\n  - name: desk\n    agents:\n      - name: scout\n', 'x.yaml'));
    const [toLocal] = computePlan(local, observed(live)).changes;
    expect(toLocal).toMatchObject({ action: 'update', diff: { a2a: { from: { url: 'https://scout.example/a2a' }, to: null } }, fields: { a2a: null } });
  });
});
