/**
 * What the tests of agents that act (contract §11) share: a team built from a short description
 * over REST, the tool calls of a thread, the organization's events, a person's console session,
 * and waits on any of them. Everything goes through the HTTP API of a running server.
 */
import { expect } from 'vitest';
import type { ToolCall } from '../../api/agent-tools.ts';
import { request, type Harness, type Reply } from './helpers.ts';
import { signInWithLink } from '../support/sign-in-link.ts';

/** A team as a test describes it: humans by name, agents (their create bodies) and edges between names. */
export interface TeamSpec {
  humans?: string[];
  agents: Array<Record<string, unknown> & { name: string }>;
  edges: Array<[string, string]>;
}

/** A team built by {@link makeTeam}: its id, every participant's id by name, and every edge's id by `a|b`. */
export interface BuiltTeam {
  teamId: string;
  id: Record<string, string>;
  edge: Record<string, string>;
  /** The edge between two names, in either order. */
  edgeOf(a: string, b: string): string;
}

/**
 * Creates a team (humans first: an agent's `approval.by` names one), its agents and its edges,
 * each request expected to succeed. Output: {@link BuiltTeam}.
 */
export async function makeTeam(h: Pick<Harness, 'call' | 'orgId'>, spec: TeamSpec): Promise<BuiltTeam> {
  const team = await h.call('POST', `/api/v1/organizations/${h.orgId}/teams`, { team_name: `team-${Math.random().toString(36).slice(2)}` });
  expect(team.status).toBe(201);
  const teamId: string = team.body.team_id;
  const id: Record<string, string> = {};
  for (const name of spec.humans ?? []) {
    const human = await h.call('POST', `/api/v1/teams/${teamId}/humans`, { name });
    expect(human.status, JSON.stringify(human.body)).toBe(201);
    id[name] = human.body.human_id;
  }
  for (const agent of spec.agents) {
    const created = await h.call('POST', `/api/v1/teams/${teamId}/agents`, agent);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    id[agent.name] = created.body.agent_id;
  }
  const edge: Record<string, string> = {};
  for (const [a, b] of spec.edges) {
    const created = await h.call('POST', `/api/v1/teams/${teamId}/edges`, { participants: [id[a], id[b]] });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    edge[`${a}|${b}`] = created.body.edge_id;
  }
  return {
    teamId,
    id,
    edge,
    edgeOf: (a, b) => {
      const found = edge[`${a}|${b}`] ?? edge[`${b}|${a}`];
      if (!found) throw new Error(`no edge between ${a} and ${b}`);
      return found;
    },
  };
}

/** Opens a thread on `edgeId` with a first message from `senderId`. Output: the thread's id. */
export async function openThread(h: Pick<Harness, 'call'>, edgeId: string, senderId: string, content: string): Promise<string> {
  const opened = await h.call('POST', `/api/v1/edges/${edgeId}/threads`, { sender_agent_id: senderId, content });
  expect(opened.status, JSON.stringify(opened.body)).toBe(201);
  return opened.body.thread_id;
}

/** Every tool call of a thread's turns, oldest first, through `GET /threads/{id}/tool-calls` (page after page). */
export async function toolCalls(h: Pick<Harness, 'call'>, threadId: string): Promise<ToolCall[]> {
  const all: ToolCall[] = [];
  let after = '';
  for (;;) {
    const page = await h.call('GET', `/api/v1/threads/${threadId}/tool-calls?limit=500${after ? `&after=${after}` : ''}`);
    expect(page.status, JSON.stringify(page.body)).toBe(200);
    all.push(...page.body.tool_calls);
    if (page.body.tool_calls.length < 500) return all;
    after = page.body.next_after;
  }
}

/** Polls `read` until `done` holds for what it reads; gives up after `timeoutMs` (default 30 s), saying what it read last. */
export async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, what: string, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(value).slice(0, 3000)}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** Waits until the thread's tool calls satisfy `done`. Output: the calls. */
export function waitForToolCalls(h: Pick<Harness, 'call'>, threadId: string, done: (calls: ToolCall[]) => boolean, timeoutMs?: number): Promise<ToolCall[]> {
  return until(() => toolCalls(h, threadId), done, `the tool calls of thread ${threadId}`, timeoutMs);
}

/** An event as `GET /organizations/{org_id}/events` returns it. */
export interface OrgEvent {
  seq: number;
  type: string;
  team_id: string | null;
  data: any;
}

/** Every event of the organization kept now (of `types`, comma-separated, when given), oldest first. */
export async function orgEvents(h: Pick<Harness, 'call' | 'orgId'>, types?: string): Promise<OrgEvent[]> {
  const all: OrgEvent[] = [];
  let after = 0;
  for (;;) {
    const page = await h.call('GET', `/api/v1/organizations/${h.orgId}/events?after=${after}&limit=500${types ? `&types=${types}` : ''}`);
    expect(page.status, JSON.stringify(page.body)).toBe(200);
    all.push(...page.body.events);
    if (page.body.events.length === 0) return all;
    after = page.body.next_after;
  }
}

/** The thread's messages, oldest first (up to 200), with their senders. */
export async function messagesOf(h: Pick<Harness, 'call'>, threadId: string): Promise<Array<{ message_id: string; sender_id: string; content: string; reply_to: string | null }>> {
  const page = await h.call('GET', `/api/v1/threads/${threadId}?limit=200`);
  expect(page.status, JSON.stringify(page.body)).toBe(200);
  return page.body.messages;
}

/** The threads on an edge, as `GET /edges/{edge_id}/threads` lists them. */
export async function threadsOn(h: Pick<Harness, 'call'>, edgeId: string): Promise<Array<{ thread_id: string; message_count: number }>> {
  const page = await h.call('GET', `/api/v1/edges/${edgeId}/threads`);
  expect(page.status, JSON.stringify(page.body)).toBe(200);
  return page.body.threads;
}

/** A person's console session: requests with its cookie and CSRF token. */
export interface Session {
  cookie: string;
  csrf: string;
  call(method: string, path: string, body?: unknown): Promise<Reply>;
}

/**
 * Signs a human in as the console does (contract §10): a sign-in link made with the org key,
 * opened for its session cookie, then `GET /me` for the CSRF token. Output: {@link Session}.
 */
export async function signIn(h: Pick<Harness, 'call' | 'server'>, humanId: string): Promise<Session> {
  const link = await h.call('POST', `/api/v1/humans/${humanId}/sign-in-links`, {});
  expect(link.status).toBe(201);
  // Its page, then its button (contract §10: opening the link alone signs no one in).
  const cookie = (await signInWithLink(link.body.url as string, { base: h.server.url })).cookie;
  if (!cookie) throw new Error('the sign-in link set no session cookie');
  const me = await request(`${h.server.url}/api/v1/me`, 'GET', undefined, { cookie });
  expect(me.status).toBe(200);
  const csrf: string = me.body.csrf_token;
  return { cookie, csrf, call: (method, path, body) => request(`${h.server.url}${path}`, method, body, { cookie, 'x-csrf-token': csrf }) };
}

/** The text of a tool result as a model stand-in read it, parsed: an ask's result `{from, content, value?}`. */
export function askAnswer(result: { json: unknown } | undefined): { content: string; value?: unknown; from?: { name: string } } | undefined {
  return result?.json as { content: string; value?: unknown; from?: { name: string } } | undefined;
}
