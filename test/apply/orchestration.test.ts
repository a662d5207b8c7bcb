/**
 * The orchestration's scheduling, with activities that record their calls (the plan and the
 * graph are real; only the service is replaced, to see the order in which calls start).
 */
import { describe, expect, it } from 'vitest';
import type { EnsureResult } from '../../activities/apply-activities.ts';
import { AgentFields } from '../../api/schemas.ts';
import { CROSS_TEAM_MIN_SHARE, orchestrateApply, readObserved, TEAMS_PER_READ } from '../../workflows/apply-orchestration.ts';
import type { AppliedChange, OrchestratedActivities } from '../../workflows/apply-orchestration.ts';
import { syntheticDefinition, resourceCount } from '../support/synthetic.ts';

/** Activities over an empty organization that log `start`/`end` of every call and finish in call order after a tick. */
function recordingActivities(options: { failOn?: string } = {}) {
  const log: string[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  let next = 0;
  const call = (label: (input: Record<string, unknown>) => string) => async (input: Record<string, unknown>): Promise<EnsureResult> => {
    const name = label(input);
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    log.push(`start ${name}`);
    await new Promise((resolve) => setTimeout(resolve, 1));
    inFlight--;
    if (options.failOn === name) throw new Error(`failed: ${name}`);
    log.push(`end ${name}`);
    return { id: `${name}#${next++}`, outcome: 'created' };
  };
  const batches: string[][] = [];
  const inputs: Array<Array<Record<string, unknown>>> = [];
  /** Each call's steps by name (`team team-001`, `participant team-001/agent-0001`…), in call order. */
  const named: string[][] = [];
  /** The calls in flight of each team, and the teams that joined a call (after its first team) while a call of them was in flight. */
  const teamsInFlight = new Map<string, number>();
  const joinedBusy: string[] = [];
  const ensure = (input: Record<string, unknown>): string => {
    const fields = input.fields as { org_name?: string; team_name?: string; name?: string; participants?: string[] };
    const team = String(input.parentId).split('#')[0]!.slice(5);
    switch (input.kind) {
      case 'organization':
        return 'org';
      case 'team':
        return `team ${fields.team_name}`;
      case 'edge':
        return `edge ${team}/${fields.participants!.map((p) => p.split('#')[0]!.split('/')[1]).join(',')}`;
      default:
        return `participant ${team}/${fields.name}`;
    }
  };
  const fakes: Record<string, (input: Record<string, unknown>) => Promise<EnsureResult>> = {
    ensure: call(ensure),
    putProviderKey: call((i) => `key ${String(i.provider)}`),
    update: call(() => 'update'),
  };
  const acts = {
    readOrganization: async () => ({ organization: null, providerKeys: [], teams: [] }),
    readTeam: async () => {
      throw new Error('no team exists');
    },
    runSteps: async ({ steps }: { steps: Array<{ op: string; input: Record<string, unknown> }> }) => {
      batches.push(steps.map((s) => s.op));
      inputs.push(steps.map((s) => s.input));
      const results: EnsureResult[] = [];
      // As the activity does: an earlier step's result in place of an id.
      const resolve = (value: unknown): unknown =>
        value && typeof value === 'object' && 'resultOf' in value ? results[(value as { resultOf: number }).resultOf]!.id
        : Array.isArray(value) ? value.map(resolve)
        : value && typeof value === 'object' ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolve(v)]))
        : value;
      // The call's teams in the order of its steps, known before any step runs.
      const teamOfStep = (i: number): string | undefined => {
        const { op, input } = steps[i]!;
        if (op !== 'ensure' || input.kind === 'organization') return undefined;
        if (input.kind === 'team') return (input.fields as { team_name: string }).team_name;
        const parent = input.parentId;
        return parent && typeof parent === 'object' ? teamOfStep((parent as { resultOf: number }).resultOf) : String(parent).split('#')[0]!.slice('team '.length);
      };
      const teams = [...new Set(steps.map((_, i) => teamOfStep(i)).filter((t): t is string => t !== undefined))];
      teams.forEach((team, i) => {
        if (i > 0 && (teamsInFlight.get(team) ?? 0) > 0) joinedBusy.push(team);
        teamsInFlight.set(team, (teamsInFlight.get(team) ?? 0) + 1);
      });
      const names: string[] = [];
      named.push(names);
      try {
        for (const step of steps) {
          const input = resolve(step.input) as Record<string, unknown>;
          if (step.op === 'ensure') names.push(ensure(input));
          results.push(await fakes[step.op]!(input));
        }
      } finally {
        for (const team of teams) teamsInFlight.set(team, teamsInFlight.get(team)! - 1);
      }
      return results;
    },
  } as unknown as OrchestratedActivities;
  return { acts, log, batches, inputs, named, joinedBusy, maxInFlight: () => maxInFlight };
}

