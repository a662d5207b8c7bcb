/**
 * The person's event stream (`GET /api/v1/me/events/stream`, what the console follows) carries
 * the tool calls of agents' turns on the person's threads (`tool_call.started`,
 * `tool_call.finished`), and those of no other thread: a tool call's event names its thread, so
 * the stream knows the person's threads — those there when it starts, and those opened while it
 * runs. Against a real acs-server, with an echo agent whose scripted tool calls are known ahead.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, waitForThread, type Harness } from '../service/helpers.ts';
import { openStream } from '../support/sse.ts';
import { signInWithLink } from '../support/sign-in-link.ts';

let h: Harness;
/** dana and erin (humans), clerk (echo with the team tools); edges dana–clerk and erin–clerk. */
let ids: { dana: string; erin: string; clerk: string; danaEdge: string; erinEdge: string };
/** dana's console session cookie. */
let cookie: string;

/** A request with the org key that must succeed; output: its body. */
async function ok(method: string, path: string, body?: unknown) {
  const reply = await h.call(method, path, body);
  expect(reply.status, `${method} ${path}: ${JSON.stringify(reply.body)}`).toBeLessThan(300);
  return reply.body;
}

beforeAll(async () => {
  h = await startHarness();
  await ok('PUT', `/api/v1/organizations/${h.orgId}/api-keys/echo`, { api_key: 'echo-key' });
  const team = (await ok('POST', `/api/v1/organizations/${h.orgId}/teams`, { team_name: 'desk' })).team_id;
  const dana = (await ok('POST', `/api/v1/teams/${team}/humans`, { name: 'dana' })).human_id;
  const erin = (await ok('POST', `/api/v1/teams/${team}/humans`, { name: 'erin' })).human_id;
  const clerk = (await ok('POST', `/api/v1/teams/${team}/agents`, { name: 'clerk', provider: 'echo', tools: { team: true } })).agent_id;
  const danaEdge = (await ok('POST', `/api/v1/teams/${team}/edges`, { participants: [dana, clerk] })).edge_id;
  const erinEdge = (await ok('POST', `/api/v1/teams/${team}/edges`, { participants: [erin, clerk] })).edge_id;
  ids = { dana, erin, clerk, danaEdge, erinEdge };
  // dana signs in as the console does: her sign-in link's page, then its button, sets the session cookie.
  const link = await ok('POST', `/api/v1/humans/${dana}/sign-in-links`, {});
  const pair = (await signInWithLink(link.url as string, { base: h.server.url })).cookie;
  if (!pair) throw new Error('the sign-in link set no session cookie');
  cookie = pair;
});

afterAll(async () => {
  await h?.server.close();
});

/** Waits until clerk has answered `count` messages in the thread. */
function clerkAnswered(threadId: string, count: number) {
  return waitForThread(h, threadId, (messages) => messages.filter((m) => m.sender_id === ids.clerk).length >= count);
}

/** Opens a thread on `edgeId` with a first message from `senderId`; output: its id. */
async function openThread(edgeId: string, senderId: string, content: string): Promise<string> {
  return (await ok('POST', `/api/v1/edges/${edgeId}/threads`, { sender_agent_id: senderId, content })).thread_id;
}

describe('the person\'s event stream: tool calls', () => {
  it("stream: the tool calls of turns on the person's threads arrive — one there before the stream, one opened after — and another person's do not", async () => {
    const before = await openThread(ids.danaEdge, ids.dana, 'hello');
    await clerkAnswered(before, 1);
    const stream = await openStream(`${h.server.url}/api/v1/me/events/stream`, { cookie });
    expect(stream.status).toBe(200);
    try {
      // erin's thread first: its tool call is not dana's.
      const erins = await openThread(ids.erinEdge, ids.erin, 'call whoami');
      await clerkAnswered(erins, 1);
      await ok('POST', `/api/v1/threads/${before}/messages`, { sender_agent_id: ids.dana, content: 'call whoami' });
      await clerkAnswered(before, 2);
      const opened = await openThread(ids.danaEdge, ids.dana, 'call list_edges');
      await clerkAnswered(opened, 1);
      const events = (await stream.waitForEvents(9)).map((e) => {
        const data = JSON.parse(e.data).data;
        return [e.event, data.thread_id, data.tool ?? data.content ?? null, data.status ?? null];
      });
      expect(events).toEqual([
        ['message.created', before, 'call whoami', null],
        ['tool_call.started', before, 'whoami', 'running'],
        ['tool_call.finished', before, 'whoami', 'completed'],
        ['message.created', before, expect.stringMatching(/^echo: call whoami\nwhoami: /), null],
        ['thread.opened', opened, null, null],
        ['message.created', opened, 'call list_edges', null],
        ['tool_call.started', opened, 'list_edges', 'running'],
        ['tool_call.finished', opened, 'list_edges', 'completed'],
        ['message.created', opened, expect.stringMatching(/^echo: call list_edges\nlist_edges: /), null],
      ]);
      expect(stream.events.some((e) => e.data.includes(erins))).toBe(false);
      // Resumed after the first, the stream gives the rest again, tool calls included.
      const resumed = await openStream(`${h.server.url}/api/v1/me/events/stream`, { cookie, 'last-event-id': stream.events[0]!.id! });
      try {
        expect((await resumed.waitForEvents(8)).map((e) => e.id)).toEqual(stream.events.slice(1, 9).map((e) => e.id));
      } finally {
        resumed.close();
      }
    } finally {
      stream.close();
    }
  });
});
