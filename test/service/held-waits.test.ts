import { afterEach, describe, expect, it } from 'vitest';
import type { ServerOptions } from '../../service/index.ts';
import type { Db, Queryable } from '../../service/storage/db.ts';
import { buildTeam, request, startHarnessWithDb } from './helpers.ts';

// Issue 21, defect 1: one MCP key with batched wait_for_messages stalled the server: 2,000 held
// waits were all woken by one append and each queried again. Waits are now fed by the event log
// (one read per wake), an agent's waits are woken one at a time, held waits are bounded per key and
// per process (429 too_many_waits), and a JSON-RPC batch may hold one wait.

/** A Db that records the text of every statement run through it (in transactions too). */
function countingDb(db: Db): Db & { statements: string[] } {
  const statements: string[] = [];
  const counted = (q: Queryable): Queryable => ({
    query(sql, params) {
      statements.push(sql);
      return q.query(sql, params);
    },
  });
  return { statements, query: counted(db).query, transaction: (fn) => db.transaction((tx) => fn(counted(tx))), close: () => db.close() };
}

let cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const step of cleanup.reverse()) await step();
  cleanup = [];
});

/** A server on a counting database (a fresh PostgreSQL database in the postgres project), with one organization. */
async function start(options: ServerOptions = {}) {
  const h = await startHarnessWithDb('acme', { wrap: countingDb, options: { rateLimit: false, ...options } });
  cleanup.push(() => h.server.close());
  return h;
}

const accept = { accept: 'application/json, text/event-stream' };
const waitCall = (id: number, extra: Record<string, unknown> = {}) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name: 'wait_for_messages', arguments: { timeout_seconds: 25, ...extra } },
});

