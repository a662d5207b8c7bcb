/**
 * The whole lifecycle through `teamctl` against a real acs-server (in memory, on a free port):
 * deletes in the plan with the service's cascade counts, consent, deletion protection, renames,
 * `--target`/`--exclude`, destroy, export, drift, get — and an apply killed in the middle of its
 * deletes, re-run. Everything is checked on the service itself.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parse, stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AcsClient } from '../../client/acs-client.ts';
import type { CliIo } from '../../cli/io.ts';
import { processIo } from '../../cli/io.ts';
import { runCli } from '../../cli/program.ts';
import { renderPlan } from '../../cli/render.ts';
import type { Change } from '../../plan/types.ts';
import { startServer } from '../../service/index.ts';
import { startFaultProxy } from '../support/fault-proxy.ts';
import { snapshot } from '../support/live-state.ts';

const ECHO_KEY = 'lifecycle-echo-provider-secret-81fe';
let server: Awaited<ReturnType<typeof startServer>>;
let apiKey: string;
let client: AcsClient;
let dir: string;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
  /** The questions asked on the "terminal". */
  asked: string[];
}

/** Runs teamctl in-process; `answer` makes it a terminal that answers each question so. */
async function teamctl(args: string[], options: { env?: NodeJS.ProcessEnv; answer?: string } = {}): Promise<Run> {
  const run: Run = { code: 0, stdout: '', stderr: '', asked: [] };
  const io: CliIo = {
    stdout: (t) => void (run.stdout += t.endsWith('\n') ? t : `${t}\n`),
    stderr: (t) => void (run.stderr += t.endsWith('\n') ? t : `${t}\n`),
    env: { ACS_BASE_URL: server.url, ACS_API_KEY: apiKey, ECHO_PROVIDER_KEY: ECHO_KEY, ...options.env },
    isTTY: false,
    ...(options.answer !== undefined
      ? {
          ask: async (question: string) => {
            run.asked.push(question);
            return options.answer!;
          },
        }
      : {}),
  };
  run.code = await runCli(args, io);
  return run;
}

/** A definition of two teams with threads-worthy edges, as plain data (tests edit it, then write it). */
function definition(org: string) {
  return {
    apiVersion: 'teamctl/v1',
    organization: { name: org, providerKeys: { echo: '${env:ECHO_PROVIDER_KEY}' } } as Record<string, unknown>,
    teams: [
      {
        name: 'intake',
        description: 'Takes tickets',
        agents: [{ name: 'triager', provider: 'echo', model: 'echo-1' } as Record<string, unknown>, { name: 'summarizer' } as Record<string, unknown>],
        humans: [{ name: 'dana', email: 'dana@example.com' } as Record<string, unknown>],
        edges: [['dana', 'triager'], ['triager', 'summarizer']],
      } as Record<string, unknown> & { agents: Array<Record<string, unknown>>; humans: Array<Record<string, unknown>>; edges: string[][] },
      { name: 'archive', agents: [{ name: 'keeper' }], humans: [{ name: 'lee' }], edges: [['lee', 'keeper']] } as Record<string, unknown> & {
        agents: Array<Record<string, unknown>>;
        humans: Array<Record<string, unknown>>;
        edges: string[][];
      },
    ],
  };
}
type Definition = ReturnType<typeof definition>;

/** Writes a definition to a file of its own and returns the path. */
async function write(def: Definition, name = `${def.organization.name as string}.yaml`): Promise<string> {
  const file = join(dir, name);
  await writeFile(file, stringify(def));
  return file;
}

/** Applies `def` (with consent) and returns its file. */
async function applied(def: Definition): Promise<string> {
  const file = await write(def);
  const result = await teamctl(['apply', '-f', file, '--auto-approve']);
  expect(result.code, result.stderr).toBe(0);
  return file;
}

/** The live organization, team and participants by name. */
async function live(org: string) {
  const organization = (await client.listOrganizations()).find((o) => o.org_name === org);
  if (!organization) return undefined;
  const teams = await Promise.all((await client.listTeams(organization.org_id)).map((t) => client.getTeam(t.team_id)));
  const team = (name: string) => teams.find((t) => t.team_name === name);
  return { organization, teams, team };
}

