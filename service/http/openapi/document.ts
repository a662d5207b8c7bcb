import { z } from 'zod';
import { Problem, ProtectedResource } from '../../../api/schemas.ts';
import { finalTaskStates, type TaskState } from '../../../api/tasks.ts';
import { ErrorCatalogue, type ErrorCode } from '../../../errors/catalogue.ts';
import { uuidPattern } from '../../domain/ids.ts';
import { Tags, type RouteDoc, type Security, type Tag } from './route-doc.ts';
import type { RegisteredRoute, RouteRegistry } from './route-registry.ts';

type JsonObject = Record<string, unknown>;

const componentRef = (id: string) => `#/components/schemas/${id}`;

/**
 * The problem document as sent (RFC 9457, contract §2): the members every problem has, the
 * extension members some codes add, and room for others (RFC 9457 §3.2: clients ignore members
 * they do not know), so a new extension never breaks a generated client.
 */
const FieldProblem = z
  .object({ path: z.string().meta({ description: 'The field or parameter, e.g. `team_name`, `participants.1`.' }), message: z.string() })
  .meta({ id: 'FieldProblem', description: 'One problem of a request.' });
const ErrorCodeSchema = z
  .enum(Object.keys(ErrorCatalogue) as [ErrorCode, ...ErrorCode[]])
  .meta({ id: 'ErrorCode', description: 'A stable error code; each is listed with its status in the description of the responses that use it.' });
const ProblemDocument = Problem.extend({
  type: z.string().meta({ description: '`urn:acs:error:<code>`.' }),
  code: ErrorCodeSchema,
  request_id: z.string().meta({ description: 'The X-Request-Id of the response.' }),
  errors: z.array(FieldProblem).optional().meta({ description: 'Every problem found, each with the path it concerns (`invalid_request`, `unknown_reference`, …).' }),
  existing_id: z.uuid().optional().meta({ description: '`conflict`: the resource that already has the name, or the edge that already joins the pair.' }),
  edge_id: z.uuid().optional().meta({ description: '`in_use`: an edge the agent or human is still on.' }),
  org_id: z.uuid().optional().meta({ description: '`in_use` on an organization deletion: an organization it provisioned that still exists.' }),
  protected: z
    .array(ProtectedResource)
    .optional()
    .meta({ description: '`deletion_protected`: every resource with deletion protection that the deletion would remove, the resource itself first.' }),
  limit: z
    .number()
    .int()
    .optional()
    .meta({
      description:
        '`key_limit`: the most active keys an organization may hold; `mcp_key_limit`: the most active MCP keys an agent may hold; `invalid_request` of a task\'s artifacts: the most a task holds.',
    }),
  // `status` is the problem's own HTTP status (RFC 9457), so the decided state needs its own name.
  request_status: z.enum(['approved', 'rejected']).optional().meta({ description: '`conflict` on an access request decided already: how it was decided.' }),
  state: z.enum(finalTaskStates as [TaskState, ...TaskState[]]).optional().meta({ description: '`task_final`: the final state the task is in.' }),
})
  .loose()
  .meta({ id: 'Problem', description: 'application/problem+json (RFC 9457). Members not listed here may be added; ignore the ones you do not know.' });

/**
 * Converts Zod schemas to JSON Schema 2020-12 and gathers every named schema (`.meta({ id })`)
 * into `components.schemas`, so each is written once and referenced by `$ref` everywhere else.
 */
class SchemaCollector {
  readonly components: Record<string, JsonObject> = {};

  /** The JSON Schema of `schema` for requests (`input`) or responses (`output`). */
  convert(schema: z.ZodType, io: 'input' | 'output'): JsonObject {
    const generated = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any', override: describeTrimmed }) as JsonObject;
    const { $schema: _dialect, $defs, ...rest } = generated;
    for (const [id, definition] of Object.entries(($defs ?? {}) as Record<string, JsonObject>)) {
      const rewritten = normalizeSchema(definition) as JsonObject;
      const existing = this.components[id];
      // Two different schemas with one name would make a generated type lie about one of them.
      if (existing && JSON.stringify(existing) !== JSON.stringify(rewritten)) {
        throw new Error(`openapi: two different schemas are named ${id}`);
      }
      this.components[id] = rewritten;
    }
    return normalizeSchema(rest) as JsonObject;
  }
}

