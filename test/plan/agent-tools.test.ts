import { describe, expect, it } from 'vitest';
import type { AgentTools } from '../../api/agent-tools.ts';
import type { Agent, Human, Organization, Team } from '../../api/schemas.ts';
import { secretFingerprint } from '../../api/webhook-fingerprint.ts';
import { judgeHeaders, resolveAgentHeaders } from '../../activities/tool-headers.ts';
import { renderPlan } from '../../cli/render.ts';
import { DefinitionSchema } from '../../definitions/schema.ts';
import { agentHeaderRefs, withHeaderRefs } from '../../plan/agent-tools.ts';
import { dependencies } from '../../plan/dependencies.ts';
import { desiredState } from '../../plan/desired.ts';
import { exportDefinition } from '../../plan/export.ts';
import { computePlan, SENSITIVE } from '../../plan/plan.ts';
import { selectChanges } from '../../plan/selection.ts';
import type { Change, DesiredState, ObservedState } from '../../plan/types.ts';

// Agents' maxSteps and tools in plans (issue 37, teamctl side): the desired tools in wire form
// with header templates, drift against the live resource form (header values through their
// fingerprints, judged where they are resolved), header values only ever (sensitive), approvers
// created before the agents that name them, and export writing it all back.

const at = '2026-11-22T09:15:02.123Z';
const TOKEN = 'Bearer tr-live-0123456789abcdef';
const org: Organization = { org_id: 'o1', org_name: 'acme', team_count: 1, human_count: 1, is_personal: false, deletion_protection: false, created_at: at };
const team: Team = { team_id: 't1', org_id: 'o1', team_name: 'desk', description: '', agent_count: 1, edge_count: 1, engine_id: 'e', deletion_protection: false, created_at: at };
const dana: Human = { human_id: 'h1', team_id: 't1', name: 'dana', email: null, deletion_protection: false, created_at: at };

/** The tools of agent `lead` as a definition writes them. */
const leadTools = {
  team: true,
  askTimeout: '24h',
  toolTimeout: '90s',
  mcp: [{ name: 'tracker', url: 'https://mcp.tracker.example/mcp', headers: { Authorization: 'Bearer ${env:TRACKER_TOKEN}' }, allow: ['search_issues', 'create_issue'] }],
  approval: { by: 'dana', tools: ['tracker.create_issue', 'send_message'] },
};

/** A definition of team `desk`: agent `lead` (openai) with `tools`, human `dana` (or `humans`), edge dana–lead (or `edges`). */
function desiredOf(tools: unknown, options: { maxSteps?: number; humans?: unknown[]; edges?: string[][]; lead?: Record<string, unknown> } = {}): DesiredState {
  const lead = { name: 'lead', provider: 'openai', model: 'gpt-4o-mini', ...(options.maxSteps ? { maxSteps: options.maxSteps } : {}), ...(tools === undefined ? {} : { tools }), ...options.lead };
  const humans = options.humans ?? [{ name: 'dana' }];
  return desiredState(DefinitionSchema.parse({ apiVersion: 'teamctl/v1', organization: { name: 'acme' }, teams: [{ name: 'desk', agents: [lead], humans, edges: options.edges ?? [['dana', 'lead']] }] }));
}

/** The live tools of `lead` as the service returns them, the Authorization header a fingerprint of `value`. */
function liveTools(value = TOKEN, extra: Partial<AgentTools> = {}): AgentTools {
  return {
    team: true,
    ask_timeout_seconds: 86_400,
    tool_timeout_seconds: 90,
    mcp: [{ name: 'tracker', url: 'https://mcp.tracker.example/mcp', allow: ['create_issue', 'search_issues'], header_fingerprints: { Authorization: secretFingerprint(value) } }],
    approval: { by: 'dana', tools: ['send_message', 'tracker.create_issue'] },
    ...extra,
  };
}

const leadAgent = (extra: Partial<Agent> = {}): Agent => ({
  agent_id: 'a1',
  team_id: 't1',
  name: 'lead',
  description: '',
  provider: 'openai',
  model: 'gpt-4o-mini',
  instructions: '',
  status: 'active',
  deletion_protection: false,
  max_tokens_per_day: null,
  max_steps: 10,
  tools: liveTools(),
  created_at: at,
  ...extra,
});

