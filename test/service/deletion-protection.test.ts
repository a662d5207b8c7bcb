import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent, Human, Organization, OrganizationDeletionPreview, Team, TeamDeletionPreview } from '../../api/schemas.ts';
import type { Db } from '../../service/storage/db.ts';
import { postgresBackend } from '../support/postgres.ts';
import { request, startHarnessWithDb, type Harness, type Reply } from './helpers.ts';

// Deletion protection and organization deletion (contract §4 `deletion_protection`, §5 DELETE
// /organizations/{org_id} and the deletion previews), against a real server. The test shares
// the server's storage so that it can count what a deletion removed, row by row.
let h: Harness & { db: Db };
beforeAll(async () => {
  h = await startHarnessWithDb();
});
afterAll(async () => {
  await h.server.close();
});

const api = (method: string, path: string, body?: unknown): Promise<Reply> => h.call(method, `/api/v1${path}`, body);
const as = (key: string, method: string, path: string, body?: unknown): Promise<Reply> =>
  request(`${h.server.url}/api/v1${path}`, method, body, { 'x-api-key': key });

async function ok(method: string, path: string, body?: unknown): Promise<any> {
  const reply = await api(method, path, body);
  if (reply.status >= 300) throw new Error(`${method} ${path}: ${reply.status} ${JSON.stringify(reply.body)}`);
  return reply.body;
}

let seq = 0;
const unique = (prefix: string) => `${prefix}-${++seq}-${Math.random().toString(36).slice(2, 8)}`;

/** An organization the harness key provisioned (so it may delete it). */
const newOrg = (body: Record<string, unknown> = {}) => ok('POST', '/organizations', { org_name: unique('org'), ...body });

/**
 * A team in `orgId` with agents `a1`, `a2` and human `h1`, edges a1–h1 and a1–a2, a thread on
 * a1–h1 with two messages (the second naming an attachment of the organization) and a thread on
 * a1–a2 with one. Agents have no provider, so no agent loop adds replies.
 */
async function newGraph(orgId: string, flags: { team?: boolean; a1?: boolean; h1?: boolean } = {}) {
  const team = await ok('POST', `/organizations/${orgId}/teams`, { team_name: unique('team'), deletion_protection: flags.team });
  const a1 = await ok('POST', `/teams/${team.team_id}/agents`, { name: 'a1', deletion_protection: flags.a1 });
  const a2 = await ok('POST', `/teams/${team.team_id}/agents`, { name: 'a2' });
  const h1 = await ok('POST', `/teams/${team.team_id}/humans`, { name: 'h1', deletion_protection: flags.h1 });
  const e1 = await ok('POST', `/teams/${team.team_id}/edges`, { participants: [a1.agent_id, h1.human_id] });
  const e2 = await ok('POST', `/teams/${team.team_id}/edges`, { participants: [a1.agent_id, a2.agent_id] });
  const attachment = await ok('POST', '/attachments', { filename: 'n.txt', content_type: 'text/plain', data_base64: 'aGk=', org_id: orgId });
  const t1 = await ok('POST', `/edges/${e1.edge_id}/threads`, { sender_agent_id: a1.agent_id, content: 'one' });
  await ok('POST', `/threads/${t1.thread_id}/messages`, { sender_agent_id: h1.human_id, content: 'two', attachments: [attachment.attachment_id] });
  const t2 = await ok('POST', `/edges/${e2.edge_id}/threads`, { sender_agent_id: a2.agent_id, content: 'three' });
  return {
    teamId: team.team_id as string,
    teamName: team.team_name as string,
    a1: a1.agent_id as string,
    a2: a2.agent_id as string,
    h1: h1.human_id as string,
    e1: e1.edge_id as string,
    e2: e2.edge_id as string,
    t1: t1.thread_id as string,
    t2: t2.thread_id as string,
    attachmentId: attachment.attachment_id as string,
  };
}

/** Rows of every table a deletion can touch, counted in storage. */
async function tableCounts(): Promise<Record<string, number>> {
  const tables = ['organizations', 'teams', 'participants', 'edges', 'threads', 'messages', 'attachments', 'org_keys', 'mcp_keys', 'provider_keys'];
  const rows = await h.db.query<Record<string, number>>(`SELECT ${tables.map((t) => `(SELECT count(*)::int FROM ${t}) AS ${t}`).join(', ')}`);
  return rows[0]!;
}

