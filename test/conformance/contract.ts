/**
 * Assertions shared by the conformance suites, each a rule of the API contract (see
 * docs/development.md, "Conformance suites"): the problem+json shape (§2) and a fingerprint of an
 * organization's state as the API shows it, to prove that a request wrote nothing.
 */
import { expect } from 'vitest';
import { call, ERROR_CODES, type Reply } from './server.ts';

/**
 * Asserts that `reply` is the problem+json error of contract §2 with `status` and `code`:
 * Content-Type `application/problem+json`, `type` `urn:acs:error:<code>`, a title, the HTTP
 * status, a detail, and `request_id` equal to the `X-Request-Id` header; `errors[]` of
 * `{path, message}` for `invalid_request`.
 */
export function expectProblem(reply: Reply, status: number, code: string): void {
  const summary = `${reply.status} ${reply.text.slice(0, 300)}`;
  expect(reply.status, summary).toBe(status);
  expect(reply.headers.get('content-type') ?? '', summary).toMatch(/^application\/problem\+json\b/);
  expect(reply.body, summary).toMatchObject({ type: `urn:acs:error:${code}`, status, code });
  expect(typeof reply.body.title, summary).toBe('string');
  expect(reply.body.title.length, summary).toBeGreaterThan(0);
  expect(typeof reply.body.detail, summary).toBe('string');
  expect(reply.body.request_id, summary).toBe(reply.headers.get('x-request-id'));
  expect(ERROR_CODES[code]).toBe(status);
  if (code === 'invalid_request') {
    expect(Array.isArray(reply.body.errors), summary).toBe(true);
    expect(reply.body.errors.length, summary).toBeGreaterThan(0);
    for (const e of reply.body.errors) {
      expect(typeof e.path, summary).toBe('string');
      expect(typeof e.message, summary).toBe('string');
    }
  }
}

/** Asserts a success status, showing the body when it is not. */
export function expectStatus(reply: Reply, status: number): void {
  expect(reply.status, `${reply.status} ${reply.text.slice(0, 400)}`).toBe(status);
}

/** Fields that change on reads (a key's last use), left out of fingerprints. */
const VOLATILE = new Set(['last_used_at']);

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(value).sort()) if (!VOLATILE.has(k)) out[k] = canonical((value as Record<string, unknown>)[k]);
    return out;
  }
  return value;
}

function idsOf(list: unknown, field: string): string[] {
  return Array.isArray(list) ? list.map((x) => (x as Record<string, unknown>)?.[field]).filter((x): x is string => typeof x === 'string').sort() : [];
}

/**
 * A canonical JSON string of everything the API shows about `orgIds` to the key(s) `keys`
 * gives: the organization list, each organization, its teams with their graphs and deletion
 * previews, provider keys, organization keys, each agent's MCP keys, each edge's threads and
 * every message of every thread. `last_used_at` is left out. A 429 is waited out (Retry-After).
 */
export async function fingerprint(baseUrl: string, keys: () => string, orgIds: string[]): Promise<string> {
  const parts: Record<string, unknown> = {};
  const get = async (path: string): Promise<Reply> => {
    for (let attempt = 0; ; attempt++) {
      const reply = await call(baseUrl, 'GET', path, { key: keys() });
      if (reply.status !== 429 || attempt > 5) {
        parts[path] = { status: reply.status, body: canonical(reply.body) };
        return reply;
      }
      await new Promise((r) => setTimeout(r, 1000 * Math.max(1, Number(reply.headers.get('retry-after') ?? 1))));
    }
  };
  const orgs = await get('/api/v1/organizations');
  if (orgs.body?.organizations) orgs.body.organizations.sort((a: any, b: any) => String(a.org_id).localeCompare(String(b.org_id)));
  parts['/api/v1/organizations'] = { status: orgs.status, body: canonical(orgs.body) };
  for (const orgId of orgIds) {
    await get(`/api/v1/organizations/${orgId}`);
    await get(`/api/v1/organizations/${orgId}/api-keys`);
    await get(`/api/v1/organizations/${orgId}/keys`);
    const teams = await get(`/api/v1/organizations/${orgId}/teams`);
    for (const teamId of idsOf(teams.body?.teams, 'team_id')) {
      const team = await get(`/api/v1/teams/${teamId}`);
      await get(`/api/v1/teams/${teamId}/deletion-preview`);
      for (const agentId of idsOf(team.body?.agents, 'agent_id')) await get(`/api/v1/agents/${agentId}/mcp-keys`);
      for (const edgeId of idsOf(team.body?.edges, 'edge_id')) {
        const threads = await get(`/api/v1/edges/${edgeId}/threads`);
        for (const threadId of idsOf(threads.body?.threads, 'thread_id')) {
          let after: string | null = null;
          for (let page = 0; page < 50; page++) {
            const reply: Reply = await get(`/api/v1/threads/${threadId}?limit=200${after ? `&after=${after}` : ''}`);
            if (!reply.body?.has_more || !reply.body?.next_after) break;
            after = reply.body.next_after;
          }
        }
      }
    }
  }
  return JSON.stringify(Object.keys(parts).sort().map((k) => [k, parts[k]]));
}

