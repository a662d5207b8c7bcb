import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fingerprintMatches } from '../../api/webhook-fingerprint.ts';
import { createApplyActivities } from '../../activities/apply-activities.ts';
import { AcsClient } from '../../client/acs-client.ts';
import { parseDefinition } from '../../definitions/load.ts';
import { agentHeaderRefs } from '../../plan/agent-tools.ts';
import { desiredState } from '../../plan/desired.ts';
import type { AgentWire } from '../../plan/types.ts';
import { startServer } from '../../service/index.ts';
import { readObserved } from '../../workflows/apply-orchestration.ts';
import { runTeamctl } from '../support/cli.ts';

// Agents' tools applied by teamctl (issue 37, teamctl side), against a real acs-server (its
// in-memory storage; private URLs allowed, so an MCP server on loopback is accepted): MCP header
// values set from their ${env:…} references at the moment of the call, compared through the live
// fingerprints, never returned, printed or put in an error.

const TOKEN = 'tr-first-0123456789abcdef';
const ROTATED = 'tr-second-fedcba9876543210';
let server: Awaited<ReturnType<typeof startServer>>;
let apiKey: string;
let orgId: string;
let client: AcsClient;
let dir: string;

beforeAll(async () => {
  server = await startServer({ inMemory: true, port: 0, tickMs: 60_000, logger: false, webhooks: { allowPrivate: true, pollMs: 60_000 } });
  const org = await server.provisionOrganization('agent-tools-tests');
  apiKey = org.api_key;
  orgId = org.org_id;
  client = new AcsClient({ baseUrl: server.url, apiKey });
  dir = await mkdtemp(join(tmpdir(), 'teamctl-agent-tools-'));
});
afterAll(async () => {
  await server?.close();
});

const connection = { baseUrl: '', apiKeyEnv: 'ACS_TEST_KEY' };
const conn = () => ({ ...connection, baseUrl: server.url });

/** The YAML of team `team`'s agent `lead` with a tracker server and approver dana, in organization `org`. */
function definitionText(org: string, team: string, extra = ''): string {
  return `apiVersion: teamctl/v1
organization:
  name: ${org}
teams:
  - name: ${team}
    agents:
      - name: lead
        provider: echo
        maxSteps: 12
        tools:
          team: true
          askTimeout: 2h
          mcp:
            - name: tracker
              url: http://127.0.0.1:9/mcp
              headers:
                Authorization: Bearer \${env:TRACKER_TOKEN}
              allow: [search_issues, create_issue]
          approval:
            by: dana
            tools: [tracker.create_issue, send_message]
${extra}    humans:
      - name: dana
    edges:
      - [dana, lead]
`;
}

/** The desired fields of agent `lead` (templates in its header values), through the same schema and conversion as apply. */
function leadFields(): AgentWire {
  return desiredState(parseDefinition(definitionText('x', 'x'), 'x.yaml')).teams[0]!.agents[0]!.fields;
}

/** A fresh team with human dana, for the agents of one test. */
async function freshTeam(name: string): Promise<string> {
  const team = await client.createTeam(orgId, { team_name: name });
  await client.createHuman(team.team_id, { name: 'dana' });
  return team.team_id;
}

/** A `fetch` that counts the requests it sends. */
function counting(): { fetch: typeof fetch; count: () => number } {
  let n = 0;
  return {
    fetch: (async (...args: Parameters<typeof fetch>) => {
      n++;
      return fetch(...args);
    }) as typeof fetch,
    count: () => n,
  };
}

