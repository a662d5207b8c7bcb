/**
 * Remote A2A agents as code (issue 38, "A2A participants", the teamctl side), against a real
 * acs-server (in-memory storage; private URLs allowed, as `--webhook-allow-private` does, so a
 * remote on loopback is accepted) and a remote agent's card served by `@a2a-js/sdk`'s own card
 * handler on a loopback port: `plan` shows the card's name and skills, `apply` reads and checks
 * the card before it creates or changes the agent, `validate --remote` fails on a card that does
 * not parse, and `export` writes `a2a` with its header value as a reference. The header value is
 * resolved only in the activities: never printed, never in a plan.
 */
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AgentCard } from '@a2a-js/sdk';
import { agentCardHandler } from '@a2a-js/sdk/server/express';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fingerprintMatches } from '../../api/webhook-fingerprint.ts';
import { createApplyActivities } from '../../activities/apply-activities.ts';
import { AcsClient } from '../../client/acs-client.ts';
import { parseDefinition } from '../../definitions/load.ts';
import { desiredState } from '../../plan/desired.ts';
import type { AgentWire } from '../../plan/types.ts';
import { startServer } from '../../service/index.ts';
import { runTeamctl } from '../support/cli.ts';

const TOKEN = 'scout-first-0123456789abcdef';
const ROTATED = 'scout-second-fedcba9876543210';
let server: Awaited<ReturnType<typeof startServer>>;
let apiKey: string;
let orgId: string;
let client: AcsClient;
let dir: string;
let remote: Server;
let origin: string;
/** The Authorization header of each card request the remote received. */
const cardAuth: Array<string | undefined> = [];