// What String.prototype.trim removes (ECMAScript WhiteSpace and LineTerminator), spelled out so
// that every regex engine, not only JavaScript's `\s`, reads the patterns below the same way.
const trimmedSpace = '\\t\\n\\v\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff';
const space = `[${trimmedSpace}]`;
const nonSpace = `[^${trimmedSpace}]`;

interface StringCheck {
  _zod: { def: { check: string; tx?: (input: string) => string } };
}

/**
 * `override` of z.toJSONSchema for strings that are trimmed before their limits apply (names,
 * texts; contract §1): Zod would state `minLength`/`maxLength`/`pattern` of the raw string, which
 * refuses `"  a"` and accepts `"   "` where the server does the opposite. They become patterns
 * over the raw string: surrounding white space, then text whose length and shape are checked.
 * (Exact for the patterns used here, whose matches stay matches when trimmed.)
 */
function describeTrimmed({ zodSchema, jsonSchema }: { zodSchema: unknown; jsonSchema: JsonObject }): void {
  const def = (zodSchema as { _zod: { def: { type: string; checks?: StringCheck[] } } })._zod.def;
  const trims = def.type === 'string' && (def.checks ?? []).some((c) => c._zod.def.check === 'overwrite' && c._zod.def.tx?.(' \t x \n') === 'x');
  if (!trims) return;
  const { minLength, maxLength, pattern, allOf, ...rest } = jsonSchema as JsonObject & { minLength?: number; maxLength?: number; pattern?: string; allOf?: JsonObject[] };
  const min = minLength ?? 0;
  let text: string;
  if (maxLength === undefined) text = min === 0 ? '[\\s\\S]*' : `${nonSpace}(?:[\\s\\S]*${nonSpace})?`;
  else if (maxLength === 1) text = min === 0 ? `${nonSpace}?` : nonSpace;
  else if (min <= 1) text = `${min === 0 ? '(?:' : ''}${nonSpace}(?:[\\s\\S]{0,${maxLength - 2}}${nonSpace})?${min === 0 ? ')?' : ''}`;
  else text = `${nonSpace}[\\s\\S]{${min - 2},${maxLength - 2}}${nonSpace}`;
  const patterns = [`^${space}*${text}${space}*$`];
  for (const other of [pattern, ...(allOf ?? []).map((p) => p.pattern as string | undefined)]) {
    if (other === undefined) continue;
    if (!other.startsWith('^') || !other.endsWith('$')) throw new Error(`openapi: cannot describe the trimmed pattern ${other}`);
    patterns.push(`^${space}*(?:${other.slice(1, -1)})${space}*$`);
  }
  for (const key of Object.keys(jsonSchema)) delete jsonSchema[key];
  const limits = maxLength === undefined ? `at least ${min}` : `${min}–${maxLength}`;
  const note = `Surrounding white space is trimmed; ${limits} characters must remain.`;
  Object.assign(jsonSchema, rest, {
    description: typeof rest.description === 'string' ? `${rest.description} ${note}` : note,
    ...(patterns.length === 1 ? { pattern: patterns[0] } : { allOf: patterns.map((p) => ({ pattern: p })) }),
  });
}

// A JSON Schema `format` is checked differently by every validator (`email` above all: Python's
// jsonschema takes anything with an @, others follow RFC 5321), while the server checks the
// pattern Zod wrote beside it: where both are given, the pattern is the truth and the format goes.
const formatsStatedByPattern = new Set(['email']);

// Zod writes `$defs` refs; a same-typed tuple (`participants: [Id, Id]`) as `prefixItems` with
// `items: false`, which many client generators cannot read: `items` with fixed bounds says the same.
function normalizeSchema(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(normalizeSchema);
  if (value === null || typeof value !== 'object') return value;
  const { prefixItems, items, ...rest } = value as JsonObject;
  if (typeof rest.format === 'string' && formatsStatedByPattern.has(rest.format) && typeof rest.pattern === 'string') {
    const { format: _stated, ...patterned } = value as JsonObject;
    return normalizeSchema(patterned);
  }
  if (Array.isArray(prefixItems) && items === false && prefixItems.every((p) => JSON.stringify(p) === JSON.stringify(prefixItems[0]))) {
    return normalizeSchema({ ...rest, items: prefixItems[0], minItems: prefixItems.length, maxItems: prefixItems.length });
  }
  return Object.fromEntries(
    Object.entries(value).map(([key, child]) => [
      key,
      key === '$ref' && typeof child === 'string' && child.startsWith('#/$defs/') ? componentRef(child.slice('#/$defs/'.length)) : normalizeSchema(child),
    ]),
  );
}

