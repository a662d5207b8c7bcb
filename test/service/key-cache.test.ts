import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { orgKeyCacheTtlMs } from '../../service/domain/key-cache.ts';
import type { RunningServer } from '../../service/index.ts';
import type { Db } from '../../service/storage/db.ts';
import { request, startHarnessWithDb, type Reply } from './helpers.ts';

// The server shares its database handle with the test, which plays "another process": it
// revokes keys with SQL behind the server's back, so the server's key cache is not told.
let db: Db;
let server: RunningServer;
let orgId: string;
let adminKey: string;

beforeAll(async () => {
  ({ db, server, orgId, apiKey: adminKey } = await startHarnessWithDb('cache'));
});
afterAll(async () => {
  await server?.close();
});

const as = (key: string, method: string, path: string, body?: unknown): Promise<Reply> =>
  request(`${server.url}/api/v1${path}`, method, body, { 'x-api-key': key });

/** A fresh key `key` of the organization, used once to open a thread between two humans (so it is cached). */
async function keyWithThread(): Promise<{ key: string; keyId: string; threadId: string; ann: string; bob: string }> {
  const created = await as(adminKey, 'POST', `/organizations/${orgId}/keys`, { name: 'cached' });
  const key = created.body.api_key as string;
  const team = await as(key, 'POST', `/organizations/${orgId}/teams`, { team_name: `t-${Math.random()}` });
  const ann = (await as(key, 'POST', `/teams/${team.body.team_id}/humans`, { name: 'ann' })).body.human_id as string;
  const bob = (await as(key, 'POST', `/teams/${team.body.team_id}/humans`, { name: 'bob' })).body.human_id as string;
  const edge = await as(key, 'POST', `/teams/${team.body.team_id}/edges`, { participants: [ann, bob] });
  const thread = await as(key, 'POST', `/edges/${edge.body.edge_id}/threads`, { sender_agent_id: ann, content: 'first' });
  expect(thread.status).toBe(201);
  return { key, keyId: created.body.key_id, threadId: thread.body.thread_id, ann, bob };
}

/** Runs `fn` with this process's clock moved just past the key cache's TTL. */
async function afterCacheTtl<T>(fn: () => Promise<T>): Promise<T> {
  const realNow = Date.now();
  const clock = vi.spyOn(Date, 'now').mockImplementation(() => realNow + orgKeyCacheTtlMs + 1);
  try {
    return await fn();
  } finally {
    clock.mockRestore();
  }
}

