/**
 * Errors that say how to fix them: unknown names with a did-you-mean, an unreachable service in
 * words, a base URL with `/api/v1`, refused thread openings that create nothing, a 429 that says
 * how long to wait, a 503 that says retries were spent and what to do. Against a real acs-server
 * on a free port; the 503 comes from a loopback stand-in (a server that stays unavailable cannot
 * be had otherwise).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AcsClient } from '../../client/acs-client.ts';
import { startServer } from '../../service/index.ts';
import { runTeamctl } from '../support/cli.ts';
import type { CliRun } from '../support/cli.ts';

const example = new URL('../../examples/acme-research.yaml', import.meta.url).pathname;
let server: Awaited<ReturnType<typeof startServer>>;
let apiKey: string;
let client: AcsClient;
let orgId: string;

beforeAll(async () => {
  server = await startServer({ inMemory: true, port: 0, tickMs: 60_000, logger: false, rateLimit: false });
  const org = await server.provisionOrganization('hints');
  apiKey = org.api_key;
  orgId = org.org_id;
  client = new AcsClient({ baseUrl: server.url, apiKey });
  const team = await client.createTeam(org.org_id, { team_name: 'intake' });
  const dana = (await client.createHuman(team.team_id, { name: 'dana' })).human_id;
  const triager = (await client.createHuman(team.team_id, { name: 'triager' })).human_id;
  const eve = (await client.createHuman(team.team_id, { name: 'eve' })).human_id;
  await client.createHuman(team.team_id, { name: 'summarizer' });
  await client.createEdge(team.team_id, [dana, triager]);
  await client.createEdge(team.team_id, [dana, eve]);
});

afterAll(async () => {
  await server?.close();
});

const teamctl = (args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliRun> =>
  runTeamctl(args, { ACS_BASE_URL: server.url, ACS_API_KEY: apiKey, ECHO_PROVIDER_KEY: 'hints-echo', TEAMCTL_CONFIG: '/nonexistent/teamctl.yaml', ...env });

/** Threads of every edge of the team, to show a refused command created none. */
async function threadCount(): Promise<number> {
  const [team] = await client.listTeams(orgId);
  const graph = await client.getTeam(team!.team_id);
  let count = 0;
  for (const edge of graph.edges) count += (await client.listThreads(edge.edge_id)).length;
  return count;
}

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

