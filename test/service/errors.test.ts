import { describe, expect, it } from 'vitest';
import { Problem } from '../../api/schemas.ts';
import { buildTeam, request, withTeamHarness, type Harness, type Reply, type TeamIds } from './helpers.ts';

let h: Harness;
let ids: TeamIds;
withTeamHarness((started) => ({ h, ids } = started));

/** Asserts `res` is a problem+json document with `code` and the status of the catalogue. */
function expectProblem(res: Reply, status: number, code: string): void {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  const problem = Problem.parse(res.body);
  expect(problem).toMatchObject({ type: `urn:acs:error:${code}`, status, code, request_id: res.headers.get('x-request-id') });
  expect(JSON.stringify(res.body)).not.toMatch(/at .*\.ts:\d+/);
}

describe('errors', () => {
  it('errors: a body that is not JSON is 400 malformed_json', async () => {
    expectProblem(await h.call('POST', `/api/v1/organizations/${h.orgId}/teams`, '{"team_name": '), 400, 'malformed_json');
  });

  it('errors: unknown and missing fields are 400 invalid_request listing each problem', async () => {
    const res = await h.call('POST', `/api/v1/organizations/${h.orgId}/teams`, { colour: 'red', description: 5 });
    expectProblem(res, 400, 'invalid_request');
    const paths = res.body.errors.map((e: { path: string }) => e.path).sort();
    expect(paths).toEqual(['colour', 'description', 'team_name']);
    expect(res.body.errors.find((e: { path: string }) => e.path === 'colour').message).toMatch(/unknown/);
    expect(res.body.detail).toContain('colour');
  });

  it('errors: an empty name after trimming is 400 invalid_request', async () => {
    const res = await h.call('POST', `/api/v1/organizations/${h.orgId}/teams`, { team_name: '   ' });
    expectProblem(res, 400, 'invalid_request');
    expect(res.body.errors[0].path).toBe('team_name');
  });

  it('errors: an unknown provider name is 400 invalid_request', async () => {
    expectProblem(await h.call('PUT', `/organizations/${h.orgId}/api-keys/skynet`, { api_key: 'k' }), 400, 'invalid_request');
  });

  it('errors: a request without X-API-Key is 401 unauthenticated', async () => {
    expectProblem(await request(`${h.server.url}/api/v1/organizations`, 'GET'), 401, 'unauthenticated');
  });

  it('errors: an unknown key is 401 invalid_api_key', async () => {
    const res = await request(`${h.server.url}/api/v1/organizations`, 'GET', undefined, { 'x-api-key': `acs_org_${'x'.repeat(40)}` });
    expectProblem(res, 401, 'invalid_api_key');
  });

  it('errors: a sender that is not on the edge is 403 not_a_participant', async () => {
    const outsider = await h.call('POST', `/api/v1/teams/${ids.teamId}/agents`, { name: 'outsider' });
    const open = await h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: outsider.body.agent_id, content: 'hi' });
    expectProblem(open, 403, 'not_a_participant');
    const thread = await h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.humanId, content: 'hi' });
    const append = await h.call('POST', `/api/v1/threads/${thread.body.thread_id}/messages`, { sender_agent_id: outsider.body.agent_id, content: 'me too' });
    expectProblem(append, 403, 'not_a_participant');
    expect((await h.call('GET', `/api/v1/threads/${thread.body.thread_id}`)).body.message_count).toBe(1);
  });

  it('errors: an unknown id or a non-UUID id in a path is 404 not_found', async () => {
    expectProblem(await h.call('GET', '/api/v1/teams/00000000-0000-4000-8000-000000000000'), 404, 'not_found');
    expectProblem(await h.call('GET', '/api/v1/threads/not-a-uuid'), 404, 'not_found');
    expectProblem(await h.call('DELETE', '/api/v1/edges/42'), 404, 'not_found');
  });

  it('errors: an unknown route is 404 route_not_found', async () => {
    expectProblem(await h.call('GET', '/api/v1/widgets'), 404, 'route_not_found');
    expectProblem(await h.call('GET', '/api/v2/organizations'), 404, 'route_not_found');
  });

  it('errors: a known path with another method is 405 method_not_allowed', async () => {
    expectProblem(await h.call('PUT', `/api/v1/teams/${ids.teamId}`, { team_name: 'x' }), 405, 'method_not_allowed');
    const deleted = await h.call('DELETE', '/v1/organizations');
    expectProblem(deleted, 405, 'method_not_allowed');
    expect(deleted.headers.get('allow')).toBe('GET, HEAD, POST');
  });

  it('errors: a taken name is 409 conflict naming the existing resource', async () => {
    const team = await h.call('POST', `/api/v1/organizations/${h.orgId}/teams`, { team_name: 'dup' });
    const again = await h.call('POST', `/api/v1/organizations/${h.orgId}/teams`, { team_name: 'dup' });
    expectProblem(again, 409, 'conflict');
    expect(again.body.existing_id).toBe(team.body.team_id);
    // agents and humans share one name space per team
    const human = await h.call('POST', `/api/v1/teams/${ids.teamId}/humans`, { name: 'bot' });
    expectProblem(human, 409, 'conflict');
    expect(human.body.existing_id).toBe(ids.agentId);
    const org = await h.call('POST', '/api/v1/organizations', { org_name: 'acme' });
    expectProblem(org, 409, 'conflict');
    expect(org.body.existing_id).toBe(h.orgId);
    const rename = await h.call('PATCH', `/api/v1/teams/${ids.teamId}`, { team_name: 'dup' });
    expect(rename.body.existing_id).toBe(team.body.team_id);
  });

  it('errors: a second edge for the same pair, in either order, is 409 conflict', async () => {
    const res = await h.call('POST', `/api/v1/teams/${ids.teamId}/edges`, { participants: [ids.agentId, ids.humanId] });
    expectProblem(res, 409, 'conflict');
    expect(res.body.existing_id).toBe(ids.edgeId);
  });

  it('errors: deleting an agent or human still on an edge is 409 in_use', async () => {
    expectProblem(await h.call('DELETE', `/api/v1/agents/${ids.agentId}`), 409, 'in_use');
    expectProblem(await h.call('DELETE', `/api/v1/humans/${ids.humanId}`), 409, 'in_use');
    expect((await h.call('GET', `/api/v1/agents/${ids.agentId}`)).status).toBe(200);
  });

  it('errors: a body over 1 MiB is 413 payload_too_large', async () => {
    const res = await h.call('POST', `/api/v1/organizations/${h.orgId}/teams`, { team_name: 'x', description: 'y'.repeat(1_100_000) });
    expectProblem(res, 413, 'payload_too_large');
  });

  it('errors: a body that is not JSON by Content-Type is 415 unsupported_media_type', async () => {
    const res = await h.call('POST', `/api/v1/organizations/${h.orgId}/teams`, 'team_name=x', { 'content-type': 'application/x-www-form-urlencoded' });
    expectProblem(res, 415, 'unsupported_media_type');
    const ok = await h.call('POST', `/api/v1/organizations/${h.orgId}/teams`, '{"team_name":"charset"}', { 'content-type': 'application/json; charset=utf-8' });
    expect(ok.status).toBe(201);
  });

  it('errors: an edge participant outside the team is 422 unknown_reference', async () => {
    const other = await buildTeam(h);
    const res = await h.call('POST', `/api/v1/teams/${ids.teamId}/edges`, { participants: [ids.agentId, other.humanId] });
    expectProblem(res, 422, 'unknown_reference');
    expect(res.body.errors[0].path).toBe('participants.1');
  });

  it('errors: an attachment id that was never uploaded is 422 unknown_reference', async () => {
    const thread = await h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.humanId, content: 'hi' });
    const res = await h.call('POST', `/api/v1/threads/${thread.body.thread_id}/messages`, {
      sender_agent_id: ids.humanId,
      content: 'see file',
      attachments: ['00000000-0000-4000-8000-000000000000'],
    });
    expectProblem(res, 422, 'unknown_reference');
  });

  it('errors: an after that names no message of the thread is 400 invalid_cursor', async () => {
    const thread = await h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.humanId, content: 'hi' });
    const other = await h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.humanId, content: 'elsewhere' });
    const foreign = (await h.call('GET', `/api/v1/threads/${other.body.thread_id}`)).body.next_after;
    expectProblem(await h.call('GET', `/api/v1/threads/${thread.body.thread_id}?after=${foreign}`), 400, 'invalid_cursor');
    expectProblem(await h.call('GET', `/api/v1/threads/${thread.body.thread_id}?after=garbage`), 400, 'invalid_cursor');
  });

  it('errors: a limit out of range is 400 invalid_request', async () => {
    const thread = await h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.humanId, content: 'hi' });
    const res = await h.call('GET', `/api/v1/threads/${thread.body.thread_id}?limit=500`);
    expectProblem(res, 400, 'invalid_request');
    expect(res.body.errors[0].path).toBe('limit');
  });
});

