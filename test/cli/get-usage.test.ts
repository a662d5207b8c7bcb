/** `teamctl get usage` against a real acs-server whose echo agents have answered (in-process through `runCli`). */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseSince, renderUsage } from '../../cli/commands/get-usage.ts';
import { AcsClient } from '../../client/acs-client.ts';
import { startServer } from '../../service/index.ts';
import { runTeamctl } from '../support/cli.ts';
import type { CliRun } from '../support/cli.ts';

let server: Awaited<ReturnType<typeof startServer>>;
let apiKey: string;
let client: AcsClient;

const teamctl = (args: string[]): Promise<CliRun> => runTeamctl(args, { ACS_BASE_URL: server.url, ACS_API_KEY: apiKey });

beforeAll(async () => {
  server = await startServer({ inMemory: true, port: 0, tickMs: 20, logger: false });
  const org = await server.provisionOrganization('cli-usage');
  apiKey = org.api_key;
  client = new AcsClient({ baseUrl: server.url, apiKey });
  await client.putProviderKey(org.org_id, 'echo', 'any');
  const team = await client.createTeam(org.org_id, { team_name: 'desk' });
  const scout = await client.createAgent(team.team_id, { name: 'scout', provider: 'echo', model: 'echo-1', max_tokens_per_day: 1000 });
  await client.createAgent(team.team_id, { name: 'quiet', provider: 'echo' });
  const dana = await client.createHuman(team.team_id, { name: 'dana' });
  const edge = await client.createEdge(team.team_id, [dana.human_id, scout.agent_id]);
  const thread = await client.openThread(edge.edge_id, { sender_agent_id: dana.human_id, content: 'hello there' });
  // The long poll returns once scout has replied.
  const first = (await client.getThread(thread.thread_id)).messages[0]!;
  expect((await client.getThread(thread.thread_id, { after: first.message_id, wait: 30 })).messages).toHaveLength(1);
});

afterAll(async () => {
  await server?.close();
});

describe('teamctl get usage', () => {
  it('get usage: the table lists each provider agent with its models, tokens and budget, then the team totals', async () => {
    const out = await teamctl(['get', 'usage', '--team', 'desk']);
    expect(out.code, out.stderr).toBe(0);
    const lines = out.stdout.trim().split('\n');
    expect(lines[0]!.split(/\s{2,}/)).toEqual(['AGENT', 'MODELS', 'CALLS', 'INPUT', 'OUTPUT', 'TOTAL', 'TODAY / BUDGET']);
    // echo: 'hello there' is 3 input tokens, 'echo: hello there' 5 output tokens.
    expect(lines[1]!.split(/\s{2,}/)).toEqual(['scout', 'echo/echo-1', '1', '3', '5', '8', '8 / 1000']);
    expect(lines[2]!.split(/\s{2,}/)).toEqual(['quiet', '-', '0', '0', '0', '0', '0 / unlimited']);
    expect(lines.at(-1)).toMatch(/^Team desk since \d{4}-\d{2}-\d{2}T00:00:00\.000Z: 1 call, 3 input \+ 5 output = 8 tokens\.$/);
  });

  it('get usage --agent: the table has that agent\'s line, and its totals line names the agent, not the team', async () => {
    const out = await teamctl(['get', 'usage', '--team', 'desk', '--agent', 'scout']);
    expect(out.code, out.stderr).toBe(0);
    const lines = out.stdout.trim().split('\n');
    expect(lines[1]!.split(/\s{2,}/)).toEqual(['scout', 'echo/echo-1', '1', '3', '5', '8', '8 / 1000']);
    expect(lines.at(-1)).toMatch(/^Agent scout of team desk since \d{4}-\d{2}-\d{2}T00:00:00\.000Z: 1 call, 3 input \+ 5 output = 8 tokens\.$/);
  });

  it('get usage --agent -o json prints that agent as the service returns it', async () => {
    const out = await teamctl(['get', 'usage', '--team', 'desk', '--agent', 'scout', '--since', '7d', '-o', 'json']);
    expect(out.code, out.stderr).toBe(0);
    const usage = JSON.parse(out.stdout);
    expect(usage).toMatchObject({ name: 'scout', calls: 1, total_tokens: 8, max_tokens_per_day: 1000, budget_exhausted_until: null });
    expect(Date.now() - Date.parse(usage.since)).toBeGreaterThan(6.9 * 86_400_000);
  });

  it('get usage: the totals line counts in English: 1 call and 1 token, 2 calls and 0 tokens', () => {
    const since = '2026-11-24T00:00:00.000Z';
    expect(renderUsage('desk', { since, calls: 1, input_tokens: 1, output_tokens: 0, total_tokens: 1 }, [])).toBe(`Team desk since ${since}: 1 call, 1 input + 0 output = 1 token.\n(no agent with a provider)`);
    expect(renderUsage('desk', { since, calls: 2, input_tokens: 0, output_tokens: 0, total_tokens: 0 }, [])).toBe(`Team desk since ${since}: 2 calls, 0 input + 0 output = 0 tokens.\n(no agent with a provider)`);
  });

  it('get usage: an unknown agent is name_not_found and a malformed --since invalid_usage, before or without a usage request', async () => {
    const agent = await teamctl(['get', 'usage', '--team', 'desk', '--agent', 'nobody']);
    expect(agent.code).toBe(1);
    expect(agent.stderr).toContain('error[name_not_found]: no agent named "nobody" in team desk (its agents: scout, quiet)');
    const since = await teamctl(['get', 'usage', '--team', 'desk', '--since', 'last week']);
    expect(since.code).toBe(1);
    expect(since.stderr).toContain('error[invalid_usage]: --since: not an ISO 8601 time');
  });

  it('parseSince: a duration counts back from now; a date is midnight UTC; a time needs a zone', () => {
    const now = Date.parse('2026-11-24T12:00:00Z');
    expect(parseSince('24h', now)).toBe('2026-11-23T12:00:00.000Z');
    expect(parseSince('90m', now)).toBe('2026-11-24T10:30:00.000Z');
    expect(parseSince('2026-11-01', now)).toBe('2026-11-01T00:00:00.000Z');
    expect(parseSince('2026-11-01T02:00:00+01:00', now)).toBe('2026-11-01T01:00:00.000Z');
    expect(() => parseSince('2026-11-01T02:00', now)).toThrow(/add Z or an offset/);
  });
});
