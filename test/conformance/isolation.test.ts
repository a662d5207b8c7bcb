/**
 * Isolation between organizations (contract §2 `not_found`, §3), written from the contract alone.
 * Organization A is the dev organization, with a full graph: team, agents, human, edges, a
 * thread with messages and an attachment, a provider key, an extra organization key and an MCP
 * key. Organization B comes in two ways the contract offers:
 *
 * - provisioned: the dev key creates it with `POST /organizations`, then issues it its own key
 *   with `POST /organizations/{org_id}/keys`; that key reaches B and what B provisions, not A;
 * - approved: an access request approved through the operator surface (`/admin/v1`, §6, with
 *   `ACS_ADMIN_TOKEN`), which creates a separate top-level organization and its first key.
 *
 * With B's key, every route of §5 called on A's ids answers 404 `not_found` (never 403), and
 * A's state as the API shows it is unchanged afterwards.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, expectStatus, fingerprint, idRoutes, type RouteIds } from './contract.ts';
import { call, startServer, uniqueName, type Reply, type Server } from './server.ts';

const ADMIN_TOKEN = `admin-${crypto.randomUUID()}`;
let s: Server;
let a: RouteIds & { a2: string; secrets: string[] };

async function as(key: string, method: string, path: string, body?: unknown): Promise<Reply> {
  return call(s.baseUrl, method, `/api/v1${path}`, { key, body });
}

async function make(key: string, method: string, path: string, body?: unknown): Promise<any> {
  const reply = await as(key, method, path, body);
  if (reply.status !== 201 && reply.status !== 200) throw new Error(`fixture ${method} ${path}: ${reply.status} ${reply.text.slice(0, 300)}`);
  return reply.body;
}

/** The first string anywhere in `value` that satisfies `test`. */
function findString(value: unknown, test: (x: string, key: string) => boolean, key = ''): string | undefined {
  if (typeof value === 'string') return test(value, key) ? value : undefined;
  if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      const found = findString(v, test, k);
      if (found) return found;
    }
  }
  return undefined;
}

beforeAll(async () => {
  s = await startServer({ env: { ACS_ADMIN_TOKEN: ADMIN_TOKEN } });
  const k = s.apiKey;
  const team = await make(k, 'POST', `/organizations/${s.orgId}/teams`, { team_name: 'a-team', description: 'org A' });
  const a1 = await make(k, 'POST', `/teams/${team.team_id}/agents`, { name: 'a-one', instructions: 'secret plans' });
  const a2 = await make(k, 'POST', `/teams/${team.team_id}/agents`, { name: 'a-two' });
  const h1 = await make(k, 'POST', `/teams/${team.team_id}/humans`, { name: 'a-human', email: 'a@example.com' });
  const e1 = await make(k, 'POST', `/teams/${team.team_id}/edges`, { participants: [a1.agent_id, h1.human_id] });
  await make(k, 'POST', `/teams/${team.team_id}/edges`, { participants: [a1.agent_id, a2.agent_id] });
  const thread = await make(k, 'POST', `/edges/${e1.edge_id}/threads`, { sender_agent_id: a1.agent_id, subject: 'A only', content: 'for A' });
  const attachment = await make(k, 'POST', '/attachments', { filename: 'a.txt', content_type: 'text/plain', data_base64: Buffer.from('A data').toString('base64') });
  const message = await make(k, 'POST', `/threads/${thread.thread_id}/messages`, { sender_agent_id: h1.human_id, content: 'with file', attachments: [attachment.attachment_id] });
  const providerSecret = `sk-a-${crypto.randomUUID()}`;
  await make(k, 'PUT', `/organizations/${s.orgId}/api-keys/openai`, { api_key: providerSecret });
  const orgKey = await make(k, 'POST', `/organizations/${s.orgId}/keys`, { name: 'a-extra' });
  const mcpKey = await make(k, 'POST', `/agents/${a1.agent_id}/mcp-keys`);
  a = {
    orgId: s.orgId,
    teamId: team.team_id,
    agentId: a1.agent_id,
    a2: a2.agent_id,
    humanId: h1.human_id,
    edgeId: e1.edge_id,
    threadId: thread.thread_id,
    messageId: message.message_id,
    attachmentId: attachment.attachment_id,
    keyId: orgKey.key_id,
    mcpKeyId: mcpKey.key_id,
    secrets: [s.apiKey, providerSecret, orgKey.api_key, mcpKey.mcp_key],
  };
});