describe('agents\' tools in the apply activities', () => {
  it('ensure: an agent\'s header templates are resolved at the call and sent as their values; the result holds the id and outcome only', async () => {
    const teamId = await freshTeam('ensure-tools');
    const acts = createApplyActivities({ env: { ACS_TEST_KEY: apiKey, TRACKER_TOKEN: TOKEN } });
    const result = await acts.ensure({ connection: conn(), kind: 'agent', parentId: teamId, fields: leadFields() });
    expect(result).toEqual({ id: expect.any(String), outcome: 'created' });
    const agent = await client.getAgent(result.id);
    expect(agent).toMatchObject({ max_steps: 12, tools: { team: true, ask_timeout_seconds: 7_200, tool_timeout_seconds: 60, approval: { by: 'dana', tools: ['tracker.create_issue', 'send_message'] } } });
    expect(agent.tools!.mcp).toEqual([{ name: 'tracker', url: 'http://127.0.0.1:9/mcp', allow: ['search_issues', 'create_issue'], header_fingerprints: { Authorization: expect.any(String) } }]);
    expect(fingerprintMatches(agent.tools!.mcp[0]!.header_fingerprints['Authorization']!, `Bearer ${TOKEN}`)).toBe(true);
  });

  it('ensure: run again, it adopts the agent unchanged while the header value is the same, and sets it when the variable holds another', async () => {
    const teamId = await freshTeam('adopt-tools');
    const same = createApplyActivities({ env: { ACS_TEST_KEY: apiKey, TRACKER_TOKEN: TOKEN } });
    const created = await same.ensure({ connection: conn(), kind: 'agent', parentId: teamId, fields: leadFields() });
    expect(await same.ensure({ connection: conn(), kind: 'agent', parentId: teamId, fields: leadFields() })).toEqual({ id: created.id, outcome: 'unchanged' });
    const rotated = createApplyActivities({ env: { ACS_TEST_KEY: apiKey, TRACKER_TOKEN: ROTATED } });
    expect(await rotated.ensure({ connection: conn(), kind: 'agent', parentId: teamId, fields: leadFields() })).toEqual({ id: created.id, outcome: 'updated' });
    const fingerprint = (await client.getAgent(created.id)).tools!.mcp[0]!.header_fingerprints['Authorization']!;
    expect(fingerprintMatches(fingerprint, `Bearer ${ROTATED}`)).toBe(true);
  });

  it('ensure and update: an unset variable is a non-retryable unresolved_secret naming it, raised before any request', async () => {
    const teamId = await freshTeam('unset-tools');
    const sent = counting();
    const acts = createApplyActivities({ env: { ACS_TEST_KEY: apiKey, OTHER: 'sk-other-value-4321' }, fetch: sent.fetch });
    for (const call of [
      () => acts.ensure({ connection: conn(), kind: 'agent', parentId: teamId, fields: leadFields() }),
      () => acts.update({ connection: conn(), kind: 'agent', id: '00000000-0000-4000-8000-000000000000', patch: { tools: leadFields().tools } }),
    ]) {
      const error = await call().catch((e: unknown) => e as Error);
      expect(error).toMatchObject({ type: 'unresolved_secret', nonRetryable: true });
      expect((error as Error).message).toContain('TRACKER_TOKEN');
      expect((error as Error).message).not.toContain('sk-other');
    }
    expect(sent.count()).toBe(0);
  });

  it('update: a value with a line break is refused as invalid_usage naming the header and the variable, never the value, before any request', async () => {
    const sent = counting();
    const acts = createApplyActivities({ env: { ACS_TEST_KEY: apiKey, TRACKER_TOKEN: 'line-one\r\nX-Injected: yes' }, fetch: sent.fetch });
    const error = await acts.update({ connection: conn(), kind: 'agent', id: '00000000-0000-4000-8000-000000000000', patch: { tools: leadFields().tools } }).catch((e: unknown) => e as Error);
    expect(error).toMatchObject({ type: 'invalid_usage' });
    expect((error as Error).message).toContain('header Authorization of MCP server tracker');
    expect((error as Error).message).toContain('TRACKER_TOKEN');
    expect((error as Error).message).not.toContain('line-one');
    expect(sent.count()).toBe(0);
  });

  it('readTeam: with the desired header templates, each live header value is judged by its fingerprint, and no value is returned', async () => {
    const teamId = await freshTeam('read-tools');
    await createApplyActivities({ env: { ACS_TEST_KEY: apiKey, TRACKER_TOKEN: TOKEN } }).ensure({ connection: conn(), kind: 'agent', parentId: teamId, fields: leadFields() });
    const desired = desiredState(parseDefinition(definitionText('agent-tools-tests', 'read-tools'), 'x.yaml'));
    const read = (token: string) => createApplyActivities({ env: { ACS_TEST_KEY: apiKey, TRACKER_TOKEN: token } }).readTeam({ connection: conn(), teamId, toolHeaders: agentHeaderRefs(desired) });
    const same = await read(TOKEN);
    expect(same.agents[0]!.headerMatches).toEqual({ tracker: { Authorization: true } });
    const other = await read(ROTATED);
    expect(other.agents[0]!.headerMatches).toEqual({ tracker: { Authorization: false } });
    expect(JSON.stringify([same, other])).not.toMatch(/tr-first|tr-second/);
    // Without templates (destroy, an older apply) nothing is judged.
    expect((await createApplyActivities({ env: { ACS_TEST_KEY: apiKey } }).readTeam({ connection: conn(), teamId })).agents[0]).not.toHaveProperty('headerMatches');
  });
});

