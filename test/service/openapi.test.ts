import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routeDocs } from '../../service/http/openapi/route-docs.ts';
import { request, startHarness, type Harness } from './helpers.ts';

type Schema = Record<string, any>;
type Parameter = { name?: string; in?: string; $ref?: string; schema?: Schema };
type Operation = {
  operationId?: string;
  summary?: string;
  description?: string;
  tags?: string[];
  servers?: Array<{ url: string }>;
  parameters?: Parameter[];
  requestBody?: { required?: boolean; content: Record<string, { schema: Schema }> };
  responses: Record<
    string,
    { content?: Record<string, { schema: Schema }>; headers?: Record<string, unknown>; $ref?: string; links?: Record<string, { operationId: string; parameters: Record<string, string> }> }
  >;
  security?: unknown[];
};
type Doc = {
  openapi: string;
  info: { description?: string };
  servers?: Array<{ url: string; description?: string }>;
  tags?: Array<{ name: string; description?: string }>;
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema>; responses: Record<string, { headers?: Record<string, unknown> }>; headers: Record<string, unknown> };
};

// Contract §5 (plus §6's health routes and the document itself), relative to the document's
// servers (/api/v1 and its alias /v1): every one must be documented.
const contractRoutes = `
GET /organizations|POST /organizations|GET /organizations/{org_id}
PATCH /organizations/{org_id}|DELETE /organizations/{org_id}|GET /organizations/{org_id}/deletion-preview
POST /organizations/{org_id}/teams|GET /organizations/{org_id}/teams
GET /teams/{team_id}|PATCH /teams/{team_id}|DELETE /teams/{team_id}|GET /teams/{team_id}/deletion-preview
POST /teams/{team_id}/agents|GET /teams/{team_id}/agents
GET /agents/{agent_id}|PATCH /agents/{agent_id}|DELETE /agents/{agent_id}
POST /teams/{team_id}/humans|GET /teams/{team_id}/humans
GET /humans/{human_id}|PATCH /humans/{human_id}|DELETE /humans/{human_id}
POST /teams/{team_id}/edges|GET /teams/{team_id}/edges|GET /edges/{edge_id}|DELETE /edges/{edge_id}
POST /edges/{edge_id}/threads|GET /edges/{edge_id}/threads|GET /threads/{thread_id}|POST /threads/{thread_id}/messages
POST /attachments|GET /attachments/{attachment_id}|GET /attachments/{attachment_id}/content
PUT /organizations/{org_id}/api-keys/{provider}|GET /organizations/{org_id}/api-keys|DELETE /organizations/{org_id}/api-keys/{provider}
POST /organizations/{org_id}/keys|GET /organizations/{org_id}/keys
POST /organizations/{org_id}/keys/{key_id}/rotate|DELETE /organizations/{org_id}/keys/{key_id}
POST /agents/{agent_id}/mcp-keys|GET /agents/{agent_id}/mcp-keys|DELETE /agents/{agent_id}/mcp-keys/{key_id}
POST /access-requests|POST /mcp|GET /healthz|GET /readyz|GET /openapi.json`
  .split(/[|\n]/)
  .map((s) => s.trim())
  .filter(Boolean);

// The resources of contract §4 and the shapes around them: generated clients name types after these.
const namedSchemas = [
  'Organization', 'Team', 'TeamGraph', 'Agent', 'Human', 'Edge', 'Thread', 'Message', 'ThreadPage', 'Attachment',
  'ProviderKey', 'OrgKey', 'CreatedOrgKey', 'McpKey', 'CreatedMcpKey', 'AccessRequest', 'ApprovedAccessRequest', 'Problem',
  'OrganizationList', 'TeamList', 'AgentList', 'HumanList', 'EdgeList', 'ThreadList', 'TeamDeleted', 'TeamDeletionPreview',
  'OrganizationDeleted', 'OrganizationDeletionPreview', 'ProtectedResource', 'PatchOrganizationBody',
  'CreateTeamBody', 'CreateAgentBody', 'PatchAgentBody', 'OpenThreadBody', 'AppendMessageBody', 'CreateAttachmentBody',
];

let h: Harness;
let doc: Doc;
beforeAll(async () => {
  h = await startHarness({ inMemory: true, adminToken: 'openapi-test-token' });
  doc = (await request(`${h.server.url}/api/v1/openapi.json`, 'GET')).body as Doc;
});
afterAll(async () => {
  await h.server.close();
});