/** Opens a thread between two participants of a team (by name) with `messages` messages in all. */
async function thread(org: string, teamName: string, from: string, to: string, messages = 1): Promise<string> {
  const team = (await live(org))!.team(teamName)!;
  const id = (name: string) => [...team.agents.map((a) => [a.name, a.agent_id]), ...team.humans.map((h) => [h.name, h.human_id])].find(([n]) => n === name)![1]!;
  const edge = team.edges.find((e) => e.participants.includes(id(from)) && e.participants.includes(id(to)))!;
  const opened = await client.openThread(edge.edge_id, { sender_agent_id: id(from), content: 'first' });
  for (let i = 1; i < messages; i++) await client.appendMessage(opened.thread_id, { sender_agent_id: id(to), content: `reply ${i}` });
  return opened.thread_id;
}

beforeAll(async () => {
  server = await startServer({ inMemory: true, port: 0, tickMs: 60_000, logger: false });
  apiKey = (await server.provisionOrganization('lifecycle-tests')).api_key;
  client = new AcsClient({ baseUrl: server.url, apiKey });
  dir = await mkdtemp(join(tmpdir(), 'teamctl-lifecycle-'));
});

afterAll(async () => {
  await server?.close();
});

/** The definition without the archive team, the summarizer (and its edge) and the provider key. */
function trimmed(org: string): Definition {
  const def = definition(org);
  def.organization = { name: org };
  def.teams = def.teams.filter((t) => t.name !== 'archive');
  def.teams[0]!.agents = def.teams[0]!.agents.filter((a) => a.name !== 'summarizer');
  def.teams[0]!.edges = [['dana', 'triager']];
  return def;
}

describe('plan deletions', () => {
  it('plan: what the file no longer names is planned as deletes, edges before participants before teams, with the service\'s cascade counts; --detailed-exitcode counts them', async () => {
    const org = 'deletes-plan';
    await applied(definition(org));
    await thread(org, 'intake', 'triager', 'summarizer', 3);
    await thread(org, 'archive', 'lee', 'keeper', 2);
    const file = await write(trimmed(org));

    const json = await teamctl(['plan', '-f', file, '--json', '--detailed-exitcode']);
    expect(json.code, json.stderr).toBe(2);
    const { changes } = JSON.parse(json.stdout) as { changes: Array<Record<string, unknown>> };
    const state = (await live(org))!;
    const intake = state.team('intake')!;
    const summarizer = intake.agents.find((a) => a.name === 'summarizer')!;
    expect(changes).toEqual([
      expect.objectContaining({ action: 'delete', kind: 'edge', name: 'triager<->summarizer', team: 'intake', id: intake.edges.find((e) => e.participants.includes(summarizer.agent_id))!.edge_id, cascade: { threads: 1, messages: 3 } }),
      expect.objectContaining({ action: 'delete', kind: 'agent', name: 'summarizer', team: 'intake', id: summarizer.agent_id, cascade: { edges: 1, threads: 1, messages: 3 } }),
      expect.objectContaining({
        action: 'delete',
        kind: 'team',
        name: 'archive',
        id: state.team('archive')!.team_id,
        cascade: { agents: 1, humans: 1, edges: 1, threads: 1, messages: 2, attachments: 0 },
      }),
      expect.objectContaining({ action: 'delete', kind: 'provider_key', name: 'echo', id: 'echo' }),
    ]);
    expect(changes.map((c) => c.address)).toEqual(['team/intake/edge/triager,summarizer', 'team/intake/agent/summarizer', 'team/archive', 'provider_key/echo']);

    const text = await teamctl(['plan', '-f', file]);
    expect(text.stdout).toContain('  - delete team/archive (with 1 agent, 1 human, 1 edge, 1 thread, 2 messages)');
    expect(text.stdout).toContain('Plan: 0 to create, 0 to update, 4 to delete.');
  });

  it('plan: a field changed outside teamctl is drift: plan shows live -> desired and --detailed-exitcode exits 2 (the CI recipe)', async () => {
    const org = 'drift';
    const file = await applied(definition(org));
    const triager = (await live(org))!.team('intake')!.agents.find((a) => a.name === 'triager')!;
    await client.updateAgent(triager.agent_id, { model: 'echo-2', status: 'paused' });
    const plan = await teamctl(['plan', '-f', file, '--detailed-exitcode']);
    expect(plan.code).toBe(2);
    expect(plan.stdout).toContain('  ~ update team/intake/agent/triager\n      model: "echo-2" -> "echo-1"\n');
    // status is not in the file: pausing by hand is not drift.
    expect(plan.stdout).not.toContain('status');
  });

  it('plan: on a terminal the plan is in colour by action; not on a terminal (or with NO_COLOR) it is plain', () => {
    const changes: Change[] = [
      { action: 'create', kind: 'team', name: 't', address: 'team/t', fields: { team_name: 't', description: '', deletion_protection: false } },
      { action: 'delete', kind: 'team', name: 'old', address: 'team/old', id: 'x' },
    ];
    const marked = renderPlan(changes, [], (format, text) => `<${format}>${text}</${format}>`);
    expect(marked).toContain('<green>+ create</green> <bold>team/t</bold>');
    expect(marked).toContain('<red>- delete</red> <bold>team/old</bold>');
    // The process's own stdout under the test runner is a pipe: no style, so plans print plain.
    expect(processIo().style).toBeUndefined();
    expect(renderPlan(changes)).toContain('  + create team/t\n      team_name:           "t"');
  });
});