function securityOf(route: RegisteredRoute): Security {
  if (route.doc?.security) return route.doc.security;
  if (route.path.startsWith('/admin/')) return 'adminToken';
  if (route.path === '/me' || route.path.startsWith('/me/')) return 'session';
  return 'orgKey';
}

const bodyMethods = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * The codes a route can answer (contract §1, §2) because of what it is, whatever it does: any
 * route refuses unknown query parameters and undecodable URLs (400), is rate limited and queues
 * its client's requests for their turn (429; http/fair-share.ts: not the health checks), can
 * fail (500) or be unavailable (503), and answers 405 for a method its path does not serve; a
 * keyed route refuses a missing or bad key; a route with path ids answers `not_found`; a body
 * can be malformed, too large or not JSON (Fastify reads bodies of DELETE too); a POST takes an
 * Idempotency-Key. The route's doc adds the codes of its own rules.
 */
function errorCodesOf(route: RegisteredRoute, security: Security): ErrorCode[] {
  const codes = new Set<ErrorCode>(['invalid_request', 'method_not_allowed', 'rate_limited', 'internal', 'unavailable']);
  if (route.path !== '/healthz' && route.path !== '/readyz') codes.add('too_many_requests_queued');
  if (security === 'adminToken' || security === 'session' || security === 'operatorSession') codes.add('unauthenticated');
  // A session (a person's, or an operator's on /admin/v1) must send its CSRF token with every change (contract §10).
  if ((security === 'session' || security === 'adminToken' || security === 'operatorSession') && route.method !== 'GET') codes.add('csrf_failed');
  if (security === 'orgKey' || security === 'mcpKey') ['unauthenticated', 'invalid_api_key', 'wrong_key_type'].forEach((c) => codes.add(c as ErrorCode));
  if (route.path.includes(':')) codes.add('not_found');
  // An id in the query names something the caller must reach too (`?org_id=` of the console's stream).
  if (Object.keys(route.doc?.query?.shape ?? {}).some((name) => name.endsWith('_id'))) codes.add('not_found');
  if (bodyMethods.has(route.method)) ['malformed_json', 'payload_too_large', 'unsupported_media_type'].forEach((c) => codes.add(c as ErrorCode));
  if (route.method === 'POST') ['idempotency_key_in_use', 'idempotency_key_mismatch'].forEach((c) => codes.add(c as ErrorCode));
  for (const code of route.doc?.errors ?? []) codes.add(code);
  return [...codes];
}

