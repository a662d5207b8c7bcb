import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer } from '../../service/index.ts';
import { request, startHarness, type Harness } from './helpers.ts';

const adminToken = 'test-admin-token-0123456789';
const repoRoot = join(import.meta.dirname, '../..');

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ inMemory: true, adminToken });
});
afterAll(async () => {
  await h.server.close();
});

function admin(method: string, path: string, body?: unknown, token = adminToken) {
  return request(`${h.server.url}/admin/v1${path}`, method, body, { authorization: `Bearer ${token}` });
}

async function submit(org_name: string, extra: Record<string, unknown> = {}) {
  return request(`${h.server.url}/api/v1/access-requests`, 'POST', { email: 'ops@example.com', org_name, intended_use: 'Run a support team of agents.', ...extra });
}

describe('access requests and the admin routes', () => {
  it('access requests: an approved request creates the organization and its returned key reaches it', async () => {
    const submitted = await submit('Globex');
    expect(submitted.status).toBe(202);
    expect(submitted.body).toEqual({ request_id: expect.any(String), status: 'pending' });

    const pending = await admin('GET', '/access-requests?status=pending');
    expect(pending.status).toBe(200);
    expect(pending.body.access_requests).toContainEqual(
      expect.objectContaining({ request_id: submitted.body.request_id, email: 'ops@example.com', org_name: 'Globex', status: 'pending', org_id: null }),
    );

    const approved = await admin('POST', `/access-requests/${submitted.body.request_id}/approve`);
    expect(approved.status).toBe(200);
    expect(approved.body.api_key).toMatch(/^acs_org_[0-9A-Za-z]{40}$/);
    expect(approved.body.organization).toEqual(expect.objectContaining({ org_name: 'Globex', team_count: 0, human_count: 1, is_personal: false }));
    expect(approved.body.request).toEqual(
      expect.objectContaining({ request_id: submitted.body.request_id, status: 'approved', org_id: approved.body.organization.org_id, decided_at: expect.any(String) }),
    );

    const orgs = await request(`${h.server.url}/api/v1/organizations`, 'GET', undefined, { 'x-api-key': approved.body.api_key });
    expect(orgs.status).toBe(200);
    expect(orgs.body.organizations.map((o: { org_id: string }) => o.org_id)).toEqual([approved.body.organization.org_id]);

    // The key is shown once: listings carry no secret.
    const listed = await admin('GET', '/access-requests');
    expect(JSON.stringify(listed.body)).not.toContain(approved.body.api_key);
    const again = await admin('POST', `/access-requests/${submitted.body.request_id}/approve`);
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('conflict');
    // The problem's own `status` is the HTTP code; how the request was decided has its own member.
    expect(again.body).toMatchObject({ status: 409, request_status: 'approved' });
  });

  it('access requests: approving a request for the name of an existing top-level organization is a 409 conflict', async () => {
    const submitted = await submit('acme');
    const reply = await admin('POST', `/access-requests/${submitted.body.request_id}/approve`);
    expect(reply.status).toBe(409);
    expect(reply.body.code).toBe('conflict');
    expect(reply.body.existing_id).toBe(h.orgId);
    const still = await admin('GET', '/access-requests?status=pending');
    expect(still.body.access_requests.map((r: { request_id: string }) => r.request_id)).toContain(submitted.body.request_id);
  });

  it('access requests: a rejected request keeps its reason and can no longer be approved', async () => {
    const submitted = await submit('Initech');
    const rejected = await admin('POST', `/access-requests/${submitted.body.request_id}/reject`, { reason: 'not in the preview' });
    expect(rejected.status).toBe(200);
    expect(rejected.body).toEqual(expect.objectContaining({ request_id: submitted.body.request_id, status: 'rejected', reason: 'not in the preview', org_id: null }));
    const list = await admin('GET', '/access-requests?status=rejected');
    expect(list.body.access_requests.map((r: { request_id: string }) => r.request_id)).toEqual([submitted.body.request_id]);
    expect((await admin('POST', `/access-requests/${submitted.body.request_id}/approve`)).status).toBe(409);
    expect((await admin('POST', `/access-requests/${submitted.body.request_id}/reject`)).status).toBe(409);
    expect((await admin('POST', '/access-requests/00000000-0000-4000-8000-000000000000/reject')).status).toBe(404);
  });

  it('access requests: the body is validated and needs no API key', async () => {
    const missing = await request(`${h.server.url}/api/v1/access-requests`, 'POST', { email: 'not-an-email', org_name: ' ' });
    expect(missing.status).toBe(400);
    expect(missing.body.errors.map((e: { path: string }) => e.path).sort()).toEqual(['email', 'intended_use', 'org_name']);
    const tooLong = await submit('Hooli', { intended_use: 'x'.repeat(2001) });
    expect(tooLong.status).toBe(400);
    const aliased = await request(`${h.server.url}/v1/access-requests`, 'POST', { email: 'a@example.com', org_name: 'Hooli', intended_use: 'x'.repeat(2000) });
    expect(aliased.status).toBe(202);
    expect((await admin('GET', '/access-requests?status=maybe')).status).toBe(400);
  });

  it('admin routes: a missing or wrong bearer token gets 401 unauthenticated', async () => {
    const attempts: Array<Record<string, string>> = [{}, { authorization: 'Bearer wrong' }, { authorization: adminToken }, { authorization: `Basic ${adminToken}` }, { 'x-api-key': h.apiKey }];
    for (const headers of attempts) {
      const reply = await request(`${h.server.url}/admin/v1/access-requests`, 'GET', undefined, headers);
      expect(reply.status, JSON.stringify(headers)).toBe(401);
      expect(reply.body.code).toBe('unauthenticated');
      expect(JSON.stringify(reply.body)).not.toContain(adminToken);
    }
  });

  it('admin routes: a key issued for an existing organization works once; unknown organizations are 404', async () => {
    const issued = await admin('POST', `/organizations/${h.orgId}/keys`, { name: 'from-operator' });
    expect(issued.status).toBe(201);
    expect(issued.body).toEqual(expect.objectContaining({ org_id: h.orgId, name: 'from-operator', api_key: expect.stringMatching(/^acs_org_/) }));
    const orgs = await request(`${h.server.url}/api/v1/organizations`, 'GET', undefined, { 'x-api-key': issued.body.api_key });
    expect(orgs.body.organizations.map((o: { org_id: string }) => o.org_id)).toContain(h.orgId);
    const keys = await h.call('GET', `/api/v1/organizations/${h.orgId}/keys`);
    expect(JSON.stringify(keys.body)).not.toContain(issued.body.api_key);
    expect((await admin('POST', '/organizations/00000000-0000-4000-8000-000000000000/keys')).status).toBe(404);
  });

  it('admin routes: without an admin token they do not exist', async () => {
    const server = await startServer({ inMemory: true, port: 0, env: {} });
    try {
      const reply = await request(`${server.url}/admin/v1/access-requests`, 'GET', undefined, { authorization: 'Bearer anything' });
      expect(reply.status).toBe(404);
      expect(reply.body.code).toBe('route_not_found');
    } finally {
      await server.close();
    }
  });
});