describe('key cache', () => {
  it('key cache: a key revoked through this process is refused at once on every route, appends included', async () => {
    const { key, keyId, threadId, bob } = await keyWithThread();
    expect((await as(key, 'GET', '/organizations')).status).toBe(200);
    expect((await as(adminKey, 'DELETE', `/organizations/${orgId}/keys/${keyId}`)).status).toBe(200);

    const read = await as(key, 'GET', '/organizations');
    const append = await as(key, 'POST', `/threads/${threadId}/messages`, { sender_agent_id: bob, content: 'too late' });
    expect([read.status, read.body.code]).toEqual([401, 'invalid_api_key']);
    expect([append.status, append.body.code]).toEqual([401, 'invalid_api_key']);
    expect((await as(adminKey, 'GET', `/threads/${threadId}`)).body.message_count).toBe(1);
  });

  it('key cache: a key revoked by another process cannot append at once, and is refused everywhere once the cache TTL has passed', async () => {
    const { key, keyId, threadId, bob } = await keyWithThread();
    expect((await as(key, 'POST', `/threads/${threadId}/messages`, { sender_agent_id: bob, content: 'before' })).status).toBe(201);
    await db.query(`UPDATE org_keys SET revoked_at = now() WHERE id = $1`, [keyId]);

    // The append re-checks the key in its own statement: no window at all.
    const append = await as(key, 'POST', `/threads/${threadId}/messages`, { sender_agent_id: bob, content: 'after' });
    expect([append.status, append.body.code]).toEqual([401, 'invalid_api_key']);
    const thread = await as(adminKey, 'GET', `/threads/${threadId}`);
    expect(thread.body.messages.map((m: { content: string }) => m.content)).toEqual(['first', 'before']);
    expect(thread.body).toMatchObject({ message_count: 2, unread_count: 1 });

    // Other routes rely on the cache alone: documented to accept the key for at most the TTL.
    expect((await as(key, 'GET', '/organizations')).status).toBe(200);
    const later = await afterCacheTtl(() => as(key, 'GET', '/organizations'));
    expect([later.status, later.body.code]).toEqual([401, 'invalid_api_key']);
  });

  /** An organization provisioned by the admin key, with a key of its own used once (so it is cached). */
  async function provisionedWithCachedKey(): Promise<{ childId: string; childKey: string }> {
    const child = await as(adminKey, 'POST', '/organizations', { org_name: `child-${Math.random()}` });
    const key = await as(adminKey, 'POST', `/organizations/${child.body.org_id}/keys`, { name: 'own' });
    expect((await as(key.body.api_key, 'GET', '/organizations')).status).toBe(200);
    return { childId: child.body.org_id, childKey: key.body.api_key };
  }

  // What a key of a deleted organization might still try to create: each names its organization.
  const creations: Array<[string, unknown]> = [
    ['/organizations', { org_name: 'after-deletion' }],
    ['/attachments', { filename: 'a.txt', content_type: 'text/plain', data_base64: 'aGk=' }],
  ];

  it('key cache: the keys of an organization deleted through this process are refused at once on every route', async () => {
    const { childId, childKey } = await provisionedWithCachedKey();
    expect((await as(adminKey, 'DELETE', `/organizations/${childId}`)).status).toBe(200);

    const read = await as(childKey, 'GET', '/organizations');
    expect([read.status, read.body.code]).toEqual([401, 'invalid_api_key']);
    for (const [path, body] of creations) {
      const reply = await as(childKey, 'POST', path, body);
      expect([reply.status, reply.body.code], path).toEqual([401, 'invalid_api_key']);
    }
  });

  it('key cache: the keys of an organization deleted by another process reach and create nothing within the TTL, and are refused once it has passed', async () => {
    const { childId, childKey } = await provisionedWithCachedKey();
    await db.query(`DELETE FROM organizations WHERE id = $1`, [childId]);

    // The cache still authenticates the key for up to the TTL, but everything it reached is gone.
    expect((await as(childKey, 'GET', '/organizations')).body).toEqual({ organizations: [] });
    expect((await as(childKey, 'GET', `/organizations/${childId}`)).status).toBe(404);
    for (const [path, body] of creations) {
      const reply = await as(childKey, 'POST', path, body);
      expect([reply.status, reply.body.code], path).toEqual([401, 'invalid_api_key']);
    }
    const left = await db.query<{ n: number }>(
      `SELECT (SELECT count(*) FROM organizations WHERE provisioned_by = $1) + (SELECT count(*) FROM attachments WHERE org_id = $1) AS n`,
      [childId],
    );
    expect(Number(left[0]!.n)).toBe(0);

    const later = await afterCacheTtl(() => as(childKey, 'GET', '/organizations'));
    expect([later.status, later.body.code]).toEqual([401, 'invalid_api_key']);
  });

  it('key cache: an unknown key is never cached as valid, and a valid key keeps working from the cache', async () => {
    const { key } = await keyWithThread();
    for (let i = 0; i < 3; i += 1) expect((await as(key, 'GET', '/organizations')).status).toBe(200);
    const unknown = `acs_org_${'x'.repeat(40)}`;
    for (let i = 0; i < 2; i += 1) expect((await as(unknown, 'GET', '/organizations')).body.code).toBe('invalid_api_key');
  });
});
