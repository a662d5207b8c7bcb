import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTeam, startHarness, type Harness } from './helpers.ts';

// The rules every route follows (contract §1, §2), which the OpenAPI document states once in its
// description: unknown query parameters, trailing slashes, 405 before the body, optional bodies.

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.server.close();
});

describe('request rules', () => {
  it('an unknown query parameter is 400 invalid_request naming each one, on every kind of route', async () => {
    const { threadId } = await openThread();
    for (const path of ['/api/v1/organizations', `/v1/organizations/${h.orgId}`, `/api/v1/threads/${threadId}`, '/healthz', '/api/v1/openapi.json']) {
      const reply = await h.call('GET', `${path}?bogus=1&limt=5`);
      expect(reply.status, path).toBe(400);
      expect(reply.body.code, path).toBe('invalid_request');
      expect(reply.body.errors, path).toEqual([
        { path: 'bogus', message: 'unknown query parameter' },
        { path: 'limt', message: 'unknown query parameter' },
      ]);
    }
  });

  it('a query parameter a route documents is still accepted', async () => {
    const { threadId } = await openThread();
    const page = await h.call('GET', `/api/v1/threads/${threadId}?limit=1`);
    expect(page.status).toBe(200);
    expect(page.body.messages).toHaveLength(1);
  });

  it('a trailing slash is ignored: the route answers as without it, for reads and writes', async () => {
    const listed = await h.call('GET', '/api/v1/organizations/');
    expect(listed.status).toBe(200);
    expect(listed.body.organizations.map((o: { org_id: string }) => o.org_id)).toContain(h.orgId);
    const created = await h.call('POST', `/v1/organizations/${h.orgId}/teams/`, { team_name: 'slashed' });
    expect(created.status).toBe(201);
    expect((await h.call('GET', '/healthz/')).status).toBe(200);
  });

  it('a method a path does not serve is 405 with Allow, also with a trailing slash', async () => {
    for (const path of ['/api/v1/organizations', '/api/v1/organizations/']) {
      const reply = await h.call('PUT', path, {});
      expect(reply.status, path).toBe(405);
      expect(reply.body.code).toBe('method_not_allowed');
      expect(reply.headers.get('allow')).toBe('GET, HEAD, POST');
    }
  });

  it('a QUERY request to a known path is 405 before its missing Content-Type is looked at', async () => {
    const reply = await h.call('QUERY', '/api/v1/organizations');
    expect(reply.status).toBe(405);
    expect(reply.body.code).toBe('method_not_allowed');
    expect(reply.headers.get('allow')).toContain('GET');
  });

  it('a request to no route is 404 route_not_found even when its body is not JSON', async () => {
    const reply = await h.call('POST', '/api/v1/nowhere', 'not json', { 'content-type': 'text/plain' });
    expect(reply.status).toBe(404);
    expect(reply.body.code).toBe('route_not_found');
  });

  it('a DELETE with a body that is not JSON is 415 unsupported_media_type', async () => {
    const team = await h.call('POST', `/api/v1/organizations/${h.orgId}/teams`, { team_name: 'kept' });
    const reply = await h.call('DELETE', `/api/v1/teams/${team.body.team_id}`, 'x', { 'content-type': 'text/plain' });
    expect(reply.status).toBe(415);
    expect(reply.body.code).toBe('unsupported_media_type');
    expect((await h.call('GET', `/api/v1/teams/${team.body.team_id}`)).status).toBe(200);
  });

  it('an optional body may be left out, but a JSON null in its place is 400 invalid_request', async () => {
    const team = await h.call('POST', `/api/v1/organizations/${h.orgId}/teams`, { team_name: 'optional body' });
    const path = `/api/v1/teams/${team.body.team_id}`;
    expect((await h.call('PATCH', path)).status).toBe(200);
    const refused = await h.call('PATCH', path, 'null');
    expect(refused.status).toBe(400);
    expect(refused.body.code).toBe('invalid_request');
  });

  it('an attachment content type that could not be a Content-Type header is refused at upload', async () => {
    for (const content_type of ['text/plain; x="\u000b"', 'text/plain;\u000bcharset=utf-8', 'text/plain; x="é"']) {
      const reply = await h.call('POST', '/api/v1/attachments', { filename: 'a.txt', content_type, data_base64: 'aGk=' });
      expect(reply.status, JSON.stringify(content_type)).toBe(400);
      expect(reply.body.errors.map((e: { path: string }) => e.path)).toEqual(['content_type']);
    }
    const fine = await h.call('POST', '/api/v1/attachments', { filename: 'a.txt', content_type: 'text/plain;\tcharset="utf-8"', data_base64: 'aGk=' });
    expect(fine.status).toBe(201);
  });
});

async function openThread(): Promise<{ threadId: string }> {
  const { agentId, edgeId } = await buildTeam(h);
  const thread = await h.call('POST', `/api/v1/edges/${edgeId}/threads`, { sender_agent_id: agentId, content: 'hello' });
  return { threadId: thread.body.thread_id };
}
