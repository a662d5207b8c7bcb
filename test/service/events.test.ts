import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTeam, startHarness, type Harness } from './helpers.ts';
import { openStream } from '../support/sse.ts';

// Contract §9: the organization event log, read by page, long poll and Server-Sent Events.

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ inMemory: true, streamKeepAliveMs: 300 });
});
afterAll(async () => {
  await h.server.close();
});

const events = (harness: Harness, query = '') => harness.call('GET', `/api/v1/organizations/${harness.orgId}/events${query}`);

/** Every event of the harness's organization after `after`, read page by page as a client would. */
async function walk(harness: Harness, after = 0, limit = 7, query = ''): Promise<any[]> {
  const seen: any[] = [];
  for (;;) {
    const page = await events(harness, `?after=${after}&limit=${limit}${query}`);
    expect(page.status).toBe(200);
    seen.push(...page.body.events);
    if (page.body.next_after === after) return seen;
    after = page.body.next_after;
  }
}

describe('the log', () => {
  it("events: a team's life is in its organization's log, in order, each event with the resource as the API returned it", async () => {
    const own = await startHarness({ inMemory: true });
    try {
      const team = (await own.call('POST', `/api/v1/organizations/${own.orgId}/teams`, { team_name: 'ops' })).body;
      const agent = (await own.call('POST', `/api/v1/teams/${team.team_id}/agents`, { name: 'bot' })).body;
      const human = (await own.call('POST', `/api/v1/teams/${team.team_id}/humans`, { name: 'ann' })).body;
      const edge = (await own.call('POST', `/api/v1/teams/${team.team_id}/edges`, { participants: [human.human_id, agent.agent_id] })).body;
      const thread = (await own.call('POST', `/api/v1/edges/${edge.edge_id}/threads`, { sender_agent_id: human.human_id, subject: 'hi', content: 'hello' })).body;
      const page = (await own.call('GET', `/api/v1/threads/${thread.thread_id}`)).body;
      const reply = (await own.call('POST', `/api/v1/threads/${thread.thread_id}/messages`, { sender_agent_id: agent.agent_id, content: 'hi ann' })).body;
      const patchedAgent = (await own.call('PATCH', `/api/v1/agents/${agent.agent_id}`, { status: 'paused' })).body;
      const patchedHuman = (await own.call('PATCH', `/api/v1/humans/${human.human_id}`, { email: 'ann@example.com' })).body;
      const patchedTeam = (await own.call('PATCH', `/api/v1/teams/${team.team_id}`, { description: 'on call' })).body;
      expect((await own.call('DELETE', `/api/v1/edges/${edge.edge_id}`)).status).toBe(200);
      expect((await own.call('DELETE', `/api/v1/agents/${agent.agent_id}`)).status).toBe(200);
      expect((await own.call('DELETE', `/api/v1/humans/${human.human_id}`)).status).toBe(200);
      expect((await own.call('DELETE', `/api/v1/teams/${team.team_id}`)).status).toBe(200);

      const log = await walk(own);
      expect(log.map((e) => e.type)).toEqual([
        'team.created',
        'agent.created',
        'human.created',
        'edge.created',
        'thread.opened',
        'message.created',
        'message.created',
        'agent.updated',
        'human.updated',
        'team.updated',
        'edge.deleted',
        'agent.deleted',
        'human.deleted',
        'team.deleted',
      ]);
      expect(log.map((e) => e.seq)).toEqual(log.map((_, i) => i + 1));
      for (const event of log) {
        expect(event.org_id).toBe(own.orgId);
        expect(event.team_id).toBe(team.team_id);
        expect(event.event_id).toMatch(/^[0-9a-f-]{36}$/);
        expect(event.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      }
      expect(new Set(log.map((e) => e.event_id)).size).toBe(log.length);
      const data = (type: string, n = 0) => log.filter((e) => e.type === type)[n].data;
      expect(data('team.created')).toEqual(team);
      expect(data('agent.created')).toEqual(agent);
      expect(data('human.created')).toEqual(human);
      expect(data('edge.created')).toEqual(edge);
      expect(data('thread.opened')).toEqual({ ...thread, participants: [human.human_id, agent.agent_id] });
      expect(data('message.created')).toEqual({ ...page.messages[0], edge_id: edge.edge_id, team_id: team.team_id, recipient_id: agent.agent_id, answers_message_id: null });
      expect(data('message.created', 1)).toEqual({ ...reply, edge_id: edge.edge_id, team_id: team.team_id, recipient_id: human.human_id, answers_message_id: null });
      expect(data('agent.updated')).toEqual(patchedAgent);
      expect(data('human.updated')).toEqual(patchedHuman);
      expect(data('team.updated')).toEqual(patchedTeam);
      expect(data('edge.deleted')).toEqual({ edge_id: edge.edge_id });
      expect(data('agent.deleted')).toEqual({ agent_id: agent.agent_id });
      expect(data('human.deleted')).toEqual({ human_id: human.human_id });
      expect(data('team.deleted')).toEqual({ team_id: team.team_id });
    } finally {
      await own.server.close();
    }
  });

  it('events: message.created says which message it answers: the first message of the awaited participant after a message that expects a reply, and no other', async () => {
    const own = await startHarness({ inMemory: true });
    try {
      const ids = await buildTeam(own);
      const say = async (threadId: string, from: string, content: string, expects = false) =>
        (await own.call('POST', `/api/v1/threads/${threadId}/messages`, { sender_agent_id: from, content, ...(expects ? { expects_reply: true } : {}) })).body.message_id as string;
      const opened = (await own.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.agentId, content: 'approve?', expects_reply: true })).body;
      const ask = (await own.call('GET', `/api/v1/threads/${opened.thread_id}`)).body.messages[0].message_id;
      const nudge = await say(opened.thread_id, ids.agentId, 'still there?');
      const answer = await say(opened.thread_id, ids.humanId, 'approve');
      const chatter = await say(opened.thread_id, ids.humanId, 'and thanks');
      const reask = await say(opened.thread_id, ids.agentId, 'sure? approve or reject', true);
      const own2 = await say(opened.thread_id, ids.agentId, 'take your time');
      const second = await say(opened.thread_id, ids.humanId, 'reject');
      const log = await walk(own, 0, 50, '&types=message.created');
      const answers = Object.fromEntries(log.map((e) => [e.data.message_id, e.data.answers_message_id]));
      expect(answers).toEqual({ [ask]: null, [nudge]: null, [answer]: ask, [chatter]: null, [reask]: null, [own2]: null, [second]: reask });
    } finally {
      await own.server.close();
    }
  });

  it('events: keys never make an event, and no event carries a key', async () => {
    const own = await startHarness({ inMemory: true });
    try {
      const ids = await buildTeam(own);
      const before = (await events(own)).body.next_after;
      const mcp = await own.call('POST', `/api/v1/agents/${ids.agentId}/mcp-keys`);
      const org = await own.call('POST', `/api/v1/organizations/${own.orgId}/keys`, { name: 'ci' });
      const provider = await own.call('PUT', `/api/v1/organizations/${own.orgId}/api-keys/echo`, { api_key: 'echo-provider-key-1234' });
      expect([mcp.status, org.status, provider.status]).toEqual([201, 201, 200]);
      expect((await events(own)).body.next_after).toBe(before);
      const everything = JSON.stringify((await events(own)).body);
      for (const secret of [mcp.body.mcp_key, org.body.api_key, own.apiKey, 'echo-provider-key-1234']) expect(everything).not.toContain(secret);
    } finally {
      await own.server.close();
    }
  });

  it("events: an organization's log is 404 to a key that does not reach it, and another organization's events are not in it", async () => {
    const other = await h.server.provisionOrganization(`other-${Math.random()}`);
    const foreign = { 'x-api-key': other.api_key };
    expect((await h.call('GET', `/api/v1/organizations/${h.orgId}/events`, undefined, foreign)).status).toBe(404);
    expect((await h.call('GET', `/api/v1/organizations/${h.orgId}/events/stream`, undefined, foreign)).status).toBe(404);
    await buildTeam(h);
    const theirs = await h.call('GET', `/api/v1/organizations/${other.org_id}/events`, undefined, foreign);
    expect(theirs.body).toEqual({ events: [], next_after: 0 });
  });

  it('events: types (with families) and team_id filter the log, and next_after moves past what the filter left out', async () => {
    const own = await startHarness({ inMemory: true });
    try {
      const one = await buildTeam(own);
      const two = await buildTeam(own);
      await own.call('POST', `/api/v1/edges/${two.edgeId}/threads`, { sender_agent_id: two.humanId, content: 'x' });
      const all = await walk(own);
      const head = all.at(-1).seq;
      const families = await events(own, '?types=message.*,team.created');
      expect(families.body.events.map((e: any) => e.type)).toEqual(['team.created', 'team.created', 'message.created']);
      expect(families.body.next_after).toBe(head);
      const team = await events(own, `?team_id=${one.teamId}`);
      expect(team.body.events.every((e: any) => e.team_id === one.teamId)).toBe(true);
      expect(team.body.events).toHaveLength(4);
      expect(team.body.next_after).toBe(head);
      // Walking a filtered log by next_after sees each matching event once.
      expect((await walk(own, 0, 1, '&types=agent.*,edge.created')).map((e) => e.type)).toEqual(['agent.created', 'edge.created', 'agent.created', 'edge.created']);
      // Unknown types are refused by name.
      const bad = await events(own, '?types=message.created,messages.*');
      expect(bad.status).toBe(400);
      expect(bad.body.errors[0].path).toBe('types');
    } finally {
      await own.server.close();
    }
  });

  it('events: an after beyond the newest seq is invalid_cursor; malformed queries are invalid_request', async () => {
    const head = (await events(h)).body.next_after;
    const beyond = await events(h, `?after=${head + 1000}`);
    expect(beyond.status).toBe(400);
    expect(beyond.body.code).toBe('invalid_cursor');
    for (const query of ['?after=-1', '?limit=0', '?limit=501', '?wait=31', '?team_id=nope', '?afterr=1']) {
      const refused = await events(h, query);
      expect(refused.status, query).toBe(400);
      expect(refused.body.code, query).toBe('invalid_request');
    }
  });
});

