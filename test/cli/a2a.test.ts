/**
 * `teamctl a2a card AGENT` against a real acs-server, in-process through `runCli`: the card URL it
 * prints is the agent's card, and the client programs it prints run as printed — the JS one with
 * `@a2a-js/sdk`, the Python one with PyPI's `a2a-sdk` — and get the echo agent's completed task.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AcsClient } from '../../client/acs-client.ts';
import { startServer } from '../../service/index.ts';
import { describeWithPython, installPythonSdk, runPython } from '../a2a/python-sdk.ts';
import { runTeamctl } from '../support/cli.ts';

const root = resolve(import.meta.dirname, '..', '..');
let server: Awaited<ReturnType<typeof startServer>>;
let apiKey: string;
let scoutKey: string;
let archivistId: string;
let work: string;

const teamctl = (args: string[]) => runTeamctl(args, { ACS_BASE_URL: server.url, ACS_API_KEY: apiKey });

beforeAll(async () => {
  server = await startServer({ inMemory: true, port: 0, tickMs: 20, logger: false });
  const org = await server.provisionOrganization('cli-a2a');
  apiKey = org.api_key;
  const client = new AcsClient({ baseUrl: server.url, apiKey });
  await client.putProviderKey(org.org_id, 'echo', 'echo-key');
  const team = await client.createTeam(org.org_id, { team_name: 'archive' });
  const scout = await client.createAgent(team.team_id, { name: 'scout' });
  archivistId = (await client.createAgent(team.team_id, { name: 'archivist', provider: 'echo', instructions: 'Finds what was filed.' })).agent_id;
  await client.createAgent(team.team_id, { name: 'loner', provider: 'echo' });
  await client.createEdge(team.team_id, [scout.agent_id, archivistId]);
  scoutKey = (await client.createMcpKey(scout.agent_id)).mcp_key;
  // A directory for the printed programs, whose imports resolve to this checkout's packages.
  work = await mkdtemp(join(tmpdir(), 'teamctl-a2a-'));
  await symlink(join(root, 'node_modules'), join(work, 'node_modules'));
});

afterAll(async () => {
  await server?.close();
  if (work) await rm(work, { recursive: true, force: true });
});

describe('teamctl a2a card', () => {
  it('a2a card --format url prints the agent\'s card URL, which serves its card to a caller on an edge with it', async () => {
    const result = await teamctl(['a2a', 'card', 'archivist', '--team', 'archive', '--format', 'url']);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout.trim()).toBe(`${server.url}/a2a/v1/agents/${archivistId}/.well-known/agent-card.json`);
    const card = await fetch(result.stdout.trim(), { headers: { 'x-api-key': scoutKey, 'a2a-version': '1.0' } });
    expect(card.status).toBe(200);
    expect(await card.json()).toMatchObject({ name: 'archivist', description: 'Finds what was filed.' });
  });

  it('a2a card --format js prints a program that, run as printed with a caller\'s key, gets the echo agent\'s completed task', async () => {
    const result = await teamctl(['a2a', 'card', 'archivist', '--team', 'archive', '--format', 'js']);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('// Callers: agents on an edge with archivist, each with its own MCP key in ACS_MCP_KEY: scout');
    expect(result.stdout).not.toContain(scoutKey);
    expect(result.stderr).toContain('teamctl mcp config --team archive --agent CALLER');
    const file = join(work, 'call.mjs');
    await writeFile(file, result.stdout);
    const { stdout } = await promisify(execFile)(process.execPath, [file], { cwd: work, env: { ...process.env, ACS_MCP_KEY: scoutKey }, timeout: 60_000 });
    const task = JSON.parse(stdout);
    expect(task.status.state).toBe(3); // TASK_STATE_COMPLETED
    expect(task.artifacts[0].parts[0].content.value).toBe('echo: Hello');
  });

  it('a2a card for an agent no agent shares an edge with says no key may call it yet', async () => {
    const result = await teamctl(['a2a', 'card', 'loner', '--team', 'archive', '--format', 'url']);
    expect(result.code).toBe(0);
    expect(result.stderr).toContain('no agent shares an edge with loner');
  });

  it('a2a card for a name that is no agent of the team fails with a did-you-mean', async () => {
    const result = await teamctl(['a2a', 'card', 'archivst', '--team', 'archive']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('did you mean "archivist"?');
  });
});

describeWithPython('teamctl a2a card with the A2A Python SDK', () => {
  beforeAll(async () => {
    await installPythonSdk();
  }, 300_000);

  it('a2a card (Python, the default) prints a program that, run as printed with a caller\'s key, gets the echo agent\'s completed task', async () => {
    const result = await teamctl(['a2a', 'card', 'archivist', '--team', 'archive']);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('# Agent card of archivist (team archive)');
    const file = join(work, 'call.py');
    await writeFile(file, result.stdout);
    const printed = await runPython(file, [], { ACS_MCP_KEY: scoutKey });
    expect(printed).toContain('TASK_STATE_COMPLETED');
    expect(printed).toContain('echo: Hello');
  });
});
