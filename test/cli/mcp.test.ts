/**
 * `teamctl mcp config | keys list | keys revoke` against a real acs-server, in-process through
 * `runCli`; the printed configuration is used as printed, by the MCP SDK's own client.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AcsClient } from '../../client/acs-client.ts';
import { entryName, keysNamed, renderMcpConfig } from '../../cli/commands/mcp.ts';
import { startServer } from '../../service/index.ts';
import { runTeamctl } from '../support/cli.ts';
import { callTool, connectMcp } from '../support/mcp.ts';

let server: Awaited<ReturnType<typeof startServer>>;
let apiKey: string;
let client: AcsClient;
let scoutId: string;

const teamctl = (args: string[]) => runTeamctl(args, { ACS_BASE_URL: server.url, ACS_API_KEY: apiKey });

/** The MCP endpoint's answer to a key: 200 when it is served, the problem's code otherwise. */
async function endpointAccepts(key: string): Promise<number> {
  const reply = await fetch(`${server.url}/api/v1/mcp`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
  });
  await reply.body?.cancel();
  return reply.status;
}

beforeAll(async () => {
  server = await startServer({ inMemory: true, port: 0, tickMs: 60_000, logger: false });
  const org = await server.provisionOrganization('cli-mcp');
  apiKey = org.api_key;
  client = new AcsClient({ baseUrl: server.url, apiKey });
  const team = await client.createTeam(org.org_id, { team_name: 'literature-review' });
  scoutId = (await client.createAgent(team.team_id, { name: 'scout' })).agent_id;
  await client.createAgent(team.team_id, { name: 'archivist', provider: 'echo', model: 'echo-1' });
  await client.createHuman(team.team_id, { name: 'alice' });
});

afterAll(async () => {
  await server?.close();
});

describe('teamctl mcp config', () => {
  it('mcp config --format json: creates a key for the agent and prints the URL and header, with which the SDK client acts as that agent', async () => {
    const result = await teamctl(['mcp', 'config', '--team', 'literature-review', '--agent', 'scout', '--format', 'json']);
    expect(result.code, result.stderr).toBe(0);
    const config = JSON.parse(result.stdout);
    expect(config).toEqual({ name: 'literature-review-scout', url: `${server.url}/api/v1/mcp`, headers: { 'x-api-key': expect.stringMatching(/^acs_mcp_/) } });
    const key = config.headers['x-api-key'];
    expect(result.stderr).toContain('Created MCP key');
    expect(result.stderr).not.toContain(key);
    const mcp = await connectMcp(server.url, key, new URL(config.url).pathname);
    try {
      expect((await callTool(mcp, 'whoami')).agent).toMatchObject({ agent_id: scoutId, name: 'scout' });
    } finally {
      await mcp.close();
    }
  });

  it('mcp config --format claude: an mcp-remote bridge entry for claude_desktop_config.json, the key passed in env, not in args', async () => {
    const result = await teamctl(['mcp', 'config', '--team', 'literature-review', '--agent', 'scout', '--format', 'claude', '--name', 'scout']);
    expect(result.code, result.stderr).toBe(0);
    const entry = JSON.parse(result.stdout).mcpServers.scout;
    expect(entry.command).toBe('npx');
    expect(entry.args).toEqual(['-y', 'mcp-remote', `${server.url}/api/v1/mcp`, '--transport', 'http-only', '--header', 'x-api-key:${ACS_MCP_KEY}']);
    expect(entry.env.ACS_MCP_KEY).toMatch(/^acs_mcp_/);
    expect(await endpointAccepts(entry.env.ACS_MCP_KEY)).toBe(200);
    expect(result.stderr).toContain('claude_desktop_config.json');
  });

  it('mcp config --format cursor and vscode: url and headers in each client\'s own layout', async () => {
    const cursor = await teamctl(['mcp', 'config', '--team', 'literature-review', '--agent', 'scout', '--format', 'cursor']);
    expect(JSON.parse(cursor.stdout)).toEqual({ mcpServers: { 'literature-review-scout': { url: `${server.url}/api/v1/mcp`, headers: { 'x-api-key': expect.stringMatching(/^acs_mcp_/) } } } });
    const vscode = await teamctl(['mcp', 'config', '--team', 'literature-review', '--agent', 'scout', '--format', 'vscode']);
    const entry = JSON.parse(vscode.stdout).servers['literature-review-scout'];
    expect(entry).toMatchObject({ type: 'http', url: `${server.url}/api/v1/mcp` });
    expect(await endpointAccepts(entry.headers['x-api-key'])).toBe(200);
  });

  it('mcp config: a misspelt team or agent gets a did-you-mean, a human is refused as not an agent, and no key is created', async () => {
    const before = (await client.listMcpKeys(scoutId)).length;
    const team = await teamctl(['mcp', 'config', '--team', 'literature-reveiw', '--agent', 'scout']);
    expect(team.code).toBe(1);
    expect(team.stderr).toContain('error[name_not_found]: no team named "literature-reveiw" (did you mean "literature-review"?)');
    const agent = await teamctl(['mcp', 'config', '--team', 'literature-review', '--agent', 'scuot']);
    expect(agent.stderr).toContain('error[name_not_found]: no agent named "scuot" in team literature-review (did you mean "scout"?)');
    const human = await teamctl(['mcp', 'config', '--team', 'literature-review', '--agent', 'alice']);
    expect(human.stderr).toContain('"alice" is a human of team literature-review, not an agent');
    const format = await teamctl(['mcp', 'config', '--team', 'literature-review', '--agent', 'scout', '--format', 'zed']);
    expect(format.code).toBe(1);
    expect(format.stderr).toMatch(/Allowed choices are claude, cursor, vscode, json/);
    expect((await client.listMcpKeys(scoutId)).length).toBe(before);
  });

  it('mcp config: an agent with a provider gets a key too, with a note that the service answers for it', async () => {
    const result = await teamctl(['mcp', 'config', '--team', 'literature-review', '--agent', 'archivist']);
    expect(result.code).toBe(0);
    expect(result.stderr).toContain('archivist has provider echo');
  });
});

