import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApplyActivities } from '../../activities/apply-activities.ts';
import type { Connection } from '../../activities/connection.ts';
import { AcsClient } from '../../client/acs-client.ts';
import { applyLocally } from '../../engine/local-engine.ts';
import { orchestrateApply, readObserved } from '../../workflows/apply-orchestration.ts';
import { computePlan } from '../../plan/plan.ts';
import type { DesiredState } from '../../plan/types.ts';
import { desiredFromFile, withOrganizationName } from '../support/synthetic.ts';
import { startServer } from '../../service/index.ts';
import { dyingFetch, recordingFetch } from '../support/fetch.ts';
import { snapshot as liveSnapshot } from '../support/live-state.ts';

const ECHO_KEY = 'echo-provider-secret-value-7f3a';
let server: Awaited<ReturnType<typeof startServer>>;
let env: NodeJS.ProcessEnv;
let connection: Connection;
let client: AcsClient;
let example: DesiredState;

/** The example definition, under an organization name of its own. */
function definitionFor(orgName: string): DesiredState {
  return withOrganizationName(example, orgName);
}

const snapshot = (orgName: string) => liveSnapshot(client, orgName);

beforeAll(async () => {
  server = await startServer({ inMemory: true, port: 0, tickMs: 60_000, logger: false });
  const { api_key } = await server.provisionOrganization('apply-tests');
  env = { ACS_TEST_KEY: api_key, ECHO_PROVIDER_KEY: ECHO_KEY };
  connection = { baseUrl: server.url, apiKeyEnv: 'ACS_TEST_KEY' };
  client = new AcsClient({ baseUrl: server.url, apiKey: api_key });
  example = await desiredFromFile(new URL('../../examples/acme-research.yaml', import.meta.url));
});

afterAll(async () => {
  await server?.close();
});

describe('apply', () => {
  it('apply: a first run creates every resource and a second run sends no mutating request', async () => {
    const desired = definitionFor('acme-twice');
    const first = recordingFetch();
    const result = await applyLocally({ connection, desired }, createApplyActivities({ env, fetch: first.fetch }));
    expect(result.applied.map((c) => `${c.kind} ${c.name}: ${c.outcome}`)).toEqual([
      'organization acme-twice: created',
      'provider_key echo: created',
      'team literature-review: created',
      'agent scout: created',
      'agent archivist: created',
      'human alice: created',
      'edge alice<->scout: created',
      'edge scout<->archivist: created',
    ]);
    expect(first.mutations()).toHaveLength(8);

    const second = recordingFetch();
    const again = await applyLocally({ connection, desired }, createApplyActivities({ env, fetch: second.fetch }));
    expect(again.applied).toEqual([]);
    expect(second.mutations()).toEqual([]);
    expect(second.requests.length).toBeGreaterThan(0);

    const state = await snapshot('acme-twice');
    expect(state.teams[0]).toMatchObject({
      name: 'literature-review',
      description: 'Finds and summarizes papers',
      edges: ['alice<->scout', 'archivist<->scout'],
      humans: [{ name: 'alice', email: 'alice@example.com' }],
    });
    expect(state.teams[0]!.agents.map((a) => [a.name, a.provider])).toEqual([['archivist', null], ['scout', 'echo']]);
    expect(state.providerKeys).toEqual([`echo:${ECHO_KEY.slice(-4)}`]);
  });

  it('orchestration: with cross-team batches, a run with changes asks for the batch size once, and a re-run with nothing to change never does (Temporal records no patch marker for it)', async () => {
    const desired = definitionFor('acme-cross-team');
    let asked = 0;
    const options = {
      batchSize: 40,
      chainedBatches: true,
      crossTeamBatchSize: () => {
        asked++;
        return 160;
      },
    };
    const first = await orchestrateApply({ connection, desired }, createApplyActivities({ env }), options);
    expect(first.applied).toHaveLength(8);
    expect(asked).toBe(1);
    // Read one team at a time (no in-sync answer from the read): the empty plan reaches the scheduler.
    const again = await orchestrateApply({ connection, desired }, createApplyActivities({ env }), options);
    expect(again).toMatchObject({ applied: [], complete: true });
    expect(asked).toBe(1);
  });

  it('apply: a run killed after each mutating step in turn, then re-run, ends as one uninterrupted run with no duplicate', async () => {
    await applyLocally({ connection, desired: definitionFor('acme-reference') }, createApplyActivities({ env }));
    const reference = await snapshot('acme-reference');
    const steps = 8;
    for (let k = 1; k <= steps; k++) {
      const orgName = `acme-killed-${k}`;
      const desired = definitionFor(orgName);
      await expect(
        applyLocally({ connection, desired, parallelism: 2 }, createApplyActivities({ env, fetch: dyingFetch(k) }), { retry: { maximumAttempts: 1 } }),
      ).rejects.toThrow();
      await applyLocally({ connection, desired }, createApplyActivities({ env }));
      expect({ ...(await snapshot(orgName)), org: 'acme-reference' }, `killed after step ${k}`).toEqual(reference);
      const observed = await readObserved(createApplyActivities({ env }), connection, desired);
      expect(computePlan(desired, observed).changes, `plan after re-run of step ${k}`).toEqual([]);
    }
  });

  it('apply: a drifted agent is updated with one PATCH and nothing else', async () => {
    const desired = definitionFor('acme-drift');
    await applyLocally({ connection, desired }, createApplyActivities({ env }));
    const org = (await client.listOrganizations()).find((o) => o.org_name === 'acme-drift')!;
    const team = (await client.listTeams(org.org_id))[0]!;
    const scout = (await client.listAgents(team.team_id)).find((a) => a.name === 'scout')!;
    await client.updateAgent(scout.agent_id, { instructions: 'Changed by hand.' });

    const recorder = recordingFetch();
    const result = await applyLocally({ connection, desired }, createApplyActivities({ env, fetch: recorder.fetch }));
    expect(result.applied).toMatchObject([{ action: 'update', kind: 'agent', name: 'scout', diff: { instructions: { from: 'Changed by hand.' } } }]);
    expect(recorder.mutations()).toEqual([`PATCH /api/v1/agents/${scout.agent_id}`]);
    expect((await client.getAgent(scout.agent_id)).instructions).toBe('Find recent papers on the topic you are given.');
  });

  it('apply: a changed provider key secret is detected by its hint and set again; the value never shows', async () => {
    const desired = definitionFor('acme-rekey');
    await applyLocally({ connection, desired }, createApplyActivities({ env }));
    const rotated = { ...env, ECHO_PROVIDER_KEY: 'a-new-provider-secret-9b1c' };
    const observed = await readObserved(createApplyActivities({ env: rotated }), connection, desired);
    const plan = computePlan(desired, observed);
    expect(plan.changes).toMatchObject([{ action: 'update', kind: 'provider_key', name: 'echo' }]);
    const result = await applyLocally({ connection, desired }, createApplyActivities({ env: rotated }));
    const shown = JSON.stringify([plan, result]);
    expect(shown).not.toContain('a-new-provider-secret-9b1c');
    expect(shown).not.toContain(ECHO_KEY);
    expect((await snapshot('acme-rekey')).providerKeys).toEqual(['echo:9b1c']);
  });

  it('apply: an unset secret fails before any request with unresolved_secret naming the variable', async () => {
    const recorder = recordingFetch();
    const acts = createApplyActivities({ env: { ACS_TEST_KEY: env.ACS_TEST_KEY }, fetch: recorder.fetch });
    await expect(applyLocally({ connection, desired: definitionFor('acme-nosecret') }, acts)).rejects.toMatchObject({ type: 'unresolved_secret' });
    expect(recorder.requests).toEqual([]);
  });
});