describe('agents\' tools in the reads of an apply', () => {
  it('readObserved: the batched reads of the Temporal workflow and the per-team reads of the local engine judge header values alike, and destroy\'s reads judge none', async () => {
    const teamId = await freshTeam('batched-read');
    await createApplyActivities({ env: { ACS_TEST_KEY: apiKey, TRACKER_TOKEN: TOKEN } }).ensure({ connection: conn(), kind: 'agent', parentId: teamId, fields: leadFields() });
    const desired = desiredState(parseDefinition(definitionText('agent-tools-tests', 'batched-read'), 'x.yaml'));
    const lead = (state: Awaited<ReturnType<typeof readObserved>>) => state.teams.find((t) => t.team.team_name === 'batched-read')!.agents.find((a) => a.name === 'lead')!;
    for (const [token, verdict] of [[TOKEN, true], [ROTATED, false]] as const) {
      const acts = createApplyActivities({ env: { ACS_TEST_KEY: apiKey, TRACKER_TOKEN: token } });
      const batched = await readObserved(acts, conn(), desired, 8, true, true);
      const perTeam = await readObserved(acts, conn(), desired, 8, true, false);
      expect(lead(batched).headerMatches).toEqual({ tracker: { Authorization: verdict } });
      expect(lead(perTeam).headerMatches).toEqual({ tracker: { Authorization: verdict } });
      // The other teams' agents named lead are not the definition's: nothing is judged for them.
      expect(perTeam.teams.filter((t) => t.team.team_name !== 'batched-read').flatMap((t) => t.agents).some((a) => 'headerMatches' in a)).toBe(false);
    }
    const destroying = await readObserved(createApplyActivities({ env: { ACS_TEST_KEY: apiKey } }), conn(), desired, 8, false, false);
    expect(lead(destroying)).not.toHaveProperty('headerMatches');
  });
});