function operations(): Array<{ method: string; path: string; op: Operation }> {
  return Object.entries(doc.paths).flatMap(([path, ops]) => Object.entries(ops).map(([method, op]) => ({ method: method.toUpperCase(), path, op })));
}

/** The URL prefixes an operation is served under: its own servers, else the document's. */
function prefixesOf(op: Operation): string[] {
  return (op.servers ?? doc.servers ?? []).map((s) => s.url.replace(/\/$/, ''));
}

/** `schema` with every `#/components/schemas/…` reference replaced by its target, for Ajv. */
function inline(schema: unknown): any {
  if (Array.isArray(schema)) return schema.map(inline);
  if (schema === null || typeof schema !== 'object') return schema;
  const ref = (schema as Schema).$ref;
  if (typeof ref === 'string' && ref.startsWith('#/components/schemas/')) return inline(doc.components.schemas[ref.slice('#/components/schemas/'.length)]);
  return Object.fromEntries(Object.entries(schema).map(([key, value]) => [key, inline(value)]));
}

/** Every object property of every component schema, with the component it belongs to. */
function componentProperties(): Array<{ component: string; name: string; schema: Schema }> {
  const found: Array<{ component: string; name: string; schema: Schema }> = [];
  const walk = (component: string, schema: unknown): void => {
    if (Array.isArray(schema)) return schema.forEach((s) => walk(component, s));
    if (schema === null || typeof schema !== 'object') return;
    for (const [name, property] of Object.entries((schema as Schema).properties ?? {})) found.push({ component, name, schema: property as Schema });
    for (const value of Object.values(schema)) walk(component, value);
  };
  for (const [component, schema] of Object.entries(doc.components.schemas)) walk(component, schema);
  return found;
}

