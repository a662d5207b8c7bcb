import { z } from 'zod';
import { Problem } from '../../../api/schemas.ts';
import { ErrorCatalogue } from '../../../errors/catalogue.ts';
import type { RouteDoc, Security } from './route-doc.ts';
import { routeDocs } from './route-docs.ts';

/** One route as Fastify registered it: method, full URL pattern (`:param`s) and its own doc. */
export interface CollectedRoute {
  method: string;
  url: string;
  doc: RouteDoc | undefined;
}

type JsonObject = Record<string, unknown>;

const apiPrefix = '/api/v1';
// `/v1` is an exact alias of `/api/v1` (contract §1): the document lists each route once.
const aliasPrefix = '/v1';

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): JsonObject {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any' }) as JsonObject;
  return rest;
}

function securityOf(path: string, doc: RouteDoc | undefined): Security {
  if (doc?.security) return doc.security;
  if (path.startsWith('/admin/')) return 'adminToken';
  if (path.startsWith(`${apiPrefix}/`)) return 'orgKey';
  return 'none';
}

const rateLimitHeaders = {
  'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' },
  'RateLimit-Limit': { $ref: '#/components/headers/RateLimit-Limit' },
  'RateLimit-Remaining': { $ref: '#/components/headers/RateLimit-Remaining' },
  'RateLimit-Reset': { $ref: '#/components/headers/RateLimit-Reset' },
};

// One reusable response per error status, naming the catalogue codes it stands for (contract §2).
function errorResponses(): JsonObject {
  const byStatus = new Map<number, string[]>();
  for (const [code, { status }] of Object.entries(ErrorCatalogue)) byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  const responses: JsonObject = {};
  for (const [status, codes] of byStatus) {
    responses[`Error${status}`] = {
      description: `problem+json with code ${codes.join(', ')}`,
      headers: status === 429 || status === 503 ? { ...rateLimitHeaders, 'Retry-After': { $ref: '#/components/headers/Retry-After' } } : rateLimitHeaders,
      content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
    };
  }
  return responses;
}

function errorStatuses(method: string, security: Security, doc: RouteDoc | undefined, hasParams: boolean): number[] {
  const statuses = new Set<number>([429, 500, 503]);
  if (security !== 'none') statuses.add(401);
  if (security === 'orgKey' || security === 'mcpKey') statuses.add(403);
  if (hasParams || security !== 'none') statuses.add(404);
  if (doc?.query) statuses.add(400);
  if (method === 'POST' || method === 'PUT' || method === 'PATCH') [400, 413, 415].forEach((s) => statuses.add(s));
  // Idempotency-Key (contract §1): 409 while the first request runs, 422 for another body.
  if (method === 'POST') [409, 422].forEach((s) => statuses.add(s));
  if (method !== 'GET' && security !== 'none') [409, 422].forEach((s) => statuses.add(s));
  return [...statuses].sort((a, b) => a - b);
}