function statusesOf(codes: readonly ErrorCode[]): Map<number, ErrorCode[]> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) {
    const { status } = ErrorCatalogue[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return new Map([...byStatus].sort(([a], [b]) => a - b));
}

const headerRef = (name: string) => ({ $ref: `#/components/headers/${name}` });
const commonHeaders = {
  'X-Request-Id': headerRef('X-Request-Id'),
  'RateLimit-Limit': headerRef('RateLimit-Limit'),
  'RateLimit-Remaining': headerRef('RateLimit-Remaining'),
  'RateLimit-Reset': headerRef('RateLimit-Reset'),
};

// One reusable response per error status, naming every catalogue code of that status.
function errorResponse(status: number): JsonObject {
  const codes = Object.entries(ErrorCatalogue).filter(([, entry]) => entry.status === status).map(([code]) => `\`${code}\``);
  const headers: JsonObject = { ...commonHeaders, 'Idempotent-Replayed': headerRef('Idempotent-Replayed') };
  if (status === 429 || status === 503) headers['Retry-After'] = headerRef('Retry-After');
  if (status === 405) headers.Allow = headerRef('Allow');
  return {
    description: `Problem (application/problem+json) with code ${codes.join(', ')}.`,
    headers,
    content: { 'application/problem+json': { schema: { $ref: componentRef('Problem') } } },
  };
}

const idNames: Record<string, string> = { org_id: 'organization', key_id: 'key', request_id: 'access request' };

function parametersOf(route: RegisteredRoute, doc: RouteDoc | undefined, schemas: SchemaCollector): JsonObject[] {
  const parameters: JsonObject[] = [...route.path.matchAll(/:([A-Za-z_][A-Za-z0-9_]*)/g)].map(([, name]) => {
    const given = doc?.params?.[name!];
    return {
      name,
      in: 'path',
      required: true,
      description: given ? undefined : `The ${idNames[name!] ?? name!.replace(/_id$/, '').replace(/_/g, ' ')} id.`,
      // What the routes accept as an id (domain/ids.ts): any case; anything else is 404.
      schema: given ? schemas.convert(given, 'input') : { type: 'string', format: 'uuid', pattern: uuidPattern.source },
    };
  });
  if (doc?.query) {
    const query = schemas.convert(doc.query, 'input') as { properties?: Record<string, JsonObject>; required?: string[] };
    for (const [name, schema] of Object.entries(query.properties ?? {})) {
      const { description, ...rest } = schema;
      parameters.push({ name, in: 'query', required: query.required?.includes(name) ?? false, description, schema: rest });
    }
  }
  if (route.method === 'POST') parameters.push({ $ref: '#/components/parameters/Idempotency-Key' });
  parameters.push({ $ref: '#/components/parameters/X-Request-Id' });
  return parameters.map((p) => Object.fromEntries(Object.entries(p).filter(([, v]) => v !== undefined)));
}

function successResponse(route: RegisteredRoute, doc: RouteDoc | undefined, schemas: SchemaCollector): JsonObject {
  const success = doc?.success;
  const headers: JsonObject = { ...commonHeaders };
  if (route.method === 'POST') headers['Idempotent-Replayed'] = headerRef('Idempotent-Replayed');
  if (route.noStore) headers['Cache-Control'] = headerRef('Cache-Control');
  if (success?.stream) {
    for (const [name, description] of Object.entries(success.stream.headers)) headers[name] = { description, required: true, schema: { type: 'string' } };
    return { description: success.description, headers, content: { 'text/event-stream': { schema: schemas.convert(success.stream.event, 'output') } } };
  }
  if (success?.bytes) {
    for (const [name, description] of Object.entries(success.bytes.headers)) headers[name] = { description, required: true, schema: { type: 'string' } };
    return { description: success.description, headers, content: { [success.bytes.mediaType]: { schema: { type: 'string', format: 'binary' } } } };
  }
  return {
    description: success?.description ?? 'success',
    headers,
    content: { 'application/json': { schema: success?.schema ? schemas.convert(success.schema, 'output') : {} } },
  };
}

function describeErrors(byStatus: Map<number, ErrorCode[]>): string {
  return [...byStatus].map(([status, codes]) => `${status} ${codes.map((c) => `\`${c}\``).join(', ')}`).join('; ');
}

function operationOf(route: RegisteredRoute, servers: JsonObject[] | undefined, schemas: SchemaCollector, usedStatuses: Set<number>): JsonObject {
  const doc = route.doc;
  const security = securityOf(route);
  const byStatus = statusesOf(errorCodesOf(route, security));
  const responses: JsonObject = { [String(doc?.success.status ?? 200)]: successResponse(route, doc, schemas) };
  for (const status of byStatus.keys()) {
    usedStatuses.add(status);
    responses[String(status)] = { $ref: `#/components/responses/Error${status}` };
  }
  const prose = doc?.description ?? '';
  const operation: JsonObject = {
    operationId: doc?.operationId ?? `${route.method.toLowerCase()}${route.path.replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ?? '').toUpperCase())}`,
    summary: doc?.summary ?? `${route.method} ${route.path} (undocumented)`,
    description: `${prose ? `${prose}\n\n` : ''}Errors: ${describeErrors(byStatus)}.`,
    tags: [doc?.tag ?? 'service'],
    security: security === 'none' ? [] : [{ [security]: [] }],
    ...(servers ? { servers } : {}),
    parameters: parametersOf(route, doc, schemas),
  };
  if (doc?.body) {
    // Handlers parse a missing body as `{}`: a body is optional exactly when `{}` is valid.
    const required = !doc.body.safeParse({}).success;
    operation.requestBody = { required, content: { 'application/json': { schema: schemas.convert(doc.body, 'input') } } };
  }
  operation.responses = responses;
  return operation;
}

/** An operation of the document with the route it describes. */
interface BuiltOperation {
  route: RegisteredRoute;
  operation: JsonObject;
}

