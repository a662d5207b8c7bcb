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
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AcsClient } from '../../client/acs-client.ts';
import { AcsApiError } from '../../client/errors.ts';
import { reportError } from '../../cli/errors.ts';
import { ToolkitError } from '../../errors/catalogue.ts';
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

/** A key of the right shape that no organization has, put together here so that no key-shaped string stands in the repository. */
const refusedKey = () => `acs_org_${'0123456789abcdef'.repeat(2)}`;

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

  it('a name that is a participant of another team of the organization is named there (thread open, thread send, mcp config, get usage, humans invite); a typo keeps its did-you-mean', async () => {
    const org = await server.provisionOrganization('hints-teams');
    const other = new AcsClient({ baseUrl: server.url, apiKey: org.api_key });
    const ops = await other.createTeam(org.org_id, { team_name: 'ops' });
    const dana = (await other.createHuman(ops.team_id, { name: 'dana' })).human_id;
    const bot = (await other.createAgent(ops.team_id, { name: 'bot' })).agent_id;
    const edge = await other.createEdge(ops.team_id, [dana, bot]);
    const research = await other.createTeam(org.org_id, { team_name: 'research' });
    await other.createAgent(research.team_id, { name: 'scout' });
    await other.createHuman(research.team_id, { name: 'alice' });
    const env = { ACS_API_KEY: org.api_key };

    const open = await teamctl(['thread', 'open', '--team', 'ops', '--from', 'dana', '--to', 'scout', '--content', 'hi'], env);
    expect(open.code).toBe(1);
    expect(open.stderr).toContain('error[name_not_found]: no participant named "scout" in team ops (scout is an agent of team research)\nhint: pass --team research; a team\'s participants are its own');
    const thread = await other.openThread(edge.edge_id, { sender_agent_id: dana, content: 'hi' });
    const send = await teamctl(['thread', 'send', thread.thread_id, '--from', 'alice', '--content', 'x'], env);
    expect(send.stderr).toContain('error[name_not_found]: no participant named "alice" in team ops (alice is a human of team research)\nhint: the thread is in team ops: its participants are the two of its edge there');
    expect((await teamctl(['mcp', 'config', '--team', 'ops', '--agent', 'scout'], env)).stderr).toContain('error[name_not_found]: no agent named "scout" in team ops (scout is an agent of team research)\nhint: pass --team research');
    expect((await teamctl(['get', 'usage', '--team', 'ops', '--agent', 'scout'], env)).stderr).toContain('error[name_not_found]: no agent named "scout" in team ops (scout is an agent of team research)');
    expect((await teamctl(['humans', 'invite', 'alice', '--team', 'ops'], env)).stderr).toContain('error[name_not_found]: no human named "alice" in team ops (alice is a human of team research)');
    expect((await teamctl(['thread', 'list', '--team', 'ops', '--between', 'dana,scout'], env)).stderr).toContain('no participant named "scout" in team ops (scout is an agent of team research)');
    // Nothing was created on the way; a name in no team keeps its did-you-mean.
    expect(await other.listThreads(edge.edge_id)).toHaveLength(1);
    expect((await teamctl(['thread', 'open', '--team', 'ops', '--from', 'dana', '--to', 'bott', '--content', 'hi'], env)).stderr).toContain('no participant named "bott" in team ops (did you mean "bot"?)');
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
    expect(result.stderr).toContain(`hint: is acs-server running at ${url}? Start one with \`npx acs-server start\`, or set ACS_BASE_URL to the service's address`);
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
    expect(apply.stderr).toContain(`error[network_error]: GET /organizations: cannot reach ACS at ${url} (connection refused)\nhint: is acs-server running at ${url}?`);
    // One attempt: no wait was shown, and nothing says retries were spent.
    expect(apply.stderr).not.toMatch(/waiting|gave up/);
  });

  it('a base URL given with /api/v1 (as the API documents it) works as given', async () => {
    for (const url of [`${server.url}/api/v1`, `${server.url}/api/v1/`, `${server.url}/v1`]) {
      expect(await teamctl(['thread', 'list', '--team', 'intake'], { ACS_BASE_URL: url })).toMatchObject({ code: 0, stdout: 'No threads in team intake.\n' });
    }
  });

  it('a base URL given with a lone /api works as given too, instead of asking for /api/api/v1/…', async () => {
    expect(await teamctl(['thread', 'list', '--team', 'intake'], { ACS_BASE_URL: `${server.url}/api` })).toMatchObject({ code: 0, stdout: 'No threads in team intake.\n' });
  });

  it('a base URL with a path the service has no route under is one line naming the variable, and a hint saying what to give', async () => {
    const result = await teamctl(['thread', 'list', '--team', 'intake'], { ACS_BASE_URL: `${server.url}/acs` });
    expect(result.code).toBe(1);
    const lines = result.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^error\[route_not_found\]: GET \/organizations: 404 route_not_found/);
    expect(lines[1]).toBe(`hint: ${server.url}/acs (ACS_BASE_URL) has no such route: give the service's root URL, without a path (teamctl adds /api/v1)`);
  });

  it('a base URL without its scheme is blamed on where it came from — the variable, the flag or the context — with the URL to write instead', async () => {
    const fromVariable = await teamctl(['thread', 'list', '--team', 'intake'], { ACS_BASE_URL: '127.0.0.1:8080' });
    expect(fromVariable.code).toBe(1);
    expect(fromVariable.stderr).toBe(
      'error[invalid_usage]: ACS_BASE_URL is not an http(s) URL: 127.0.0.1:8080\nhint: write it with its scheme: http://127.0.0.1:8080 (the service\'s root URL; teamctl adds /api/v1)\n',
    );
    const fromFlag = await teamctl(['thread', 'list', '--team', 'intake', '--base-url', 'localhost:8080']);
    expect(fromFlag.stderr).toContain('error[invalid_usage]: --base-url is not an http(s) URL: localhost:8080\nhint: write it with its scheme: http://localhost:8080');
  });

  it('a service address that came from a context is named as the context\'s baseUrl', async () => {
    const url = `http://127.0.0.1:${await closedPort()}`;
    const config = join(await mkdtemp(join(tmpdir(), 'teamctl-hints-')), 'config.yaml');
    await writeFile(config, `contexts:\n  prod:\n    baseUrl: ${url}\ncurrentContext: prod\n`);
    const result = await runTeamctl(['thread', 'list', '--team', 'intake'], { ACS_API_KEY: apiKey, TEAMCTL_CONFIG: config });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`hint: is acs-server running at ${url}? Start one with \`npx acs-server start\`, or set context "prod"'s baseUrl to the service's address`);
  });

  it('https:// to a server without TLS is one line in words, and a hint naming the variable', async () => {
    const url = server.url.replace('http://', 'https://');
    const result = await teamctl(['thread', 'list', '--team', 'intake'], { ACS_BASE_URL: url });
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      `error[network_error]: GET /organizations: cannot reach ACS at ${url} (TLS: the server does not speak TLS there (an http:// server?))\n` +
        `hint: the TLS handshake failed: make ${url} (ACS_BASE_URL) http:// if the server has no TLS, else have its certificate trusted (NODE_EXTRA_CA_CERTS=FILE for a private CA)\n`,
    );
  });

  it('a refused key names the variable it came from and where a valid one comes from, never `keys rotate` (which needs a valid key)', async () => {
    const one = await teamctl(['thread', 'list', '--team', 'intake', '--api-key-env', 'MY_KEY'], { MY_KEY: refusedKey() });
    expect(one.code).toBe(1);
    expect(one.stderr).toContain('error[invalid_api_key]:');
    expect(one.stderr).toContain('hint: the key in MY_KEY is unknown, revoked or expired: put a valid organization key in it (an operator issues one: npx acs-server admin keys issue --org ORG_ID)');
    const all = await teamctl(['thread', 'list', '--team', 'intake'], { ACS_API_KEY: refusedKey(), ACS_API_KEY_NEXT: refusedKey() });
    expect(all.stderr).toContain('error[keys_refused]: every organization key was refused: ACS_API_KEY (invalid_api_key');
    expect(all.stderr).toContain(
      "hint: put a valid organization key in one of the named variables (an operator issues one: npx acs-server admin keys issue --org ORG_ID; a dev server's is in its --dev-credentials file)",
    );
    expect(one.stderr + all.stderr).not.toContain('keys rotate');
  });

  it('hints name the commands that work where teamctl runs: the clone\'s npx and npm scripts, or the installed binaries and the Temporal CLI', () => {
    const unreachable = new AcsApiError({ status: 0, code: 'network_error', message: 'GET /organizations: cannot reach ACS at http://127.0.0.1:1 (connection refused)' });
    const noTemporal = new ToolkitError('temporal_unreachable', 'cannot reach Temporal at 127.0.0.1:1 (namespace default)');
    expect(reportError(unreachable, undefined, 'clone').hint).toContain('Start one with `npx acs-server start`');
    expect(reportError(unreachable, undefined, 'installed').hint).toContain('Start one with `acs-server start`');
    expect(reportError(noTemporal, undefined, 'clone').hint).toBe('start one with `npm run temporal:dev`, or point TEMPORAL_ADDRESS (or TEMPORAL_PROFILE) at your Temporal server');
    expect(reportError(noTemporal, undefined, 'installed').hint).toBe('start one with `temporal server start-dev`, or point TEMPORAL_ADDRESS (or TEMPORAL_PROFILE) at your Temporal server');
    for (const code of ['network_error', 'temporal_unreachable', 'invalid_api_key', 'keys_refused']) {
      expect(reportError(new ToolkitError(code as 'invalid_usage', 'x'), undefined, 'installed').hint).not.toMatch(/npx|npm run/);
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