describe('apply deletes', () => {
  /** The example without the archivist (and its edge) and without the provider key, under `orgName`. */
  function smaller(orgName: string): DesiredState {
    const desired = definitionFor(orgName);
    const [team] = desired.teams;
    return {
      organization: { ...desired.organization, providerKeys: [] },
      teams: [{ ...team!, agents: team!.agents.filter((a) => a.name !== 'archivist'), edges: team!.edges.filter((e) => !e.includes('archivist')) }],
    };
  }

  it('apply: a plan with a delete that was not approved is refused with not_approved before any mutating request', async () => {
    await applyLocally({ connection, desired: definitionFor('acme-unapproved') }, createApplyActivities({ env }));
    const recorder = recordingFetch();
    const acts = createApplyActivities({ env, fetch: recorder.fetch });
    await expect(applyLocally({ connection, desired: smaller('acme-unapproved') }, acts)).rejects.toMatchObject({ type: 'not_approved' });
    // Approving other ids is not approving these (the live state changed since the plan the user saw).
    await expect(applyLocally({ connection, desired: smaller('acme-unapproved'), approvedDeletes: ['00000000-0000-4000-8000-000000000000'] }, acts)).rejects.toMatchObject({
      type: 'not_approved',
      message: expect.stringContaining('the live state changed since the plan was approved'),
    });
    expect(recorder.mutations()).toEqual([]);
  });

  it('apply: a run killed after each of its deletes in turn, then re-run, ends as one uninterrupted run, each resource deleted by one request', async () => {
    await applyLocally({ connection, desired: smaller('acme-deleted-reference'), approvedDeletes: 'all' }, createApplyActivities({ env }));
    const reference = await snapshot('acme-deleted-reference');
    for (let k = 1; k <= 3; k++) {
      const orgName = `acme-deletes-killed-${k}`;
      await applyLocally({ connection, desired: definitionFor(orgName) }, createApplyActivities({ env }));
      const desired = smaller(orgName);
      const first = recordingFetch();
      await expect(
        applyLocally({ connection, desired, approvedDeletes: 'all' }, createApplyActivities({ env, fetch: dyingFetch(k, { method: 'DELETE', inner: first.fetch }) }), { retry: { maximumAttempts: 1 } }),
      ).rejects.toThrow();
      const second = recordingFetch();
      await applyLocally({ connection, desired, approvedDeletes: 'all' }, createApplyActivities({ env, fetch: second.fetch }));
      const deletes = [...first.mutations(), ...second.mutations()].filter((m) => m.startsWith('DELETE '));
      expect(deletes, `killed after delete ${k}`).toHaveLength(3);
      expect(new Set(deletes).size).toBe(3);
      expect({ ...(await snapshot(orgName)), org: 'acme-deleted-reference' }, `killed after delete ${k}`).toEqual(reference);
    }
  });

  it('remove: a delete of what is already gone succeeds as deleted, so a re-run never fails on it', async () => {
    await applyLocally({ connection, desired: definitionFor('acme-gone') }, createApplyActivities({ env }));
    const org = (await client.listOrganizations()).find((o) => o.org_name === 'acme-gone')!;
    const team = (await client.listTeams(org.org_id))[0]!;
    await client.deleteTeam(team.team_id);
    const acts = createApplyActivities({ env });
    expect(await acts.remove({ connection, kind: 'team', id: team.team_id })).toEqual({ id: team.team_id, outcome: 'deleted' });
    expect(await acts.deleteProviderKey({ connection, orgId: org.org_id, provider: 'openai' })).toEqual({ id: 'openai', outcome: 'deleted' });
  });
});