/** Whether `text` shows a stack trace or a source path: `    at f (file:1:2)`, `node_modules`, `x.ts:12`. */
export function leaksInternals(text: string): boolean {
  return /\n\s*at \S.*:\d+:\d+/.test(text) || /\bat [^\s]+ \(.*:\d+:\d+\)/.test(text) || text.includes('node_modules') || /\.ts:\d+/.test(text);
}

/** The ids a route table is filled with. */
export interface RouteIds {
  orgId: string;
  teamId: string;
  agentId: string;
  /** A second participant of the same team, for edge bodies. */
  humanId: string;
  edgeId: string;
  threadId: string;
  messageId: string;
  attachmentId: string;
  keyId: string;
  mcpKeyId: string;
}

/** One keyed route of contract §5 with a valid body (`undefined`: no body). */
export interface RouteCase {
  method: string;
  /** The template as contract §5 writes it, e.g. `/teams/{team_id}`. */
  template: string;
  /** The full path to call, prefix included. */
  path: string;
  body?: unknown;
}

/**
 * Every route of contract §5 that takes an organization key and names an id in its path, filled
 * with `ids`, each with a valid body, under `/api/v1` (plus the unprefixed provider-key PUT).
 * Bodies name `ids.agentId`/`ids.humanId` where a body takes participant ids.
 */