afterAll(async () => {
  await s?.stop();
});

/** Org B as the dev key provisions it, with a key of its own. */
async function provisionedOrg(): Promise<{ orgId: string; key: string }> {
  const org = await make(s.apiKey, 'POST', '/organizations', { org_name: uniqueName('org-b') });
  const key = await make(s.apiKey, 'POST', `/organizations/${org.org_id}/keys`, { name: 'b-own' });
  return { orgId: org.org_id, key: key.api_key };
}

/** Org B as the operator approves it from an access request (§6, `/admin/v1`). */
async function approvedOrg(): Promise<{ orgId: string; key: string }> {
  const requested = await call(s.baseUrl, 'POST', '/api/v1/access-requests', {
    body: { email: 'b@example.com', org_name: uniqueName('org-b-approved'), intended_use: 'Testing isolation between organizations.' },
  });
  expectStatus(requested, 202);
  const approved = await call(s.baseUrl, 'POST', `/admin/v1/access-requests/${requested.body.request_id}/approve`, {
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
  });
  if (approved.status >= 300) throw new Error(`approve: ${approved.status} ${approved.text.slice(0, 300)}`);
  const key = findString(approved.body, (x) => /^acs_org_/.test(x));
  const orgId = findString(approved.body, (_x, k) => k === 'org_id');
  if (!key || !orgId) throw new Error(`approve gave no org_id and key: ${approved.text.slice(0, 300)}`);
  return { orgId, key };
}