const connection = { baseUrl: 'http://acs.test', apiKeyEnv: 'KEY' };

/** The teams of one call's steps by name (`team team-001`, `edge team-001/a,b`…), in step order, once each. */
function teamsOf(names: string[]): string[] {
  return [...new Set(names.filter((n) => n !== 'org').map((n) => n.split(' ')[1]!.split('/')[0]!))];
}

/** Every participant (and edge) of the log started after its team's create ended, and every edge after both its participants'. */
function expectEachAfterWhatItWaitsFor(log: string[]): void {
  for (const line of log.filter((l) => l.startsWith('start ') && !l.startsWith('start org'))) {
    const [kind, path] = line.slice('start '.length).split(' ') as [string, string];
    const team = path.split('/')[0]!;
    if (kind !== 'team') expect(log.indexOf(`end team ${team}`), line).toBeLessThan(log.indexOf(line));
    if (kind === 'edge') for (const p of path.split('/')[1]!.split(',')) expect(log.indexOf(`end participant ${team}/${p}`), line).toBeLessThan(log.indexOf(line));
  }
}

describe('apply orchestration', () => {
  it('orchestration: every change starts after the creates it needs ended, and each change runs once', async () => {
    const desired = syntheticDefinition('graph', { teams: 6, agents: 3, humans: 1, edges: 3 });
    const { acts, log } = recordingActivities();
    const result = await orchestrateApply({ connection, desired, parallelism: 5 }, acts);
    expect(result.complete).toBe(true);
    expect(result.applied).toHaveLength(resourceCount({ teams: 6, agents: 3, humans: 1, edges: 3 }));
    const position = (entry: string) => log.indexOf(entry);
    expect(log.filter((l) => l.startsWith('start ')).length).toBe(new Set(log.filter((l) => l.startsWith('start '))).size);
    for (const line of log.filter((l) => l.startsWith('start '))) {
      const name = line.slice('start '.length);
      if (name === 'org') continue;
      expect(position('end org'), name).toBeLessThan(position(line));
      const [kind, path] = name.split(' ') as [string, string];
      if (kind === 'participant' || kind === 'edge') expect(position(`end team ${path.split('/')[0]}`), name).toBeLessThan(position(line));
      if (kind === 'edge') {
        const [team, pair] = path.split('/') as [string, string];
        for (const p of pair.split(',')) expect(position(`end participant ${team}/${p}`), name).toBeLessThan(position(line));
      }
    }
  });

  it('orchestration: changes are spread across teams (no team holds two calls while another has work ready), within the parallelism', async () => {
    const desired = syntheticDefinition('spread', { teams: 4, agents: 4, edges: 0 });
    const { acts, log, maxInFlight } = recordingActivities();
    await orchestrateApply({ connection, desired, parallelism: 4 }, acts);
    expect(maxInFlight()).toBe(4);
    // Once the four teams exist, the first four participant creates go to four different teams.
    const firstParticipants = log.filter((l) => l.startsWith('start participant')).slice(0, 4).map((l) => l.split(' ')[2]!.split('/')[0]);
    expect(new Set(firstParticipants).size).toBe(4);
  });

  it('orchestration: with a batch size, each activity call carries up to that many ready changes of one team, and every change still waits for the creates it needs', async () => {
    const size = { teams: 3, agents: 7, humans: 1, edges: 6 };
    const desired = syntheticDefinition('batched', size);
    const { acts, log, batches } = recordingActivities();
    const result = await orchestrateApply({ connection, desired, parallelism: 2 }, acts, { batchSize: 5 });
    expect(result.applied).toHaveLength(resourceCount(size));
    expect(Math.max(...batches.map((b) => b.length))).toBe(5);
    expect(batches.length).toBeLessThan(resourceCount(size) / 2);
    const starts = log.filter((l) => l.startsWith('start ') && !l.startsWith('start org'));
    for (const line of starts) {
      const [kind, path] = line.slice('start '.length).split(' ') as [string, string];
      if (kind === 'edge') {
        const [team, pair] = path.split('/') as [string, string];
        for (const p of pair.split(',')) expect(log.indexOf(`end participant ${team}/${p}`), line).toBeLessThan(log.indexOf(line));
      }
    }
  });

  it('orchestration: with chained batches, a new team, its participants and its edges are one activity call, each step naming the ids made before it in the call', async () => {
    const size = { teams: 3, agents: 4, humans: 1, edges: 3 };
    const desired = syntheticDefinition('chained', size);
    const { acts, log, batches, inputs } = recordingActivities();
    const result = await orchestrateApply({ connection, desired, parallelism: 1 }, acts, { batchSize: 40, chainedBatches: true });
    expect(result.applied).toHaveLength(resourceCount(size));
    // The organization, then one call per team: the team, its 5 participants, its 3 edges.
    expect(batches.map((b) => b.length)).toEqual([1, 9, 9, 9]);
    for (const batch of inputs.slice(1)) {
      expect(batch[0]!.kind).toBe('team');
      for (const step of batch.slice(1)) expect(step.parentId).toEqual({ resultOf: 0 });
      for (const edge of batch.filter((step) => step.kind === 'edge')) {
        for (const ref of (edge.fields as { participants: Array<{ resultOf: number }> }).participants) expect(['agent', 'human']).toContain(batch[ref.resultOf]!.kind);
      }
    }
    // The edges were made between the participants of their own team.
    for (const line of log.filter((l) => l.startsWith('start edge'))) {
      const [team, pair] = line.slice('start edge '.length).split('/') as [string, string];
      for (const p of pair.split(',')) expect(log.indexOf(`end participant ${team}/${p}`), line).toBeLessThan(log.indexOf(line));
    }
  });

  it('orchestration: with chained batches, a batch never holds more than the batch size and a change never starts before what it waits for', async () => {
    const size = { teams: 4, agents: 6, humans: 1, edges: 5 };
    const desired = syntheticDefinition('chained-small', size);
    const { acts, log, batches } = recordingActivities();
    const result = await orchestrateApply({ connection, desired, parallelism: 3 }, acts, { batchSize: 4, chainedBatches: true });
    expect(result.applied).toHaveLength(resourceCount(size));
    expect(Math.max(...batches.map((b) => b.length))).toBe(4);
    expectEachAfterWhatItWaitsFor(log);
  });

  it('orchestration: with chained batches, a batch holds at most its share of the changes not yet started, so the end of an apply is not one long call', async () => {
    const size = { teams: 6, agents: 4, humans: 1, edges: 3 };
    const desired = syntheticDefinition('chained-tail', size);
    const { acts, batches } = recordingActivities();
    const total = resourceCount(size);
    const result = await orchestrateApply({ connection, desired, parallelism: 4 }, acts, { batchSize: 40, chainedBatches: true });
    expect(result.applied).toHaveLength(total);
    let startedBefore = 0;
    for (const batch of batches) {
      expect(batch.length).toBeLessThanOrEqual(Math.max(1, Math.ceil((total - startedBefore) / 4)));
      startedBefore += batch.length;
    }
    expect(Math.max(...batches.map((b) => b.length))).toBe(9);
    expect(batches.at(-1)!.length).toBe(1);
  });

  it('orchestration: with cross-team batches, a call holds the whole chains of several teams in dependency order, none of them joining while a call of it is in flight, and an apply makes fewer calls', async () => {
    const size = { teams: 12, agents: 4, humans: 1, edges: 3 };
    const desired = syntheticDefinition('cross-team', size);
    const total = resourceCount(size);
    const oneTeam = recordingActivities();
    await orchestrateApply({ connection, desired, parallelism: 2 }, oneTeam.acts, { batchSize: 40, chainedBatches: true });
    const { acts, log, batches, named, joinedBusy } = recordingActivities();
    let asked = 0;
    const result = await orchestrateApply({ connection, desired, parallelism: 2 }, acts, {
      batchSize: 40,
      chainedBatches: true,
      crossTeamBatchSize: () => {
        asked++;
        return 30;
      },
    });
    expect(result.applied).toHaveLength(total);
    expect(asked).toBe(1);
    expect(Math.max(...batches.map((b) => b.length))).toBe(27);
    // The organization, then three teams of 9 changes a call while the changes left allow it.
    const whole = named.slice(1).filter((names) => teamsOf(names).length > 1);
    expect(whole.length).toBeGreaterThan(0);
    for (const names of whole) {
      for (const team of teamsOf(names)) {
        const its = names.filter((n) => n === `team ${team}` || n.includes(` ${team}/`));
        expect(its, team).toHaveLength(9);
        expect(its[0]).toBe(`team ${team}`);
      }
    }
    expect(joinedBusy).toEqual([]);
    // 8 calls instead of 16.
    expect(batches.length).toBeLessThanOrEqual(oneTeam.batches.length / 2);
    expectEachAfterWhatItWaitsFor(log);
  });

  it('orchestration: with cross-team batches, a team with changes ready while a call of it is in flight joins no other call as a further team', async () => {
    // Calls of 2 changes of a team, up to 4 in all: a team's first call holds the team and an
    // agent; its other 5 agents are then ready, 2 go to its next call and 3 stay ready while that
    // call is in flight, and the next call formed has room for them.
    const size = { teams: 4, agents: 6, humans: 0, edges: 0 };
    const desired = syntheticDefinition('cross-team-busy', size);
    const { acts, joinedBusy, named } = recordingActivities();
    const result = await orchestrateApply({ connection, desired, parallelism: 3 }, acts, { batchSize: 2, chainedBatches: true, crossTeamBatchSize: () => 4 });
    expect(result.applied).toHaveLength(resourceCount(size));
    expect(named.some((names) => teamsOf(names).length > 1)).toBe(true);
    expect(joinedBusy).toEqual([]);
  });

  it('orchestration: with cross-team batches, the end of an apply makes fewer calls under CROSS_TEAM_MIN_SHARE changes, and a run with nothing to change never asks for the size', async () => {
    const size = { teams: 8, agents: 10, humans: 0, edges: 20 };
    const desired = syntheticDefinition('cross-team-tail', size);
    const small = (batches: string[][]) => batches.slice(1).filter((b) => b.length < CROSS_TEAM_MIN_SHARE).length;
    const oneTeam = recordingActivities();
    await orchestrateApply({ connection, desired, parallelism: 8 }, oneTeam.acts, { batchSize: 40, chainedBatches: true });
    const { acts, batches } = recordingActivities();
    const result = await orchestrateApply({ connection, desired, parallelism: 8 }, acts, { batchSize: 40, chainedBatches: true, crossTeamBatchSize: () => 160 });
    expect(result.applied).toHaveLength(resourceCount(size));
    // The shares of 248 changes at parallelism 8 shrink 31, 28, 24…; below 8 only what is left of a team.
    expect(small(batches)).toBeLessThan(small(oneTeam.batches) / 2);
    expect(batches.length).toBeLessThan(oneTeam.batches.length);
    let asked = 0;
    const inSync = {
      readOrganization: async () => ({ organization: { org_id: 'o-1' }, providerKeys: [], teams: [], inSync: true }),
      readTeam: async () => ({}),
      readTeams: async () => [],
      runSteps: async () => [],
    } as unknown as OrchestratedActivities;
    await orchestrateApply({ connection, desired }, inSync, { batchedReads: true, chainedBatches: true, crossTeamBatchSize: () => (asked++, 160) });
    expect(asked).toBe(0);
  });

  it('readObserved: with batched reads, the organization brings the graphs of its first teams, and the rest are read by readTeams calls of at most TEAMS_PER_READ teams, asking again past a call\'s budget, within `parallelism`, in the organization\'s order', async () => {
    const teams = Array.from({ length: 2 * TEAMS_PER_READ + 57 }, (_, i) => ({ team_id: `t${i}`, team_name: `team-${i}` }));
    const graph = (id: string) => ({ team: { team_id: id }, agents: [], humans: [], edges: [] });
    const calls: Array<{ teamIds: string[]; read: { parallelism: number; maxTeams: number } }> = [];
    let orgRead: { parallelism: number; maxTeams: number } | undefined;
    let inFlight = 0;
    let maxReadsInFlight = 0;
    const acts = {
      readOrganization: async (input: { teamGraphs: { parallelism: number; maxTeams: number } }) => {
        orgRead = input.teamGraphs;
        return { organization: { org_id: 'o' }, providerKeys: [], teams, graphs: teams.slice(0, 30).map((t) => graph(t.team_id)) };
      },
      readTeam: async () => {
        throw new Error('readTeam is not used with batched reads');
      },
      readTeams: async (input: { teamIds: string[]; read: { parallelism: number; maxTeams: number } }) => {
        calls.push(input);
        inFlight += input.read.parallelism;
        maxReadsInFlight = Math.max(maxReadsInFlight, inFlight);
        await new Promise((r) => setTimeout(r, 5));
        inFlight -= input.read.parallelism;
        // A budget that holds 60 teams: a longer call is answered in part.
        return input.teamIds.slice(0, Math.min(60, input.read.maxTeams)).map(graph);
      },
    } as unknown as OrchestratedActivities;
    const observed = await readObserved(acts, connection, syntheticDefinition('reads', { teams: 1, agents: 1, humans: 0, edges: 0 }), 8, true, true);
    expect(orgRead).toMatchObject({ parallelism: 8, maxTeams: TEAMS_PER_READ });
    // 257 teams: 30 with the organization, then 227 in chunks of 100, 100 and 27, a chunk of 100 asked again for its last 40.
    expect(calls.map((c) => c.teamIds.length).sort((a, b) => b - a)).toEqual([100, 100, 40, 40, 27]);
    expect(maxReadsInFlight).toBeLessThanOrEqual(8);
    expect(observed.teams.map((t) => t.team.team_id)).toEqual(teams.map((t) => t.team_id));
  });

  it('orchestration: with batched reads, a read that finds the live state in sync ends the run with no change, no plan and no further call', async () => {
    const desired = syntheticDefinition('in-sync', { teams: 2, agents: 2, humans: 0, edges: 1 });
    const asked: unknown[] = [];
    const acts = {
      readOrganization: async (input: { inSyncFor?: unknown }) => {
        asked.push(input.inSyncFor);
        return { organization: { org_id: 'o-1' }, providerKeys: [], teams: [], inSync: true };
      },
      readTeam: async () => {
        throw new Error('no team is read when the live state is in sync');
      },
      readTeams: async () => {
        throw new Error('no team is read when the live state is in sync');
      },
      runSteps: async () => {
        throw new Error('nothing is changed when the live state is in sync');
      },
    } as unknown as OrchestratedActivities;
    const result = await orchestrateApply({ connection, desired, targets: ['team/team-0'] }, acts, { batchedReads: true, chainedBatches: true });
    expect(result).toEqual({ orgId: 'o-1', applied: [], complete: true });
    expect(asked).toEqual([{ targets: ['team/team-0'] }]);
  });

  it('orchestration: a failed change stops new starts, lets those in flight finish, never starts what waited for it, and raises the failure', async () => {
    const desired = syntheticDefinition('failing', { teams: 3, agents: 2, edges: 1 });
    const { acts, log } = recordingActivities({ failOn: 'team team-001' });
    await expect(orchestrateApply({ connection, desired, parallelism: 3 }, acts)).rejects.toThrow('failed: team team-001');
    expect(log.some((l) => l.startsWith('start participant team-001/'))).toBe(false);
    const starts = log.filter((l) => l.startsWith('start ')).length;
    const ends = log.filter((l) => l.startsWith('end ')).length;
    expect(starts).toBe(ends + 1);
  });

  it('orchestration: a success and a failure finishing together are taken in finishing order, so the success still frees the next start (as when Temporal replays them in one activation)', async () => {
    const desired = syntheticDefinition('together', { teams: 3, agents: 0, edges: 0 });
    const started: string[] = [];
    const pending = new Map<string, { resolve: (v: unknown) => void; reject: (e: unknown) => void }>();
    const acts = {
      readOrganization: async () => ({ organization: null, providerKeys: [], teams: [] }),
      readTeam: async () => ({}),
      runSteps: ({ steps }: { steps: Array<{ op: string; input: { kind: string; fields: { team_name?: string } } }> }) => {
        const name = steps[0]!.input.kind === 'organization' ? 'org' : steps[0]!.input.fields.team_name!;
        started.push(name);
        if (name === 'org') return Promise.resolve([{ id: 'org-id', outcome: 'created' }]);
        return new Promise((resolve, reject) => pending.set(name, { resolve, reject }));
      },
    } as unknown as OrchestratedActivities;
    const applying = orchestrateApply({ connection, desired, parallelism: 2 }, acts);
    while (pending.size < 2) await new Promise((r) => setTimeout(r, 1));
    // In one synchronous turn: team-000 succeeds, then team-001 fails.
    pending.get('team-000')!.resolve([{ id: 't0', outcome: 'created' }]);
    pending.get('team-001')!.reject(new Error('team-001 failed'));
    while (!pending.has('team-002') && started.length < 4) await new Promise((r) => setTimeout(r, 1));
    pending.get('team-002')?.resolve([{ id: 't2', outcome: 'created' }]);
    await expect(applying).rejects.toThrow('team-001 failed');
    expect(started).toEqual(['org', 'team-000', 'team-001', 'team-002']);
  });

  it('orchestration: shouldPause stops after the changes in flight, having made progress, and reports it incomplete', async () => {
    const desired = syntheticDefinition('paused', { teams: 3, agents: 2, edges: 1 });
    const { acts } = recordingActivities();
    let calls = 0;
    const result = await orchestrateApply({ connection, desired, parallelism: 2 }, acts, { shouldPause: () => ++calls > 3 });
    expect(result.complete).toBe(false);
    expect(result.applied.length).toBeGreaterThan(0);
    expect(result.applied.length).toBeLessThan(resourceCount({ teams: 3, agents: 2, edges: 1 }));
    const always = await orchestrateApply({ connection, desired, parallelism: 2 }, recordingActivities().acts, { shouldPause: () => true });
    expect(always.applied).toHaveLength(1);
  });
});