const pathParamsOf = (path: string): string[] => [...path.matchAll(/:([A-Za-z_][A-Za-z0-9_]*)/g)].map(([, name]) => name!);

/**
 * Where each `*_id` of a response body is, as a JSON pointer: the top-level ones, and those one
 * level down (`ApprovedAccessRequest.organization.org_id`). References are followed to the
 * components. The first top-level one names the created resource (every resource lists its own id
 * first: `team_id`, `agent_id`, `key_id`, …).
 */
function idPointers(schema: JsonObject | undefined, schemas: SchemaCollector): { own: string | undefined; pointers: Map<string, string> } {
  const resolve = (s: JsonObject | undefined): JsonObject | undefined => {
    const ref = s?.$ref;
    return typeof ref === 'string' ? schemas.components[ref.slice(componentRef('').length)] : s;
  };
  const pointers = new Map<string, string>();
  let own: string | undefined;
  const top = (resolve(schema)?.properties ?? {}) as Record<string, JsonObject>;
  for (const [name, child] of Object.entries(top)) {
    if (name.endsWith('_id')) {
      own ??= name;
      pointers.set(name, `/${name}`);
    }
  }
  for (const [name, child] of Object.entries(top)) {
    for (const inner of Object.keys((resolve(child)?.properties ?? {}) as Record<string, unknown>)) {
      if (inner.endsWith('_id') && !pointers.has(inner)) pointers.set(inner, `/${name}/${inner}`);
    }
  }
  return { own, pointers };
}

/**
 * OpenAPI `links` (3.1 §4.8.20) from each create to the operations that use what it created, so
 * that a client — and Schemathesis's stateful phase — can follow them: from every POST that
 * creates (201, or 202 for a request taken for review) and whose body names the created
 * resource's id (its first `*_id`), to every operation whose path
 * parameters can all be filled from that body (`$response.body#/…`) or the create's own path
 * (`$request.path.…`), the created id among them. Derived from the routes and their schemas, so
 * a route added later gets its links with no entry of its own.
 */
function addLinks(built: readonly BuiltOperation[], schemas: SchemaCollector): void {
  for (const source of built) {
    const created = source.route.doc?.success;
    if (source.route.method !== 'POST' || !created?.schema || (created.status !== 201 && created.status !== 202)) continue;
    const success = (source.operation.responses as Record<string, JsonObject>)[String(created.status)]!;
    const body = ((success.content as Record<string, { schema: JsonObject }> | undefined)?.['application/json'])?.schema;
    const { own, pointers } = idPointers(body, schemas);
    if (own === undefined) continue;
    const sourceParams = new Set(pathParamsOf(source.route.path));
    const links: Record<string, JsonObject> = {};
    for (const target of built) {
      const params = pathParamsOf(target.route.path);
      if (!params.includes(own)) continue;
      const parameters: Record<string, string> = {};
      for (const name of params) {
        const pointer = pointers.get(name);
        if (pointer !== undefined) parameters[name] = `$response.body#${pointer}`;
        else if (sourceParams.has(name)) parameters[name] = `$request.path.${name}`;
      }
      if (Object.keys(parameters).length !== params.length) continue;
      const operationId = target.operation.operationId as string;
      links[operationId] = { operationId, parameters, description: `${target.route.method} ${target.route.path.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, '{$1}')} with the ${own.replace(/_id$/, '').replace(/_/g, ' ')} just created.` };
    }
    if (Object.keys(links).length > 0) success.links = links;
  }
}

const securitySchemes: Record<Exclude<Security, 'none'>, JsonObject> = {
  orgKey: { type: 'apiKey', in: 'header', name: 'X-API-Key', description: 'An organization key (acs_org_…).' },
  mcpKey: { type: 'apiKey', in: 'header', name: 'X-API-Key', description: 'An MCP key (acs_mcp_…), bound to one agent.' },
  adminToken: { type: 'http', scheme: 'bearer', description: 'The operator token (ACS_ADMIN_TOKEN), or an operator session (POST /admin/v1/sign-in).' },
  session: { type: 'apiKey', in: 'cookie', name: 'acs_session', description: "A console session (a sign-in link or OpenID Connect); changes need the session's X-CSRF-Token too." },
  operatorSession: { type: 'apiKey', in: 'cookie', name: 'acs_session', description: "An operator's session (POST /admin/v1/sign-in with the admin token); changes need its X-CSRF-Token too." },
};