describe.each([
  ['provisioned by the dev key, with its own key', provisionedOrg],
  ['approved by the operator from an access request', approvedOrg],
])('organization B %s', (_label, makeOrgB) => {
  let b: { orgId: string; key: string; teamId: string; agentId: string; threadId: string } | undefined;
  let setupError: unknown;
  let before = '';

  beforeAll(async () => {
    try {
      const org = await makeOrgB();
      const team = await make(org.key, 'POST', `/organizations/${org.orgId}/teams`, { team_name: 'b-team' });
      const agent = await make(org.key, 'POST', `/teams/${team.team_id}/agents`, { name: 'b-one' });
      const human = await make(org.key, 'POST', `/teams/${team.team_id}/humans`, { name: 'b-human' });
      const edge = await make(org.key, 'POST', `/teams/${team.team_id}/edges`, { participants: [agent.agent_id, human.human_id] });
      const thread = await make(org.key, 'POST', `/edges/${edge.edge_id}/threads`, { sender_agent_id: agent.agent_id, content: 'for B' });
      b = { ...org, teamId: team.team_id, agentId: agent.agent_id, threadId: thread.thread_id };
    } catch (error) {
      setupError = error;
    }
    before = await fingerprint(s.baseUrl, () => s.apiKey, [s.orgId]);
  });

  const orgB = () => {
    if (!b) throw new Error(`organization B could not be set up: ${String(setupError)}`);
    return b;
  };

  it('isolation: org B’s key lists only what it reaches, never org A', async () => {
    const reply = await as(orgB().key, 'GET', '/organizations');
    expectStatus(reply, 200);
    const ids = reply.body.organizations.map((o: any) => o.org_id);
    expect(ids).toContain(orgB().orgId);
    expect(ids).not.toContain(a.orgId);
  });

  it('isolation: every route of §5 called with org B’s key on org A’s ids answers 404 not_found, never 403', async () => {
    const failures: string[] = [];
    const routes = idRoutes(a);
    // the same routes through the /v1 alias
    for (const r of idRoutes(a)) if (r.path.startsWith('/api/v1/')) routes.push({ ...r, template: `/v1${r.template}`, path: r.path.replace(/^\/api\/v1/, '/v1') });
    for (const r of routes) {
      const reply = await call(s.baseUrl, r.method, r.path, { key: orgB().key, body: r.body });
      if (reply.status !== 404 || reply.body?.code !== 'not_found' || reply.body?.type !== 'urn:acs:error:not_found') {
        failures.push(`${r.method} ${r.template}: ${reply.status} ${reply.body?.code ?? reply.text.slice(0, 80)}`);
      }
      for (const secret of a.secrets) if (reply.text.includes(secret)) failures.push(`${r.method} ${r.template}: body shows a secret of org A`);
      if (reply.text.includes('secret plans')) failures.push(`${r.method} ${r.template}: body shows org A's data`);
    }
    expect(failures).toEqual([]);
  });

  it('isolation: a 404 for org A’s id looks exactly like a 404 for an id that names nothing', async () => {
    const mine = await as(orgB().key, 'GET', `/teams/${a.teamId}`);
    const none = await as(orgB().key, 'GET', `/teams/${crypto.randomUUID()}`);
    expectProblem(mine, 404, 'not_found');
    expectProblem(none, 404, 'not_found');
    const strip = (body: any) => ({ ...body, request_id: undefined, detail: String(body.detail).replace(/[0-9a-f-]{36}/gi, 'ID') });
    expect(strip(mine.body)).toEqual(strip(none.body));
  });

  it('isolation: org B cannot join org A’s participants to its own edges (422 unknown_reference)', async () => {
    expectProblem(await as(orgB().key, 'POST', `/teams/${orgB().teamId}/edges`, { participants: [orgB().agentId, a.agentId] }), 422, 'unknown_reference');
  });

  it('isolation: org B cannot attach org A’s attachment to its own message (422 unknown_reference)', async () => {
    const reply = await as(orgB().key, 'POST', `/threads/${orgB().threadId}/messages`, { sender_agent_id: orgB().agentId, content: 'steal', attachments: [a.attachmentId] });
    expectProblem(reply, 422, 'unknown_reference');
  });

  it('isolation: org B cannot send as org A’s agent on its own thread (403 not_a_participant or 422, never 2xx)', async () => {
    const reply = await as(orgB().key, 'POST', `/threads/${orgB().threadId}/messages`, { sender_agent_id: a.agentId, content: 'impostor' });
    expect([403, 422], reply.text).toContain(reply.status);
  });

  it('isolation: org B’s key works on its own organization (the 404s are about scope, not a broken key)', async () => {
    expectStatus(await as(orgB().key, 'GET', `/teams/${orgB().teamId}`), 200);
    expectStatus(await as(orgB().key, 'GET', `/threads/${orgB().threadId}`), 200);
  });

  it('isolation: org A’s state is unchanged after everything org B tried', async () => {
    const after = await fingerprint(s.baseUrl, () => s.apiKey, [s.orgId]);
    expect(after).toBe(before);
    // and org A's keys still work
    expectStatus(await as(s.apiKey, 'GET', `/teams/${a.teamId}`), 200);
  });
});

describe('organization A seen from the approved organization’s side', () => {
  it('isolation: the dev key cannot reach an organization the operator approved for someone else (404 not_found)', async () => {
    const b = await approvedOrg();
    expectProblem(await as(s.apiKey, 'GET', `/organizations/${b.orgId}`), 404, 'not_found');
    expectProblem(await as(s.apiKey, 'GET', `/organizations/${b.orgId}/teams`), 404, 'not_found');
    expectProblem(await as(s.apiKey, 'POST', `/organizations/${b.orgId}/teams`, { team_name: 'intruder' }), 404, 'not_found');
    expectProblem(await as(s.apiKey, 'GET', `/organizations/${b.orgId}/keys`), 404, 'not_found');
  });
});