/** A card as `@a2a-js/sdk` types it: `name`, two skills, the JSON-RPC interface at `base`. */
function cardOf(name: string, base: string): AgentCard {
  return {
    name,
    description: 'A scout of another framework, reached over A2A.',
    supportedInterfaces: [{ url: base, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' }],
    provider: undefined,
    version: '1.0.0',
    capabilities: { streaming: true, pushNotifications: false, extensions: [] },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [
      { id: 'search', name: 'Web search', description: 'Finds pages', tags: [], examples: [], inputModes: [], outputModes: [], securityRequirements: [] },
      { id: 'summarize', name: 'Summarize', description: 'Makes it short', tags: [], examples: [], inputModes: [], outputModes: [], securityRequirements: [] },
    ],
    signatures: [],
  };
}

beforeAll(async () => {
  server = await startServer({ inMemory: true, port: 0, tickMs: 60_000, logger: false, webhooks: { allowPrivate: true, pollMs: 60_000 } });
  const org = await server.provisionOrganization('remote-a2a-tests');
  apiKey = org.api_key;
  orgId = org.org_id;
  client = new AcsClient({ baseUrl: server.url, apiKey });
  dir = await mkdtemp(join(tmpdir(), 'teamctl-remote-a2a-'));
  const app = express();
  app.use((req, res, next) => {
    if (req.path.endsWith('/agent-card.json')) cardAuth.push(req.headers.authorization);
    // The scout's card is behind its header, as a remote that authenticates its callers.
    if (req.path.startsWith('/scout') && req.headers.authorization !== `Bearer ${TOKEN}` && req.headers.authorization !== `Bearer ${ROTATED}`) {
      res.status(401).json({ error: 'unauthenticated' });
      return;
    }
    next();
  });
  app.use('/scout/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: async () => cardOf('Scout', `${origin}/scout`) }));
  app.use('/scout-two/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: async () => cardOf('Scout Two', `${origin}/scout-two`) }));
  // A card without interfaces: JSON, but no A2A Agent Card.
  app.get('/broken/.well-known/agent-card.json', (_req, res) => {
    res.json({ name: 'Broken', skills: [{ id: 'x' }] });
  });
  remote = await new Promise<Server>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  origin = `http://127.0.0.1:${(remote.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise<void>((resolve) => remote?.close(() => resolve()));
  await server?.close();
});

const conn = () => ({ baseUrl: server.url, apiKeyEnv: 'ACS_TEST_KEY' });

/** The YAML of team `team` with remote agent `scout` at `path` of the card server (with its header), human dana, and their edge. */
function definitionText(org: string, team: string, path = 'scout'): string {
  return `apiVersion: teamctl/v1
organization:
  name: ${org}
teams:
  - name: ${team}
    agents:
      - name: scout
        description: Finds things
        a2a:
          url: ${origin}/${path}
          headers:
            Authorization: Bearer \${env:SCOUT_TOKEN}
    humans:
      - name: dana
    edges:
      - [dana, scout]
`;
}

/** The desired fields of agent `scout`, through the same schema and conversion as apply. */
function scoutFields(path = 'scout'): AgentWire {
  return desiredState(parseDefinition(definitionText('x', 'x', path), 'x.yaml')).teams[0]!.agents[0]!.fields;
}

/** A `fetch` that records the method of each request it sends. */
function recording(): { fetch: typeof fetch; methods: string[] } {
  const methods: string[] = [];
  return {
    fetch: (async (input: Parameters<typeof fetch>[0], init?: RequestInit) => {
      methods.push((init?.method ?? (input instanceof Request ? input.method : 'GET')).toUpperCase());
      return fetch(input, init);
    }) as typeof fetch,
    methods,
  };
}

describe('remote A2A agents in the apply activities', () => {
  it('ensure: reads the card with the agent\'s header, creates the remote agent with the header value fingerprinted, and a second ensure sends no mutating request', async () => {
    const team = await client.createTeam(orgId, { team_name: 'ensure-remote' });
    const acts = createApplyActivities({ env: { ACS_TEST_KEY: apiKey, SCOUT_TOKEN: TOKEN } });
    const before = cardAuth.length;
    const created = await acts.ensure({ connection: conn(), kind: 'agent', parentId: team.team_id, fields: scoutFields() });
    expect(created).toEqual({ id: expect.any(String), outcome: 'created' });
    expect(cardAuth.slice(before)).toEqual([`Bearer ${TOKEN}`]);
    const agent = await client.getAgent(created.id);
    expect(agent).toMatchObject({ provider: null, tools: null, a2a: { url: `${origin}/scout`, header_fingerprints: { Authorization: expect.any(String) } } });
    expect(fingerprintMatches(agent.a2a!.header_fingerprints['Authorization']!, `Bearer ${TOKEN}`)).toBe(true);

    const sent = recording();
    const again = createApplyActivities({ env: { ACS_TEST_KEY: apiKey, SCOUT_TOKEN: TOKEN }, fetch: sent.fetch });
    expect(await again.ensure({ connection: conn(), kind: 'agent', parentId: team.team_id, fields: scoutFields() })).toEqual({ id: created.id, outcome: 'unchanged' });
    // The create is answered 409 (the name is taken) and changes nothing; no PATCH follows.
    expect(sent.methods.filter((m) => m !== 'GET' && m !== 'POST')).toEqual([]);
    expect(sent.methods.filter((m) => m === 'POST')).toHaveLength(1);
  });

  it('ensure and update: a card that does not parse is a non-retryable invalid_agent_card naming the card\'s URL, and nothing is sent to the service', async () => {
    const team = await client.createTeam(orgId, { team_name: 'broken-remote' });
    const sent = recording();
    const acts = createApplyActivities({ env: { ACS_TEST_KEY: apiKey, SCOUT_TOKEN: TOKEN }, fetch: sent.fetch });
    for (const call of [
      () => acts.ensure({ connection: conn(), kind: 'agent', parentId: team.team_id, fields: scoutFields('broken') }),
      () => acts.update({ connection: conn(), kind: 'agent', id: '00000000-0000-4000-8000-000000000000', patch: { a2a: scoutFields('broken').a2a! } }),
    ]) {
      const error = await call().catch((e: unknown) => e as Error);
      expect(error).toMatchObject({ type: 'invalid_agent_card', nonRetryable: true });
      expect((error as Error).message).toContain(`the Agent Card at ${origin}/broken/.well-known/agent-card.json does not parse: supportedInterfaces`);
      expect((error as Error).message).not.toContain(TOKEN);
    }
    // Only the two card reads: no request reached the service.
    expect(sent.methods).toEqual(['GET', 'GET']);
    expect((await client.getTeam(team.team_id)).agents).toEqual([]);
  });

  it('readAgentCards: the card\'s name and skills, or the problem naming its URL; never a header value', async () => {
    const acts = createApplyActivities({ env: { SCOUT_TOKEN: TOKEN } });
    const headers = { Authorization: 'Bearer ${env:SCOUT_TOKEN}' };
    const verdicts = await acts.readAgentCards({ agents: [{ url: `${origin}/scout`, headers }, { url: `${origin}/broken`, headers }, { url: `${origin}/scout`, headers: {} }] });
    expect(verdicts[0]).toEqual({
      url: `${origin}/scout`,
      cardUrl: `${origin}/scout/.well-known/agent-card.json`,
      ok: true,
      card: { name: 'Scout', description: 'A scout of another framework, reached over A2A.', streaming: true, skills: [{ id: 'search', name: 'Web search' }, { id: 'summarize', name: 'Summarize' }] },
    });
    expect(verdicts[1]).toMatchObject({ ok: false, problem: expect.stringContaining(`${origin}/broken/.well-known/agent-card.json does not parse`) });
    expect(verdicts[2]).toMatchObject({ ok: false, problem: `the Agent Card at ${origin}/scout/.well-known/agent-card.json cannot be read: the remote answered 401` });
    expect(JSON.stringify(verdicts)).not.toContain(TOKEN);
  });
});

describe('remote A2A agents in plan, apply, validate and export', () => {
  const teamctl = (args: string[], env: Record<string, string> = {}) => runTeamctl(args, { ACS_BASE_URL: server.url, ACS_API_KEY: apiKey, SCOUT_TOKEN: TOKEN, ...env });
  const write = async (name: string, text: string) => {
    const file = join(dir, `${name}.yaml`);
    await writeFile(file, text);
    return file;
  };
  const liveScout = async (org: string) => {
    const found = (await client.listOrganizations()).find((o) => o.org_name === org)!;
    const team = (await client.listTeams(found.org_id))[0]!;
    return (await client.getTeam(team.team_id)).agents.find((a) => a.name === 'scout');
  };

  it('plan: shows the remote agent\'s card name and skills; apply creates it; a second plan shows no change and a second apply changes nothing; the header value is never printed', async () => {
    const file = await write('remote-create', definitionText('remote-create', 'desk'));
    const plan = await teamctl(['plan', '-f', file]);
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.stdout).toContain('+ create team/desk/agent/scout');
    expect(plan.stdout).toContain('"headers":{"Authorization":"(sensitive)"}');
    expect(plan.stdout).toContain('Remote A2A agents (from their Agent Cards):');
    expect(plan.stdout).toContain('team/desk/agent/scout: Scout (streams) — skills: search (Web search), summarize (Summarize)');
    const applied = await teamctl(['apply', '-f', file, '--json']);
    expect(applied.code, applied.stderr).toBe(0);
    expect(JSON.parse(applied.stdout).applied).toContainEqual(expect.objectContaining({ address: 'team/desk/agent/scout', outcome: 'created' }));
    const scout = await liveScout('remote-create');
    expect(scout?.a2a?.url).toBe(`${origin}/scout`);
    expect(fingerprintMatches(scout!.a2a!.header_fingerprints['Authorization']!, `Bearer ${TOKEN}`)).toBe(true);
    const second = await teamctl(['plan', '-f', file, '--json']);
    expect(JSON.parse(second.stdout)).toMatchObject({ changes: [], remote_agents: [{ address: 'team/desk/agent/scout', card: { name: 'Scout' } }] });
    const again = await teamctl(['apply', '-f', file, '--json']);
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout).applied).toEqual([]);
    for (const text of [plan.stdout, plan.stderr, applied.stdout, applied.stderr, second.stdout, second.stderr, again.stdout, again.stderr]) expect(text).not.toContain(TOKEN);
  });

  it('plan and apply: a new URL and another header value are one update of a2a, the value shown as (sensitive), which apply makes', async () => {
    const file = await write('remote-drift', definitionText('remote-drift', 'desk'));
    expect((await teamctl(['apply', '-f', file])).code).toBe(0);
    const moved = await write('remote-drift', definitionText('remote-drift', 'desk', 'scout-two'));
    const plan = await teamctl(['plan', '-f', moved], { SCOUT_TOKEN: ROTATED });
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.stdout).toContain('~ update team/desk/agent/scout');
    expect(plan.stdout).toContain(`a2a.url: "${origin}/scout" -> "${origin}/scout-two"`);
    expect(plan.stdout).toContain('a2a.headers.Authorization: "(sensitive)" -> "(sensitive)"');
    expect(plan.stdout).toContain('team/desk/agent/scout: Scout Two (streams)');
    const applied = await teamctl(['apply', '-f', moved], { SCOUT_TOKEN: ROTATED });
    expect(applied.code, applied.stderr).toBe(0);
    expect(plan.stdout + plan.stderr + applied.stdout + applied.stderr).not.toMatch(/scout-first|scout-second/);
    const scout = await liveScout('remote-drift');
    expect(scout?.a2a?.url).toBe(`${origin}/scout-two`);
    expect(fingerprintMatches(scout!.a2a!.header_fingerprints['Authorization']!, `Bearer ${ROTATED}`)).toBe(true);
    expect((await teamctl(['plan', '-f', moved], { SCOUT_TOKEN: ROTATED })).stdout).toContain('No changes.');
  });

  it('a card that does not parse: plan warns and succeeds, apply fails with invalid_agent_card naming the URL and creates no remote agent, validate --remote fails naming it', async () => {
    const file = await write('remote-broken', definitionText('remote-broken', 'desk', 'broken'));
    const cardUrl = `${origin}/broken/.well-known/agent-card.json`;
    const plan = await teamctl(['plan', '-f', file]);
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.stderr).toContain(`warning: ${file}:10:16: team/desk/agent/scout: the Agent Card at ${cardUrl} does not parse: supportedInterfaces`);
    const applied = await teamctl(['apply', '-f', file]);
    expect(applied.code).not.toBe(0);
    expect(applied.stderr).toContain('invalid_agent_card');
    expect(applied.stderr).toContain(cardUrl);
    expect(await liveScout('remote-broken')).toBeUndefined();
    const validated = await teamctl(['validate', '-f', file, '--remote']);
    expect(validated.code).toBe(1);
    expect(validated.stderr).toContain(`${file}:10:16: team/desk/agent/scout: the Agent Card at ${cardUrl} does not parse`);
    expect(validated.stderr).toContain(`error[invalid_agent_card]`);
    // Without --remote, validate contacts nothing and the file is valid.
    expect((await teamctl(['validate', '-f', file])).code).toBe(0);
    for (const text of [plan.stderr, applied.stderr, validated.stderr]) expect(text).not.toContain(TOKEN);
  });

  it('validate --remote: a card that parses is printed with its name and skills, exit 0', async () => {
    const file = await write('remote-valid', definitionText('remote-valid', 'desk'));
    const validated = await teamctl(['validate', '-f', file, '--remote']);
    expect(validated.code, validated.stderr).toBe(0);
    expect(validated.stdout).toContain(`${file}: remote A2A agent team/desk/agent/scout: Scout (streams) — skills: search (Web search), summarize (Summarize)`);
  });

  it('export: writes a2a with the header value as a reference, lists the variable, and planning the export with it set to the live value shows no change', async () => {
    const file = await write('remote-export', definitionText('remote-export', 'desk'));
    expect((await teamctl(['apply', '-f', file])).code).toBe(0);
    const out = join(dir, 'remote-exported.yaml');
    const exported = await teamctl(['export', '--org', 'remote-export', '-o', out]);
    expect(exported.code, exported.stderr).toBe(0);
    expect(exported.stderr).toContain('export: agent desk/scout: set A2A_AUTHORIZATION to the value of header Authorization of the remote A2A agent');
    const text = await readFile(out, 'utf8');
    expect(text).toContain(`url: ${origin}/scout`);
    expect(text).toContain('Authorization: ${env:A2A_AUTHORIZATION}');
    expect(text).not.toContain(TOKEN);
    expect(text).not.toMatch(/provider:|tools:/);
    expect((await teamctl(['plan', '-f', out], { A2A_AUTHORIZATION: `Bearer ${TOKEN}` })).stdout).toContain('No changes.');
  });
});