describe('consent', () => {
  it('apply: with no terminal a plan that deletes is refused: exit 1, a hint naming --auto-approve, and nothing changes on the service, not even its creates', async () => {
    const org = 'consent-refused';
    await applied(definition(org));
    const before = await snapshot(client, org);
    const def = trimmed(org);
    def.teams[0]!.humans.push({ name: 'newcomer' });
    const refused = await teamctl(['apply', '-f', await write(def)]);
    expect(refused.code).toBe(1);
    // The file drops the echo key its triager uses: warned of first.
    expect(refused.stderr).toMatch(/^warning: no echo key in organization\.providerKeys: agent intake\/triager will not answer[^\n]*\nerror\[not_approved\]: the plan deletes 4 resources \(team\/intake\/edge\/triager,summarizer, team\/intake\/agent\/summarizer, team\/archive, provider_key\/echo\)/);
    expect(refused.stderr).toContain('--auto-approve');
    expect(await snapshot(client, org)).toEqual(before);
  });

  it('apply --auto-approve: the deletes are made, the rest of the plan too, and the next plan is empty', async () => {
    const org = 'consent-auto';
    await applied(definition(org));
    const def = trimmed(org);
    def.teams[0]!.humans.push({ name: 'newcomer' });
    const file = await write(def);
    const result = await teamctl(['apply', '-f', file, '--auto-approve']);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('Apply complete: 1 created, 0 updated, 4 deleted, 0 already in place.');
    const state = await snapshot(client, org);
    expect(state.teams.map((t) => t.name)).toEqual(['intake']);
    expect(state.teams[0]!.agents.map((a) => a.name)).toEqual(['triager']);
    expect(state.teams[0]!.humans.map((h) => h.name)).toEqual(['dana', 'newcomer']);
    expect(state.providerKeys).toEqual([]);
    expect((await teamctl(['plan', '-f', file, '--detailed-exitcode'])).code).toBe(0);
  });

  it('apply on a terminal: the plan is shown and the question asked; anything but yes changes nothing, yes deletes', async () => {
    const org = 'consent-terminal';
    await applied(definition(org));
    const before = await snapshot(client, org);
    const file = await write(trimmed(org));
    const no = await teamctl(['apply', '-f', file], { answer: 'y' });
    expect(no.code).toBe(1);
    expect(no.stderr).toContain('error[not_approved]: "y" is not yes');
    expect(no.stdout).toContain('  - delete team/archive');
    expect(no.asked).toEqual([expect.stringContaining("Only 'yes' will be accepted")]);
    expect(await snapshot(client, org)).toEqual(before);

    const yes = await teamctl(['apply', '-f', file], { answer: 'yes' });
    expect(yes.code, yes.stderr).toBe(0);
    expect((await snapshot(client, org)).teams.map((t) => t.name)).toEqual(['intake']);
    // Creates and updates alone need no consent: nothing is asked.
    const quiet = await teamctl(['apply', '-f', file], { answer: 'no' });
    expect(quiet.asked).toEqual([]);
    expect(quiet.code).toBe(0);
  });
});

