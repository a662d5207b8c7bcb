import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request, startHarness, type Harness } from './helpers.ts';

type Operation = {
  parameters?: Array<{ name?: string; in?: string; $ref?: string }>;
  requestBody?: { content: Record<string, { schema: object }> };
  responses: Record<string, { content?: Record<string, { schema: object }>; $ref?: string }>;
  security?: unknown[];
};
type Doc = { openapi: string; paths: Record<string, Record<string, Operation>> };

// Contract §5 (plus §6's health routes and the document itself): every one must be documented.
const contractRoutes = `
GET /api/v1/organizations|POST /api/v1/organizations|GET /api/v1/organizations/{org_id}
POST /api/v1/organizations/{org_id}/teams|GET /api/v1/organizations/{org_id}/teams
GET /api/v1/teams/{team_id}|PATCH /api/v1/teams/{team_id}|DELETE /api/v1/teams/{team_id}|GET /api/v1/teams/{team_id}/deletion-preview
POST /api/v1/teams/{team_id}/agents|GET /api/v1/teams/{team_id}/agents
GET /api/v1/agents/{agent_id}|PATCH /api/v1/agents/{agent_id}|DELETE /api/v1/agents/{agent_id}
POST /api/v1/teams/{team_id}/humans|GET /api/v1/teams/{team_id}/humans
GET /api/v1/humans/{human_id}|PATCH /api/v1/humans/{human_id}|DELETE /api/v1/humans/{human_id}
POST /api/v1/teams/{team_id}/edges|GET /api/v1/teams/{team_id}/edges|GET /api/v1/edges/{edge_id}|DELETE /api/v1/edges/{edge_id}
POST /api/v1/edges/{edge_id}/threads|GET /api/v1/edges/{edge_id}/threads|GET /api/v1/threads/{thread_id}|POST /api/v1/threads/{thread_id}/messages
POST /api/v1/attachments|GET /api/v1/attachments/{attachment_id}|GET /api/v1/attachments/{attachment_id}/content
PUT /api/v1/organizations/{org_id}/api-keys/{provider}|GET /api/v1/organizations/{org_id}/api-keys|DELETE /api/v1/organizations/{org_id}/api-keys/{provider}
POST /api/v1/organizations/{org_id}/keys|GET /api/v1/organizations/{org_id}/keys
POST /api/v1/organizations/{org_id}/keys/{key_id}/rotate|DELETE /api/v1/organizations/{org_id}/keys/{key_id}
POST /api/v1/agents/{agent_id}/mcp-keys|GET /api/v1/agents/{agent_id}/mcp-keys|DELETE /api/v1/agents/{agent_id}/mcp-keys/{key_id}
POST /api/v1/access-requests|GET /healthz|GET /readyz|GET /api/v1/openapi.json`
  .split(/[|\n]/)
  .map((s) => s.trim())
  .filter(Boolean);

let h: Harness;
let doc: Doc;
beforeAll(async () => {
  h = await startHarness();
  doc = (await request(`${h.server.url}/api/v1/openapi.json`, 'GET')).body as Doc;
});
afterAll(async () => {
  await h.server.close();
});

function operations(): Array<{ method: string; path: string; op: Operation }> {
  return Object.entries(doc.paths).flatMap(([path, ops]) => Object.entries(ops).map(([method, op]) => ({ method: method.toUpperCase(), path, op })));
}

