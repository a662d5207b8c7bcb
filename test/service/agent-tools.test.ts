/**
 * An agent's `tools` over REST (contract §11): what create and PATCH take and refuse (every rule
 * with its error and path), what GET returns (header fingerprints, never a header value), a PATCH
 * that keeps the stored header values, the OpenAPI document, and MCP header values kept out of
 * every event, log line and error — also when the remote server fails or cannot be reached.
 * Remote tools are server-everything behind the counting proxy, which records the headers it got;
 * turns are the echo provider's scripted tool calls (`call SERVER__TOOL {json}`).
 */
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { fingerprintMatches } from '../../api/webhook-fingerprint.ts';
import { startCountedEverything, type CountedEverything } from '../support/mcp-everything.ts';
import { request, startHarness, waitForThread, type Harness } from './helpers.ts';
import { makeTeam, openThread, orgEvents, toolCalls, type BuiltTeam } from './turn-helpers.ts';

const cleanups: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

/** The header secret of these tests: a bearer token no other text contains. */
const TOKEN = `s3cr3t-${randomBytes(12).toString('hex')}`;
const SECRET = `Bearer ${TOKEN}`;

describe('agent tools: what create and PATCH take and refuse', () => {
  // A deployment without --webhook-allow-private: MCP URLs must be public https.
  let h: Harness;
  let team: BuiltTeam;
  beforeAll(async () => {
    h = await startHarness();
    cleanups.push(() => h.server.close());
    team = await makeTeam(h, { humans: ['dana'], agents: [{ name: 'helper' }], edges: [] });
  });

  const create = (body: Record<string, unknown>) => h.call('POST', `/api/v1/teams/${team.teamId}/agents`, { provider: 'echo', ...body });
  const agentNames = async () => (await h.call('GET', `/api/v1/teams/${team.teamId}/agents`)).body.agents.map((a: { name: string }) => a.name);

  it('agent tools: an agent is created with tools and max_steps, and GET returns every default filled in and a fingerprint per header, never its value', async () => {
    const created = await create({
      name: 'lead',
      max_steps: 12,
      tools: {
        team: true,
        ask_timeout_seconds: 3600,
        mcp: [{ name: 'tracker', url: 'https://93.184.216.34/mcp', headers: { Authorization: SECRET }, allow: ['search_issues', 'create_issue'] }],
        approval: { by: 'dana', tools: ['tracker.create_issue', 'send_message'] },
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const read = await h.call('GET', `/api/v1/agents/${created.body.agent_id}`);
    expect(read.body).toMatchObject({
      max_steps: 12,
      tools: {
        team: true,
        ask_timeout_seconds: 3600,
        tool_timeout_seconds: 60,
        mcp: [{ name: 'tracker', url: 'https://93.184.216.34/mcp', allow: ['search_issues', 'create_issue'], header_fingerprints: { Authorization: expect.stringMatching(/^hmac-sha256:/) } }],
        approval: { by: 'dana', tools: ['tracker.create_issue', 'send_message'] },
      },
    });
    expect(read.body.tools.mcp[0]).not.toHaveProperty('headers');
    expect(fingerprintMatches(read.body.tools.mcp[0].header_fingerprints.Authorization, SECRET)).toBe(true);
    expect(created.body).toEqual(read.body);
    for (const reply of [created, read, await h.call('GET', `/api/v1/teams/${team.teamId}/agents`), await h.call('GET', `/api/v1/teams/${team.teamId}`)]) {
      expect(JSON.stringify(reply.body)).not.toContain(TOKEN);
    }

    // Defaults: no tools, 10 steps; an empty tools object is every default.
    const plain = await create({ name: 'plain' });
    expect(plain.body).toMatchObject({ max_steps: 10, tools: null });
    const empty = await create({ name: 'empty', tools: {} });
    expect(empty.body.tools).toEqual({ team: false, ask_timeout_seconds: 86400, tool_timeout_seconds: 60, mcp: [], approval: null });
    const allowAll = await create({ name: 'all', tools: { mcp: [{ name: 'open', url: 'https://93.184.216.34/mcp' }] } });
    expect(allowAll.body.tools.mcp).toEqual([{ name: 'open', url: 'https://93.184.216.34/mcp', allow: null, header_fingerprints: {} }]);
  });

  it('agent tools: max_steps outside 1–100 is refused with its path', async () => {
    for (const max_steps of [0, 101, 2.5]) {
      const refused = await create({ name: `steps-${max_steps}`, max_steps });
      expect(refused.status).toBe(400);
      expect(refused.body.errors).toEqual([expect.objectContaining({ path: 'max_steps' })]);
    }
    expect((await create({ name: 'steps-100', max_steps: 100 })).body.max_steps).toBe(100);
  });

  it('agent tools: tools on an agent without a provider are refused (400 invalid_request, path tools), at creation and by a PATCH that removes the provider', async () => {
    const refused = await h.call('POST', `/api/v1/teams/${team.teamId}/agents`, { name: 'external', tools: { team: true } });
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ code: 'invalid_request', errors: [{ path: 'tools', message: expect.stringContaining('only an agent with a provider') }] });
    expect(await agentNames()).not.toContain('external');

    const armed = await create({ name: 'armed', tools: { team: true } });
    const removed = await h.call('PATCH', `/api/v1/agents/${armed.body.agent_id}`, { provider: null });
    expect(removed.status).toBe(400);
    expect(removed.body.errors).toEqual([expect.objectContaining({ path: 'tools' })]);
    expect((await h.call('GET', `/api/v1/agents/${armed.body.agent_id}`)).body).toMatchObject({ provider: 'echo', tools: { team: true } });
    // With both removed at once, it is an external agent again.
    const both = await h.call('PATCH', `/api/v1/agents/${armed.body.agent_id}`, { provider: null, tools: null });
    expect(both.status).toBe(200);
    expect(both.body).toMatchObject({ provider: null, tools: null });
  });

  it('agent tools: approval rules are refused with a path each (a team tool without team: true, an unknown SERVER, a TOOL its allow does not name)', async () => {
    const teamToolOff = await create({ name: 'a1', tools: { approval: { by: 'dana', tools: ['send_message'] } } });
    expect(teamToolOff.status).toBe(400);
    expect(teamToolOff.body).toMatchObject({ code: 'invalid_request', errors: [{ path: 'tools.approval.tools.0', message: expect.stringContaining('team: true') }] });

    const unknownServer = await create({ name: 'a2', tools: { team: true, approval: { by: 'dana', tools: ['ask', 'tracker.create_issue'] } } });
    expect(unknownServer.status).toBe(400);
    expect(unknownServer.body.errors).toEqual([{ path: 'tools.approval.tools.1', message: expect.stringContaining('tracker is none of the agent\'s MCP servers') }]);

    const notAllowed = await create({
      name: 'a3',
      tools: { mcp: [{ name: 'tracker', url: 'https://93.184.216.34/mcp', allow: ['search_issues'] }], approval: { by: 'dana', tools: ['tracker.create_issue'] } },
    });
    expect(notAllowed.status).toBe(400);
    expect(notAllowed.body.errors).toEqual([{ path: 'tools.approval.tools.0', message: expect.stringContaining('create_issue is not among the tools allowed on tracker') }]);

    const noSuchTeamTool = await create({ name: 'a4', tools: { team: true, approval: { by: 'dana', tools: ['delete_everything'] } } });
    expect(noSuchTeamTool.status).toBe(400);
    expect(noSuchTeamTool.body.errors).toEqual([expect.objectContaining({ path: 'tools.approval.tools.0' })]);

    // All problems at once, each with its path.
    const several = await create({ name: 'a5', tools: { approval: { by: 'dana', tools: ['send_message', 'nowhere.x'] } } });
    expect(several.body.errors.map((e: { path: string }) => e.path)).toEqual(['tools.approval.tools.0', 'tools.approval.tools.1']);
    expect(await agentNames()).not.toEqual(expect.arrayContaining(['a1', 'a2', 'a3', 'a4', 'a5']));
  });

  it('agent tools: approval.by naming no human of the team is 422 unknown_reference at tools.approval.by, at creation and in a PATCH', async () => {
    const nobody = await create({ name: 'b1', tools: { team: true, approval: { by: 'nobody', tools: ['send_message'] } } });
    expect(nobody.status).toBe(422);
    expect(nobody.body).toMatchObject({ code: 'unknown_reference', errors: [{ path: 'tools.approval.by' }] });
    // An agent's name is no human's.
    const anAgent = await create({ name: 'b2', tools: { team: true, approval: { by: 'helper', tools: ['send_message'] } } });
    expect(anAgent.status).toBe(422);
    expect(anAgent.body.errors).toEqual([expect.objectContaining({ path: 'tools.approval.by' })]);
    // A human of another team is not the agent's team's.
    await makeTeam(h, { humans: ['zed'], agents: [], edges: [] });
    expect((await create({ name: 'b3', tools: { team: true, approval: { by: 'zed', tools: ['send_message'] } } })).status).toBe(422);

    const ok = await create({ name: 'b4', tools: { team: true } });
    const patched = await h.call('PATCH', `/api/v1/agents/${ok.body.agent_id}`, { tools: { team: true, approval: { by: 'nobody', tools: ['send_message'] } } });
    expect(patched.status).toBe(422);
    expect((await h.call('GET', `/api/v1/agents/${ok.body.agent_id}`)).body.tools.approval).toBeNull();
  });

  it('agent tools: an MCP URL that is http or private is 400 webhook_url_refused naming tools.mcp.N.url, on a server without --webhook-allow-private', async () => {
    const http = await create({ name: 'c1', tools: { mcp: [{ name: 'ok', url: 'https://93.184.216.34/mcp' }, { name: 'plain', url: 'http://93.184.216.34/mcp' }] } });
    expect(http.status).toBe(400);
    expect(http.body).toMatchObject({ code: 'webhook_url_refused', errors: [{ path: 'tools.mcp.1.url', message: expect.stringContaining('https') }] });
    for (const url of ['https://127.0.0.1:9/mcp', 'https://10.1.2.3/mcp', 'https://[::1]/mcp', 'https://169.254.169.254/latest']) {
      const refused = await create({ name: 'c2', tools: { mcp: [{ name: 'inside', url }] } });
      expect(refused.status, url).toBe(400);
      expect(refused.body).toMatchObject({ code: 'webhook_url_refused', errors: [{ path: 'tools.mcp.0.url' }] });
    }
    const ok = await create({ name: 'c3', tools: { team: true } });
    const patched = await h.call('PATCH', `/api/v1/agents/${ok.body.agent_id}`, { tools: { mcp: [{ name: 'inside', url: 'http://127.0.0.1:9/mcp' }] } });
    expect(patched.status).toBe(400);
    expect(patched.body.errors).toEqual([expect.objectContaining({ path: 'tools.mcp.0.url' })]);
    expect(await agentNames()).not.toEqual(expect.arrayContaining(['c1', 'c2']));
  });

  it('agent tools: the OpenAPI document describes tools, max_steps, the tool-call records and both tool-call routes', async () => {
    const doc = (await request(`${h.server.url}/api/v1/openapi.json`, 'GET')).body;
    const schemas = doc.components.schemas;
    expect(JSON.stringify(schemas.Agent.properties.tools)).toContain('AgentTools');
    expect(schemas.Agent.properties.max_steps).toMatchObject({ type: 'integer', minimum: 1, maximum: 100 });
    expect(Object.keys(schemas.AgentTools.properties).sort()).toEqual(['approval', 'ask_timeout_seconds', 'mcp', 'team', 'tool_timeout_seconds']);
    expect(Object.keys(schemas.McpServer.properties).sort()).toEqual(['allow', 'header_fingerprints', 'name', 'url']);
    expect(JSON.stringify(schemas.AgentToolsBody)).toContain('headers');
    for (const [path, method] of [
      ['/teams/{team_id}/agents', 'post'],
      ['/agents/{agent_id}', 'patch'],
    ] as const) {
      const ref: string = doc.paths[path][method].requestBody.content['application/json'].schema.$ref;
      const body = schemas[ref.replace('#/components/schemas/', '')];
      expect(JSON.stringify(body.properties.tools), `${method} ${path}`).toContain('#/components/schemas/AgentToolsBody');
      expect(body.properties.max_steps, `${method} ${path}`).toMatchObject({ type: 'integer', maximum: 100 });
    }
    expect(Object.keys(schemas.ToolCall.properties)).toEqual(
      expect.arrayContaining(['tool_call_id', 'agent_id', 'thread_id', 'message_id', 'step', 'tool', 'server', 'arguments', 'status', 'result', 'error', 'started_at', 'finished_at']),
    );
    const list = doc.paths['/threads/{thread_id}/tool-calls'].get;
    expect(list.operationId).toBe('listThreadToolCalls');
    expect(JSON.stringify(list.responses['200'])).toContain('ToolCallList');
    expect(list.parameters.map((p: { name?: string }) => p.name)).toEqual(expect.arrayContaining(['after', 'limit']));
    expect(doc.paths['/me/threads/{thread_id}/tool-calls'].get.security).toEqual([{ session: [] }]);
    expect(JSON.stringify(doc.components.schemas.Event ?? doc.components.schemas)).toContain('tool_call.finished');
  });
});

/** A log stream kept as text (every line the server writes, at every level). */
function logCapture(): { stream: Writable; text: () => string; lines: () => Array<Record<string, unknown>> } {
  let text = '';
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      text += chunk.toString('utf8');
      done();
    },
  });
  return { stream, text: () => text, lines: () => text.split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>) };
}