describe('apply result', () => {
  it('apply result: past MAX_LISTED_CHANGES the changes are counted by outcome instead of listed, across runs too', async () => {
    const { listed, MAX_LISTED_CHANGES } = await import('../../workflows/apply-workflow.ts');
    const change = (i: number, outcome: 'created' | 'updated'): AppliedChange => ({ action: 'create', kind: 'edge', name: `e${i}`, team: 't', address: 'team/t/edge/a,b', fields: { participants: ['a', 'b'] }, outcome });
    const many = Array.from({ length: MAX_LISTED_CHANGES + 7 }, (_, i) => change(i, i % 2 === 0 ? 'created' : 'updated'));
    const first = listed(many, undefined);
    expect(first.applied).toHaveLength(MAX_LISTED_CHANGES);
    expect(first.omitted).toEqual({ created: 4, updated: 3, deleted: 0, unchanged: 0 });
    const second = listed([...first.applied, change(1, 'created')], first.omitted);
    expect(second.omitted).toEqual({ created: 5, updated: 3, deleted: 0, unchanged: 0 });
    expect(listed(many.slice(0, 10), undefined)).toEqual({ applied: many.slice(0, 10) });
  });

  it.each([
    ['in English', 'x'.repeat(4_000)],
    ['in Japanese (three UTF-8 bytes a character)', '日本語の指示。'.repeat(600)],
  ])('apply result: changes with large fields %s are cut by their UTF-8 bytes too, so the result as sent stays under MAX_LISTED_BYTES', async (_language, instructions) => {
    const { listed, MAX_LISTED_BYTES } = await import('../../workflows/apply-workflow.ts');
    const big = Array.from(
      { length: 600 },
      (_, i): AppliedChange => ({ action: 'create', kind: 'agent', name: `a${i}`, team: 't', address: `team/t/agent/a${i}`, fields: AgentFields.toWire({ name: `a${i}`, instructions }), outcome: 'created' }),
    );
    const cut = listed(big, undefined);
    expect(Buffer.byteLength(JSON.stringify(cut.applied))).toBeLessThanOrEqual(MAX_LISTED_BYTES + cut.applied.length);
    expect(cut.applied.length + (cut.omitted?.created ?? 0)).toBe(600);
    expect(cut.omitted!.created).toBeGreaterThan(0);
  });
});