describe('acs-server admin', () => {
  const temp: string[] = [];
  afterAll(async () => {
    for (const dir of temp) await rm(dir, { recursive: true, force: true });
  });

  /** Runs `acs-server admin …args`; never throws, so failures can be asserted. */
  async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    try {
      const { stdout, stderr } = await promisify(execFile)('node_modules/.bin/node', ['bin/acs-server.ts', 'admin', ...args], {
        cwd: repoRoot,
        env: { ...process.env, DATABASE_URL: '' },
      });
      return { code: 0, stdout, stderr };
    } catch (error) {
      const failed = error as { code: number; stdout: string; stderr: string };
      return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
    }
  }

  it('acs-server admin: lists, approves and rejects access requests and issues keys on a data dir', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'acs-admin-'));
    temp.push(dataDir);
    // PGlite allows one process per data dir: the server is stopped while the CLI runs.
    const first = await startServer({ dataDir, port: 0, env: {} });
    const submitted: string[] = [];
    for (const org_name of ['Umbrella', 'Cyberdyne']) {
      const reply = await request(`${first.url}/api/v1/access-requests`, 'POST', { email: 'it@example.com', org_name, intended_use: 'agents' });
      submitted.push(reply.body.request_id);
    }
    await first.close();

    const listed = await cli('access-requests', 'list', '--status', 'pending', '--data-dir', dataDir);
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout).access_requests.map((r: { request_id: string }) => r.request_id)).toEqual(submitted);

    const approved = await cli('access-requests', 'approve', submitted[0]!, '--data-dir', dataDir);
    expect(approved.code).toBe(0);
    const approval = JSON.parse(approved.stdout);
    expect(approval.organization.org_name).toBe('Umbrella');

    const rejected = await cli('access-requests', 'reject', submitted[1]!, '--reason', 'duplicate', '--data-dir', dataDir);
    expect(rejected.code).toBe(0);
    expect(JSON.parse(rejected.stdout)).toEqual(expect.objectContaining({ status: 'rejected', reason: 'duplicate' }));

    const issued = await cli('keys', 'issue', '--org', approval.organization.org_id, '--name', 'second', '--data-dir', dataDir);
    expect(issued.code).toBe(0);
    const key = JSON.parse(issued.stdout);
    expect(key).toEqual(expect.objectContaining({ org_id: approval.organization.org_id, name: 'second', api_key: expect.stringMatching(/^acs_org_/) }));

    const twice = await cli('access-requests', 'approve', submitted[0]!, '--data-dir', dataDir);
    expect(twice.code).toBe(1);
    expect(JSON.parse(twice.stderr).code).toBe('conflict');
    const badStatus = await cli('access-requests', 'list', '--status', 'maybe', '--data-dir', dataDir);
    expect(badStatus.code).toBe(1);
    expect(JSON.parse(badStatus.stderr).code).toBe('invalid_request');

    // Both keys work against the server started again on the same data dir.
    const second = await startServer({ dataDir, port: 0, env: {} });
    try {
      for (const apiKey of [approval.api_key, key.api_key]) {
        const orgs = await request(`${second.url}/api/v1/organizations`, 'GET', undefined, { 'x-api-key': apiKey });
        expect(orgs.body.organizations.map((o: { org_id: string }) => o.org_id)).toEqual([approval.organization.org_id]);
      }
    } finally {
      await second.close();
    }
  });

  it('acs-server admin: a data dir without a database is an error, not a new empty database', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'acs-admin-empty-'));
    temp.push(dataDir);
    const reply = await cli('access-requests', 'list', '--data-dir', dataDir);
    expect(reply.code).toBe(1);
    expect(JSON.parse(reply.stderr).code).toBe('invalid_usage');
    expect(reply.stdout).toBe('');
  });
});