describe('teamctl: hints that fix the problem', () => {
  it('a misspelt participant gets a did-you-mean on thread open', async () => {
    const result = await teamctl(['thread', 'open', '--team', 'intake', '--from', 'dana', '--to', 'trigaer', '--content', 'hi']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('error[name_not_found]: no participant named "trigaer" in team intake (did you mean "triager"?)');
  });

  it('a misspelt team or organization gets a did-you-mean on every thread command', async () => {
    expect((await teamctl(['thread', 'list', '--team', 'intak'])).stderr).toContain('no team named "intak" (did you mean "intake"?)');
    expect((await teamctl(['thread', 'open', '--team', 'intake', '--org', 'hint', '--from', 'dana', '--to', 'eve', '--content', 'x'])).stderr).toContain(
      'no organization named "hint" reachable with this key (did you mean "hints"?)',
    );
    expect((await teamctl(['thread', 'list', '--team', 'intake', '--between', 'dana,tiager'])).stderr).toContain('no participant named "tiager" in team intake (did you mean "triager"?)');
  });

  it('a name with nothing close lists the names there are', async () => {
    const result = await teamctl(['thread', 'list', '--team', 'intake', '--between', 'dana,zed']);
    expect(result.stderr).toContain('no participant named "zed" in team intake (its participants: dana, triager, eve, summarizer)');
  });

  it('thread open with one participant at both ends is refused and creates nothing', async () => {
    const before = await threadCount();
    const result = await teamctl(['thread', 'open', '--team', 'intake', '--from', 'dana', '--to', 'dana', '--content', 'hi']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('error[invalid_usage]: --from and --to both name dana: a thread is between two different participants; nothing was created');
    expect(await threadCount()).toBe(before);
  });

  it('thread open between two participants with no edge is refused, naming them and who the sender can reach', async () => {
    const before = await threadCount();
    const result = await teamctl(['thread', 'open', '--team', 'intake', '--from', 'dana', '--to', 'summarizer', '--content', 'hi']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      "error[invalid_usage]: no edge joins dana and summarizer in team intake, so no thread can be opened between them (dana's edges go to triager, eve); nothing was created",
    );
    expect(await threadCount()).toBe(before);
  });

  it('an unreachable service is "cannot reach ACS at URL (connection refused)", with a hint and no Temporal in it', async () => {
    const url = `http://127.0.0.1:${await closedPort()}`;
    const result = await teamctl(['thread', 'list', '--team', 'intake'], { ACS_BASE_URL: url });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`error[network_error]: GET /organizations: cannot reach ACS at ${url} (connection refused)`);
    expect(result.stderr).toContain('hint: is acs-server running at that address?');
    expect(result.stderr).not.toContain('TypeError');
    const apply = await teamctl(['plan', '-f', example], { ACS_BASE_URL: url });
    expect(apply.stderr).toContain('(connection refused)');
    expect(apply.stderr).not.toMatch(/temporal/i);
  });

  it('apply against a port where nothing listens fails at once with plan\'s message, instead of retrying for minutes', async () => {
    const url = `http://127.0.0.1:${await closedPort()}`;
    const plan = await teamctl(['plan', '-f', example], { ACS_BASE_URL: url });
    const apply = await teamctl(['apply', '-f', example], { ACS_BASE_URL: url });
    expect(apply.code).toBe(1);
    expect(apply.stderr).toBe(plan.stderr);
    expect(apply.stderr).toContain(`error[network_error]: GET /organizations: cannot reach ACS at ${url} (connection refused)\nhint: is acs-server running at that address?`);
    // One attempt: no wait was shown, and nothing says retries were spent.
    expect(apply.stderr).not.toMatch(/waiting|gave up/);
  });

  it('a base URL given with /api/v1 (as the API documents it) works as given', async () => {
    for (const url of [`${server.url}/api/v1`, `${server.url}/api/v1/`, `${server.url}/v1`]) {
      expect(await teamctl(['thread', 'list', '--team', 'intake'], { ACS_BASE_URL: url })).toMatchObject({ code: 0, stdout: 'No threads in team intake.\n' });
    }
  });

  it('a 429 says the window and how long to wait, in the service\'s message and in the hint', async () => {
    const limited = await startServer({ inMemory: true, port: 0, tickMs: 60_000, logger: false, rateLimit: { max: 2, windowMs: 60_000 } });
    try {
      const key = (await limited.provisionOrganization('limited')).api_key;
      const env = { ACS_BASE_URL: limited.url, ACS_API_KEY: key };
      await teamctl(['thread', 'list', '--team', 'none'], env);
      const result = await teamctl(['thread', 'list', '--team', 'none'], env);
      expect(result.code).toBe(1);
      const message = /error\[rate_limited\]: GET \/organizations: 429 rate_limited: more than 2 requests in 1 minute with this key; the limit resets in (\d+) s \(Retry-After\)/.exec(result.stderr);
      expect(message, result.stderr).not.toBeNull();
      const seconds = Number(message![1]);
      expect(seconds).toBeGreaterThan(0);
      expect(seconds).toBeLessThanOrEqual(60);
      expect(result.stderr).toContain(`hint: the service limits the requests of each key per minute: wait ${seconds} s (its Retry-After), then run the command again`);
    } finally {
      await limited.close();
    }
  });

  it('a service that stays unavailable (503) ends an apply with the attempts spent and what to do', async () => {
    let requests = 0;
    const unavailable: Server = createServer((request, response) => {
      requests++;
      request.resume();
      const body = JSON.stringify({ type: 'about:blank', title: 'Service unavailable', status: 503, code: 'unavailable', detail: 'storage is unreachable' });
      response.writeHead(503, { 'content-type': 'application/problem+json', 'retry-after': '1' }).end(body);
    });
    await new Promise<void>((resolve) => unavailable.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(unavailable.address() as AddressInfo).port}`;
      const result = await teamctl(['apply', '-f', example], { ACS_BASE_URL: url });
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(/error\[unavailable\]: GET \/organizations: 503 unavailable: storage is unreachable; gave up after 10 attempts over \d+ s/);
      // While it waited, it said what for: each wait once the waits reached 2 s (the first, of 1 s, stays quiet).
      const waits = result.stderr.split('\n').filter((line) => line.startsWith('waiting '));
      expect(waits[0]).toBe('waiting 1 s before attempt 3 of 10: GET /organizations: 503 unavailable: storage is unreachable');
      expect(waits).toHaveLength(8);
      expect(result.stderr).toContain("hint: the service or its database is down or restarting: check acs-server's log and its database");
      expect(requests).toBe(10);
    } finally {
      await new Promise((resolve) => unavailable.close(resolve));
    }
  }, 60_000);
});