function operation(route: CollectedRoute, path: string): JsonObject {
  const doc = route.doc ?? routeDocs[`${route.method} ${path.startsWith(apiPrefix) ? path.slice(apiPrefix.length) : path}`];
  const security = securityOf(path, doc);
  const params = [...path.matchAll(/:([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => m[1]!);
  const parameters: JsonObject[] = params.map((name) => ({
    name,
    in: 'path',
    required: true,
    schema: doc?.params?.[name] ? jsonSchema(doc.params[name], 'input') : { type: 'string', format: 'uuid' },
  }));
  if (doc?.query) {
    const query = jsonSchema(doc.query, 'input') as { properties?: Record<string, JsonObject>; required?: string[] };
    for (const [name, schema] of Object.entries(query.properties ?? {})) {
      parameters.push({ name, in: 'query', required: query.required?.includes(name) ?? false, schema });
    }
  }
  if (route.method === 'POST') parameters.push({ $ref: '#/components/parameters/Idempotency-Key' });
  parameters.push({ $ref: '#/components/parameters/X-Request-Id' });

  const success = doc?.success ?? { status: 200 };
  const successContent = success.contentType
    ? { [success.contentType]: { schema: { type: 'string', contentMediaType: success.contentType } } }
    : { 'application/json': { schema: success.schema ? jsonSchema(success.schema, 'output') : {} } };
  const responses: JsonObject = {
    [String(success.status)]: { description: success.description ?? 'success', headers: rateLimitHeaders, content: successContent },
  };
  for (const status of errorStatuses(route.method, security, doc, params.length > 0)) {
    responses[String(status)] = { $ref: `#/components/responses/Error${status}` };
  }

  const result: JsonObject = {
    operationId: `${route.method.toLowerCase()}${path.replace(/:([A-Za-z0-9_]+)/g, 'By_$1').replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ?? '').toUpperCase())}`,
    ...(doc?.summary ? { summary: doc.summary } : {}),
    tags: [tagOf(path)],
    security: security === 'none' ? [] : [{ [security]: [] }],
    parameters,
    responses,
  };
  if (doc?.body) {
    const schema = jsonSchema(doc.body, 'input');
    const required = Array.isArray(schema.required) && schema.required.length > 0;
    result.requestBody = { required, content: { 'application/json': { schema } } };
  }
  return result;
}

function tagOf(path: string): string {
  if (path.startsWith('/admin/')) return 'admin';
  const rest = path.startsWith(apiPrefix) ? path.slice(apiPrefix.length) : path;
  return rest.split('/')[1] || 'service';
}

/**
 * Builds the OpenAPI 3.1 document (contract §6) of `routes`: one operation per method and path,
 * with path, query and header parameters, the request body schema and the success response
 * schema generated from the routes' Zod schemas (JSON Schema 2020-12), and the problem+json
 * error responses of contract §2. Aliases (`/v1/…`, the unprefixed provider-key PUT) and HEAD
 * routes are left out: the description says where the aliases are.
 */
export function buildOpenApiDocument(routes: readonly CollectedRoute[], version: string): JsonObject {
  const canonical = new Set(routes.filter((r) => r.url.startsWith(`${apiPrefix}/`)).map((r) => `${r.method} ${r.url}`));
  const paths: Record<string, JsonObject> = {};
  for (const route of routes) {
    if (route.method === 'HEAD' || route.method === 'OPTIONS') continue;
    if (route.url.startsWith(`${aliasPrefix}/`)) continue;
    if (!route.url.startsWith(`${apiPrefix}/`) && !route.url.startsWith('/admin/') && canonical.has(`${route.method} ${apiPrefix}${route.url}`)) continue;
    const openApiPath = route.url.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, '{$1}');
    paths[openApiPath] ??= {};
    paths[openApiPath][route.method.toLowerCase()] = operation(route, route.url);
  }
  const header = (description: string, schema: JsonObject) => ({ description, schema });
  return {
    openapi: '3.1.0',
    info: {
      title: 'Agent Collaboration Service',
      version,
      description:
        'API contract v1. Every route under /api/v1 is also served under /v1; PUT /organizations/{org_id}/api-keys/{provider} also without a prefix. ' +
        'Errors are application/problem+json (RFC 9457) with a stable code. Rate limits are per API key.',
    },
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    paths,
    components: {
      schemas: { Problem: jsonSchema(Problem, 'output') },
      responses: errorResponses(),
      parameters: {
        'Idempotency-Key': {
          name: 'Idempotency-Key',
          in: 'header',
          required: false,
          description: 'Replays the first response for 24 hours (header Idempotent-Replayed: true); another body gets 422, a repeat while the first runs 409.',
          schema: { type: 'string', minLength: 1, maxLength: 255 },
        },
        'X-Request-Id': { name: 'X-Request-Id', in: 'header', required: false, description: 'Echoed in the response.', schema: { type: 'string', maxLength: 200 } },
      },
      headers: {
        'X-Request-Id': header('The request id (the client\'s when it sent one).', { type: 'string' }),
        'RateLimit-Limit': header('Requests allowed per window.', { type: 'integer' }),
        'RateLimit-Remaining': header('Requests left in this window.', { type: 'integer' }),
        'RateLimit-Reset': header('Seconds until the window resets.', { type: 'integer' }),
        'Retry-After': header('Seconds to wait before retrying.', { type: 'integer' }),
      },
      securitySchemes: {
        orgKey: { type: 'apiKey', in: 'header', name: 'X-API-Key', description: 'An organization key (acs_org_…).' },
        mcpKey: { type: 'apiKey', in: 'header', name: 'X-API-Key', description: 'An MCP key (acs_mcp_…), bound to one agent.' },
        adminToken: { type: 'http', scheme: 'bearer', description: 'The operator token (ACS_ADMIN_TOKEN).' },
      },
    },
  };
}
