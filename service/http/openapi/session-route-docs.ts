import { StopResult, ThreadStreamFrame, ThreadStreamQuery } from '../../../api/thread-stream.ts';
import { ToolCallList, ToolCallListQuery } from '../../../api/agent-tools.ts';
import { z } from 'zod';
import { CreatedMcpKey, McpKey, Message, Revoked } from '../../../api/schemas.ts';
import {
  ConsoleSettings,
  CreateSignInLinkBody,
  MarkReadBody,
  MarkReadResult,
  Me,
  MeAppendMessageBody,
  MeEdgeList,
  MeEventStreamQuery,
  MeOpenThreadBody,
  MeTeamGraph,
  MeThread,
  MeThreadList,
  MeThreadListQuery,
  MeThreadPage,
  MeThreadPageQuery,
  OperatorSession,
  OperatorSignInBody,
  PersonStreamedEvent,
  SignedOut,
  SignInLink,
} from '../../../api/session-schemas.ts';
import type { RouteDoc } from './route-doc.ts';

const MeMcpKeyList = z.object({ mcp_keys: z.array(McpKey) }).meta({ id: 'MeMcpKeyList' });

const ok = (schema: z.ZodType, description: string) => ({ status: 200, schema, description });
const created = (schema: z.ZodType, description: string) => ({ status: 201, schema, description });

/**
 * The OpenAPI description of the console's routes (contract §10): sign-in links (organization
 * key), what the sign-in page offers (no credential), the person's routes under `/me` (a
 * session cookie) and the operator's session routes. Spread into `routeDocs` (route-docs.ts),
 * keyed as it is. The browser's sign-in pages (`/sign-in/link`, `/sign-in/oidc…`) and the
 * console's pages are not API operations and are not in the document.
 */
