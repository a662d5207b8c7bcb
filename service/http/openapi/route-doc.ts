import type { z } from 'zod';
import type { ErrorCode } from '../../../errors/catalogue.ts';

/** Who may call a route: which credential the OpenAPI document names for it. */
export const Securities = { orgKey: 'orgKey', mcpKey: 'mcpKey', adminToken: 'adminToken', session: 'session', operatorSession: 'operatorSession', none: 'none' } as const;
export type Security = (typeof Securities)[keyof typeof Securities];

/**
 * The tags of the document (contract §5, §6), each with the description the document gives it.
 * Every operation has exactly one, so generated clients group methods by resource.
 */
export const Tags = {
  organizations: 'Organizations: the tenants. A key reaches its own organization and those it provisioned.',
  teams: 'Teams of an organization, with their agents, humans and edges (the team graph).',
  agents: 'Agents of a team: LLM-backed when they have a provider, external (MCP only) when not.',
  humans: 'Humans of a team.',
  edges: 'Edges: two participants of a team who may talk. Threads live on edges.',
  threads: 'Threads and their messages; reading a thread page can long-poll for new messages.',
  tasks: "Tasks: a unit of work one participant of an edge asks of the other, in the shape of the Agent2Agent protocol's Task, with its own thread, state and artifacts.",
  attachments: 'Files a message can reference (5 MiB each, uploaded as base64).',
  events: "The organization's event log: every change in order, read by page, long poll or Server-Sent Events.",
  webhooks: 'Webhooks: events POSTed to a receiver, signed per Standard Webhooks, retried, with a delivery log.',
  usage: 'Tokens that provider agents spent, from the providers\' own counts, and the state of their daily budgets.',
  'provider-keys': 'LLM provider keys of an organization: write-only, only a hint is ever returned.',
  'org-keys': 'Organization API keys: created, rotated with a grace period, revoked. Secrets are shown once.',
  'mcp-keys': 'MCP keys: bound to one agent, for the MCP endpoint. Secrets are shown once.',
  mcp: 'The MCP endpoint: an external agent takes part in its threads through MCP tools, with its MCP key.',
  'access-requests': 'Asking for access without a key; an operator reviews the request.',
  console: 'The console (people in a browser): sign-in links, and the routes a signed-in person reaches under /me with the acs_session cookie: their teams, their threads, the MCP keys of their external agents.',
  admin: 'Operator routes under /admin/v1: exist only when the server has an admin token (ACS_ADMIN_TOKEN).',
  service: 'Health, readiness and this document: no key needed.',
} as const;
export type Tag = keyof typeof Tags;

/** The response a route gives when it succeeds. */
export interface SuccessDoc {
  status: number;
  description: string;
  /** The JSON body; a named schema (`.meta({ id })`) becomes a `$ref` to its component. */
  schema?: z.ZodType;
  /** A non-JSON body: its media type (range) and the headers that come with it. */
  bytes?: { mediaType: string; headers: Record<string, string> };
  /**
   * A `text/event-stream` body: the schema of each of its events (`id`, `event`, `data`; OpenAPI
   * 3.1 lets the media type's schema describe one event), and the headers that come with it.
   */
  stream?: { event: z.ZodType; headers: Record<string, string> };
}

/**
 * What the OpenAPI document says about one route beyond its method and path. Every route's doc
 * lives in {@link ./route-docs.ts}, keyed by method and unprefixed path; the schemas are the Zod
 * schemas the handler parses with, so the document cannot drift from what the server accepts.
 */
export interface RouteDoc {
  /** Stable and unique: generated clients name their methods after it. */
  operationId: string;
  tag: Tag;
  summary: string;
  /** More than the summary says; the document appends the error codes the route can answer. */
  description?: string;
  /** The JSON request body the handler parses. */
  body?: z.ZodType;
  /** Whether a request may leave the body out (default: when the body schema requires nothing). */
  bodyOptional?: boolean;
  /** The query string the handler parses (an object schema: one parameter per key). Any other query parameter is refused. */
  query?: z.ZodObject;
  /** Path parameters that are not UUIDs (default: a UUID for every `:param`). */
  params?: Record<string, z.ZodType>;
  success: SuccessDoc;
  /**
   * The codes this route raises itself (contract §2), beyond the ones every route of its kind
   * can answer (see `commonErrors` in document.ts): each adds its status to the responses.
   */
  errors?: readonly ErrorCode[];
  /** Overrides the credential derived from the path. */
  security?: Security;
  /**
   * Operations of the same route for one value of a path parameter whose rules differ from the
   * others' (the `echo` provider takes keys of any length): each is documented at its own path,
   * the value in place of the parameter (OpenAPI matches a concrete path before a templated one),
   * so that the document states every rule; `params` above then names the other values.
   */
  variants?: ReadonlyArray<{ param: string; value: string; doc: Omit<RouteDoc, 'tag' | 'variants'> }>;
}