const ajv = () => new Ajv2020({ strict: false, validateFormats: false });

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

  it('openapi: the document names /api/v1 and its alias /v1 as servers, describes itself and every tag', () => {
    expect(doc.servers?.map((s) => s.url)).toEqual(['/api/v1', '/v1']);
    expect(doc.servers?.every((s) => (s.description ?? '').length > 0)).toBe(true);
    expect(doc.info.description).toMatch(/unknown query parameters/i);
    expect(doc.info.description).toMatch(/trailing slash/i);
    const tags = new Set(doc.tags?.map((t) => t.name));
    expect(doc.tags?.every((t) => (t.description ?? '').length > 0)).toBe(true);
    for (const { method, path, op } of operations()) expect(op.tags?.every((t) => tags.has(t)), `${method} ${path}`).toBe(true);
  });

  it('openapi: every route of the contract is documented once, with its method and {param} path relative to the servers', () => {
    const documented = new Set(operations().map(({ method, path }) => `${method} ${path}`));
    expect(contractRoutes.filter((route) => !documented.has(route))).toEqual([]);
    expect(Object.keys(doc.paths).filter((p) => p.startsWith('/v1/') || p.startsWith('/api/v1/'))).toEqual([]);
  });

  it('openapi: routes outside /api/v1 name their own servers: health and admin at the root, the provider-key PUT also unprefixed', () => {
    expect(prefixesOf(doc.paths['/healthz']!.get!)).toEqual(['']);
    expect(prefixesOf(doc.paths['/admin/v1/access-requests']!.get!)).toEqual(['']);
    expect(prefixesOf(doc.paths['/organizations/{org_id}/api-keys/{provider}']!.put!)).toEqual(['/api/v1', '/v1', '']);
    expect(prefixesOf(doc.paths['/organizations/{org_id}/api-keys/{provider}']!.delete!)).toEqual(['/api/v1', '/v1']);
  });

  it('openapi: every documented operation is served under each of its servers (no route_not_found, no method_not_allowed)', async () => {
    for (const { method, path, op } of operations()) {
      for (const prefix of prefixesOf(op)) {
        const concrete = prefix + path.replace(/\{provider\}/g, 'echo').replace(/\{[a-z_]+\}/g, '00000000-0000-4000-8000-000000000000');
        const reply = await h.call(method, concrete, method === 'GET' || method === 'DELETE' ? undefined : {});
        expect([`${method} ${concrete}`, reply.body?.code]).not.toEqual([`${method} ${concrete}`, 'route_not_found']);
        expect(reply.status, `${method} ${concrete}`).not.toBe(405);
      }
    }
  });

  it('openapi: every operation has a unique operationId, a summary, a description naming its error codes and one tag', () => {
    const ids = operations().map(({ op }) => op.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    for (const { method, path, op } of operations()) {
      expect(op.operationId, `${method} ${path}`).toMatch(/^[a-z][A-Za-z]+$/);
      expect(op.summary, `${method} ${path}`).toBeTruthy();
      expect(op.summary, `${method} ${path}`).not.toMatch(/undocumented/);
      expect(op.description, `${method} ${path}`).toMatch(/Errors: .*`internal`/);
      expect(op.tags, `${method} ${path}`).toHaveLength(1);
    }
  });

  it('openapi: each create links to the operations that use what it created, every path parameter filled from its answer or its own path', () => {
    const byId = new Map(operations().map((o) => [o.op.operationId!, o]));
    const linksOf = (operationId: string) => {
      const { op } = byId.get(operationId)!;
      return Object.values(op.responses).find((r) => r.links)?.links ?? {};
    };
    expect(Object.keys(linksOf('createTeam'))).toEqual(expect.arrayContaining(['getTeam', 'updateTeam', 'deleteTeam', 'createAgent', 'createHuman', 'createEdge', 'getTeamUsage']));
    expect(linksOf('createTeam').getTeam!.parameters).toEqual({ team_id: '$response.body#/team_id' });
    expect(linksOf('createOrgKey').revokeOrgKey!.parameters).toEqual({ org_id: '$request.path.org_id', key_id: '$response.body#/key_id' });
    expect(Object.keys(linksOf('createAccessRequest')).sort()).toEqual(['adminApproveAccessRequest', 'adminRejectAccessRequest']);
    let count = 0;
    for (const { method, path, op } of operations()) {
      for (const link of Object.values(Object.values(op.responses).find((r) => r.links)?.links ?? {})) {
        count += 1;
        const target = byId.get(link.operationId);
        expect(target, `${method} ${path} → ${link.operationId}`).toBeDefined();
        const params = (target!.op.parameters ?? []).filter((p) => p.in === 'path').map((p) => p.name).sort();
        expect(Object.keys(link.parameters).sort(), `${method} ${path} → ${link.operationId}`).toEqual(params);
        expect(method, `${path} links from a ${method}`).toBe('POST');
      }
    }
    expect(count).toBeGreaterThan(40);
  });

  it('openapi: path ids state the pattern the routes take, and a format checkers disagree on gives way to the pattern the server checks', () => {
    const getTeam = operations().find((o) => o.op.operationId === 'getTeam')!.op;
    const schema = getTeam.parameters!.find((p) => p.name === 'team_id')!.schema!;
    expect(schema).toMatchObject({ type: 'string', format: 'uuid' });
    expect(new RegExp(schema.pattern).test('2B1A3C4D-0000-4000-8000-00000000000A')).toBe(true);
    expect(new RegExp(schema.pattern).test('not-a-uuid')).toBe(false);
    const email = inline(doc.components.schemas.Human).properties.email;
    expect(JSON.stringify(email)).not.toContain('"format":"email"');
    expect(JSON.stringify(email)).toContain('pattern');
  });

  it('openapi: the echo provider, whose keys may be shorter, is documented at its own path with every method its templated path serves', () => {
    expect(Object.keys(doc.paths['/organizations/{org_id}/api-keys/echo']!).sort()).toEqual(['delete', 'put']);
    const vendor = inline(doc.paths['/organizations/{org_id}/api-keys/{provider}']!.put!.requestBody!.content['application/json']!.schema);
    const echo = inline(doc.paths['/organizations/{org_id}/api-keys/echo']!.put!.requestBody!.content['application/json']!.schema);
    const accepts = (schema: Schema, value: unknown) => ajv().compile(schema)(value);
    expect(accepts(vendor, { api_key: 'abcdefg' })).toBe(false);
    expect(accepts(vendor, { api_key: 'abcdefgh' })).toBe(true);
    expect(accepts(echo, { api_key: 'a' })).toBe(true);
  });

  it('openapi: every route description belongs to a served route, and every served route has one', () => {
    // Route docs are keyed like the document's paths: without the API prefix.
    const documented = new Set(operations().map(({ method, path }) => `${method} ${path}`));
    // A route's variants (one value of a path parameter with rules of its own) are documented at their own paths.
    const variants = Object.entries(routeDocs).flatMap(([key, doc]) => (doc.variants ?? []).map((v) => key.replace(`:${v.param}`, v.value)));
    const described = [...Object.keys(routeDocs), ...variants].map((key) => key.replace(/:([a-z_]+)/g, '{$1}'));
    expect(described.filter((key) => !documented.has(key))).toEqual([]);
    expect([...documented].filter((key) => !described.includes(key))).toEqual([]);
  });

  it('openapi: the resources and bodies are named components that operations reference', () => {
    expect(Object.keys(doc.components.schemas)).toEqual(expect.arrayContaining(namedSchemas));
    const json = (op: Operation, status: string) => op.responses[status]!.content!['application/json']!.schema;
    expect(json(doc.paths['/teams/{team_id}']!.get!, '200')).toEqual({ $ref: '#/components/schemas/TeamGraph' });
    expect(json(doc.paths['/threads/{thread_id}']!.get!, '200')).toEqual({ $ref: '#/components/schemas/ThreadPage' });
    expect(json(doc.paths['/organizations']!.get!, '200')).toEqual({ $ref: '#/components/schemas/OrganizationList' });
    expect(doc.paths['/teams/{team_id}/agents']!.post!.requestBody!.content['application/json']!.schema).toEqual({ $ref: '#/components/schemas/CreateAgentBody' });
    expect(doc.components.schemas.OrganizationList!.properties.organizations.items).toEqual({ $ref: '#/components/schemas/Organization' });
  });

  it('openapi: every *_at field is a date-time string (nullable where the field may be null)', () => {
    const timestamps = componentProperties().filter(({ name }) => name.endsWith('_at'));
    expect(timestamps.map((t) => `${t.component}.${t.name}`)).toEqual(expect.arrayContaining(['Organization.created_at', 'Message.sent_at', 'OrgKey.expires_at', 'ProviderKey.updated_at']));
    for (const { component, name, schema } of timestamps) {
      const types = schema.anyOf ?? [schema];
      expect(types.some((t: Schema) => t.type === 'string' && t.format === 'date-time'), `${component}.${name}`).toBe(true);
    }
  });

  it('openapi: Problem documents the members every error has and the extensions some send, and allows others', () => {
    const problem = doc.components.schemas.Problem!;
    expect(problem.required).toEqual(expect.arrayContaining(['type', 'title', 'status', 'detail', 'code', 'request_id']));
    expect(Object.keys(problem.properties)).toEqual(expect.arrayContaining(['errors', 'existing_id', 'edge_id', 'limit', 'protected', 'org_id']));
    expect(problem.additionalProperties).not.toBe(false);
  });

  it('openapi: 405 on every operation, 413 and 415 on every operation that reads a body (DELETE too)', () => {
    for (const { method, path, op } of operations()) {
      expect(op.responses['405'], `${method} ${path}`).toEqual({ $ref: '#/components/responses/Error405' });
      if (method !== 'GET') expect(op.responses['415'], `${method} ${path}`).toEqual({ $ref: '#/components/responses/Error415' });
      if (method !== 'GET') expect(op.responses['413'], `${method} ${path}`).toEqual({ $ref: '#/components/responses/Error413' });
    }
    expect(Object.keys(doc.components.responses.Error405!.headers!)).toContain('Allow');
  });

  it('openapi: responses name X-Request-Id and the RateLimit headers, POSTs Idempotent-Replayed, 429 and 503 Retry-After', () => {
    const rateLimit = ['X-Request-Id', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset'];
    for (const { method, path, op } of operations()) {
      const success = Object.entries(op.responses).find(([status]) => status.startsWith('2'))![1];
      expect(Object.keys(success.headers ?? {}), `${method} ${path}`).toEqual(expect.arrayContaining(method === 'POST' ? [...rateLimit, 'Idempotent-Replayed'] : rateLimit));
    }
    for (const [name, response] of Object.entries(doc.components.responses)) {
      expect(Object.keys(response.headers ?? {}), name).toEqual(expect.arrayContaining([...rateLimit, 'Idempotent-Replayed']));
    }
    expect(Object.keys(doc.components.responses.Error429!.headers!)).toContain('Retry-After');
    expect(Object.keys(doc.components.responses.Error503!.headers!)).toContain('Retry-After');
  });

  it('openapi: operations name their path parameters, bodies, success schemas and problem+json errors', () => {
    for (const { method, path, op } of operations()) {
      const names = op.parameters?.filter((p) => p.in === 'path').map((p) => p.name) ?? [];
      expect(names, `${method} ${path}`).toEqual([...path.matchAll(/\{([a-z_]+)\}/g)].map((m) => m[1]));
      expect(Object.keys(op.responses).some((s) => s.startsWith('2')), `${method} ${path}`).toBe(true);
      expect(op.responses['500']).toEqual({ $ref: '#/components/responses/Error500' });
      if (method === 'POST') expect(op.parameters).toContainEqual({ $ref: '#/components/parameters/Idempotency-Key' });
    }
    const upload = doc.paths['/attachments']!.post!;
    expect(Object.keys(upload.requestBody!.content)).toEqual(['application/json']);
    expect(inline(upload.responses['201']!.content!['application/json']!.schema)).toMatchObject({ required: expect.arrayContaining(['attachment_id', 'size_bytes']) });
    expect(doc.paths['/threads/{thread_id}']!.get!.parameters!.filter((p) => p.in === 'query').map((p) => p.name)).toEqual(['after', 'limit', 'wait']);
    expect(doc.paths['/healthz']!.get!.security).toEqual([]);
    expect(doc.paths['/access-requests']!.post!.security).toEqual([]);
    expect(doc.paths['/teams/{team_id}']!.get!.security).toEqual([{ orgKey: [] }]);
    expect(doc.paths['/admin/v1/access-requests']!.get!.security).toEqual([{ adminToken: [] }]);
  });

  it('openapi: attachment content is any media type, as binary, with its download headers', () => {
    const success = doc.paths['/attachments/{attachment_id}/content']!.get!.responses['200']!;
    expect(success.content).toEqual({ '*/*': { schema: { type: 'string', format: 'binary' } } });
    expect(Object.keys(success.headers!)).toEqual(expect.arrayContaining(['Content-Disposition', 'X-Content-Type-Options']));
  });

  it('openapi: a request body schema rejects what the server rejects and accepts what it accepts', async () => {
    const validate = ajv().compile(inline(doc.paths['/organizations/{org_id}/teams']!.post!.requestBody!.content['application/json']!.schema));
    const path = `/api/v1/organizations/${h.orgId}/teams`;
    for (const body of [{ team_name: 'x', color: 'red' }, { team_name: 'n'.repeat(101) }, { description: 'no name' }, { team_name: 7 }, { team_name: '   ' }]) {
      expect(validate(body), JSON.stringify(body)).toBe(false);
      expect((await h.call('POST', path, body)).status).toBe(400);
    }
    // Names are trimmed before their limits apply: surrounding spaces do not count.
    for (const good of [{ team_name: 'documented', description: 'ok' }, { team_name: `  ${'n'.repeat(100)}  ` }]) {
      expect(validate(good), JSON.stringify(good)).toBe(true);
      expect((await h.call('POST', path, good)).status).toBe(201);
    }
  });

  it('openapi: a success response of the server matches its documented schema', async () => {
    const schema = doc.paths['/teams/{team_id}']!.get!.responses['200']!.content!['application/json']!.schema;
    const team = await h.call('POST', `/api/v1/organizations/${h.orgId}/teams`, { team_name: 'shape' });
    const graph = await h.call('GET', `/api/v1/teams/${team.body.team_id}`);
    const validate = ajv().compile(inline(schema));
    expect(validate(graph.body), JSON.stringify(validate.errors)).toBe(true);
  });

  it('openapi: an in_use problem with its edge_id matches the documented Problem', async () => {
    const team = await h.call('POST', `/api/v1/organizations/${h.orgId}/teams`, { team_name: 'problem shape' });
    const [a, b] = await Promise.all(['ada', 'bob'].map((name) => h.call('POST', `/api/v1/teams/${team.body.team_id}/agents`, { name })));
    const edge = await h.call('POST', `/api/v1/teams/${team.body.team_id}/edges`, { participants: [a!.body.agent_id, b!.body.agent_id] });
    const refused = await h.call('DELETE', `/api/v1/agents/${a!.body.agent_id}`);
    expect(refused.body).toMatchObject({ code: 'in_use', edge_id: edge.body.edge_id });
    const validate = ajv().compile(inline({ $ref: '#/components/schemas/Problem' }));
    expect(validate(refused.body), JSON.stringify(validate.errors)).toBe(true);
  });
});