/** The live state with `lead` as given, its header values judged as the read activities judge them, against `env`. */
function observed(lead: Agent, desired: DesiredState, env: Record<string, string> = { TRACKER_TOKEN: TOKEN.slice('Bearer '.length) }): ObservedState {
  const graph = { team, agents: [lead], humans: [dana], edges: [{ edge_id: 'e1', team_id: 't1', participants: ['h1', 'a1'] as [string, string], created_at: at }] };
  return { organization: org, providerKeys: [], teams: [judgeHeaders(graph, resolveAgentHeaders(agentHeaderRefs(desired), env))] };
}

describe('agents\' tools in desired states and plans', () => {
  it('desired state: an agent\'s maxSteps and tools take their wire names with every default filled in, header values as their templates', () => {
    const desired = desiredOf(leadTools, { maxSteps: 12 });
    expect(desired.teams[0]!.agents[0]!.fields).toMatchObject({
      max_steps: 12,
      tools: {
        team: true,
        ask_timeout_seconds: 86_400,
        tool_timeout_seconds: 90,
        mcp: [{ name: 'tracker', url: 'https://mcp.tracker.example/mcp', headers: { Authorization: 'Bearer ${env:TRACKER_TOKEN}' }, allow: ['search_issues', 'create_issue'] }],
        approval: { by: 'dana', tools: ['tracker.create_issue', 'send_message'] },
      },
    });
    expect(desiredOf({ mcp: [{ name: 'wiki', url: 'https://wiki.example/mcp' }] }).teams[0]!.agents[0]!.fields.tools).toEqual({
      team: false,
      ask_timeout_seconds: 86_400,
      tool_timeout_seconds: 60,
      mcp: [{ name: 'wiki', url: 'https://wiki.example/mcp', headers: {}, allow: null }],
      approval: null,
    });
    expect(desiredOf(undefined).teams[0]!.agents[0]!.fields).toMatchObject({ max_steps: 10, tools: null });
  });

  it('plan: a new agent with tools is created with each header value shown as sensitive, its template carried apart for the activity', () => {
    const desired = desiredOf(leadTools);
    const create = computePlan(desired, { organization: org, providerKeys: [], teams: [{ team, agents: [], humans: [dana], edges: [] }] }).changes.find((c) => c.kind === 'agent');
    expect(create).toMatchObject({
      action: 'create',
      fields: { name: 'lead', max_steps: 10, tools: { team: true, mcp: [{ name: 'tracker', headers: { Authorization: SENSITIVE } }] } },
      headerRefs: { tracker: { Authorization: 'Bearer ${env:TRACKER_TOKEN}' } },
    });
    // What the orchestration sends the activity: the templates put back, as the desired state had them.
    expect(withHeaderRefs(create!.action === 'create' && create!.kind === 'agent' ? create!.fields : {}, (create as { headerRefs?: Record<string, Record<string, string>> }).headerRefs)).toEqual(desired.teams[0]!.agents[0]!.fields);
  });

  it('plan: live tools that are the desired ones — lists in another order, the same header value by its fingerprint — plan no change', () => {
    const desired = desiredOf(leadTools);
    expect(computePlan(desired, observed(leadAgent(), desired)).changes).toEqual([]);
  });

  it('plan: drift in team, a timeout, a server\'s allow, its header names and the approval is one update of the agent with tools in its diff and the whole tools in its PATCH', () => {
    const desired = desiredOf(leadTools);
    const live = leadAgent({
      tools: liveTools(TOKEN, {
        team: false,
        tool_timeout_seconds: 60,
        mcp: [{ name: 'tracker', url: 'https://mcp.tracker.example/mcp', allow: ['search_issues'], header_fingerprints: { Authorization: secretFingerprint(TOKEN), 'X-Team': secretFingerprint('desk') } }],
        approval: null,
      }),
    });
    const [update, ...rest] = computePlan(desired, observed(live, desired)).changes;
    expect(rest).toEqual([]);
    expect(update).toMatchObject({ action: 'update', kind: 'agent', id: 'a1', headerRefs: { tracker: { Authorization: 'Bearer ${env:TRACKER_TOKEN}' } } });
    if (update?.action !== 'update') throw new Error('expected an update');
    expect(Object.keys(update.diff)).toEqual(['tools']);
    expect(update.diff['tools']).toEqual({
      from: {
        team: false,
        ask_timeout_seconds: 86_400,
        tool_timeout_seconds: 60,
        mcp: [{ name: 'tracker', url: 'https://mcp.tracker.example/mcp', headers: { Authorization: SENSITIVE, 'X-Team': SENSITIVE }, allow: ['search_issues'] }],
        approval: null,
      },
      to: {
        team: true,
        ask_timeout_seconds: 86_400,
        tool_timeout_seconds: 90,
        mcp: [{ name: 'tracker', url: 'https://mcp.tracker.example/mcp', headers: { Authorization: SENSITIVE }, allow: ['search_issues', 'create_issue'] }],
        approval: { by: 'dana', tools: ['tracker.create_issue', 'send_message'] },
      },
    });
    expect(Object.keys(update.fields)).toEqual(['tools']);
  });

  it('plan: a header value that is not the live one (by its fingerprint) is an update whose diff names it, shown as sensitive on both sides', () => {
    const desired = desiredOf(leadTools);
    const changes = computePlan(desired, observed(leadAgent(), desired, { TRACKER_TOKEN: 'tr-rotated-fedcba9876543210' })).changes;
    expect(changes).toHaveLength(1);
    expect(changes[0]).toMatchObject({ action: 'update', kind: 'agent', diff: { tools: { sensitiveChanges: ['mcp[tracker].headers.Authorization'] } } });
    const text = JSON.stringify(changes);
    expect(text).not.toContain('tr-rotated');
    expect(text).not.toContain('tr-live');
  });

  it('plan: a plan holds no header value, resolved or not, but in headerRefs, as the templates of the definition', () => {
    const desired = desiredOf(leadTools);
    const changes = computePlan(desired, observed(leadAgent({ tools: null }), desired)).changes;
    const { headerRefs, ...shown } = changes[0] as Change & { headerRefs?: unknown };
    expect(headerRefs).toEqual({ tracker: { Authorization: 'Bearer ${env:TRACKER_TOKEN}' } });
    expect(JSON.stringify(shown)).not.toMatch(/TRACKER_TOKEN|tr-live/);
    expect(JSON.stringify(shown)).toContain(JSON.stringify(SENSITIVE));
  });

  it('plan: tools removed from the definition are set to null; a desired state recorded before tools, or a service that returns none, plans no tools change', () => {
    const removed = desiredOf(undefined);
    expect(computePlan(removed, observed(leadAgent(), removed)).changes).toMatchObject([{ action: 'update', kind: 'agent', fields: { tools: null }, diff: { tools: { to: null } } }]);
    expect(computePlan(removed, observed(leadAgent(), removed)).changes[0]).not.toHaveProperty('headerRefs');
    const recorded = desiredOf(undefined);
    delete recorded.teams[0]!.agents[0]!.fields.tools;
    expect(computePlan(recorded, observed(leadAgent(), recorded)).changes).toEqual([]);
    const { tools: _tools, ...olderService } = leadAgent();
    expect(computePlan(removed, observed(olderService as Agent, removed)).changes).toEqual([]);
  });

  it('plan: maxSteps is managed like the other fields: a change is an update, and 10 is its default', () => {
    const desired = desiredOf(leadTools, { maxSteps: 12 });
    expect(computePlan(desired, observed(leadAgent(), desired)).changes).toMatchObject([{ action: 'update', diff: { max_steps: { from: 10, to: 12 } }, fields: { max_steps: 12 } }]);
  });

  it('plan: an agent that names an approver waits for the create, or the rename, of that human in its team, and --target brings the human along', () => {
    const desired = desiredOf(leadTools, { humans: [{ name: 'dana' }] });
    const fresh = computePlan(desired, { organization: org, providerKeys: [], teams: [{ team, agents: [], humans: [], edges: [] }] }).changes;
    expect(fresh.map((c) => `${c.action} ${c.address}`)).toEqual(['create team/desk/agent/lead', 'create team/desk/human/dana', 'create team/desk/edge/dana,lead']);
    expect(dependencies(fresh)).toEqual([[1], [], [1, 0]]);
    expect(selectChanges(fresh, { targets: ['team/desk/agent/lead'] }).changes.map((c) => c.address)).toEqual(['team/desk/agent/lead', 'team/desk/human/dana']);
    expect(selectChanges(fresh, { excludes: ['team/desk/human/dana'] }).changes).toEqual([]);

    const renamed = desiredOf({ ...leadTools, approval: { by: 'dana-k', tools: ['send_message'] } }, { humans: [{ name: 'dana-k', renamedFrom: 'dana' }], edges: [['dana-k', 'lead']] });
    const changes = computePlan(renamed, observed(leadAgent(), renamed)).changes;
    expect(changes.map((c) => `${c.action} ${c.address}`)).toEqual(['update team/desk/agent/lead', 'update team/desk/human/dana-k']);
    expect(dependencies(changes)).toEqual([[1], []]);
    // An agent whose approver stays needs nothing first.
    const other = desiredOf({ ...leadTools, team: false, approval: { by: 'dana', tools: ['tracker.create_issue'] } });
    expect(dependencies(computePlan(other, observed(leadAgent(), other)).changes)).toEqual([[]]);
  });
});