describe('openapi', () => {
  it('openapi: the document is served without a key at /api/v1 and /v1 as valid OpenAPI 3.1', async () => {
    const response = await fetch(`${h.server.url}/v1/openapi.json`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    const alias = JSON.parse(await response.text());
    expect(alias).toEqual(doc);
    expect(doc.openapi).toMatch(/^3\.1\./);
    const result = await new Validator().validate(doc as unknown as Record<string, unknown>);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it('openapi: every route of the contract is documented with its method and {param} path', () => {
    const documented = new Set(operations().map(({ method, path }) => `${method} ${path}`));
    expect(contractRoutes.filter((route) => !documented.has(route))).toEqual([]);
    // Aliases are described once, under /api/v1.
    expect(Object.keys(doc.paths).filter((p) => p.startsWith('/v1/'))).toEqual([]);
  });

  it('openapi: every documented operation is served (no route_not_found, no method_not_allowed)', async () => {
    for (const { method, path } of operations()) {
      const concrete = path.replace(/\{provider\}/g, 'echo').replace(/\{[a-z_]+\}/g, '00000000-0000-4000-8000-000000000000');
      const reply = await h.call(method, concrete, method === 'GET' || method === 'DELETE' ? undefined : {});
      expect([`${method} ${path}`, reply.body?.code]).not.toEqual([`${method} ${path}`, 'route_not_found']);
      expect(reply.status, `${method} ${path}`).not.toBe(405);
    }
  });

  it('openapi: operations name their path parameters, bodies, success schemas and problem+json errors', () => {
    for (const { method, path, op } of operations()) {
      const names = op.parameters?.filter((p) => p.in === 'path').map((p) => p.name) ?? [];
      expect(names, `${method} ${path}`).toEqual([...path.matchAll(/\{([a-z_]+)\}/g)].map((m) => m[1]));
      expect(Object.keys(op.responses).some((s) => s.startsWith('2')), `${method} ${path}`).toBe(true);
      expect(op.responses['500']).toEqual({ $ref: '#/components/responses/Error500' });
      if (method === 'POST') expect(op.parameters).toContainEqual({ $ref: '#/components/parameters/Idempotency-Key' });
    }
    const upload = doc.paths['/api/v1/attachments']!.post!;
    expect(Object.keys(upload.requestBody!.content)).toEqual(['application/json']);
    expect(upload.responses['201']!.content!['application/json']!.schema).toMatchObject({ required: expect.arrayContaining(['attachment_id', 'size_bytes']) });
    expect(doc.paths['/api/v1/threads/{thread_id}']!.get!.parameters!.filter((p) => p.in === 'query').map((p) => p.name)).toEqual(['after', 'limit', 'wait']);
    expect(doc.paths['/healthz']!.get!.security).toEqual([]);
    expect(doc.paths['/api/v1/access-requests']!.post!.security).toEqual([]);
    expect(doc.paths['/api/v1/teams/{team_id}']!.get!.security).toEqual([{ orgKey: [] }]);
  });

  it('openapi: a request body schema rejects what the server rejects and accepts what it accepts', async () => {
    const ajv = new Ajv2020({ strict: false, validateFormats: false });
    const validate = ajv.compile(doc.paths['/api/v1/organizations/{org_id}/teams']!.post!.requestBody!.content['application/json']!.schema);
    const path = `/api/v1/organizations/${h.orgId}/teams`;
    for (const body of [{ team_name: 'x', color: 'red' }, { team_name: 'n'.repeat(101) }, { description: 'no name' }, { team_name: 7 }]) {
      expect(validate(body), JSON.stringify(body)).toBe(false);
      expect((await h.call('POST', path, body)).status).toBe(400);
    }
    const good = { team_name: 'documented', description: 'ok' };
    expect(validate(good)).toBe(true);
    expect((await h.call('POST', path, good)).status).toBe(201);
  });

  it('openapi: a success response of the server matches its documented schema', async () => {
    const ajv = new Ajv2020({ strict: false, validateFormats: false });
    const schema = doc.paths['/api/v1/teams/{team_id}']!.get!.responses['200']!.content!['application/json']!.schema;
    const team = await h.call('POST', `/api/v1/organizations/${h.orgId}/teams`, { team_name: 'shape' });
    const graph = await h.call('GET', `/api/v1/teams/${team.body.team_id}`);
    const validate = ajv.compile(schema);
    expect(validate(graph.body), JSON.stringify(validate.errors)).toBe(true);
  });
});