/**
 * A broken MCP server on loopback, as careless as they come: its tool `leak` fails with the
 * request's Authorization header in the error, and under `/down` every request is a 500 whose body
 * repeats that header — what a proxy's or framework's error page might well do.
 */
async function startLeakyServer(): Promise<{ url: string; downUrl: string; close(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    const auth = String(req.headers.authorization ?? '(none)');
    if (req.url?.startsWith('/down')) {
      res.writeHead(500, { 'content-type': 'text/plain' }).end(`upstream refused the credentials ${auth}`);
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const mcp = new McpServer({ name: 'leaky', version: '1.0.0' });
      mcp.registerTool('leak', { description: 'fails, saying too much', inputSchema: { note: z.string().optional() } }, async () => ({
        isError: true,
        content: [{ type: 'text', text: `credentials ${auth} are not valid here (token ${auth.replace(/^Bearer /, '')})` }],
      }));
      mcp.registerTool('crash', { description: 'throws, saying too much', inputSchema: {} }, async () => {
        throw new Error(`crashed while using ${auth}`);
      });
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      res.on('close', () => {
        void transport.close();
        void mcp.close();
      });
      await mcp.connect(transport);
      const body = chunks.length > 0 ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
      await transport.handleRequest(req, res, body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    downUrl: `http://127.0.0.1:${port}/down/mcp`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

describe('agent tools: header values of remote MCP servers', () => {
  let h: Harness;
  let everything: CountedEverything;
  let leaky: Awaited<ReturnType<typeof startLeakyServer>>;
  const log = logCapture();
  beforeAll(async () => {
    [everything, leaky] = await Promise.all([startCountedEverything(), startLeakyServer()]);
    cleanups.push(() => everything.close(), () => leaky.close());
    h = await startHarness({ inMemory: true, webhooks: { allowPrivate: true }, logger: { level: 'trace', stream: log.stream } });
    cleanups.push(() => h.server.close());
    expect((await h.call('PUT', `/api/v1/organizations/${h.orgId}/api-keys/echo`, { api_key: 'echo-key' })).status).toBe(200);
  });

  /** The headers of the proxy's `tools/call` requests from `since` on. */
  const callHeaders = (since: number) => everything.proxy.requests.slice(since).filter((r) => r.rpc.includes('tools/call')).map((r) => r.headers);

  it('agent tools: a PATCH of a server without headers keeps the stored values (same fingerprint, still sent); headers {} removes them; tools null removes all', async () => {
    const server = (extra: Record<string, unknown> = {}) => ({ name: 'everything', url: everything.url, allow: ['echo'], ...extra });
    const team = await makeTeam(h, {
      humans: ['dana'],
      agents: [{ name: 'keeper', provider: 'echo', tools: { mcp: [server({ headers: { Authorization: SECRET, 'X-Tenant': 'acme' } })] } }],
      edges: [['dana', 'keeper']],
    });
    const agentId = team.id.keeper!;
    const first = (await h.call('GET', `/api/v1/agents/${agentId}`)).body.tools.mcp[0].header_fingerprints;
    expect(Object.keys(first).sort()).toEqual(['Authorization', 'X-Tenant']);

    /** Asks keeper to call everything__echo; resolves with the reply once it came. */
    const thread = await openThread(h, team.edgeOf('dana', 'keeper'), team.id.dana!, 'call everything__echo {"message":"one"}');
    let answered = 1;
    const ask = async (content: string) => {
      await h.call('POST', `/api/v1/threads/${thread}/messages`, { sender_agent_id: team.id.dana, content });
      answered += 1;
      const messages = await waitForThread(h, thread, (ms) => ms.filter((m) => m.sender_id === agentId).length >= answered);
      return messages.filter((m) => m.sender_id === agentId).at(-1)!.content;
    };
    const firstReply = await waitForThread(h, thread, (ms) => ms.some((m) => m.sender_id === agentId));
    expect(firstReply.at(-1)!.content).toContain('Echo: one');
    expect(callHeaders(0).at(-1)).toMatchObject({ authorization: SECRET, 'x-tenant': 'acme' });

    // A PATCH that leaves tools out keeps them; one that changes allow and leaves headers out keeps both values and their fingerprints.
    let mark = everything.proxy.requests.length;
    const untouched = await h.call('PATCH', `/api/v1/agents/${agentId}`, { instructions: 'call what you are told to' });
    expect(untouched.body.tools.mcp[0].header_fingerprints).toEqual(first);
    const kept = await h.call('PATCH', `/api/v1/agents/${agentId}`, { tools: { mcp: [server({ allow: ['echo', 'get-sum'] })] } });
    expect(kept.status).toBe(200);
    expect(kept.body.tools.mcp[0]).toMatchObject({ allow: ['echo', 'get-sum'], header_fingerprints: first });
    expect(await ask('call everything__echo {"message":"two"}')).toContain('Echo: two');
    expect(callHeaders(mark)).toEqual([expect.objectContaining({ authorization: SECRET, 'x-tenant': 'acme' })]);

    // A new value gets a new fingerprint, and is what is sent.
    mark = everything.proxy.requests.length;
    const rotated = await h.call('PATCH', `/api/v1/agents/${agentId}`, { tools: { mcp: [server({ headers: { Authorization: `${SECRET}-2` } })] } });
    expect(Object.keys(rotated.body.tools.mcp[0].header_fingerprints)).toEqual(['Authorization']);
    expect(rotated.body.tools.mcp[0].header_fingerprints.Authorization).not.toBe(first.Authorization);
    expect(fingerprintMatches(rotated.body.tools.mcp[0].header_fingerprints.Authorization, `${SECRET}-2`)).toBe(true);
    expect(await ask('call everything__echo {"message":"three"}')).toContain('Echo: three');
    expect(callHeaders(mark)).toEqual([expect.objectContaining({ authorization: `${SECRET}-2` })]);
    expect(callHeaders(mark)[0]).not.toHaveProperty('x-tenant');

    // headers {} removes them.
    mark = everything.proxy.requests.length;
    const cleared = await h.call('PATCH', `/api/v1/agents/${agentId}`, { tools: { mcp: [server({ headers: {} })] } });
    expect(cleared.body.tools.mcp[0].header_fingerprints).toEqual({});
    expect(await ask('call everything__echo {"message":"four"}')).toContain('Echo: four');
    expect(callHeaders(mark)).toHaveLength(1);
    expect(callHeaders(mark)[0]).not.toHaveProperty('authorization');
    // ... and a PATCH without headers after that keeps none.
    const still = await h.call('PATCH', `/api/v1/agents/${agentId}`, { tools: { mcp: [server()] } });
    expect(still.body.tools.mcp[0].header_fingerprints).toEqual({});

    // tools null: no tools; the agent answers with one completion, and calls nothing.
    mark = everything.proxy.requests.length;
    const removed = await h.call('PATCH', `/api/v1/agents/${agentId}`, { tools: null });
    expect(removed.body.tools).toBeNull();
    expect(await ask('call everything__echo {"message":"five"}')).toBe('echo: call everything__echo {"message":"five"}');
    expect(everything.proxy.requests.slice(mark)).toEqual([]);
    expect((await toolCalls(h, thread)).map((c) => c.status)).toEqual(['completed', 'completed', 'completed', 'completed']);
  });

  it('agent tools: a header secret is in no event, no log line and no error, also when the remote server fails or cannot be reached', async () => {
    const down = `http://127.0.0.1:${await closedPort()}/mcp`;
    const headers = { Authorization: SECRET };
    const team = await makeTeam(h, {
      humans: ['dana'],
      agents: [
        {
          name: 'careful',
          provider: 'echo',
          tools: {
            team: true,
            mcp: [
              { name: 'everything', url: everything.url, headers, allow: ['echo', 'get-sum'] },
              { name: 'leaky', url: leaky.url, headers },
              { name: 'broken', url: leaky.downUrl, headers },
              { name: 'gone', url: down, headers },
            ],
          },
        },
      ],
      edges: [['dana', 'careful']],
    });
    const script = [
      'call everything__echo {"message":"fine"}',
      'call everything__get-sum {"a":"not a number","b":2}',
      'call leaky__leak {"note":"x"}',
      'call leaky__crash',
      'call broken__anything',
      'call gone__anything',
    ].join('\n');
    const thread = await openThread(h, team.edgeOf('dana', 'careful'), team.id.dana!, script);
    const messages = await waitForThread(h, thread, (ms) => ms.some((m) => m.sender_id === team.id.careful));
    const reply = messages.at(-1)!.content;
    const calls = await toolCalls(h, thread);
    expect(calls.map((c) => [c.server, c.tool, c.status])).toEqual([
      ['everything', 'echo', 'completed'],
      ['everything', 'get-sum', 'failed'],
      ['leaky', 'leak', 'failed'],
      ['leaky', 'crash', 'failed'],
      ['broken', 'anything', 'failed'],
      ['gone', 'anything', 'failed'],
    ]);
    // The servers did say it: the leaky one's errors carried the header, redacted on the way in.
    expect(calls[2]!.error).toMatch(/^tool_failed: leaky\.leak: credentials \[redacted\]/);
    expect(calls[3]!.error).toBe('tool_failed: leaky.crash: crashed while using [redacted]');
    // A server that cannot be reached: its tools are not offered, and a call of one is told why.
    expect(calls[4]!.error).toBe('tool_failed: broken: could not connect: Streamable HTTP error: Error POSTing to endpoint: upstream refused the credentials [redacted]');
    expect(calls[5]!.error).toMatch(/^tool_failed: gone: could not connect: /);
    expect(reply).toContain('broken__anything: failed: tool_failed: broken: could not connect');

    // A PATCH that keeps the values (its agent.updated event carries the fingerprints).
    const agent = (await h.call('GET', `/api/v1/agents/${team.id.careful}`)).body;
    const kept = await h.call('PATCH', `/api/v1/agents/${team.id.careful}`, {
      tools: { ...agent.tools, mcp: agent.tools.mcp.map(({ header_fingerprints: _f, ...server }: Record<string, unknown>) => server) },
    });
    expect(kept.status, JSON.stringify(kept.body)).toBe(200);
    expect(kept.body.tools).toEqual(agent.tools);
    // A refused change says nothing of the values it was given either.
    const refused = await h.call('PATCH', `/api/v1/agents/${team.id.careful}`, { tools: { team: true, mcp: [{ name: 'x', url: everything.url, headers: { Authorization: `${SECRET}\n` } }] } });
    expect(refused.status).toBe(400);
    const refusedBy = await h.call('PATCH', `/api/v1/agents/${team.id.careful}`, { tools: { mcp: [{ name: 'x', url: everything.url, headers }], approval: { by: 'nobody', tools: ['x.echo'] } } });
    expect(refusedBy.status).toBe(422);

    const events = await orgEvents(h);
    expect(events.map((e) => e.type)).toEqual(expect.arrayContaining(['agent.created', 'agent.updated', 'tool_call.started', 'tool_call.finished']));
    const everything_ = [
      JSON.stringify(events),
      log.text(),
      reply,
      JSON.stringify(calls),
      JSON.stringify(refused.body),
      JSON.stringify(refusedBy.body),
      JSON.stringify((await h.call('GET', `/api/v1/agents/${team.id.careful}`)).body),
    ].join('\n');
    expect(everything_).not.toContain(TOKEN);
    // The log did see the failures (so the absence above is not for want of lines).
    expect(log.text()).toContain('an MCP server of the agent cannot be reached');
    const unreachable = log.lines().filter((l) => String(l.msg).startsWith('an MCP server of the agent cannot be reached'));
    expect(unreachable.map((l) => l.server)).toEqual(expect.arrayContaining(['broken', 'gone']));
  });
});