describe('agents\' tools in export', () => {
  it('export: maxSteps (when not 10) and tools come back in the file\'s form — durations in their largest exact unit, header values as references named after server and header — and planning the export with those variables set to the live values changes nothing', () => {
    const lead = leadAgent({ max_steps: 12, tools: liveTools(TOKEN, { ask_timeout_seconds: 7_200 }) });
    const live: ObservedState = { organization: org, providerKeys: [], teams: [{ team, agents: [lead, leadAgent({ agent_id: 'a2', name: 'plain', tools: null })], humans: [dana], edges: [{ edge_id: 'e1', team_id: 't1', participants: ['h1', 'a1'], created_at: at }] }] };
    const exported = exportDefinition({ ...live, organization: org });
    const agents = (exported.definition.teams as Array<{ agents: unknown[] }>)[0]!.agents;
    expect(agents[0]).toEqual({
      name: 'lead',
      provider: 'openai',
      model: 'gpt-4o-mini',
      maxSteps: 12,
      tools: {
        team: true,
        askTimeout: '2h',
        toolTimeout: '90s',
        mcp: [{ name: 'tracker', url: 'https://mcp.tracker.example/mcp', headers: { Authorization: '${env:TRACKER_AUTHORIZATION}' }, allow: ['create_issue', 'search_issues'] }],
        approval: { by: 'dana', tools: ['send_message', 'tracker.create_issue'] },
      },
    });
    expect(agents[1]).toEqual({ name: 'plain', provider: 'openai', model: 'gpt-4o-mini' });
    expect(exported.toolHeaders).toEqual([{ team: 'desk', agent: 'lead', server: 'tracker', header: 'Authorization', variable: 'TRACKER_AUTHORIZATION' }]);

    const desired = desiredState(DefinitionSchema.parse(exported.definition));
    const judged = (env: Record<string, string>): ObservedState => ({ ...live, teams: live.teams.map((t) => judgeHeaders(t, resolveAgentHeaders(agentHeaderRefs(desired), env))) });
    expect(computePlan(desired, judged({ TRACKER_AUTHORIZATION: TOKEN })).changes).toEqual([]);
    // Another value in the variable is planned as the update that sets it.
    expect(computePlan(desired, judged({ TRACKER_AUTHORIZATION: 'Bearer other' })).changes).toMatchObject([{ action: 'update', diff: { tools: { sensitiveChanges: ['mcp[tracker].headers.Authorization'] } } }]);
  });

  it('export: tools holding only defaults are written as {}, and two agents with a server and header of the same names get variables named after their team and agent too', () => {
    const bare: AgentTools = { team: false, ask_timeout_seconds: 86_400, tool_timeout_seconds: 60, mcp: [], approval: null };
    const server = (value: string): AgentTools => ({ ...bare, mcp: [{ name: 'tracker', url: 'https://mcp.tracker.example/mcp', allow: null, header_fingerprints: { 'X-Api-Key': secretFingerprint(value) } }] });
    const live: ObservedState = {
      organization: org,
      providerKeys: [],
      teams: [{ team, agents: [leadAgent({ tools: server('a') }), leadAgent({ agent_id: 'a2', name: 'scout', tools: server('b') }), leadAgent({ agent_id: 'a3', name: 'idle', tools: bare })], humans: [], edges: [] }],
    };
    const exported = exportDefinition({ ...live, organization: org });
    expect(exported.toolHeaders.map((h) => h.variable)).toEqual(['DESK_LEAD_TRACKER_X_API_KEY', 'DESK_SCOUT_TRACKER_X_API_KEY']);
    const agents = (exported.definition.teams as Array<{ agents: Array<{ tools?: unknown }> }>)[0]!.agents;
    expect(agents.map((a) => a.tools)).toEqual([
      { mcp: [{ name: 'tracker', url: 'https://mcp.tracker.example/mcp', headers: { 'X-Api-Key': '${env:DESK_LEAD_TRACKER_X_API_KEY}' } }] },
      { mcp: [{ name: 'tracker', url: 'https://mcp.tracker.example/mcp', headers: { 'X-Api-Key': '${env:DESK_SCOUT_TRACKER_X_API_KEY}' } }] },
      {},
    ]);
    const desired = desiredState(DefinitionSchema.parse(exported.definition));
    const judged = { ...live, teams: live.teams.map((t) => judgeHeaders(t, resolveAgentHeaders(agentHeaderRefs(desired), { DESK_LEAD_TRACKER_X_API_KEY: 'a', DESK_SCOUT_TRACKER_X_API_KEY: 'b' }))) };
    expect(computePlan(desired, judged).changes).toEqual([]);
  });
});

