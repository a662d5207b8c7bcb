import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ThreadPage } from '../../api/schemas.ts';
import { buildTeam, startHarness, type Harness } from './helpers.ts';

let h: Harness;
let ids: Awaited<ReturnType<typeof buildTeam>>;
let threadId: string;
let messageIds: string[];

beforeAll(async () => {
  h = await startHarness();
  ids = await buildTeam(h);
  const thread = await h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.humanId, content: 'm0' });
  threadId = thread.body.thread_id;
  for (let i = 1; i < 5; i += 1) {
    await h.call('POST', `/api/v1/threads/${threadId}/messages`, { sender_agent_id: i % 2 ? ids.agentId : ids.humanId, content: `m${i}` });
  }
  messageIds = (await h.call('GET', `/api/v1/threads/${threadId}`)).body.messages.map((m: { message_id: string }) => m.message_id);
});
afterAll(async () => {
  await h.server.close();
});

describe('threads', () => {
  it('threads: GET returns the thread with its messages oldest first, on both /api/v1 and /v1', async () => {
    for (const prefix of ['/api/v1', '/v1']) {
      const res = await h.call('GET', `${prefix}/threads/${threadId}`);
      expect(res.status).toBe(200);
      const page = ThreadPage.parse(res.body);
      expect(page.messages.map((m) => m.content)).toEqual(['m0', 'm1', 'm2', 'm3', 'm4']);
      expect(page).toMatchObject({ thread_id: threadId, message_count: 5, has_more: false, next_after: messageIds[4] });
    }
  });

  it('threads: a message that expects a reply names its recipient in awaiting_reply_from until the recipient writes', async () => {
    const team = await buildTeam(h);
    const opened = await h.call('POST', `/api/v1/edges/${team.edgeId}/threads`, { sender_agent_id: team.agentId, content: 'approve?', expects_reply: true });
    expect(opened.status).toBe(201);
    expect(opened.body.awaiting_reply_from).toBe(team.humanId);
    const id: string = opened.body.thread_id;
    const first = (await h.call('GET', `/api/v1/threads/${id}`)).body;
    expect(first.messages[0]).toMatchObject({ content: 'approve?', expects_reply: true });
    // A message of the asker's that expects nothing leaves the question open.
    await h.call('POST', `/api/v1/threads/${id}/messages`, { sender_agent_id: team.agentId, content: 'anyone?' });
    expect((await h.call('GET', `/api/v1/threads/${id}`)).body.awaiting_reply_from).toBe(team.humanId);
    const answer = await h.call('POST', `/api/v1/threads/${id}/messages`, { sender_agent_id: team.humanId, content: 'yes' });
    expect(answer.body.expects_reply).toBe(false);
    expect((await h.call('GET', `/api/v1/threads/${id}`)).body.awaiting_reply_from).toBeNull();
    const listed = (await h.call('GET', `/api/v1/edges/${team.edgeId}/threads`)).body.threads;
    expect(listed[0]).toMatchObject({ thread_id: id, awaiting_reply_from: null });
    // The human may expect an answer of the agent in turn.
    await h.call('POST', `/api/v1/threads/${id}/messages`, { sender_agent_id: team.humanId, content: 'your turn', expects_reply: true });
    expect((await h.call('GET', `/api/v1/threads/${id}`)).body.awaiting_reply_from).toBe(team.agentId);
  });

  it('threads: expects_reply must be a boolean', async () => {
    const res = await h.call('POST', `/api/v1/threads/${threadId}/messages`, { sender_agent_id: ids.humanId, content: 'x', expects_reply: 'yes' });
    expect(res.status).toBe(400);
    expect(res.body.errors[0].path).toBe('expects_reply');
  });

  it('threads: GET with after returns only later messages', async () => {
    const res = await h.call('GET', `/v1/threads/${threadId}?after=${messageIds[1]}`);
    expect(res.body.messages.map((m: { content: string }) => m.content)).toEqual(['m2', 'm3', 'm4']);
  });

  it('threads: limit pages with has_more and next_after until the end', async () => {
    const seen: string[] = [];
    let after: string | null = null;
    const pages: boolean[] = [];
    for (let i = 0; i < 5; i += 1) {
      const query: string = after ? `?limit=2&after=${after}` : '?limit=2';
      const res = await h.call('GET', `/api/v1/threads/${threadId}${query}`);
      seen.push(...res.body.messages.map((m: { content: string }) => m.content));
      pages.push(res.body.has_more);
      after = res.body.next_after;
      if (!res.body.has_more) break;
    }
    expect(seen).toEqual(['m0', 'm1', 'm2', 'm3', 'm4']);
    expect(pages).toEqual([true, true, false]);
    expect(after).toBe(messageIds[4]);
  });

  it('threads: an empty page keeps the request\'s after as next_after', async () => {
    const res = await h.call('GET', `/api/v1/threads/${threadId}?after=${messageIds[4]}`);
    expect(res.body).toMatchObject({ messages: [], has_more: false, next_after: messageIds[4] });
  });

  it('threads: a long poll is released by an append and returns the new message', async () => {
    const ids2 = await buildTeam(h);
    const thread = await h.call('POST', `/api/v1/edges/${ids2.edgeId}/threads`, { sender_agent_id: ids2.humanId, content: 'first' });
    const first = (await h.call('GET', `/api/v1/threads/${thread.body.thread_id}`)).body.next_after;
    const waiting = h.call('GET', `/api/v1/threads/${thread.body.thread_id}?after=${first}&wait=30`);
    let settled = false;
    void waiting.then(() => {
      settled = true;
    });
    // The poll is still held after a round trip to the server.
    await h.call('GET', '/api/v1/organizations');
    expect(settled).toBe(false);
    const posted = await h.call('POST', `/api/v1/threads/${thread.body.thread_id}/messages`, { sender_agent_id: ids2.agentId, content: 'second' });
    const res = await waiting;
    expect(res.status).toBe(200);
    expect(res.body.messages.map((m: { message_id: string }) => m.message_id)).toEqual([posted.body.message_id]);
    expect(res.body.next_after).toBe(posted.body.message_id);
  });

  it('threads: concurrent appends all land in one gap-free order', async () => {
    const ids3 = await buildTeam(h);
    const thread = await h.call('POST', `/api/v1/edges/${ids3.edgeId}/threads`, { sender_agent_id: ids3.humanId, content: 'start' });
    await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        h.call('POST', `/api/v1/threads/${thread.body.thread_id}/messages`, { sender_agent_id: ids3.humanId, content: `c${i}` }),
      ),
    );
    const page = (await h.call('GET', `/api/v1/threads/${thread.body.thread_id}?limit=200`)).body;
    expect(page.message_count).toBe(11);
    expect(page.messages).toHaveLength(11);
    expect(new Set(page.messages.map((m: { content: string }) => m.content)).size).toBe(11);
  });

  it('threads: two senders appending concurrently keep each one\'s order, one cursor order for all, and count unread once per message', async () => {
    const team = await h.call('POST', `/api/v1/organizations/${h.orgId}/teams`, { team_name: `team-${Math.random()}` });
    // ann, the opener, is an agent: a human's own message would read the thread up to it (migration
    // 0025), and the count below is of every message of bob's, as the counter adds them.
    const ann = (await h.call('POST', `/api/v1/teams/${team.body.team_id}/agents`, { name: 'ann' })).body.agent_id as string;
    const bob = (await h.call('POST', `/api/v1/teams/${team.body.team_id}/humans`, { name: 'bob' })).body.human_id as string;
    const edge = await h.call('POST', `/api/v1/teams/${team.body.team_id}/edges`, { participants: [ann, bob] });
    const thread = await h.call('POST', `/api/v1/edges/${edge.body.edge_id}/threads`, { sender_agent_id: ann, content: 'open' });
    const threadId = thread.body.thread_id as string;
    const perSender = 15;
    // Each sender sends one message after the other; the two senders run at the same time, and
    // a burst of one-off appends from both runs alongside them.
    const sequential = async (sender: string, name: string) => {
      const ids: string[] = [];
      for (let i = 0; i < perSender; i += 1) {
        const reply = await h.call('POST', `/api/v1/threads/${threadId}/messages`, { sender_agent_id: sender, content: `${name}-${i}` });
        expect(reply.status).toBe(201);
        ids.push(reply.body.message_id);
      }
      return ids;
    };
    const burst = Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        h.call('POST', `/api/v1/threads/${threadId}/messages`, { sender_agent_id: i % 2 ? ann : bob, content: `burst-${i}` }),
      ),
    );
    const [annIds, bobIds, burstReplies] = await Promise.all([sequential(ann, 'ann'), sequential(bob, 'bob'), burst]);
    expect(burstReplies.map((r) => r.status)).toEqual(burstReplies.map(() => 201));

    const total = 1 + 2 * perSender + 10;
    const whole = (await h.call('GET', `/api/v1/threads/${threadId}?limit=200`)).body;
    expect(whole).toMatchObject({ message_count: total, has_more: false });
    // unread_count: the opener (ann) has not read bob's messages: his 15 and 5 of the burst.
    expect(whole.unread_count).toBe(perSender + 5);
    const order: string[] = whole.messages.map((m: { message_id: string }) => m.message_id);
    expect(new Set(order).size).toBe(total);
    // A sender's messages keep the order in which it sent them.
    expect(order.filter((id) => annIds.includes(id))).toEqual(annIds);
    expect(order.filter((id) => bobIds.includes(id))).toEqual(bobIds);
    // Paging with cursors walks the same order, each message once.
    const walked: string[] = [];
    let after: string | null = null;
    for (let page = 0; page < 50; page += 1) {
      const reply: { body: { messages: Array<{ message_id: string }>; next_after: string; has_more: boolean } } = await h.call(
        'GET',
        `/api/v1/threads/${threadId}?limit=4${after ? `&after=${after}` : ''}`,
      );
      walked.push(...reply.body.messages.map((m) => m.message_id));
      after = reply.body.next_after;
      if (!reply.body.has_more) break;
    }
    expect(walked).toEqual(order);
  });
});