describe('long polls', () => {
  it('events: a long poll is answered with the first matching event written after it began, and only with it', async () => {
    const ids = await buildTeam(h);
    const head = (await events(h)).body.next_after;
    const held = events(h, `?after=${head}&wait=20&types=message.created&team_id=${ids.teamId}`);
    // Not matching: another team's message, and an update of this team.
    const other = await buildTeam(h);
    await h.call('POST', `/api/v1/edges/${other.edgeId}/threads`, { sender_agent_id: other.humanId, content: 'elsewhere' });
    await h.call('PATCH', `/api/v1/teams/${ids.teamId}`, { description: 'x' });
    const thread = await h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.humanId, content: 'here' });
    const answer = await held;
    expect(answer.status).toBe(200);
    expect(answer.body.events.map((e: any) => [e.type, e.data.thread_id])).toEqual([['message.created', thread.body.thread_id]]);
    expect(answer.body.next_after).toBeGreaterThanOrEqual(answer.body.events[0].seq);
    // Nothing after it: the next poll waits, and ends empty when its wait runs out.
    const empty = await events(h, `?after=${answer.body.next_after}&wait=0.3&types=message.created&team_id=${ids.teamId}`);
    expect(empty.body.events).toEqual([]);
  });
});

describe('Server-Sent Events', () => {
  it('stream: events arrive as id/event/data, with keep-alive comments, and Last-Event-ID resumes with exactly the events missed', async () => {
    const ids = await buildTeam(h);
    const headers = { 'x-api-key': h.apiKey };
    const url = `${h.server.url}/api/v1/organizations/${h.orgId}/events/stream?team_id=${ids.teamId}`;
    const stream = await openStream(url, headers);
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(stream.headers.get('x-request-id')).toBeTruthy();
    // From now on only: the team's creation is not sent again.
    await stream.waitForComments(1);
    const thread = (await h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.humanId, content: 'one' })).body;
    const [opened, first] = await stream.waitForEvents(2);
    expect([opened!.event, first!.event]).toEqual(['thread.opened', 'message.created']);
    const parsed = JSON.parse(first!.data);
    expect(first!.id).toBe(String(parsed.seq));
    expect(parsed.data.thread_id).toBe(thread.thread_id);
    // A keep-alive comment comes while nothing happens (every 300 ms on this server).
    const quiet = stream.comments.length;
    await stream.waitForComments(quiet + 1);
    stream.close();

    // Missed while disconnected: two messages, one event of another team.
    await h.call('POST', `/api/v1/threads/${thread.thread_id}/messages`, { sender_agent_id: ids.agentId, content: 'two' });
    await buildTeam(h);
    await h.call('POST', `/api/v1/threads/${thread.thread_id}/messages`, { sender_agent_id: ids.humanId, content: 'three' });
    const resumed = await openStream(url, { ...headers, 'last-event-id': first!.id! });
    const again = await resumed.waitForEvents(2);
    expect(again.map((e) => JSON.parse(e.data).data.content)).toEqual(['two', 'three']);
    await h.call('POST', `/api/v1/threads/${thread.thread_id}/messages`, { sender_agent_id: ids.agentId, content: 'four' });
    const live = await resumed.waitForEvents(3);
    expect(JSON.parse(live[2]!.data).data.content).toBe('four');
    expect(live.map((e) => Number(e.id))).toEqual([...live.map((e) => Number(e.id))].sort((a, b) => a - b));
    resumed.close();
  });

  it('stream: a Last-Event-ID that is not a seq is invalid_cursor, one beyond the log too, before any stream starts', async () => {
    const url = `${h.server.url}/api/v1/organizations/${h.orgId}/events/stream`;
    for (const id of ['abc', '999999999']) {
      const refused = await fetch(url, { headers: { 'x-api-key': h.apiKey, 'last-event-id': id } });
      expect(refused.status).toBe(400);
      expect(((await refused.json()) as { code: string }).code).toBe('invalid_cursor');
    }
  });
});

