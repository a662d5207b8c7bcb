import { MockActivityEnvironment } from '@temporalio/testing';
import { ApplicationFailure } from '@temporalio/common';
import nock from 'nock';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createApplyActivities } from '../../activities/apply-activities.ts';
import { applyLocally } from '../../engine/local-engine.ts';
import { syntheticDefinition } from '../support/synthetic.ts';
import { startServer } from '../../service/index.ts';
import { quietLogger } from '../support/quiet-temporal.ts';

let server: Awaited<ReturnType<typeof startServer>>;
let env: NodeJS.ProcessEnv;
let orgId: string;

beforeAll(async () => {
  server = await startServer({ inMemory: true, port: 0, tickMs: 60_000, logger: false });
  const org = await server.provisionOrganization('activity-tests');
  orgId = org.org_id;
  env = { ACS_TEST_KEY: org.api_key };
});

afterAll(async () => {
  await server?.close();
});

afterEach(() => {
  nock.cleanAll();
  nock.enableNetConnect();
});

describe('apply activities', () => {
  it('ensure: run twice in a Temporal activity context, creates a team once and then adopts the same team', async () => {
    const acts = createApplyActivities({ env });
    const input = { connection: { baseUrl: server.url, apiKeyEnv: 'ACS_TEST_KEY' }, kind: 'team' as const, parentId: orgId, fields: { team_name: 'ops', description: 'On call', deletion_protection: false } };
    const first = (await new MockActivityEnvironment().run(acts.ensure, input)) as { id: string; outcome: string };
    const second = await new MockActivityEnvironment().run(acts.ensure, input);
    expect(first.outcome).toBe('created');
    expect(second).toEqual({ id: first.id, outcome: 'unchanged' });
  });

  it('ensure: a conflicting team with drifted fields is adopted and updated', async () => {
    const acts = createApplyActivities({ env });
    const connection = { baseUrl: server.url, apiKeyEnv: 'ACS_TEST_KEY' };
    const created = await acts.ensure({ connection, kind: 'team', parentId: orgId, fields: { team_name: 'drifty', description: 'old', deletion_protection: false } });
    const adopted = await acts.ensure({ connection, kind: 'team', parentId: orgId, fields: { team_name: 'drifty', description: 'new', deletion_protection: false } });
    expect(adopted).toEqual({ id: created.id, outcome: 'updated' });
  });

  it('ensure: a 404 becomes a non-retryable ApplicationFailure of type not_found', async () => {
    const acts = createApplyActivities({ env });
    const input = { connection: { baseUrl: server.url, apiKeyEnv: 'ACS_TEST_KEY' }, kind: 'team' as const, parentId: '00000000-0000-4000-8000-000000000000', fields: { team_name: 'x', description: '', deletion_protection: false } };
    // A failure on purpose: the SDK's warning about it stays out of the report.
    const error = await new MockActivityEnvironment(undefined, { logger: quietLogger }).run(acts.ensure, input).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApplicationFailure);
    expect(error).toMatchObject({ type: 'not_found', nonRetryable: true });
  });

  it('ensure: an organization\'s 429 becomes a retryable ApplicationFailure that waits Retry-After', async () => {
    nock('http://acs.test').post('/api/v1/organizations').reply(429, { code: 'rate_limited', detail: 'slow down' }, { 'retry-after': '7' });
    const acts = createApplyActivities({ env });
    const error = await acts.ensure({ connection: { baseUrl: 'http://acs.test', apiKeyEnv: 'ACS_TEST_KEY' }, kind: 'organization', parentId: '', fields: { org_name: 'x', deletion_protection: false } }).catch((e: unknown) => e);
    expect(error).toMatchObject({ type: 'rate_limited', nonRetryable: false, nextRetryDelay: 7000 });
  });

  it('activities: a missing organization key is a non-retryable unresolved_secret naming the variable, not a value', async () => {
    const acts = createApplyActivities({ env: {} });
    const error = await acts.ensure({ connection: { baseUrl: server.url, apiKeyEnv: 'ACS_TEST_KEY' }, kind: 'organization', parentId: '', fields: { org_name: 'x', deletion_protection: false } }).catch((e: unknown) => e);
    expect(error).toMatchObject({ type: 'unresolved_secret', nonRetryable: true });
    expect((error as Error).message).toContain('ACS_TEST_KEY');
  });

  it('runSteps: makes its steps in order in a Temporal activity context, retrying a 503 after its Retry-After, and returns each result', async () => {
    const connection = { baseUrl: 'http://acs.test', apiKeyEnv: 'ACS_TEST_KEY' };
    const refusedAt: number[] = [];
    nock('http://acs.test')
      .post('/api/v1/organizations/o1/teams').reply(201, { team_id: 't1', team_name: 'a' })
      .post('/api/v1/organizations/o1/teams').reply(() => {
        refusedAt.push(Date.now());
        return [503, { code: 'unavailable' }, { 'retry-after': '1' }];
      })
      .post('/api/v1/organizations/o1/teams').reply(() => {
        refusedAt.push(Date.now());
        return [201, { team_id: 't2', team_name: 'b' }];
      });
    nock.disableNetConnect();
    const acts = createApplyActivities({ env });
    const steps = [
      { op: 'ensure' as const, input: { connection, kind: 'team' as const, parentId: 'o1', fields: { team_name: 'a', description: '', deletion_protection: false } } },
      { op: 'ensure' as const, input: { connection, kind: 'team' as const, parentId: 'o1', fields: { team_name: 'b', description: '', deletion_protection: false } } },
    ];
    const results = await new MockActivityEnvironment().run(acts.runSteps, { steps });
    expect(results).toEqual([{ id: 't1', outcome: 'created' }, { id: 't2', outcome: 'created' }]);
    expect(refusedAt[1]! - refusedAt[0]!).toBeGreaterThanOrEqual(1000);
  });

  it('runSteps: a step that fails for good ends the batch with a non-retryable failure of its code, and later steps are not sent', async () => {
    const connection = { baseUrl: 'http://acs.test', apiKeyEnv: 'ACS_TEST_KEY' };
    const scope = nock('http://acs.test').post('/api/v1/organizations/o1/teams', { team_name: 'a', description: '', deletion_protection: false }).reply(404, { code: 'not_found', detail: 'no such organization' });
    const later = nock('http://acs.test').post('/api/v1/organizations/o1/teams', { team_name: 'b', description: '', deletion_protection: false }).reply(201, { team_id: 't2', team_name: 'b' });
    nock.disableNetConnect();
    const acts = createApplyActivities({ env });
    const steps = [
      { op: 'ensure' as const, input: { connection, kind: 'team' as const, parentId: 'o1', fields: { team_name: 'a', description: '', deletion_protection: false } } },
      { op: 'ensure' as const, input: { connection, kind: 'team' as const, parentId: 'o1', fields: { team_name: 'b', description: '', deletion_protection: false } } },
    ];
    const error = await acts.runSteps({ steps }).catch((e: unknown) => e);
    expect(error).toMatchObject({ type: 'not_found', nonRetryable: true });
    expect(scope.isDone()).toBe(true);
    expect(later.isDone()).toBe(false);
  });

  it('runSteps: a step may name the id an earlier step of the call made (resultOf): a team, its two agents and their edge in one call', async () => {
    const acts = createApplyActivities({ env });
    const connection = { baseUrl: server.url, apiKeyEnv: 'ACS_TEST_KEY' };
    const agent = (name: string) => ({ op: 'ensure' as const, input: { connection, kind: 'agent' as const, parentId: { resultOf: 0 } as unknown as string, fields: { name } as never } });
    const steps = [
      { op: 'ensure' as const, input: { connection, kind: 'team' as const, parentId: orgId, fields: { team_name: 'chained', description: '', deletion_protection: false } } },
      agent('ann'),
      agent('bob'),
      { op: 'ensure' as const, input: { connection, kind: 'edge' as const, parentId: { resultOf: 0 } as unknown as string, fields: { participants: [{ resultOf: 1 }, { resultOf: 2 }] as unknown as [string, string] } } },
    ];
    const results = (await new MockActivityEnvironment().run(acts.runSteps, { steps })) as Array<{ id: string; outcome: string }>;
    expect(results.map((r) => r.outcome)).toEqual(['created', 'created', 'created', 'created']);
    const graph = await acts.readTeam({ connection, teamId: results[0]!.id });
    expect(graph.agents.map((a) => a.agent_id).sort()).toEqual([results[1]!.id, results[2]!.id].sort());
    expect(graph.edges).toHaveLength(1);
    expect([...graph.edges[0]!.participants].sort()).toEqual([results[1]!.id, results[2]!.id].sort());
  });

  it('readTeams: reads several teams with their graphs in the order asked, as readTeam reads each, and stops at its byte budget (at least one team)', async () => {
    const acts = createApplyActivities({ env });
    const connection = { baseUrl: server.url, apiKeyEnv: 'ACS_TEST_KEY' };
    const ids: string[] = [];
    for (const name of ['r1', 'r2', 'r3']) ids.push((await acts.ensure({ connection, kind: 'team', parentId: orgId, fields: { team_name: name, description: '', deletion_protection: false } })).id);
    const asked = [ids[2]!, ids[0]!, ids[1]!];
    const teams = (await new MockActivityEnvironment().run(acts.readTeams, { connection, teamIds: asked, read: { parallelism: 2, maxTeams: 10, maxBytes: 1_000_000 } })) as Awaited<ReturnType<typeof acts.readTeams>>;
    expect(teams.map((t) => t.team.team_name)).toEqual(['r3', 'r1', 'r2']);
    expect(teams[0]).toEqual(await acts.readTeam({ connection, teamId: ids[2]! }));
    const one = JSON.stringify(teams[0]).length;
    // A budget of one team and a half: the first team, then the caller asks for the others.
    expect((await acts.readTeams({ connection, teamIds: asked, read: { parallelism: 2, maxTeams: 10, maxBytes: Math.floor(one * 1.5) } })).map((t) => t.team.team_name)).toEqual(['r3']);
    expect((await acts.readTeams({ connection, teamIds: asked, read: { parallelism: 2, maxTeams: 2, maxBytes: 1_000_000 } })).map((t) => t.team.team_name)).toEqual(['r3', 'r1']);
    expect((await acts.readTeams({ connection, teamIds: asked, read: { parallelism: 2, maxTeams: 10, maxBytes: 1 } })).map((t) => t.team.team_name)).toEqual(['r3']);
  });

  it('readTeams: its byte budget counts UTF-8 bytes, so teams described in Japanese are cut where their JSON is sent, not at a third of it', async () => {
    const acts = createApplyActivities({ env });
    const connection = { baseUrl: server.url, apiKeyEnv: 'ACS_TEST_KEY' };
    const ids: string[] = [];
    for (const name of ['j1', 'j2', 'j3']) ids.push((await acts.ensure({ connection, kind: 'team', parentId: orgId, fields: { team_name: name, description: '日本語のチーム説明。'.repeat(50), deletion_protection: false } })).id);
    const [first] = await acts.readTeams({ connection, teamIds: ids, read: { parallelism: 2, maxTeams: 10, maxBytes: 1_000_000 } });
    const bytes = Buffer.byteLength(JSON.stringify(first));
    // Room for two teams by their characters, for one and a half by their bytes.
    const budget = Math.floor(bytes * 1.5);
    expect(JSON.stringify(first).length * 2).toBeLessThan(budget);
    expect((await acts.readTeams({ connection, teamIds: ids, read: { parallelism: 2, maxTeams: 10, maxBytes: budget } })).map((t) => t.team.team_name)).toEqual(['j1']);
  });

  it('readOrganization: with teamGraphs, the graphs of its first teams come with it', async () => {
    const acts = createApplyActivities({ env });
    const connection = { baseUrl: server.url, apiKeyEnv: 'ACS_TEST_KEY' };
    const desired = { organization: { name: 'activity-tests', fields: {}, providerKeys: [] }, teams: [] } as unknown as Parameters<typeof acts.readOrganization>[0]['desired'];
    const plain = await acts.readOrganization({ connection, desired });
    expect(plain.graphs).toBeUndefined();
    const withGraphs = await acts.readOrganization({ connection, desired, teamGraphs: { parallelism: 4, maxTeams: 2, maxBytes: 1_000_000 } });
    expect(withGraphs.teams).toEqual(plain.teams);
    expect(withGraphs.graphs!.map((g) => g.team.team_id)).toEqual(plain.teams.slice(0, 2).map((t) => t.team_id));
  });

  it('readOrganization: asked with inSyncFor, a live state that needs no change comes back as inSync alone, and one that does with its graphs', async () => {
    const acts = createApplyActivities({ env });
    const connection = { baseUrl: server.url, apiKeyEnv: 'ACS_TEST_KEY' };
    const desired = syntheticDefinition(`in-sync-${Date.now()}`, { teams: 2, agents: 2, humans: 0, edges: 1 });
    await applyLocally({ connection, desired }, acts);
    const read = { parallelism: 4, maxTeams: 100, maxBytes: 1_000_000 };
    const inSync = await acts.readOrganization({ connection, desired, teamGraphs: read, inSyncFor: {} });
    expect(inSync).toMatchObject({ inSync: true, teams: [], providerKeys: [] });
    expect(inSync.organization?.org_name).toBe(desired.organization.name);
    expect(inSync.graphs).toBeUndefined();
    const drifted = { ...desired, teams: desired.teams.map((t, i) => (i === 0 ? { ...t, fields: { ...t.fields, description: 'changed' } } : t)) };
    const outOfSync = await acts.readOrganization({ connection, desired: drifted, teamGraphs: read, inSyncFor: {} });
    expect(outOfSync.inSync).toBeUndefined();
    expect(outOfSync.graphs).toHaveLength(2);
    // A selection that leaves the drifted team out is in sync again.
    expect((await acts.readOrganization({ connection, desired: drifted, teamGraphs: read, inSyncFor: { targets: [`team/${desired.teams[1]!.name}`] } })).inSync).toBe(true);
  });
});