export const sessionRouteDocs: Readonly<Record<string, RouteDoc>> = {
  'POST /humans/:human_id/sign-in-links': {
    operationId: 'createSignInLink',
    tag: 'console',
    summary: 'A one-time sign-in link for a human',
    description:
      'The absolute `url` (from the server\'s public URL) signs its first opener in to the console as the human, until ' +
      '`expires_at` (`ttl_seconds`, 60–604800, default 900). Opening it a second time, or after it expired, signs nobody in.',
    body: CreateSignInLinkBody,
    bodyOptional: true,
    success: created(SignInLink, 'the link (its secret is in the URL, shown only here)'),
  },
  'GET /sign-in/options': {
    operationId: 'getSignInOptions',
    tag: 'console',
    summary: "What the console's sign-in page offers",
    description: 'Whether OpenID Connect sign-in is configured (and where it starts), and whether operators can sign in.',
    success: ok(ConsoleSettings, 'the sign-in options'),
    security: 'none',
  },
  'GET /me': {
    operationId: 'getMe',
    tag: 'console',
    summary: "The session's humans, its CSRF token and when it ends",
    success: ok(Me, 'the person signed in'),
  },
  'POST /me/sign-out': {
    operationId: 'signOut',
    tag: 'console',
    summary: 'End this session',
    description: 'The session ends at once, in every process; the cookie is cleared.',
    success: ok(SignedOut, 'signed out'),
  },
  'GET /me/teams/:team_id': {
    operationId: 'getMyTeam',
    tag: 'console',
    summary: "One of the person's teams with its agents, humans and edges (read-only)",
    description:
      "As a member sees it: the agents without their instructions, tools or budget, the humans without their emails (the person's own is in `GET /me`), " +
      'no count of the threads between others.',
    success: ok(MeTeamGraph, 'the team graph'),
  },
  'GET /me/threads': {
    operationId: 'listMyThreads',
    tag: 'console',
    summary: "Threads on the person's edges, most recently active first",
    description: "Each with the unread count of the person's human on it, the peer, the newest message and whether it awaits that human's answer.",
    query: MeThreadListQuery,
    success: ok(MeThreadList, 'the threads'),
  },
  'GET /me/threads/:thread_id': {
    operationId: 'getMyThreadPage',
    tag: 'console',
    summary: "A page of one of the person's threads",
    description: 'Up to `limit` messages strictly after `after`, oldest first. Reading moves no read mark (POST …/read does).',
    query: MeThreadPageQuery,
    success: ok(MeThreadPage, 'the thread with a page of its messages'),
    errors: ['invalid_cursor'],
  },
  'GET /me/threads/:thread_id/tool-calls': {
    operationId: 'listMyThreadToolCalls',
    tag: 'console',
    summary: "The tool calls of the agents' turns on one of the person's threads",
    description: 'As `GET /threads/{thread_id}/tool-calls`, for a thread on one of the person\'s edges.',
    query: ToolCallListQuery,
    success: ok(ToolCallList, 'a page of tool calls'),
    errors: ['invalid_cursor'],
  },
  'GET /me/threads/:thread_id/stream': {
    operationId: 'streamMyThread',
    tag: 'console',
    summary: "One of the person's threads as it is written, as Server-Sent Events",
    description: 'As `GET /threads/{thread_id}/stream`, for a thread on one of the person\'s edges; it holds a place among the held waits of the session and of the thread\'s organization.',
    query: ThreadStreamQuery,
    success: {
      status: 200,
      description: 'The stream of the thread (Server-Sent Events); it ends when the client closes it or the server stops.',
      stream: { event: ThreadStreamFrame, headers: { 'Cache-Control': 'no-store' } },
    },
    errors: ['invalid_cursor', 'too_many_waits'],
  },
  'POST /me/threads/:thread_id/stop': {
    operationId: 'stopMyThread',
    tag: 'console',
    summary: "Stop the replies being written in one of the person's threads",
    description: 'As `POST /threads/{thread_id}/stop`, for a thread on one of the person\'s edges.',
    success: { status: 202, schema: StopResult, description: 'the agents asked to stop' },
  },
  'POST /me/threads/:thread_id/read': {
    operationId: 'markMyThreadRead',
    tag: 'console',
    summary: "Move the person's read mark forward",
    description: 'Up to `message_id` (default: the newest message); a mark never moves back.',
    body: MarkReadBody,
    bodyOptional: true,
    success: ok(MarkReadResult, "the human's unread count after"),
  },
  'POST /me/threads/:thread_id/messages': {
    operationId: 'postMyMessage',
    tag: 'console',
    summary: "Reply as the person's human on the thread's edge",
    description: 'The sender is fixed by the session and the thread, never by the body.',
    body: MeAppendMessageBody,
    success: created(Message, 'the new message'),
  },
  'GET /me/edges': {
    operationId: 'listMyEdges',
    tag: 'console',
    summary: "The person's edges, each with the peer",
    success: ok(MeEdgeList, 'the edges'),
  },
  'POST /me/edges/:edge_id/threads': {
    operationId: 'openMyThread',
    tag: 'console',
    summary: "Open a thread on one of the person's edges",
    description: "Its first message is from the person's human on the edge; the channel is `web`.",
    body: MeOpenThreadBody,
    success: created(MeThread, 'the new thread'),
  },
  'POST /me/agents/:agent_id/mcp-keys': {
    operationId: 'createMyAgentMcpKey',
    tag: 'console',
    summary: "Connect an external agent of the person's teams: an MCP key (shown once)",
    description: 'Only agents without a provider, of a team of the person, are reached; any other is `not_found`.',
    success: created(CreatedMcpKey, 'the new key with its secret in mcp_key (shown only here)'),
  },
  'GET /me/agents/:agent_id/mcp-keys': {
    operationId: 'listMyAgentMcpKeys',
    tag: 'console',
    summary: "An external agent's MCP keys",
    success: ok(MeMcpKeyList, 'the MCP keys, without secrets'),
  },
  'DELETE /me/agents/:agent_id/mcp-keys/:key_id': {
    operationId: 'revokeMyAgentMcpKey',
    tag: 'console',
    summary: "Revoke an external agent's MCP key",
    success: ok(Revoked, 'the key is revoked'),
  },
  'GET /me/events/stream': {
    operationId: 'streamMyEvents',
    tag: 'console',
    summary: "The organization's event stream, filtered to the person's threads",
    description:
      "text/event-stream as `GET /organizations/{org_id}/events/stream` gives it, with only the events of the person's threads: " +
      '`thread.opened` on their edges, `message.created` from or to their humans, `tool_call.started` and `tool_call.finished` of ' +
      "the agents' turns on their threads. Each event's `id` is an opaque cursor and its data leaves `seq` out: the stream shows " +
      "nothing of the organization's log beyond the person's own events. `org_id` names the organization when the " +
      "person's humans are in several (else 400). Resume with `Last-Event-ID` (or `after`): an id that is not one of the stream's " +
      'is 400 `invalid_cursor`, worded the same whatever it was. The stream ends with the session: at ' +
      'once when one of its humans is deleted, within 15 s of a sign-out elsewhere or its expiry. It holds a place among the held ' +
      'waits of the session and of the organization it is about (429 `too_many_waits` past them).',
    query: MeEventStreamQuery,
    success: {
      status: 200,
      description: "The stream of the person's events (Server-Sent Events); it ends when the client closes it, the session ends or the server stops.",
      stream: { event: PersonStreamedEvent, headers: { 'Cache-Control': 'no-store' } },
    },
    errors: ['invalid_cursor', 'events_expired', 'too_many_waits'],
  },
  'POST /admin/v1/sign-in': {
    operationId: 'adminSignIn',
    tag: 'admin',
    summary: "Start an operator's session (the admin token as bearer)",
    description: 'Sets the `acs_session` cookie of an operator session, which reaches the `/admin/v1` routes only.',
    body: OperatorSignInBody,
    bodyOptional: true,
    success: ok(OperatorSession, 'the operator session'),
    security: 'adminToken',
  },
  'GET /admin/v1/session': {
    operationId: 'adminGetSession',
    tag: 'admin',
    summary: "The operator's session and its CSRF token",
    description: 'Only with an operator session (the admin token alone has no session to show: 401 `unauthenticated`).',
    success: ok(OperatorSession, 'the operator session'),
    security: 'operatorSession',
  },
  'POST /admin/v1/sign-out': {
    operationId: 'adminSignOut',
    tag: 'admin',
    summary: "End the operator's session",
    success: ok(SignedOut, 'signed out'),
  },
};