/** Resolves once `statements` holds `count` statements containing `fragment` (gives up after 60 s). */
async function seen(statements: string[], fragment: string, count: number): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (statements.filter((s) => s.includes(fragment)).length < count) {
    if (Date.now() > deadline) throw new Error(`only ${statements.filter((s) => s.includes(fragment)).length} of ${count} statements with "${fragment}"`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

// The statement of every look at an agent's unread messages (domain/agent-inbox.ts).
const unreadLook = 'arrived_at';

describe('issue 21, defect 1', () => {
  it('wait_for_messages: 100 held waits of one agent, one append: one wait is answered with the message after a couple of reads, not 100 reads', async () => {
    const h = await start();
    const ids = await buildTeam(h);
    const key = (await h.call('POST', `/api/v1/agents/${ids.agentId}/mcp-keys`)).body.mcp_key;
    const thread = (await h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.agentId, content: 'anyone?' })).body;
    const waits = 100;
    const answers = Array.from({ length: waits }, (_, i) => request(`${h.server.url}/api/v1/mcp`, 'POST', waitCall(i), { ...accept, 'x-api-key': key }));
    // Every wait has looked once and found nothing: all are held.
    await seen(h.db.statements, unreadLook, waits);
    const before = h.db.statements.length;
    const looksBefore = h.db.statements.filter((s) => s.includes(unreadLook)).length;
    await h.call('POST', `/api/v1/threads/${thread.thread_id}/messages`, { sender_agent_id: ids.humanId, content: 'me' });
    // The first answer with the message comes back, and only one does.
    const first = await Promise.race(answers.map((answer, i) => answer.then((reply) => ({ i, reply }))));
    const taken = first.reply.body.result.structuredContent;
    expect(taken.messages.map((m: any) => m.content)).toEqual(['me']);
    const looks = h.db.statements.slice(before).filter((s) => s.includes(unreadLook)).length;
    // One look without the lock and one under it, by the one wait woken (not one per held wait).
    expect(looks).toBeLessThanOrEqual(3);
    expect(h.db.statements.filter((s) => s.includes(unreadLook)).length - looksBefore).toBe(looks);
    // The server answers other requests at once meanwhile (99 waits still held).
    expect((await request(`${h.server.url}/healthz`, 'GET')).status).toBe(200);
    await h.server.close();
    const rest = await Promise.all(answers);
    expect(rest.filter((reply) => reply.body.result?.structuredContent?.messages?.length > 0)).toHaveLength(1);
  });

  it('wait_for_messages: a wait that takes part of what is unread (has_more) wakes the next, so every message is taken once', async () => {
    const h = await start();
    const ids = await buildTeam(h);
    const key = (await h.call('POST', `/api/v1/agents/${ids.agentId}/mcp-keys`)).body.mcp_key;
    const thread = (await h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.agentId, content: 'go' })).body;
    const waits = Array.from({ length: 3 }, (_, i) => request(`${h.server.url}/api/v1/mcp`, 'POST', waitCall(i, { limit: 1 }), { ...accept, 'x-api-key': key }));
    await seen(h.db.statements, unreadLook, 3);
    // Two messages in one transaction would be one wake; two appends in a row are two events.
    await h.call('POST', `/api/v1/threads/${thread.thread_id}/messages`, { sender_agent_id: ids.humanId, content: 'a' });
    await h.call('POST', `/api/v1/threads/${thread.thread_id}/messages`, { sender_agent_id: ids.humanId, content: 'b' });
    const got: string[] = [];
    const answered = waits.map((w) => w.then((reply) => got.push(...reply.body.result.structuredContent.messages.map((m: any) => m.content))));
    const deadline = Date.now() + 30_000;
    while (got.length < 2 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(got.sort()).toEqual(['a', 'b']);
    await h.server.close();
    await Promise.all(answered);
    expect(got.sort()).toEqual(['a', 'b']);
  });

  it('long polls: 100 polls of one thread woken by one append share one page read', async () => {
    const h = await start();
    const ids = await buildTeam(h);
    const thread = (await h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.humanId, content: 'first' })).body;
    const first = thread.thread_id;
    const page = (await h.call('GET', `/api/v1/threads/${first}`)).body;
    const pageRead = 'AS cursor_seq';
    const polls = Array.from({ length: 100 }, () => h.call('GET', `/api/v1/threads/${first}?after=${page.next_after}&wait=25`));
    await seen(h.db.statements, pageRead, 101);
    const before = h.db.statements.length;
    await h.call('POST', `/api/v1/threads/${first}/messages`, { sender_agent_id: ids.agentId, content: 'for all' });
    const answers = await Promise.all(polls);
    expect(answers.every((a) => a.status === 200 && a.body.messages.length === 1 && a.body.messages[0].content === 'for all')).toBe(true);
    expect(h.db.statements.slice(before).filter((s) => s.includes(pageRead)).length).toBeLessThanOrEqual(2);
  });

  it('mcp: a JSON-RPC batch holding two waits is refused whole (400), one holding one wait runs', async () => {
    const h = await start();
    const ids = await buildTeam(h);
    const key = (await h.call('POST', `/api/v1/agents/${ids.agentId}/mcp-keys`)).body.mcp_key;
    const refused = await request(`${h.server.url}/api/v1/mcp`, 'POST', [waitCall(1), waitCall(2)], { ...accept, 'x-api-key': key });
    expect(refused.status).toBe(400);
    expect(refused.body.code).toBe('invalid_request');
    expect(refused.body.detail).toMatch(/at most one wait_for_messages/);
    const whoami = { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'whoami', arguments: {} } };
    const ok = await request(`${h.server.url}/api/v1/mcp`, 'POST', [whoami, waitCall(4, { timeout_seconds: 0 }), waitCall(5, { timeout_seconds: 0.2 })], { ...accept, 'x-api-key': key });
    expect(ok.status).toBe(200);
    expect(ok.body.map((r: any) => r.id).sort()).toEqual([3, 4, 5]);
  });

  it('held waits: past the bound of a key its next wait is 429 too_many_waits with Retry-After, another key still waits, and past the process bound every key is refused', async () => {
    const h = await start({ heldWaits: { perKey: 3, perProcess: 5 } });
    const ids = await buildTeam(h);
    // Opened by the agent: it has nothing unread, so its wait is held.
    const thread = (await h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.agentId, content: 'x' })).body;
    const mcpKey = (await h.call('POST', `/api/v1/agents/${ids.agentId}/mcp-keys`)).body.mcp_key;
    const second = (await h.call('POST', `/api/v1/organizations/${h.orgId}/keys`, { name: 'second' })).body.api_key;
    const after = (await h.call('GET', `/api/v1/threads/${thread.thread_id}`)).body.next_after;
    const poll = (apiKey: string) => request(`${h.server.url}/api/v1/threads/${thread.thread_id}?after=${after}&wait=25`, 'GET', undefined, { 'x-api-key': apiKey });
    const held = [poll(h.apiKey), poll(h.apiKey), poll(h.apiKey)];
    await seen(h.db.statements, 'AS cursor_seq', 4);
    const refused = await poll(h.apiKey);
    expect(refused.status).toBe(429);
    expect(refused.body.code).toBe('too_many_waits');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    // A request that does not wait is not counted.
    expect((await request(`${h.server.url}/api/v1/threads/${thread.thread_id}`, 'GET', undefined, { 'x-api-key': h.apiKey })).status).toBe(200);
    // Another key: one more wait fits under the process's bound of 5 (3 + 1), the MCP key's too.
    held.push(poll(second));
    await seen(h.db.statements, 'AS cursor_seq', 6);
    const mcpWait = request(`${h.server.url}/api/v1/mcp`, 'POST', waitCall(1), { ...accept, 'x-api-key': mcpKey });
    await seen(h.db.statements, unreadLook, 1);
    const full = await poll(second);
    expect(full.status).toBe(429);
    expect(full.body.detail).toMatch(/the server already holds 5 waiting requests/);
    const mcpRefused = await request(`${h.server.url}/api/v1/mcp`, 'POST', waitCall(2), { ...accept, 'x-api-key': mcpKey });
    expect(mcpRefused.status).toBe(429);
    expect(mcpRefused.body.code).toBe('too_many_waits');
    // Once an answer frees a place, a wait is taken again.
    await h.call('POST', `/api/v1/threads/${thread.thread_id}/messages`, { sender_agent_id: ids.humanId, content: 'y' });
    for (const reply of await Promise.all(held)) expect(reply.status).toBe(200);
    expect((await mcpWait).status).toBe(200);
    const later = request(`${h.server.url}/api/v1/threads/${thread.thread_id}?wait=0.2`, 'GET', undefined, { 'x-api-key': h.apiKey });
    expect((await later).status).toBe(200);
  });
});