describe('retention', () => {
  it('events: an after older than the oldest event kept is 410 events_expired with oldest_seq, and reading on from there works', async () => {
    const own = await startHarness({ inMemory: true, eventRetentionMs: 1_500 });
    try {
      await buildTeam(own);
      // Four events were written (some may have expired already on a busy machine).
      expect((await events(own)).body.next_after).toBe(4);
      // Retention deletes them (the pruner runs every 375 ms here).
      const deadline = Date.now() + 20_000;
      let expired: any;
      while (Date.now() < deadline) {
        expired = await events(own, '?after=0');
        // Each event goes once its own age passes retention: wait for the last of the four.
        if (expired.status === 410 && expired.body.oldest_seq === 5) break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(expired.status).toBe(410);
      expect(expired.body.code).toBe('events_expired');
      expect(expired.body.oldest_seq).toBe(5);
      // Nothing is left to expire: reading on from oldest_seq - 1 works, and without after too.
      const onward = await events(own, `?after=${expired.body.oldest_seq - 1}`);
      expect(onward.status).toBe(200);
      expect(onward.body).toEqual({ events: [], next_after: 4 });
      expect((await events(own)).body).toEqual({ events: [], next_after: 4 });
      const stream = await fetch(`${own.server.url}/api/v1/organizations/${own.orgId}/events/stream`, { headers: { 'x-api-key': own.apiKey, 'last-event-id': '1' } });
      expect(stream.status).toBe(410);
    } finally {
      await own.server.close();
    }
  });
});