const serverDescriptions: Record<string, string> = {
  '/api/v1': 'The API, on the host that serves this document.',
  '/v1': 'An exact alias of /api/v1 for every route.',
};

function serverOf(prefix: string): JsonObject {
  return prefix ? { url: prefix, description: serverDescriptions[prefix] ?? `Routes under ${prefix}.` } : { url: '/', description: 'Without a prefix.' };
}

const documentDescription = `
The Agent Collaboration Service API, version 1. Organizations hold teams of agents and humans;
two participants joined by an edge talk in threads of messages.

**Prefixes.** Every API route is served under \`/api/v1\` and, as an exact alias, under \`/v1\`
(the two \`servers\`). \`PUT /organizations/{org_id}/api-keys/{provider}\` is also served without
a prefix, and the health routes and the operator routes (\`/admin/v1/…\`) only at the root: their
operations name their own \`servers\`.

**Requests.** Bodies are JSON (\`application/json\`; anything else is 415). Unknown body fields
and unknown query parameters are refused on every route (400 \`invalid_request\`, each named in
\`errors\`). A trailing slash is ignored: \`/api/v1/organizations/\` is \`/api/v1/organizations\`.
No string or key may contain NUL (U+0000). Identifiers are UUIDs; timestamps are ISO 8601 UTC
with milliseconds.

**Errors** are \`application/problem+json\` (RFC 9457) with a stable \`code\`; some codes add
members (\`existing_id\`, \`edge_id\`, \`org_id\`, \`protected\`, \`limit\`, \`request_status\`, \`state\`). A path that exists answers 405 with \`Allow\` for
a method it does not serve. Before any route, the server answers a request not received in time
408 \`request_timeout\`, headers over 16 KiB 431 \`headers_too_large\`, and a connection over the
per-address cap 429 \`rate_limited\`, each closing the connection.

**Headers.** Every response carries \`X-Request-Id\` (the client's, when it sent a short printable
one). Rate limits are per API key (by client address without a valid key) and every routed
response carries \`RateLimit-Limit\`, \`RateLimit-Remaining\` and \`RateLimit-Reset\`; 429 and 503
carry \`Retry-After\`. A POST with \`Idempotency-Key\` is answered once: a repeat within 24 hours
gets the first response again with \`Idempotent-Replayed: true\`. An answer that carries a secret
(a new or rotated key, a webhook secret, a sign-in link, a session's CSRF token) carries
\`Cache-Control: no-store\`; with an https public URL every response carries
\`Strict-Transport-Security\`.
`.trim();

/**
 * Builds the OpenAPI 3.1 document (contract §6) of the routes in `registry`: one operation per
 * method and path (HEAD and OPTIONS left out), each with an operationId, summary, tag and
 * description naming its error codes; path, query and header parameters, the request body and
 * the success response generated from the routes' Zod schemas (JSON Schema 2020-12) with every
 * named schema as a component; the problem+json errors of contract §2 as shared responses.
 * Routes served under all API prefixes are listed once, relative to the document's `servers`;
 * others (health, admin, the unprefixed provider-key PUT) name their own servers.
 * Errors: throws when two different schemas carry the same name (a bug, caught by the tests).
 */
