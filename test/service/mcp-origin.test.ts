/**
 * DNS-rebinding protection of the MCP endpoint (issue 21, defect 6): the SDK's transport checks
 * `Host` and `Origin` against the names the server is reached at — its listen address and
 * `--public-url` — and refuses others with 403 before any tool runs.
 */
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostPolicy } from '../../service/http/allowed-hosts.ts';
import { buildTeam, startHarness, type Harness, type TeamIds } from './helpers.ts';

/** A raw POST with exactly these headers (fetch would set Host itself). */
function post(url: string, headers: Record<string, string>, body: unknown): Promise<{ status: number; body: any }> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: target.hostname, port: target.port, path: target.pathname, method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers }, setHost: false },
      (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : undefined }));
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

describe('MCP endpoint: Host and Origin', () => {
  let h: Harness;
  let ids: TeamIds;
  let mcpKey: string;
  let threadId: string;
  let port: string;
  beforeAll(async () => {
    h = await startHarness({ inMemory: true, publicUrl: 'https://acs.example.com' });
    ids = await buildTeam(h);
    mcpKey = (await h.call('POST', `/api/v1/agents/${ids.agentId}/mcp-keys`)).body.mcp_key;
    threadId = (await h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.humanId, content: 'hello' })).body.thread_id;
    port = new URL(h.server.url).port;
  });
  afterAll(async () => {
    await h.server.close();
  });

  const send = (headers: Record<string, string>, content: string) =>
    post(`${h.server.url}/api/v1/mcp`, { 'x-api-key': mcpKey, ...headers }, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'send_message', arguments: { thread_id: threadId, content } } });
  const contents = async () => ((await h.call('GET', `/api/v1/threads/${threadId}?limit=200`)).body.messages as Array<{ content: string }>).map((m) => m.content);

  it('mcp origin: a foreign Origin is 403 and the tool call does not run', async () => {
    const refused = await send({ host: `127.0.0.1:${port}`, origin: 'http://evil.example' }, 'from evil');
    expect(refused.status).toBe(403);
    expect(refused.body.error.message).toContain('Origin');
    expect(await contents()).not.toContain('from evil');
  });

  it('mcp origin: a Host the server is not reached at (a rebound DNS name) is 403 and the tool call does not run', async () => {
    const refused = await send({ host: `evil.example:${port}` }, 'rebound');
    expect(refused.status).toBe(403);
    expect(refused.body.error.message).toContain('Host');
    expect(await contents()).not.toContain('rebound');
  });

  it('mcp origin: the listen address under its loopback names, with or without its own Origin, and the public URL are served', async () => {
    for (const [headers, content] of [
      [{ host: `127.0.0.1:${port}` }, 'no origin'],
      [{ host: `localhost:${port}`, origin: `http://localhost:${port}` }, 'own origin'],
      [{ host: `[::1]:${port}` }, 'ipv6 name'],
      [{ host: 'acs.example.com', origin: 'https://acs.example.com' }, 'public url'],
    ] as Array<[Record<string, string>, string]>) {
      const reply = await send(headers, content);
      expect(reply.status, JSON.stringify(headers)).toBe(200);
      expect(reply.body.result.isError ?? false).toBe(false);
    }
    expect(await contents()).toEqual(expect.arrayContaining(['no origin', 'own origin', 'ipv6 name', 'public url']));
  });
});

describe('hostPolicy', () => {
  it('hostPolicy: a loopback listener accepts its loopback names with the port; the public URL adds its host (with and without the default port) and origin', () => {
    const policy = hostPolicy('127.0.0.1', 8080, 'https://acs.example.com');
    expect(policy.hosts).toEqual(expect.arrayContaining(['localhost:8080', '127.0.0.1:8080', '[::1]:8080', 'acs.example.com', 'acs.example.com:443']));
    expect(policy.origins).toEqual(expect.arrayContaining(['http://localhost:8080', 'http://127.0.0.1:8080', 'https://acs.example.com']));
    expect(policy.hosts).not.toContain('localhost');
  });

  it('hostPolicy: a listener on one address accepts that address only; on all interfaces, every address of the machine and the loopback names', () => {
    expect(hostPolicy('10.1.2.3', 9000).hosts).toEqual(['10.1.2.3:9000']);
    const all = hostPolicy('0.0.0.0', 80);
    expect(all.hosts).toEqual(expect.arrayContaining(['127.0.0.1', '127.0.0.1:80', 'localhost:80']));
  });
});