/** What the API shows of an organization: its record, its teams' graphs and their previews. */
async function shown(orgId: string): Promise<unknown> {
  const teams = (await ok('GET', `/organizations/${orgId}/teams`)).teams as Array<{ team_id: string }>;
  return {
    organization: await ok('GET', `/organizations/${orgId}`),
    preview: await ok('GET', `/organizations/${orgId}/deletion-preview`),
    teams: await Promise.all(teams.map(async (t) => [await ok('GET', `/teams/${t.team_id}`), await ok('GET', `/teams/${t.team_id}/deletion-preview`)])),
  };
}

function expectRefused(reply: Reply, protectedResources: Array<{ kind: string; id: string }>): void {
  expect([reply.status, reply.body.code], JSON.stringify(reply.body)).toEqual([409, 'deletion_protected']);
  expect(reply.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(reply.body.protected.map((p: { kind: string; id: string }) => ({ kind: p.kind, id: p.id }))).toEqual(protectedResources);
  expect(reply.body.detail).toContain('deletion protection');
}

describe('deletion protection', () => {
  it('protection: organizations, teams, agents and humans are unprotected unless created with deletion_protection, and a team graph shows each flag', async () => {
    const plain = await newOrg();
    const team = Team.parse(await ok('POST', `/organizations/${plain.org_id}/teams`, { team_name: 'plain' }));
    const agent = Agent.parse(await ok('POST', `/teams/${team.team_id}/agents`, { name: 'plain-agent' }));
    const human = Human.parse(await ok('POST', `/teams/${team.team_id}/humans`, { name: 'plain-human' }));
    expect([Organization.parse(plain), team, agent, human].map((r) => r.deletion_protection)).toEqual([false, false, false, false]);

    const guarded = await newOrg({ deletion_protection: true });
    const guardedTeam = await ok('POST', `/organizations/${guarded.org_id}/teams`, { team_name: 'guarded', deletion_protection: true });
    const guardedAgent = await ok('POST', `/teams/${guardedTeam.team_id}/agents`, { name: 'guarded-agent', deletion_protection: true });
    const guardedHuman = await ok('POST', `/teams/${guardedTeam.team_id}/humans`, { name: 'guarded-human', deletion_protection: true });
    expect([guarded, guardedTeam, guardedAgent, guardedHuman].map((r) => r.deletion_protection)).toEqual([true, true, true, true]);

    expect((await ok('GET', `/organizations/${guarded.org_id}`)).deletion_protection).toBe(true);
    const graph = await ok('GET', `/teams/${guardedTeam.team_id}`);
    expect(graph).toMatchObject({ deletion_protection: true, agents: [{ deletion_protection: true }], humans: [{ deletion_protection: true }] });
    expect((await ok('GET', `/organizations/${guarded.org_id}/teams`)).teams[0].deletion_protection).toBe(true);
  });

  it('protection: PATCH sets and clears deletion_protection on organizations, teams, agents and humans, and leaves it alone when not given', async () => {
    const org = await newOrg();
    const g = await newGraph(org.org_id);
    const targets: Array<[string, string]> = [
      [`/organizations/${org.org_id}`, `/organizations/${org.org_id}`],
      [`/teams/${g.teamId}`, `/teams/${g.teamId}`],
      [`/agents/${g.a1}`, `/agents/${g.a1}`],
      [`/humans/${g.h1}`, `/humans/${g.h1}`],
    ];
    for (const [path] of targets) {
      expect((await ok('PATCH', path, { deletion_protection: true })).deletion_protection, path).toBe(true);
      expect((await ok('GET', path)).deletion_protection, path).toBe(true);
    }
    // Other changes keep the flag as it is.
    expect((await ok('PATCH', `/teams/${g.teamId}`, { description: 'still protected' })).deletion_protection).toBe(true);
    expect((await ok('PATCH', `/agents/${g.a1}`, { instructions: 'still protected' })).deletion_protection).toBe(true);
    expect((await ok('PATCH', `/humans/${g.h1}`, { email: 'h1@example.com' })).deletion_protection).toBe(true);
    expect((await ok('PATCH', `/organizations/${org.org_id}`, {})).deletion_protection).toBe(true);
    for (const [path] of targets) {
      expect((await ok('PATCH', path, { deletion_protection: false })).deletion_protection, path).toBe(false);
    }
    const bad = await api('PATCH', `/organizations/${org.org_id}`, { deletion_protection: 'yes', org_name: 'renamed' });
    expect([bad.status, bad.body.code]).toEqual([400, 'invalid_request']);
    expect(bad.body.errors.map((e: { path: string }) => e.path).sort()).toEqual(['deletion_protection', 'org_name']);
  });

  it('protection: each delete route refuses its own protected resource with 409 deletion_protected naming it, and deletes nothing', async () => {
    const org = await newOrg({ deletion_protection: true });
    const team = await ok('POST', `/organizations/${org.org_id}/teams`, { team_name: 'guarded', deletion_protection: true });
    const agent = await ok('POST', `/teams/${team.team_id}/agents`, { name: 'lone-agent', deletion_protection: true });
    const human = await ok('POST', `/teams/${team.team_id}/humans`, { name: 'lone-human', deletion_protection: true });
    const before = await shown(org.org_id);
    const rows = await tableCounts();

    const agentReply = await api('DELETE', `/agents/${agent.agent_id}`);
    expectRefused(agentReply, [{ kind: 'agent', id: agent.agent_id }]);
    expect(agentReply.body.protected[0].name).toBe('lone-agent');
    expectRefused(await api('DELETE', `/humans/${human.human_id}`), [{ kind: 'human', id: human.human_id }]);
    expectRefused(await api('DELETE', `/teams/${team.team_id}`), [
      { kind: 'team', id: team.team_id },
      { kind: 'agent', id: agent.agent_id },
      { kind: 'human', id: human.human_id },
    ]);
    expectRefused(await api('DELETE', `/organizations/${org.org_id}`), [
      { kind: 'organization', id: org.org_id },
      { kind: 'team', id: team.team_id },
      { kind: 'agent', id: agent.agent_id },
      { kind: 'human', id: human.human_id },
    ]);

    expect(await tableCounts()).toEqual(rows);
    expect(await shown(org.org_id)).toEqual(before);
  });

  it('protection: deleting a team or an organization that would take a protected agent or human along is refused, naming it, and deletes nothing', async () => {
    const org = await newOrg();
    const g = await newGraph(org.org_id, { h1: true });
    const spare = await newGraph(org.org_id);
    const before = await shown(org.org_id);
    const rows = await tableCounts();

    const teamReply = await api('DELETE', `/teams/${g.teamId}`);
    expectRefused(teamReply, [{ kind: 'human', id: g.h1 }]);
    expect(teamReply.body.detail).toMatch(/^deleting this team would delete human "h1"/);
    const orgReply = await api('DELETE', `/organizations/${org.org_id}`);
    expectRefused(orgReply, [{ kind: 'human', id: g.h1 }]);

    expect(await tableCounts()).toEqual(rows);
    expect(await shown(org.org_id)).toEqual(before);
    // The unprotected team next to it can go on its own.
    expect((await api('DELETE', `/teams/${spare.teamId}`)).status).toBe(200);
  });

  it('protection: a protected team in an organization blocks the organization, and lists first in its preview', async () => {
    const org = await newOrg();
    const g = await newGraph(org.org_id, { team: true, a1: true });
    const preview = OrganizationDeletionPreview.parse(await ok('GET', `/organizations/${org.org_id}/deletion-preview`));
    expect(preview.protected).toEqual([
      { kind: 'team', id: g.teamId, name: g.teamName },
      { kind: 'agent', id: g.a1, name: 'a1' },
    ]);
    const teamPreview = TeamDeletionPreview.parse(await ok('GET', `/teams/${g.teamId}/deletion-preview`));
    expect(teamPreview.protected.map((p) => p.kind)).toEqual(['team', 'agent']);
    expectRefused(await api('DELETE', `/organizations/${org.org_id}`), [
      { kind: 'team', id: g.teamId },
      { kind: 'agent', id: g.a1 },
    ]);
  });

  it('protection: a protected agent on an edge is deletion_protected rather than in_use, and its edges can still be deleted', async () => {
    const org = await newOrg();
    const g = await newGraph(org.org_id, { a1: true });
    expectRefused(await api('DELETE', `/agents/${g.a1}`), [{ kind: 'agent', id: g.a1 }]);
    for (const edge of [g.e1, g.e2]) expect((await api('DELETE', `/edges/${edge}`)).status).toBe(200);
    expectRefused(await api('DELETE', `/agents/${g.a1}`), [{ kind: 'agent', id: g.a1 }]);
    expect((await api('DELETE', `/humans/${g.h1}`)).status).toBe(200);
  });

  it('protection: once every flag is cleared, the same deletions go through', async () => {
    const org = await newOrg({ deletion_protection: true });
    const g = await newGraph(org.org_id, { team: true, a1: true, h1: true });
    const lone = await ok('POST', `/teams/${g.teamId}/agents`, { name: 'lone', deletion_protection: true });
    expectRefused(await api('DELETE', `/agents/${lone.agent_id}`), [{ kind: 'agent', id: lone.agent_id }]);
    await ok('PATCH', `/agents/${lone.agent_id}`, { deletion_protection: false });
    expect((await api('DELETE', `/agents/${lone.agent_id}`)).body).toEqual({ deleted: true, agent_id: lone.agent_id });

    await ok('PATCH', `/teams/${g.teamId}`, { deletion_protection: false });
    await ok('PATCH', `/agents/${g.a1}`, { deletion_protection: false });
    expectRefused(await api('DELETE', `/teams/${g.teamId}`), [{ kind: 'human', id: g.h1 }]);
    await ok('PATCH', `/humans/${g.h1}`, { deletion_protection: false });
    expect((await ok('GET', `/teams/${g.teamId}/deletion-preview`)).protected).toEqual([]);
    expect((await api('DELETE', `/teams/${g.teamId}`)).body).toEqual({ deleted: true, team_id: g.teamId });

    expectRefused(await api('DELETE', `/organizations/${org.org_id}`), [{ kind: 'organization', id: org.org_id }]);
    await ok('PATCH', `/organizations/${org.org_id}`, { deletion_protection: false });
    expect((await api('DELETE', `/organizations/${org.org_id}`)).body).toEqual({ deleted: true, org_id: org.org_id });
  });

  it('protection: creations with deletion_protection keep Idempotency-Key semantics: a repeat replays the first answer, another body is 422', async () => {
    const key = { 'idempotency-key': `protect-${Math.random()}` };
    const body = { org_name: unique('idem'), deletion_protection: true };
    const first = await h.call('POST', '/api/v1/organizations', body, key);
    const again = await h.call('POST', '/api/v1/organizations', body, key);
    expect(first.status).toBe(201);
    expect([again.status, again.headers.get('idempotent-replayed')]).toEqual([201, 'true']);
    expect(again.body).toEqual(first.body);
    const other = await h.call('POST', '/api/v1/organizations', { ...body, deletion_protection: false }, key);
    expect([other.status, other.body.code]).toEqual([422, 'idempotency_key_mismatch']);
    const named = (await ok('GET', '/organizations')).organizations.filter((o: { org_name: string }) => o.org_name === body.org_name);
    expect(named).toEqual([expect.objectContaining({ org_id: first.body.org_id, deletion_protection: true })]);

    const teamKey = { 'idempotency-key': `protect-team-${Math.random()}` };
    const teamBody = { team_name: 'once', deletion_protection: true };
    const team = await h.call('POST', `/api/v1/organizations/${first.body.org_id}/teams`, teamBody, teamKey);
    const teamAgain = await h.call('POST', `/api/v1/organizations/${first.body.org_id}/teams`, teamBody, teamKey);
    expect([team.status, teamAgain.status, teamAgain.body.team_id]).toEqual([201, 201, team.body.team_id]);
    expect((await ok('GET', `/organizations/${first.body.org_id}/teams`)).teams).toHaveLength(1);
  });
});

describe('organization deletion', () => {
  it('organization deletion: DELETE removes exactly what its preview counted, keys and provider keys included, and nothing else', async () => {
    const org = await newOrg();
    const g = await newGraph(org.org_id);
    await newGraph(org.org_id);
    await ok('PUT', `/organizations/${org.org_id}/api-keys/openai`, { api_key: 'sk-test-0000000000000000' });
    const orgKey = await ok('POST', `/organizations/${org.org_id}/keys`, { name: 'own' });
    await ok('POST', `/agents/${g.a1}/mcp-keys`);
    // Something that must stay: another organization with the same shape.
    const neighbour = await newOrg();
    await newGraph(neighbour.org_id);
    const neighbourBefore = await shown(neighbour.org_id);

    const preview = OrganizationDeletionPreview.parse(await ok('GET', `/organizations/${org.org_id}/deletion-preview`));
    expect(preview).toEqual({
      org_id: org.org_id,
      teams: 2,
      agents: 4,
      humans: 2,
      edges: 4,
      threads: 4,
      messages: 6,
      attachments: 2,
      keys: 1,
      provider_keys: 1,
      protected: [],
      provisioned_organizations: [],
      own_organization: false,
    });

    const before = await tableCounts();
    const reply = await api('DELETE', `/organizations/${org.org_id}`);
    expect([reply.status, reply.body]).toEqual([200, { deleted: true, org_id: org.org_id }]);
    const after = await tableCounts();
    expect({
      organizations: before.organizations! - after.organizations!,
      teams: before.teams! - after.teams!,
      participants: before.participants! - after.participants!,
      edges: before.edges! - after.edges!,
      threads: before.threads! - after.threads!,
      messages: before.messages! - after.messages!,
      attachments: before.attachments! - after.attachments!,
      org_keys: before.org_keys! - after.org_keys!,
      mcp_keys: before.mcp_keys! - after.mcp_keys!,
      provider_keys: before.provider_keys! - after.provider_keys!,
    }).toEqual({
      organizations: 1,
      teams: preview.teams,
      participants: preview.agents + preview.humans,
      edges: preview.edges,
      threads: preview.threads,
      messages: preview.messages,
      attachments: preview.attachments,
      org_keys: preview.keys,
      mcp_keys: 1,
      provider_keys: preview.provider_keys,
    });

    for (const path of [`/organizations/${org.org_id}`, `/organizations/${org.org_id}/deletion-preview`, `/teams/${g.teamId}`, `/agents/${g.a1}`, `/humans/${g.h1}`, `/edges/${g.e1}`, `/threads/${g.t1}`, `/attachments/${g.attachmentId}`]) {
      expect((await api('GET', path)).status, path).toBe(404);
    }
    expect((await ok('GET', '/organizations')).organizations.map((o: { org_id: string }) => o.org_id)).not.toContain(org.org_id);
    expect([(await as(orgKey.api_key, 'GET', '/organizations')).status]).toEqual([401]);
    expect(await shown(neighbour.org_id)).toEqual(neighbourBefore);
    const again = await api('DELETE', `/organizations/${org.org_id}`);
    expect([again.status, again.body.code]).toEqual([404, 'not_found']);
  });

  it("organization deletion: a key cannot delete its own organization (403 forbidden), which its preview says, and nothing is deleted", async () => {
    const rows = await tableCounts();
    const reply = await api('DELETE', `/organizations/${h.orgId}`);
    expect([reply.status, reply.body.code]).toEqual([403, 'forbidden']);
    expect(reply.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(await tableCounts()).toEqual(rows);
    expect((await ok('GET', `/organizations/${h.orgId}/deletion-preview`)).own_organization).toBe(true);

    // The organization that provisioned an organization may delete it; that organization's own key may not.
    const child = await newOrg();
    const childKey = (await ok('POST', `/organizations/${child.org_id}/keys`, { name: 'own' })).api_key as string;
    const own = await as(childKey, 'DELETE', `/organizations/${child.org_id}`);
    expect([own.status, own.body.code]).toEqual([403, 'forbidden']);
    expect((await as(childKey, 'GET', `/organizations/${child.org_id}/deletion-preview`)).body.own_organization).toBe(true);
    expect((await api('DELETE', `/organizations/${child.org_id}`)).status).toBe(200);
  });

  it('organization deletion: an organization the key does not reach is 404 not_found for DELETE, PATCH and the preview, and is left alone', async () => {
    const stranger = await h.server.provisionOrganization(unique('stranger'));
    const strangerTeam = await as(stranger.api_key, 'POST', `/organizations/${stranger.org_id}/teams`, { team_name: 'theirs' });
    expect(strangerTeam.status).toBe(201);
    for (const [method, path, body] of [
      ['DELETE', `/organizations/${stranger.org_id}`],
      ['PATCH', `/organizations/${stranger.org_id}`, { deletion_protection: true }],
      ['GET', `/organizations/${stranger.org_id}/deletion-preview`],
    ] as Array<[string, string, unknown?]>) {
      const reply = await api(method, path, body);
      expect([reply.status, reply.body.code], `${method} ${path}`).toEqual([404, 'not_found']);
    }
    const theirs = await as(stranger.api_key, 'GET', `/organizations/${stranger.org_id}`);
    expect(theirs.body).toMatchObject({ team_count: 1, deletion_protection: false });
    // Nor can the stranger delete the harness organization, which it does not reach either.
    expect((await as(stranger.api_key, 'DELETE', `/organizations/${h.orgId}`)).status).toBe(404);
  });

  it("organization deletion: the deleted organization's keys are refused at once with 401 invalid_api_key", async () => {
    const child = await newOrg();
    const childKey = (await ok('POST', `/organizations/${child.org_id}/keys`, { name: 'doomed' })).api_key as string;
    expect((await as(childKey, 'GET', `/organizations/${child.org_id}`)).status).toBe(200);
    expect((await api('DELETE', `/organizations/${child.org_id}`)).status).toBe(200);
    const refused = await as(childKey, 'GET', '/organizations');
    expect([refused.status, refused.body.code]).toEqual([401, 'invalid_api_key']);
  });

  it('organization deletion: an organization that provisioned another is in_use, naming it, until that one is deleted', async () => {
    const parent = await newOrg();
    const parentKey = (await ok('POST', `/organizations/${parent.org_id}/keys`, { name: 'parent' })).api_key as string;
    const grandchild = await as(parentKey, 'POST', '/organizations', { org_name: 'grandchild' });
    expect(grandchild.status).toBe(201);

    const preview = await ok('GET', `/organizations/${parent.org_id}/deletion-preview`);
    expect(preview.provisioned_organizations).toEqual([{ org_id: grandchild.body.org_id, org_name: 'grandchild' }]);
    const rows = await tableCounts();
    const refused = await api('DELETE', `/organizations/${parent.org_id}`);
    expect([refused.status, refused.body.code, refused.body.org_id]).toEqual([409, 'in_use', grandchild.body.org_id]);
    expect(await tableCounts()).toEqual(rows);

    expect((await as(parentKey, 'DELETE', `/organizations/${grandchild.body.org_id}`)).status).toBe(200);
    expect((await api('DELETE', `/organizations/${parent.org_id}`)).status).toBe(200);
  });
});

/** Resolves once the deletion's locking statement waits for a row lock (PostgreSQL only). */
async function lockWaitSeen(db: Db): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const rows = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%FOR UPDATE%'`,
    );
    if (rows[0]!.n > 0) return;
    if (Date.now() > deadline) throw new Error('no request waited for the row lock within 30 s');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * Sends `DELETE path` while a transaction of its own, as a concurrent PATCH of another process
 * would, has run `sql` and holds its row locks: commits that transaction once the deletion waits
 * for one of them, and returns the deletion's answer.
 */
async function deleteWhileHeld(path: string, sql: string, params: unknown[]): Promise<Reply> {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let started!: () => void;
  const running = new Promise<void>((resolve) => (started = resolve));
  const held = h.db.transaction(async (tx) => {
    await tx.query(sql, params);
    started();
    await released;
  });
  await Promise.race([running, held]);
  const deletion = api('DELETE', path);
  try {
    await lockWaitSeen(h.db);
  } finally {
    release();
    await held;
  }
  return deletion;
}

// PGlite runs one transaction at a time, so only PostgreSQL can interleave these.
describe.runIf(postgresBackend)('deletion protection under concurrency', () => {
  it('concurrency: a team deletion that waits for a PATCH protecting one of its agents sees the flag once it commits: 409, nothing deleted', async () => {
    const org = await newOrg();
    const g = await newGraph(org.org_id);
    const reply = await deleteWhileHeld(`/teams/${g.teamId}`, `UPDATE participants SET deletion_protection = true WHERE id = $1`, [g.a2]);
    expectRefused(reply, [{ kind: 'agent', id: g.a2 }]);
    expect((await ok('GET', `/teams/${g.teamId}`)).agents).toHaveLength(2);
  });

  it('concurrency: an organization deletion that waits for a PATCH protecting one of its teams sees the flag once it commits: 409, nothing deleted', async () => {
    const org = await newOrg();
    const g = await newGraph(org.org_id);
    const reply = await deleteWhileHeld(`/organizations/${org.org_id}`, `UPDATE teams SET deletion_protection = true WHERE id = $1`, [g.teamId]);
    expectRefused(reply, [{ kind: 'team', id: g.teamId }]);
    expect((await ok('GET', `/organizations/${org.org_id}`)).team_count).toBe(1);
  });
});