describe('agents\' tools in plan, apply and export', () => {
  const teamctl = (args: string[], env: Record<string, string> = {}) => runTeamctl(args, { ACS_BASE_URL: server.url, ACS_API_KEY: apiKey, TRACKER_TOKEN: TOKEN, ...env });
  const write = async (name: string, text: string) => {
    const file = join(dir, `${name}.yaml`);
    await writeFile(file, text);
    return file;
  };
  const liveLead = async (org: string) => {
    const found = (await client.listOrganizations()).find((o) => o.org_name === org)!;
    const team = (await client.listTeams(found.org_id))[0]!;
    return (await client.getTeam(team.team_id)).agents.find((a) => a.name === 'lead')!;
  };

  it('apply: creates the approver before the agent that names it, sets the header value from its reference, and a second plan shows no change; no value is printed', async () => {
    const file = await write('tools-create', definitionText('tools-create', 'desk'));
    const plan = await teamctl(['plan', '-f', file]);
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.stdout).toContain('+ create team/desk/agent/lead');
    expect(plan.stdout).toContain('"headers":{"Authorization":"(sensitive)"}');
    const applied = await teamctl(['apply', '-f', file, '--json']);
    expect(applied.code, applied.stderr).toBe(0);
    for (const text of [plan.stdout, plan.stderr, applied.stdout, applied.stderr]) expect(text).not.toContain(TOKEN);
    const lead = await liveLead('tools-create');
    expect(lead).toMatchObject({ max_steps: 12, tools: { team: true, ask_timeout_seconds: 7_200, approval: { by: 'dana' } } });
    expect(fingerprintMatches(lead.tools!.mcp[0]!.header_fingerprints['Authorization']!, `Bearer ${TOKEN}`)).toBe(true);
    expect((await teamctl(['plan', '-f', file])).stdout).toContain('No changes.');
  });

  it('plan and apply: another value in the variable and a drifted allow list are one update, shown with the value as (sensitive), which apply makes', async () => {
    const file = await write('tools-drift', definitionText('tools-drift', 'desk'));
    expect((await teamctl(['apply', '-f', file])).code).toBe(0);
    const lead = await liveLead('tools-drift');
    await client.updateAgent(lead.agent_id, { tools: { ...lead.tools!, mcp: [{ name: 'tracker', url: 'http://127.0.0.1:9/mcp', allow: ['search_issues', 'create_issue', 'delete_issue'] }] } });
    const plan = await teamctl(['plan', '-f', file], { TRACKER_TOKEN: ROTATED });
    expect(plan.stdout).toContain('~ update team/desk/agent/lead');
    expect(plan.stdout).toContain('tools.mcp[tracker].allow: ["search_issues","create_issue","delete_issue"] -> ["search_issues","create_issue"]');
    expect(plan.stdout).toContain('tools.mcp[tracker].headers.Authorization: "(sensitive)" -> "(sensitive)"');
    const applied = await teamctl(['apply', '-f', file], { TRACKER_TOKEN: ROTATED });
    expect(applied.code, applied.stderr).toBe(0);
    expect(plan.stdout + plan.stderr + applied.stdout + applied.stderr).not.toMatch(/tr-first|tr-second/);
    const after = await liveLead('tools-drift');
    expect(after.tools!.mcp[0]!.allow).toEqual(['search_issues', 'create_issue']);
    expect(fingerprintMatches(after.tools!.mcp[0]!.header_fingerprints['Authorization']!, `Bearer ${ROTATED}`)).toBe(true);
    expect((await teamctl(['plan', '-f', file], { TRACKER_TOKEN: ROTATED })).stdout).toContain('No changes.');
  });

  it('plan: an unset header variable fails before any request with unresolved_secret naming it', async () => {
    const file = await write('tools-unset', definitionText('tools-unset', 'desk'));
    const env = { ACS_BASE_URL: server.url, ACS_API_KEY: apiKey };
    const result = await runTeamctl(['plan', '-f', file], env);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('unresolved_secret');
    expect(result.stderr).toContain('TRACKER_TOKEN');
  });

  it('export: writes maxSteps and tools with the header value as a reference named after server and header, lists the variable, and planning the export with it set to the live value shows no change', async () => {
    const file = await write('tools-export', definitionText('tools-export', 'desk'));
    expect((await teamctl(['apply', '-f', file])).code).toBe(0);
    const out = join(dir, 'tools-exported.yaml');
    const exported = await teamctl(['export', '--org', 'tools-export', '-o', out]);
    expect(exported.code, exported.stderr).toBe(0);
    expect(exported.stderr).toContain('export: agent desk/lead: set TRACKER_AUTHORIZATION to the value of header Authorization of MCP server tracker');
    const text = await readFile(out, 'utf8');
    expect(text).toContain('maxSteps: 12');
    expect(text).toContain('askTimeout: 2h');
    expect(text).toContain('Authorization: ${env:TRACKER_AUTHORIZATION}');
    expect(text).toContain('set TRACKER_AUTHORIZATION');
    expect(text).not.toContain(TOKEN);
    expect((await teamctl(['plan', '-f', out], { TRACKER_AUTHORIZATION: `Bearer ${TOKEN}` })).stdout).toContain('No changes.');
    expect((await teamctl(['plan', '-f', out], { TRACKER_AUTHORIZATION: `Bearer ${ROTATED}` })).stdout).toContain('tools.mcp[tracker].headers.Authorization: "(sensitive)" -> "(sensitive)"');
  });
});