export function buildOpenApiDocument(registry: RouteRegistry, version: string): JsonObject {
  const schemas = new SchemaCollector();
  const usedStatuses = new Set<number>();
  // One entry per method and path, with every prefix it is served under.
  const operations = new Map<string, { route: RegisteredRoute; prefixes: string[] }>();
  for (const route of registry.routes) {
    if (route.method === 'HEAD' || route.method === 'OPTIONS' || !route.documented) continue;
    const key = `${route.method} ${route.path}`;
    const entry = operations.get(key) ?? { route, prefixes: [] };
    entry.prefixes.push(route.prefix);
    operations.set(key, entry);
  }
  const paths: Record<string, JsonObject> = {};
  const tags = new Set<Tag>();
  const built: BuiltOperation[] = [];
  for (const { route, prefixes } of operations.values()) {
    const everywhere = registry.prefixes.every((p) => prefixes.includes(p)) && prefixes.length === registry.prefixes.length;
    const ordered = [...registry.prefixes, ''].filter((p) => prefixes.includes(p));
    const openApiPath = route.path.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, '{$1}');
    paths[openApiPath] ??= {};
    const servers = everywhere ? undefined : ordered.map(serverOf);
    const operation = operationOf(route, servers, schemas, usedStatuses);
    paths[openApiPath][route.method.toLowerCase()] = operation;
    built.push({ route, operation });
    tags.add(route.doc?.tag ?? 'service');
    for (const variant of route.doc?.variants ?? []) {
      const path = route.path.replace(`:${variant.param}`, variant.value);
      const variantRoute: RegisteredRoute = { ...route, path, url: route.url.replace(`:${variant.param}`, variant.value), doc: { ...variant.doc, tag: route.doc!.tag } };
      const variantPath = path.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, '{$1}');
      paths[variantPath] ??= {};
      const variantOperation = operationOf(variantRoute, servers, schemas, usedStatuses);
      paths[variantPath][route.method.toLowerCase()] = variantOperation;
      built.push({ route: variantRoute, operation: variantOperation });
    }
  }
  // A concrete path answers every method of its templated one: each must be documented there too.
  for (const { route } of built) {
    for (const variant of route.doc?.variants ?? []) {
      const concrete = route.path.replace(`:${variant.param}`, variant.value).replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, '{$1}');
      for (const sibling of built) {
        if (sibling.route.path === route.path && !paths[concrete]?.[sibling.route.method.toLowerCase()]) {
          throw new Error(`openapi: ${sibling.route.method} ${route.path} has no variant for ${variant.param} = ${variant.value}, which ${concrete} serves`);
        }
      }
    }
  }
  addLinks(built, schemas);
  // Named, so it lands in the components like every other named schema.
  schemas.convert(ProblemDocument, 'output');
  const securities = new Set([...operations.values()].map(({ route }) => securityOf(route)));
  const header = (description: string, schema: JsonObject, required = false) => ({ description, required, schema });
  return {
    openapi: '3.1.0',
    info: { title: 'Agent Collaboration Service', version, description: documentDescription },
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    servers: registry.prefixes.map(serverOf),
    tags: (Object.keys(Tags) as Tag[]).filter((t) => tags.has(t)).map((name) => ({ name, description: Tags[name] })),
    paths,
    components: {
      schemas: Object.fromEntries(Object.entries(schemas.components).sort(([a], [b]) => a.localeCompare(b))),
      responses: Object.fromEntries([...usedStatuses].sort((a, b) => a - b).map((status) => [`Error${status}`, errorResponse(status)])),
      parameters: {
        'Idempotency-Key': {
          name: 'Idempotency-Key',
          in: 'header',
          required: false,
          description:
            'Makes a POST safe to retry: the first response is stored for 24 hours and a repeat with the same body gets it again ' +
            '(header Idempotent-Replayed: true); another body gets 422 `idempotency_key_mismatch`, a repeat while the first runs 409 `idempotency_key_in_use`.',
          schema: { type: 'string', minLength: 1, maxLength: 255 },
        },
        'X-Request-Id': {
          name: 'X-Request-Id',
          in: 'header',
          required: false,
          description: 'Any value is accepted; it is echoed in the response when it is 1–200 printable ASCII characters, else the server picks one.',
          schema: { type: 'string' },
        },
      },
      headers: {
        'X-Request-Id': header("The request id: the client's when it sent a usable one, else a UUID.", { type: 'string' }, true),
        'RateLimit-Limit': header('Requests allowed per window for this key (or client address).', { type: 'integer', minimum: 0 }),
        'RateLimit-Remaining': header('Requests left in the current window.', { type: 'integer', minimum: 0 }),
        'RateLimit-Reset': header('Seconds until the window resets.', { type: 'integer', minimum: 0 }),
        'Retry-After': header('Seconds to wait before retrying.', { type: 'integer', minimum: 0 }),
        Allow: header('The methods the path serves.', { type: 'string' }),
        'Idempotent-Replayed': header('`true` on the stored response of a repeated POST with the same Idempotency-Key.', { type: 'string', enum: ['true'] }),
        'Cache-Control': header('`no-store` on every answer that carries a secret or a CSRF token: no cache may keep it.', { type: 'string', enum: ['no-store'] }, true),
      },
      securitySchemes: Object.fromEntries(Object.entries(securitySchemes).filter(([name]) => securities.has(name as Security))),
    },
  };
}