export function idRoutes(ids: RouteIds): RouteCase[] {
  const t: Array<[string, string, string, unknown?]> = [
    ['GET', '/organizations/{org_id}', `/organizations/${ids.orgId}`],
    ['PATCH', '/organizations/{org_id}', `/organizations/${ids.orgId}`, { deletion_protection: true }],
    ['GET', '/organizations/{org_id}/deletion-preview', `/organizations/${ids.orgId}/deletion-preview`],
    ['POST', '/organizations/{org_id}/teams', `/organizations/${ids.orgId}/teams`, { team_name: 'intruder-team' }],
    ['GET', '/organizations/{org_id}/teams', `/organizations/${ids.orgId}/teams`],
    ['GET', '/teams/{team_id}', `/teams/${ids.teamId}`],
    ['PATCH', '/teams/{team_id}', `/teams/${ids.teamId}`, { description: 'changed by intruder' }],
    ['GET', '/teams/{team_id}/deletion-preview', `/teams/${ids.teamId}/deletion-preview`],
    ['POST', '/teams/{team_id}/agents', `/teams/${ids.teamId}/agents`, { name: 'intruder-agent' }],
    ['GET', '/teams/{team_id}/agents', `/teams/${ids.teamId}/agents`],
    ['GET', '/agents/{agent_id}', `/agents/${ids.agentId}`],
    ['PATCH', '/agents/{agent_id}', `/agents/${ids.agentId}`, { description: 'changed by intruder' }],
    ['POST', '/teams/{team_id}/humans', `/teams/${ids.teamId}/humans`, { name: 'intruder-human' }],
    ['GET', '/teams/{team_id}/humans', `/teams/${ids.teamId}/humans`],
    ['GET', '/humans/{human_id}', `/humans/${ids.humanId}`],
    ['PATCH', '/humans/{human_id}', `/humans/${ids.humanId}`, { name: 'renamed-by-intruder' }],
    ['POST', '/teams/{team_id}/edges', `/teams/${ids.teamId}/edges`, { participants: [ids.agentId, ids.humanId] }],
    ['GET', '/teams/{team_id}/edges', `/teams/${ids.teamId}/edges`],
    ['GET', '/edges/{edge_id}', `/edges/${ids.edgeId}`],
    ['POST', '/edges/{edge_id}/threads', `/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.agentId, content: 'hello from an intruder' }],
    ['GET', '/edges/{edge_id}/threads', `/edges/${ids.edgeId}/threads`],
    ['GET', '/threads/{thread_id}', `/threads/${ids.threadId}`],
    ['GET', '/threads/{thread_id}?after=…', `/threads/${ids.threadId}?after=${ids.messageId}&limit=5`],
    ['POST', '/threads/{thread_id}/messages', `/threads/${ids.threadId}/messages`, { sender_agent_id: ids.agentId, content: 'hello from an intruder' }],
    ['GET', '/attachments/{attachment_id}', `/attachments/${ids.attachmentId}`],
    ['GET', '/attachments/{attachment_id}/content', `/attachments/${ids.attachmentId}/content`],
    ['PUT', '/organizations/{org_id}/api-keys/{provider}', `/organizations/${ids.orgId}/api-keys/openai`, { api_key: 'sk-intruder-0000000000000000' }],
    ['GET', '/organizations/{org_id}/api-keys', `/organizations/${ids.orgId}/api-keys`],
    ['DELETE', '/organizations/{org_id}/api-keys/{provider}', `/organizations/${ids.orgId}/api-keys/openai`],
    ['POST', '/organizations/{org_id}/keys', `/organizations/${ids.orgId}/keys`, { name: 'intruder-key' }],
    ['GET', '/organizations/{org_id}/keys', `/organizations/${ids.orgId}/keys`],
    ['POST', '/organizations/{org_id}/keys/{key_id}/rotate', `/organizations/${ids.orgId}/keys/${ids.keyId}/rotate`, { grace_seconds: 0 }],
    ['DELETE', '/organizations/{org_id}/keys/{key_id}', `/organizations/${ids.orgId}/keys/${ids.keyId}`],
    ['POST', '/agents/{agent_id}/mcp-keys', `/agents/${ids.agentId}/mcp-keys`],
    ['GET', '/agents/{agent_id}/mcp-keys', `/agents/${ids.agentId}/mcp-keys`],
    ['DELETE', '/agents/{agent_id}/mcp-keys/{key_id}', `/agents/${ids.agentId}/mcp-keys/${ids.mcpKeyId}`],
    ['DELETE', '/edges/{edge_id}', `/edges/${ids.edgeId}`],
    ['DELETE', '/agents/{agent_id}', `/agents/${ids.agentId}`],
    ['DELETE', '/humans/{human_id}', `/humans/${ids.humanId}`],
    ['DELETE', '/teams/{team_id}', `/teams/${ids.teamId}`],
    ['DELETE', '/organizations/{org_id}', `/organizations/${ids.orgId}`],
  ];
  const cases: RouteCase[] = t.map(([method, template, path, body]) => ({ method, template, path: `/api/v1${path}`, body }));
  cases.push({
    method: 'PUT',
    template: 'unprefixed /organizations/{org_id}/api-keys/{provider}',
    path: `/organizations/${ids.orgId}/api-keys/anthropic`,
    body: { api_key: 'sk-intruder-1111111111111111' },
  });
  return cases;
}

/** Every route of contract §5 (method and template, relative to /api/v1), for the OpenAPI check. */
/**
 * Whether the MCP endpoint (contract §7) is served yet. It comes with a later issue than the REST
 * surface; until then its tests are skipped (and say so) rather than left failing.
 */
export const MCP_ENDPOINT_BUILT = true;

export const CONTRACT_ROUTES: ReadonlyArray<readonly [string, string]> = [
  ['GET', '/organizations'],
  ['POST', '/organizations'],
  ['GET', '/organizations/{org_id}'],
  ['PATCH', '/organizations/{org_id}'],
  ['DELETE', '/organizations/{org_id}'],
  ['GET', '/organizations/{org_id}/deletion-preview'],
  ['POST', '/organizations/{org_id}/teams'],
  ['GET', '/organizations/{org_id}/teams'],
  ['GET', '/teams/{team_id}'],
  ['PATCH', '/teams/{team_id}'],
  ['DELETE', '/teams/{team_id}'],
  ['GET', '/teams/{team_id}/deletion-preview'],
  ['POST', '/teams/{team_id}/agents'],
  ['GET', '/teams/{team_id}/agents'],
  ['GET', '/agents/{agent_id}'],
  ['PATCH', '/agents/{agent_id}'],
  ['DELETE', '/agents/{agent_id}'],
  ['POST', '/teams/{team_id}/humans'],
  ['GET', '/teams/{team_id}/humans'],
  ['GET', '/humans/{human_id}'],
  ['PATCH', '/humans/{human_id}'],
  ['DELETE', '/humans/{human_id}'],
  ['POST', '/teams/{team_id}/edges'],
  ['GET', '/teams/{team_id}/edges'],
  ['GET', '/edges/{edge_id}'],
  ['DELETE', '/edges/{edge_id}'],
  ['POST', '/edges/{edge_id}/threads'],
  ['GET', '/edges/{edge_id}/threads'],
  ['GET', '/threads/{thread_id}'],
  ['POST', '/threads/{thread_id}/messages'],
  ['POST', '/attachments'],
  ['GET', '/attachments/{attachment_id}'],
  ['GET', '/attachments/{attachment_id}/content'],
  ['PUT', '/organizations/{org_id}/api-keys/{provider}'],
  ['GET', '/organizations/{org_id}/api-keys'],
  ['DELETE', '/organizations/{org_id}/api-keys/{provider}'],
  ['POST', '/organizations/{org_id}/keys'],
  ['GET', '/organizations/{org_id}/keys'],
  ['POST', '/organizations/{org_id}/keys/{key_id}/rotate'],
  ['DELETE', '/organizations/{org_id}/keys/{key_id}'],
  ['POST', '/agents/{agent_id}/mcp-keys'],
  ['GET', '/agents/{agent_id}/mcp-keys'],
  ['DELETE', '/agents/{agent_id}/mcp-keys/{key_id}'],
  ['POST', '/access-requests'],
  ...(MCP_ENDPOINT_BUILT ? [['POST', '/mcp'] as const] : []),
];