describe('protection', () => {
  it('protect: true sets deletion_protection; a protected agent removed from the file makes plan and apply fail naming it and its team\'s place in the file, and nothing is applied; protect: false, apply, then remove deletes it', async () => {
    const org = 'protected';
    const def = definition(org);
    def.teams[0]!.agents[0]!.protect = true;
    def.teams[1]!.protect = true;
    await applied(def);
    const state = (await live(org))!;
    const triager = state.team('intake')!.agents.find((a) => a.name === 'triager')!;
    expect(triager.deletion_protection).toBe(true);
    expect(state.team('archive')!.deletion_protection).toBe(true);
    expect(state.team('intake')!.deletion_protection).toBe(false);

    const before = await snapshot(client, org);
    const removed = definition(org);
    removed.teams[1]!.protect = true;
    removed.teams[0]!.agents = removed.teams[0]!.agents.filter((a) => a.name !== 'triager');
    removed.teams[0]!.edges = [];
    removed.teams[0]!.humans.push({ name: 'newcomer' });
    const file = await write(removed);
    const line = (await readFile(file, 'utf8')).split('\n').findIndex((l) => l.includes('name: intake')) + 1;
    const plan = await teamctl(['plan', '-f', file]);
    expect(plan.code).toBe(1);
    expect(plan.stderr).toContain('error[deletion_protected]: the plan deletes protected resources: team/intake/agent/triager (protected: agent triager (its team intake at');
    expect(plan.stderr).toContain(`${file}:${line}:`);
    expect(plan.stderr).toContain('hint: set protect: false');
    const apply = await teamctl(['apply', '-f', file, '--auto-approve']);
    expect(apply.code).toBe(1);
    expect(apply.stderr).toContain('error[deletion_protected]');
    expect(await snapshot(client, org)).toEqual(before);

    const unprotected = definition(org);
    unprotected.teams[1]!.protect = true;
    unprotected.teams[0]!.agents[0]!.protect = false;
    const cleared = await teamctl(['apply', '-f', await write(unprotected, 'protected-cleared.yaml')]);
    expect(cleared.stdout).toContain('team/intake/agent/triager: updated');
    expect((await client.getAgent(triager.agent_id)).deletion_protection).toBe(false);
    expect((await teamctl(['apply', '-f', file, '--auto-approve'])).code).toBe(0);
    expect((await live(org))!.team('intake')!.agents.map((a) => a.name)).toEqual(['summarizer']);
  });
});

describe('rename', () => {
  it('renamedFrom: the plan renames the team and an agent (updates of their names, no delete, no create); apply keeps their ids and the team\'s threads; once done, renamedFrom is harmless', async () => {
    const org = 'renamed';
    await applied(definition(org));
    const threadId = await thread(org, 'intake', 'dana', 'triager', 2);
    const before = (await live(org))!.team('intake')!;
    const def = definition(org);
    Object.assign(def.teams[0]!, { name: 'front-desk', renamedFrom: 'intake' });
    Object.assign(def.teams[0]!.agents[0]!, { name: 'sorter', renamedFrom: 'triager' });
    def.teams[0]!.edges = [['dana', 'sorter'], ['sorter', 'summarizer']];
    const file = await write(def);

    const plan = await teamctl(['plan', '-f', file]);
    expect(plan.stdout).toBe(
      [
        '  ~ update team/front-desk (renamed from intake)',
        '      team_name: "intake" -> "front-desk"',
        '  ~ update team/front-desk/agent/sorter (renamed from triager)',
        '      name: "triager" -> "sorter"',
        '',
        'Plan: 0 to create, 2 to update, 0 to delete.',
        '',
      ].join('\n'),
    );
    const apply = await teamctl(['apply', '-f', file]);
    expect(apply.code, apply.stderr).toBe(0);
    const after = (await live(org))!.team('front-desk')!;
    expect(after.team_id).toBe(before.team_id);
    expect(after.agents.find((a) => a.name === 'sorter')!.agent_id).toBe(before.agents.find((a) => a.name === 'triager')!.agent_id);
    expect(after.active_thread_count).toBe(1);
    expect((await client.getThread(threadId)).message_count).toBe(2);
    expect((await teamctl(['plan', '-f', file, '--detailed-exitcode'])).code).toBe(0);
  });
});