describe('teamctl mcp keys', () => {
  it('mcp keys list: the agent\'s active keys with prefix and dates, never a secret', async () => {
    const made = JSON.parse((await teamctl(['mcp', 'config', '--team', 'literature-review', '--agent', 'scout'])).stdout);
    const secret = made.headers['x-api-key'];
    const text = await teamctl(['mcp', 'keys', 'list', '--team', 'literature-review', '--agent', 'scout']);
    expect(text.code).toBe(0);
    expect(text.stdout.split('\n')[0]).toMatch(/^KEY ID\s+PREFIX\s+CREATED\s+LAST USED$/);
    expect(text.stdout).toContain(`${secret.slice(0, 12)}…`);
    expect(text.stdout).not.toContain(secret);
    const json = JSON.parse((await teamctl(['mcp', 'keys', 'list', '--team', 'literature-review', '--agent', 'scout', '--json'])).stdout);
    expect(json.mcp_keys.map((k: any) => k.prefix)).toContain(secret.slice(0, 12));
    expect(JSON.stringify(json)).not.toContain(secret);
  });

  it('mcp keys revoke: by key id and by prefix; the endpoint refuses the keys at once', async () => {
    const one = JSON.parse((await teamctl(['mcp', 'config', '--team', 'literature-review', '--agent', 'scout'])).stdout).headers['x-api-key'];
    const two = JSON.parse((await teamctl(['mcp', 'config', '--team', 'literature-review', '--agent', 'scout'])).stdout).headers['x-api-key'];
    const keys = await client.listMcpKeys(scoutId);
    const oneId = keys.find((k) => one.startsWith(k.prefix))!.key_id;
    expect(await endpointAccepts(one)).toBe(200);
    const result = await teamctl(['mcp', 'keys', 'revoke', oneId, two.slice(0, 12), '--team', 'literature-review', '--agent', 'scout']);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain(`Revoked MCP key ${oneId}`);
    expect(await endpointAccepts(one)).toBe(401);
    expect(await endpointAccepts(two)).toBe(401);
  });

  it('mcp keys revoke: an unknown key revokes nothing and the error does not echo a whole key', async () => {
    const key = JSON.parse((await teamctl(['mcp', 'config', '--team', 'literature-review', '--agent', 'scout'])).stdout).headers['x-api-key'];
    const keyId = (await client.listMcpKeys(scoutId)).find((k) => key.startsWith(k.prefix))!.key_id;
    const bogus = `acs_mcp_${'Z'.repeat(40)}`;
    const result = await teamctl(['mcp', 'keys', 'revoke', keyId, bogus, '--team', 'literature-review', '--agent', 'scout']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('no active MCP key acs_mcp_ZZZZ…');
    expect(result.stderr).not.toContain(bogus);
    expect(await endpointAccepts(key)).toBe(200);
  });
});

describe('mcp configuration rendering', () => {
  const endpoint = (url: string) => ({ name: 'n', url, key: 'acs_mcp_secret' });

  it('renderMcpConfig claude: --allow-http only for plain http on another host than loopback', () => {
    const args = (url: string) => (renderMcpConfig('claude', endpoint(url)) as any).mcpServers.n.args as string[];
    expect(args('http://127.0.0.1:8080/api/v1/mcp')).not.toContain('--allow-http');
    expect(args('http://localhost:8080/api/v1/mcp')).not.toContain('--allow-http');
    expect(args('http://[::1]:8080/api/v1/mcp')).not.toContain('--allow-http');
    expect(args('https://acs.example.com/api/v1/mcp')).not.toContain('--allow-http');
    expect(args('http://acs.internal:8080/api/v1/mcp')).toContain('--allow-http');
  });

  it('entryName: team and agent as a lower-case slug', () => {
    expect(entryName('Literature Review', 'Scout #1')).toBe('literature-review-scout-1');
  });

  it('keysNamed: every unknown or ambiguous argument is named at once', () => {
    const key = (id: string, prefix: string) => ({ key_id: id, agent_id: id, prefix, created_at: '', last_used_at: null });
    const keys = [key('11111111-1111-4111-8111-111111111111', 'acs_mcp_abcd'), key('22222222-2222-4222-8222-222222222222', 'acs_mcp_abcd')];
    expect(keysNamed(keys, ['11111111-1111-4111-8111-111111111111']).map((k) => k.key_id)).toEqual(['11111111-1111-4111-8111-111111111111']);
    expect(() => keysNamed(keys, ['acs_mcp_abcd', 'nope'])).toThrow(/acs_mcp_abcd matches 2 keys by prefix; give the key id; no active MCP key nope/);
  });
});