describe('agents\' tools in plan output', () => {
  it('plan output: a tools change reads one line per member that differs, servers by name, header values as (sensitive)', () => {
    const desired = desiredOf(leadTools);
    const live = leadAgent({
      tools: liveTools('Bearer old-token-value', {
        tool_timeout_seconds: 60,
        mcp: [
          { name: 'tracker', url: 'https://mcp.tracker.example/mcp', allow: ['search_issues'], header_fingerprints: { Authorization: secretFingerprint('Bearer old-token-value'), 'X-Team': secretFingerprint('desk') } },
          { name: 'wiki', url: 'https://wiki.example/mcp', allow: null, header_fingerprints: {} },
        ],
      }),
    });
    const text = renderPlan(computePlan(desired, observed(live, desired)).changes);
    expect(text).toBe(
      [
        '  ~ update team/desk/agent/lead',
        '      tools.tool_timeout_seconds: 60 -> 90',
        '      tools.mcp[tracker].headers.X-Team: "(sensitive)" -> null',
        '      tools.mcp[tracker].allow: ["search_issues"] -> ["search_issues","create_issue"]',
        '      tools.mcp[wiki]: {"name":"wiki","url":"https://wiki.example/mcp","headers":{},"allow":null} -> null',
        '      tools.mcp[tracker].headers.Authorization: "(sensitive)" -> "(sensitive)"',
        '',
        'Plan: 0 to create, 1 to update, 0 to delete.',
      ].join('\n'),
    );
    expect(text).not.toMatch(/TRACKER_TOKEN|tr-live|old-token/);
  });

  it('plan output: a new agent shows its tools with header values as (sensitive), and an agent given tools shows them on one line', () => {
    const desired = desiredOf(leadTools);
    const created = renderPlan(computePlan(desired, { organization: org, providerKeys: [], teams: [{ team, agents: [], humans: [dana], edges: [] }] }).changes);
    expect(created).toMatch(/tools: +\{"team":true,.*"headers":\{"Authorization":"\(sensitive\)"\}/);
    expect(created).not.toContain('TRACKER_TOKEN');
    const given = renderPlan(computePlan(desired, observed(leadAgent({ tools: null }), desired)).changes);
    expect(given).toContain('      tools: null -> {"team":true,"ask_timeout_seconds":86400,"tool_timeout_seconds":90,"mcp":[{"name":"tracker","url":"https://mcp.tracker.example/mcp","headers":{"Authorization":"(sensitive)"},"allow":["search_issues","create_issue"]}],"approval":{"by":"dana","tools":["tracker.create_issue","send_message"]}}');
  });
});