describe('access', () => {
  it('access: another organization\'s resources are 404 not_found, never 403', async () => {
    const other = await h.server.provisionOrganization('globex');
    const as = (method: string, path: string, body?: unknown) => request(h.server.url + path, method, body, { 'x-api-key': other.api_key });
    const thread = await h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.humanId, content: 'private' });
    for (const [method, path, body] of [
      ['GET', `/api/v1/organizations/${h.orgId}`],
      ['GET', `/api/v1/organizations/${h.orgId}/teams`],
      ['POST', `/api/v1/organizations/${h.orgId}/teams`, { team_name: 'intrude' }],
      ['GET', `/api/v1/teams/${ids.teamId}`],
      ['DELETE', `/api/v1/teams/${ids.teamId}`],
      ['GET', `/api/v1/agents/${ids.agentId}`],
      ['GET', `/api/v1/humans/${ids.humanId}`],
      ['GET', `/api/v1/edges/${ids.edgeId}`],
      ['GET', `/api/v1/threads/${thread.body.thread_id}`],
      ['POST', `/api/v1/threads/${thread.body.thread_id}/messages`, { sender_agent_id: ids.humanId, content: 'x' }],
      ['PUT', `/organizations/${h.orgId}/api-keys/echo`, { api_key: 'k' }],
    ] as Array<[string, string, unknown?]>) {
      const res = await as(method, path, body);
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.body.code).toBe('not_found');
    }
    expect((await as('GET', '/api/v1/organizations')).body.organizations.map((o: { org_id: string }) => o.org_id)).toEqual([other.org_id]);
    expect((await h.call('GET', `/api/v1/teams/${ids.teamId}`)).status).toBe(200);
  });

  it("access: an organization provisioned with POST /organizations is reachable with the provisioner's key", async () => {
    const child = await h.call('POST', '/api/v1/organizations', { org_name: 'child-co' });
    const team = await h.call('POST', `/api/v1/organizations/${child.body.org_id}/teams`, { team_name: 'kids' });
    expect(team.status).toBe(201);
    expect((await h.call('GET', `/api/v1/teams/${team.body.team_id}`)).status).toBe(200);
  });
});