describe('target and exclude', () => {
  it('apply --target: exactly the targeted edge and what it depends on (its participants, its team, the organization); --exclude then makes everything else but what depends on the excluded', async () => {
    const org = 'targeted';
    const file = await write(definition(org));
    const target = await teamctl(['apply', '-f', file, '--target', 'team/archive/edge/keeper,lee', '--json']);
    expect(target.code, target.stderr).toBe(0);
    expect((JSON.parse(target.stdout) as { applied: Array<{ address: string }> }).applied.map((c) => c.address)).toEqual([
      'organization',
      'team/archive',
      'team/archive/agent/keeper',
      'team/archive/human/lee',
      'team/archive/edge/lee,keeper',
    ]);
    expect((await snapshot(client, org)).teams.map((t) => t.name)).toEqual(['archive']);

    const exclude = await teamctl(['apply', '-f', file, '--exclude', 'team/intake/agent/summarizer', '--exclude', 'provider_key/echo', '--json']);
    expect(exclude.code, exclude.stderr).toBe(0);
    expect((JSON.parse(exclude.stdout) as { applied: Array<{ address: string }> }).applied.map((c) => c.address)).toEqual([
      'team/intake',
      'team/intake/agent/triager',
      'team/intake/human/dana',
      'team/intake/edge/dana,triager',
    ]);
    const plan = await teamctl(['plan', '-f', file, '--json']);
    expect((JSON.parse(plan.stdout) as { changes: Array<{ address: string }> }).changes.map((c) => c.address)).toEqual([
      'provider_key/echo',
      'team/intake/agent/summarizer',
      'team/intake/edge/triager,summarizer',
    ]);
    const unknown = await teamctl(['plan', '-f', file, '--target', 'teams/intake']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('error[invalid_usage]: --target teams/intake: unknown resource kind "teams"');
  });
});

describe('destroy', () => {
  it('destroy: shows what will go with the organization\'s counts; refuses without a terminal, and while anything is protected; --target deletes only that; --auto-approve deletes the organization; a second destroy finds nothing', async () => {
    const org = 'destroyed';
    const def = definition(org);
    def.organization.protect = true;
    const file = await applied(def);
    await thread(org, 'intake', 'dana', 'triager', 2);

    const protectedRun = await teamctl(['destroy', '-f', file, '--auto-approve']);
    expect(protectedRun.code).toBe(1);
    expect(protectedRun.stderr).toContain(`error[deletion_protected]: the plan deletes protected resources: organization (protected: organization ${org} (${file}:`);
    def.organization.protect = false;
    await applied(def);

    const refused = await teamctl(['destroy', '-f', file]);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toContain(`  - delete organization ${org} (with 2 teams, 3 agents, 2 humans, 3 edges, 1 thread, 2 messages, 1 provider key)`);
    expect(refused.stderr).toContain('error[not_approved]');
    expect(await live(org)).toBeDefined();

    const partial = await teamctl(['destroy', '-f', file, '--target', 'team/archive', '--auto-approve']);
    expect(partial.code, partial.stderr).toBe(0);
    expect((await live(org))!.teams.map((t) => t.team_name)).toEqual(['intake']);

    const destroyed = await teamctl(['destroy', '-f', file, '--auto-approve']);
    expect(destroyed.code, destroyed.stderr).toBe(0);
    expect(destroyed.stdout).toContain('  organization: deleted');
    expect(destroyed.stdout).toContain('Destroy complete: 0 created, 0 updated, 1 deleted');
    expect(await live(org)).toBeUndefined();
    const again = await teamctl(['destroy', '-f', file, '--auto-approve']);
    expect({ code: again.code, out: again.stdout.trim() }).toEqual({ code: 0, out: `Nothing to destroy: organization ${org} holds nothing the selection names (or does not exist).` });
  });
});

describe('export', () => {
  it('export: the example exports to a definition on which plan shows no change, and names the provider key\'s variable on stderr', async () => {
    const text = (await readFile(new URL('../../examples/acme-research.yaml', import.meta.url), 'utf8')).replace('name: acme-research', 'name: exported-example');
    const source = join(dir, 'example.yaml');
    await writeFile(source, text);
    expect((await teamctl(['apply', '-f', source])).code).toBe(0);
    const out = join(dir, 'exported-example.yaml');
    const exported = await teamctl(['export', '--org', 'exported-example', '-o', out]);
    expect(exported.code, exported.stderr).toBe(0);
    expect(exported.stderr).toContain('export: provider key echo: set ECHO_PROVIDER_KEY to the key (the live one ends in 81fe)');
    const plan = await teamctl(['plan', '-f', out, '--detailed-exitcode']);
    expect({ code: plan.code, out: plan.stdout.trim() }).toEqual({ code: 0, out: 'No changes. The live state matches the definition.' });
  });

  it('export: an organization built by hand through the REST API (a paused agent, a name like 007, protection, an external agent, a provider key) exports to a definition on which plan shows no change', async () => {
    const org = await client.createOrganization({ org_name: 'by-hand', deletion_protection: true });
    const team = await client.createTeam(org.org_id, { team_name: '007', description: 'Line one\nline two' });
    const bond = await client.createAgent(team.team_id, { name: 'bond', provider: 'openai', model: 'gpt-x', instructions: 'Shaken.', status: 'paused', deletion_protection: true });
    const q = await client.createAgent(team.team_id, { name: 'true' });
    const m = await client.createHuman(team.team_id, { name: 'm', email: 'm@example.com' });
    const moneypenny = await client.createHuman(team.team_id, { name: 'moneypenny', deletion_protection: true });
    await client.createEdge(team.team_id, [m.human_id, bond.agent_id]);
    await client.createEdge(team.team_id, [bond.agent_id, q.agent_id]);
    await client.createEdge(team.team_id, [moneypenny.human_id, m.human_id]);
    await client.createTeam(org.org_id, { team_name: 'empty' });
    await client.putProviderKey(org.org_id, 'openai', 'sk-by-hand-provider-key-77aa');

    const exported = await teamctl(['export', '--org', 'by-hand']);
    expect(exported.code, exported.stderr).toBe(0);
    expect(exported.stdout).toContain('name: "007"');
    expect(exported.stdout).toContain('name: "true"');
    expect(exported.stdout).toContain('status: paused');
    expect(exported.stdout).toContain('openai: ${env:OPENAI_PROVIDER_KEY}');
    expect(exported.stdout).not.toContain('sk-by-hand');
    const parsed = parse(exported.stdout) as { organization: Record<string, unknown>; teams: Array<Record<string, unknown>> };
    expect(parsed.organization).toEqual({ name: 'by-hand', protect: true, providerKeys: { openai: '${env:OPENAI_PROVIDER_KEY}' } });
    expect(parsed.teams[0]).toMatchObject({ name: '007', edges: [['m', 'bond'], ['bond', 'true'], ['moneypenny', 'm']] });
    const file = join(dir, 'by-hand.yaml');
    await writeFile(file, exported.stdout);
    const plan = await teamctl(['plan', '-f', file, '--detailed-exitcode'], { env: { OPENAI_PROVIDER_KEY: 'sk-by-hand-provider-key-77aa' } });
    expect({ code: plan.code, out: plan.stdout.trim() }).toEqual({ code: 0, out: 'No changes. The live state matches the definition.' });
  });
});

describe('get', () => {
  it('get: organizations, teams, agents, humans, edges and threads by name, as a table, JSON or YAML; --team narrows, an unknown team is name_not_found with the teams there are', async () => {
    const org = 'listed';
    await applied(definition(org));
    await thread(org, 'archive', 'lee', 'keeper', 2);
    const agents = await teamctl(['get', 'agents', '--org', org]);
    expect(agents.code, agents.stderr).toBe(0);
    const rows = agents.stdout.trim().split('\n').map((line) => line.split(/\s{3,}/));
    expect(rows[0]).toEqual(['TEAM', 'NAME', 'PROVIDER', 'MODEL', 'STATUS', 'ID']);
    expect(rows.slice(1).map((r) => r.slice(0, 5))).toEqual([
      ['intake', 'triager', 'echo', 'echo-1', 'active'],
      ['intake', 'summarizer', '- (external)', '-', 'active'],
      ['archive', 'keeper', '- (external)', '-', 'active'],
    ]);
    const edges = JSON.parse((await teamctl(['get', 'edges', '--org', org, '--team', 'intake', '-o', 'json'])).stdout) as Array<{ participant_names: string[]; team_name: string }>;
    expect(edges.map((e) => e.participant_names.join(',')).sort()).toEqual(['dana,triager', 'triager,summarizer']);
    const threads = parse((await teamctl(['get', 'threads', '--org', org, '-o', 'yaml'])).stdout) as Array<Record<string, unknown>>;
    expect(threads).toEqual([expect.objectContaining({ team_name: 'archive', participant_names: ['lee', 'keeper'], message_count: 2 })]);
    const teams = await teamctl(['get', 'teams', '--org', org]);
    expect(teams.stdout).toMatch(/^NAME\s+AGENTS\s+EDGES\s+DESCRIPTION\s+PROTECTED\s+ID\n/);
    expect((await teamctl(['get', 'organizations', '-o', 'json'])).stdout).toContain(`"org_name": "${org}"`);
    expect((await teamctl(['get', 'humans', '--org', org, '--team', 'archive'])).stdout).toContain('lee');
    const none = await teamctl(['get', 'agents', '--org', org, '--team', 'nope']);
    expect(none.code).toBe(1);
    expect(none.stderr).toContain('error[name_not_found]: no team named "nope" in listed (its teams: intake, archive)');
  });
});

describe('interrupted deletes', () => {
  it('apply killed in the middle of its deletes (a teamctl child process SIGKILLed after its 3rd delete), then run again: it converges, nothing is deleted twice, nothing is left over', async () => {
    const org = 'killed-deletes';
    await applied(definition(org));
    const file = await write(trimmed(org));
    let deletes = 0;
    let child: ReturnType<typeof spawn> | undefined;
    let killed: Promise<unknown> | undefined;
    const proxy = await startFaultProxy({
      target: server.url,
      // The 3rd delete reaches the service; the process dies before it hears the answer.
      onAnswer: async (status, method) => {
        if (method !== 'DELETE' || status >= 300 || ++deletes !== 3 || !child) return;
        killed = new Promise((done) => child!.once('exit', done));
        child.kill('SIGKILL');
        await killed;
      },
    });
    try {
      const env = { ...process.env, ACS_BASE_URL: proxy.url, ACS_API_KEY: apiKey, ECHO_PROVIDER_KEY: ECHO_KEY };
      child = spawn(process.execPath, [resolve('bin/teamctl.ts'), 'apply', '-f', file, '--auto-approve', '--parallelism', '1'], { env, stdio: 'ignore' });
      const exit = await new Promise<NodeJS.Signals | number | null>((done) => child!.once('exit', (code, signal) => done(signal ?? code)));
      expect(exit).toBe('SIGKILL');
      await killed;
      expect(deletes).toBe(3);

      const rerun = await teamctl(['apply', '-f', file, '--auto-approve', '--json'], { env: { ACS_BASE_URL: proxy.url } });
      expect(rerun.code, rerun.stderr).toBe(0);
      expect((JSON.parse(rerun.stdout) as { applied: Array<{ action: string }> }).applied.map((c) => c.action)).toEqual(['delete']);
      // Four deletes were planned: each was answered 2xx exactly once, across both runs.
      const deleted = proxy.forwarded.filter((f) => /^2\d\d DELETE /.test(f));
      expect(deleted).toHaveLength(4);
      expect(new Set(deleted).size).toBe(4);
      expect(proxy.forwarded.filter((f) => / DELETE /.test(f) && !/^2/.test(f))).toEqual([]);
      expect((await teamctl(['plan', '-f', file, '--detailed-exitcode'])).code).toBe(0);
      const state = await snapshot(client, org);
      expect(state.teams.map((t) => [t.name, t.agents.map((a) => a.name), t.edges])).toEqual([['intake', ['triager'], ['dana<->triager']]]);
      expect(state.providerKeys).toEqual([]);
    } finally {
      child?.kill('SIGKILL');
      await proxy.close();
    }
  }, 120_000);
});
