/**
 * A typed client for the Agent Collaboration Service REST API (contract §5).
 *
 * One method per route; results are typed by the Zod schemas of `api/schemas.ts`. Every error
 * is an {@link AcsApiError} (`status`, `code`, `requestId`). The API key is held in a private
 * field: it is sent as `X-API-Key` and never appears in a message, a log or `util.inspect`.
 *
 * Requests go straight to undici's dispatcher (the HTTP client Node's own `fetch` is built on,
 * without the WHATWG layer or a body stream): keep-alive connections from undici's global pool,
 * one deadline per request. `fetch` cost 2–5 × the CPU per request of a plain `node:http` request;
 * a dispatch costs less than that (docs/performance.md, "What changed for issue 23"), and on 2
 * cores shared with the service the client's CPU is the service's too.
 */
import { STATUS_CODES } from 'node:http';
import { Agent as UndiciAgent, Dispatcher, getGlobalDispatcher } from 'undici';
import type { z } from 'zod';
import type {
  Agent,
  AgentStatus,
  AgentUsage,
  CreateAgentBody,
  CreateHumanBody,
  CreateOrganizationBody,
  CreateTeamBody,
  Edge,
  Human,
  Message,
  CreatedMcpKey,
  CreatedOrgKey,
  McpKey,
  Organization,
  OrganizationDeletionPreview,
  OrgKey,
  PatchAgentBody,
  PatchHumanBody,
  PatchOrganizationBody,
  PatchTeamBody,
  Provider,
  ProviderKey,
  Team,
  TeamDeletionPreview,
  TeamGraph,
  TeamUsage,
  Thread,
  ThreadPage,
} from '../api/schemas.ts';
import type { SignInLink } from '../api/session-schemas.ts';
import type { CreateTaskBody, Task, TaskArtifactBody, TaskList, TaskState, TaskStatusBody } from '../api/tasks.ts';
import type { ToolCall, ToolCallList } from '../api/agent-tools.ts';
import type { StopResult as StopResultSchema } from '../api/thread-stream.ts';
import type {
  CreatedWebhook,
  CreateWebhookBody,
  DeliveryList,
  DeliveryStatus,
  Event,
  EventPage,
  PatchWebhookBody,
  RotatedWebhookSecret,
  RotateWebhookSecretBody,
  Webhook,
  WebhookDelivery,
} from '../api/events.ts';
import { AcsApiError, errorFromResponse, isTlsFailure, NETWORK_ERROR, tlsReason, type Answer } from './errors.ts';
import { readEventStream, type EventStreamRequest } from './event-stream.ts';
import { readThreadStream, type ThreadStreamItem, type ThreadStreamRequest } from './thread-stream.ts';
import type { HeaderSource, RateLimitPacer } from './rate-limit-pacer.ts';

/** What `POST /threads/{thread_id}/stop` answers: how many agents were asked to stop (contract §13). */
export type StopResult = z.infer<typeof StopResultSchema>;

/** Longest long poll of a thread page, in seconds (contract §5, "Thread page": `wait` is 0–30). */
export const MAX_WAIT_SECONDS = 30;

/** Options of {@link AcsClient}. */
export interface AcsClientOptions {
  /** Base URL of the service, e.g. `http://127.0.0.1:8080` (no `/api/v1`). */
  baseUrl: string;
  /** Organization API key (`acs_org_…`). */
  apiKey: string;
  /**
   * A `fetch` to send requests with instead of undici's dispatcher: tests pass a counting or
   * failing one. Timeouts, aborts and pacing behave the same either way.
   */
  fetch?: typeof fetch;
  /** Per-request timeout in milliseconds (default 60,000; long polls add their `wait`). */
  timeoutMs?: number;
  /** `User-Agent` sent with every request. */
  userAgent?: string;
  /**
   * Paces requests by the service's `RateLimit-*` headers; share one between the clients of one
   * service and key. Without one, requests are sent as they come.
   */
  pacer?: RateLimitPacer;
  /**
   * Longest wait in milliseconds the pacer may impose before a request (default 5,000). A longer
   * one fails the request at once with a 429 `rate_limited` whose `retryAfterSeconds` says when
   * to try again, so a caller with its own retry policy (an activity) waits there instead.
   */
  maxPaceWaitMs?: number;
}

/** Options of a POST: an `Idempotency-Key` (contract §1) derived from a business key. */
export interface PostOptions {
  idempotencyKey?: string;
  /** Aborts the request (a cancelled activity); the error is then a `network_error` naming the abort. */
  signal?: AbortSignal;
}

/** A request body as the client takes it: the input side of its schema (`api/schemas.ts`). */
export type BodyOf<S extends z.ZodType> = z.input<S>;

/** A typed client of one service and one organization key. */
export class AcsClient {
  readonly baseUrl: string;
  readonly #apiKey: string;
  readonly #fetch: typeof fetch | undefined;
  readonly #timeoutMs: number;
  readonly #userAgent: string;
  readonly #pacer: RateLimitPacer | undefined;
  readonly #maxPaceWaitMs: number;
  /** The base URL's origin and path, split once for undici (undefined: not a URL, which each request then reports). */
  readonly #target: { origin: string; prefix: string } | undefined;

  constructor(options: AcsClientOptions) {
    this.baseUrl = normalizeBaseUrl(options.baseUrl);
    this.#target = URL.canParse(this.baseUrl) ? { origin: new URL(this.baseUrl).origin, prefix: new URL(this.baseUrl).pathname.replace(/\/+$/, '') } : undefined;
    this.#apiKey = options.apiKey;
    this.#fetch = options.fetch;
    this.#timeoutMs = options.timeoutMs ?? 60_000;
    this.#userAgent = options.userAgent ?? 'teamctl';
    this.#pacer = options.pacer;
    this.#maxPaceWaitMs = options.maxPaceWaitMs ?? 5_000;
  }

  // ---- organizations ------------------------------------------------------------------------

  /** `GET /api/v1/organizations`: the organizations this key reaches. */
  async listOrganizations(): Promise<Organization[]> {
    return (await this.request<{ organizations: Organization[] }>('GET', '/organizations')).organizations;
  }

  /**
   * `POST /api/v1/organizations` → 201 Organization, provisioned by this key's organization (the
   * key reaches it). Takes a name, or the body (`org_name`, `deletion_protection?`).
   * Errors: `conflict` (name taken; `existingId`), `invalid_request`.
   */
  createOrganization(orgNameOrBody: string | BodyOf<typeof CreateOrganizationBody>, options?: PostOptions): Promise<Organization> {
    const body = typeof orgNameOrBody === 'string' ? { org_name: orgNameOrBody } : orgNameOrBody;
    return this.request('POST', '/organizations', body, options);
  }

  /** `GET /api/v1/organizations/{org_id}`. Errors: `not_found`. */
  getOrganization(orgId: string): Promise<Organization> {
    return this.request('GET', `/organizations/${seg(orgId)}`);
  }

  /**
   * `PATCH /api/v1/organizations/{org_id}` (`deletion_protection?`) → 200 Organization.
   * Errors: `not_found`, `invalid_request`.
   */
  patchOrganization(orgId: string, body: BodyOf<typeof PatchOrganizationBody>): Promise<Organization> {
    return this.request('PATCH', `/organizations/${seg(orgId)}`, body);
  }

  /**
   * `DELETE /api/v1/organizations/{org_id}`: deletes the organization with its teams (and all in
   * them), keys, provider keys and attachments. Nothing is deleted when it is refused.
   * Errors: `forbidden` (this key's own organization), `not_found`, `deletion_protected` (something
   * it would delete is protected; `protectedResources` names each), `in_use` (an organization it
   * provisioned still exists).
   */
  deleteOrganization(orgId: string): Promise<{ deleted: true; org_id: string }> {
    return this.request('DELETE', `/organizations/${seg(orgId)}`);
  }

  /**
   * `GET /api/v1/organizations/{org_id}/deletion-preview`: counts of what {@link deleteOrganization}
   * would remove, and why it would be refused (`protected`, `provisioned_organizations`,
   * `own_organization`). Errors: `not_found`.
   */
  organizationDeletionPreview(orgId: string): Promise<OrganizationDeletionPreview> {
    return this.request('GET', `/organizations/${seg(orgId)}/deletion-preview`);
  }

  // ---- organization keys --------------------------------------------------------------------

  /** `GET /api/v1/organizations/{org_id}/keys`: the organization's active keys (no secrets). */
  async listOrgKeys(orgId: string): Promise<OrgKey[]> {
    return (await this.request<{ keys: OrgKey[] }>('GET', `/organizations/${seg(orgId)}/keys`)).keys;
  }

  /**
   * `POST /api/v1/organizations/{org_id}/keys/{key_id}/rotate` → 201 the new key with its secret
   * (`api_key`, shown only here); the old key expires after `graceSeconds` (0: at once).
   * Errors: `not_found`, `invalid_request`, `key_limit`.
   */
  rotateOrgKey(orgId: string, keyId: string, graceSeconds: number, options?: PostOptions): Promise<CreatedOrgKey> {
    return this.request('POST', `/organizations/${seg(orgId)}/keys/${seg(keyId)}/rotate`, { grace_seconds: graceSeconds }, options);
  }

  // ---- teams --------------------------------------------------------------------------------

  /**
   * `POST /api/v1/organizations/{org_id}/teams` (`team_name`, `description?`, `deletion_protection?`)
   * → 201 Team. Errors: `conflict`, `not_found`, `invalid_request`.
   */
  createTeam(orgId: string, body: BodyOf<typeof CreateTeamBody>, options?: PostOptions): Promise<Team> {
    return this.request('POST', `/organizations/${seg(orgId)}/teams`, body, options);
  }

  /** `GET /api/v1/organizations/{org_id}/teams`. */
  async listTeams(orgId: string): Promise<Team[]> {
    return (await this.request<{ teams: Team[] }>('GET', `/organizations/${seg(orgId)}/teams`)).teams;
  }

  /** `GET /api/v1/teams/{team_id}`: the team with its graph (agents, humans, edges). */
  getTeam(teamId: string): Promise<TeamGraph> {
    return this.request('GET', `/teams/${seg(teamId)}`);
  }

  /** `PATCH /api/v1/teams/{team_id}` (`team_name?`, `description?`, `deletion_protection?`). Errors: `conflict`, `not_found`. */
  updateTeam(teamId: string, body: BodyOf<typeof PatchTeamBody>): Promise<Team> {
    return this.request('PATCH', `/teams/${seg(teamId)}`, body);
  }

  /**
   * `DELETE /api/v1/teams/{team_id}`: deletes the team with its agents, humans, edges, threads and
   * messages. Errors: `not_found`, `deletion_protected` (the team or one of its agents or humans
   * is protected; `protectedResources` names each; nothing is deleted).
   */
  deleteTeam(teamId: string): Promise<{ deleted: true; team_id: string }> {
    return this.request('DELETE', `/teams/${seg(teamId)}`);
  }

  /**
   * `GET /api/v1/teams/{team_id}/deletion-preview`: counts of what {@link deleteTeam} would remove,
   * and in `protected` what would make it refused. Errors: `not_found`.
   */
  teamDeletionPreview(teamId: string): Promise<TeamDeletionPreview> {
    return this.request('GET', `/teams/${seg(teamId)}/deletion-preview`);
  }

  // ---- agents -------------------------------------------------------------------------------

  /** `POST /api/v1/teams/{team_id}/agents` → 201 Agent. Errors: `conflict`, `not_found`. */
  createAgent(teamId: string, body: BodyOf<typeof CreateAgentBody>, options?: PostOptions): Promise<Agent> {
    return this.request('POST', `/teams/${seg(teamId)}/agents`, body, options);
  }

  /** `GET /api/v1/teams/{team_id}/agents`. */
  async listAgents(teamId: string): Promise<Agent[]> {
    return (await this.request<{ agents: Agent[] }>('GET', `/teams/${seg(teamId)}/agents`)).agents;
  }

  /** `GET /api/v1/agents/{agent_id}`. Errors: `not_found`. */
  getAgent(agentId: string): Promise<Agent> {
    return this.request('GET', `/agents/${seg(agentId)}`);
  }

  /** `PATCH /api/v1/agents/{agent_id}`. Errors: `conflict`, `not_found`. */
  updateAgent(agentId: string, body: BodyOf<typeof PatchAgentBody>): Promise<Agent> {
    return this.request('PATCH', `/agents/${seg(agentId)}`, body);
  }

  /**
   * `DELETE /api/v1/agents/{agent_id}` (its MCP keys go with it). Errors: `not_found`,
   * `deletion_protected` while its `deletion_protection` is true, `in_use` while on an edge.
   */
  deleteAgent(agentId: string): Promise<{ deleted: true; agent_id: string }> {
    return this.request('DELETE', `/agents/${seg(agentId)}`);
  }

  // ---- usage --------------------------------------------------------------------------------

  /**
   * `GET /api/v1/agents/{agent_id}/usage`: the agent's provider tokens from `since` on (an ISO
   * 8601 time; default the start of the current UTC day) and its daily budget state.
   * Errors: `not_found`, `invalid_request` (a malformed `since`).
   */
  getAgentUsage(agentId: string, query: { since?: string } = {}): Promise<AgentUsage> {
    return this.request('GET', `/agents/${seg(agentId)}/usage${sinceQuery(query.since)}`);
  }

  /**
   * `GET /api/v1/teams/{team_id}/usage`: the team's provider tokens from `since` on, in total and
   * per agent. Errors: `not_found`, `invalid_request` (a malformed `since`).
   */
  getTeamUsage(teamId: string, query: { since?: string } = {}): Promise<TeamUsage> {
    return this.request('GET', `/teams/${seg(teamId)}/usage${sinceQuery(query.since)}`);
  }

  // ---- humans -------------------------------------------------------------------------------

  /** `POST /api/v1/teams/{team_id}/humans` → 201 Human. Errors: `conflict`, `not_found`, `invalid_request`. */
  createHuman(teamId: string, body: BodyOf<typeof CreateHumanBody>, options?: PostOptions): Promise<Human> {
    return this.request('POST', `/teams/${seg(teamId)}/humans`, body, options);
  }

  /** `GET /api/v1/teams/{team_id}/humans`. */
  async listHumans(teamId: string): Promise<Human[]> {
    return (await this.request<{ humans: Human[] }>('GET', `/teams/${seg(teamId)}/humans`)).humans;
  }

  /** `GET /api/v1/humans/{human_id}`. Errors: `not_found`. */
  getHuman(humanId: string): Promise<Human> {
    return this.request('GET', `/humans/${seg(humanId)}`);
  }

  /** `PATCH /api/v1/humans/{human_id}`. Errors: `conflict`, `not_found`, `invalid_request`. */
  updateHuman(humanId: string, body: BodyOf<typeof PatchHumanBody>): Promise<Human> {
    return this.request('PATCH', `/humans/${seg(humanId)}`, body);
  }

  /**
   * `DELETE /api/v1/humans/{human_id}`. Errors: `not_found`, `deletion_protected` while its
   * `deletion_protection` is true, `in_use` while on an edge.
   */
  deleteHuman(humanId: string): Promise<{ deleted: true; human_id: string }> {
    return this.request('DELETE', `/humans/${seg(humanId)}`);
  }

  // ---- edges --------------------------------------------------------------------------------

  /** `POST /api/v1/teams/{team_id}/edges` → 201 Edge. Errors: `conflict`, `unknown_reference`. */
  createEdge(teamId: string, participants: [string, string], options?: PostOptions): Promise<Edge> {
    return this.request('POST', `/teams/${seg(teamId)}/edges`, { participants }, options);
  }

  /** `GET /api/v1/teams/{team_id}/edges`. */
  async listEdges(teamId: string): Promise<Edge[]> {
    return (await this.request<{ edges: Edge[] }>('GET', `/teams/${seg(teamId)}/edges`)).edges;
  }

  /** `GET /api/v1/edges/{edge_id}`. Errors: `not_found`. */
  getEdge(edgeId: string): Promise<Edge> {
    return this.request('GET', `/edges/${seg(edgeId)}`);
  }

  /** `DELETE /api/v1/edges/{edge_id}` (cascades to its threads and their messages). Errors: `not_found`. */
  deleteEdge(edgeId: string): Promise<{ deleted: true; edge_id: string }> {
    return this.request('DELETE', `/edges/${seg(edgeId)}`);
  }

  // ---- threads and messages -----------------------------------------------------------------

  /** `POST /api/v1/edges/{edge_id}/threads` → 201 Thread. Errors: `not_a_participant`, `not_found`. */
  openThread(
    edgeId: string,
    body: { sender_agent_id: string; content: string; subject?: string; channel?: string; expects_reply?: boolean },
    options?: PostOptions,
  ): Promise<Thread> {
    return this.request('POST', `/edges/${seg(edgeId)}/threads`, body, options);
  }

  /** `GET /api/v1/edges/{edge_id}/threads`, newest first. */
  async listThreads(edgeId: string): Promise<Thread[]> {
    return (await this.request<{ threads: Thread[] }>('GET', `/edges/${seg(edgeId)}/threads`)).threads;
  }

  /**
   * `GET /api/v1/threads/{thread_id}`: one page of messages strictly after `after`.
   * `wait` (seconds, 0–30) holds the request until a message arrives. Errors: `invalid_cursor`.
   */
  getThread(threadId: string, query: { after?: string | null; limit?: number; wait?: number } = {}, options?: { signal?: AbortSignal }): Promise<ThreadPage> {
    const params = new URLSearchParams();
    if (query.after) params.set('after', query.after);
    if (query.limit !== undefined) params.set('limit', String(query.limit));
    if (query.wait !== undefined) params.set('wait', String(query.wait));
    const qs = params.size > 0 ? `?${params}` : '';
    return this.request('GET', `/threads/${seg(threadId)}${qs}`, undefined, options, (query.wait ?? 0) * 1000);
  }

  /** `POST /api/v1/threads/{thread_id}/messages` → 201 Message. Errors: `not_a_participant`. */
  appendMessage(
    threadId: string,
    body: { sender_agent_id: string; content: string; attachments?: string[]; expects_reply?: boolean },
    options?: PostOptions,
  ): Promise<Message> {
    return this.request('POST', `/threads/${seg(threadId)}/messages`, body, options);
  }

  /**
   * `GET /api/v1/threads/{thread_id}/stream` (contract §13) as an async iterator of the thread's
   * items in its order: messages (`message.created`), a reply's deltas as it is written
   * (`message.delta`), a turn's steps and restarts (`turn.step`, `turn.restarted`) and its tool
   * calls (`tool_call.*`), each with its position as `id`. From `after` (absent: after the thread's
   * last message, so a reply being written is seen from its first delta; `0`: the whole thread),
   * resumed from the last position received when the connection drops, with no gap and no repeat
   * (client/thread-stream.ts). Ends when `signal` aborts.
   * Errors (thrown by the iterator): `not_found`, `invalid_cursor`, `too_many_waits`.
   */
  streamThread(threadId: string, request: ThreadStreamRequest = {}): AsyncGenerator<ThreadStreamItem> {
    return readThreadStream(
      { fetch: this.#fetch ?? globalThis.fetch, url: `${this.baseUrl}/api/v1/threads/${seg(threadId)}/stream`, headers: { 'x-api-key': this.#apiKey, 'user-agent': this.#userAgent } },
      request,
    );
  }

  /**
   * `POST /api/v1/threads/{thread_id}/stop` → 202 `{thread_id, stopping}` (contract §13): ends
   * every turn in progress on the thread; the text written so far is posted as the reply with
   * `stopped: true`, on the thread's stream. `stopping` is how many agents were asked to stop (0:
   * nothing was being written). Errors: `not_found`.
   */
  stopThread(threadId: string, options?: PostOptions): Promise<StopResult> {
    return this.request('POST', `/threads/${seg(threadId)}/stop`, undefined, options);
  }

  // ---- tasks (contract §12) -----------------------------------------------------------------

  /**
   * `POST /api/v1/edges/{edge_id}/tasks` → 201 Task: `requester_id` (one of the edge's two
   * participants; the other is the assignee) asks for the work in `parts` (text, data, or files:
   * attachments of the organization), with an optional `title`. Opens the task's thread with the
   * parts as the requester's first message; the task starts `submitted`.
   * Errors: `not_found` (edge), `not_a_participant`, `unknown_reference` (a file's attachment), `invalid_request`.
   */
  createTask(edgeId: string, body: BodyOf<typeof CreateTaskBody>, options?: PostOptions): Promise<Task> {
    return this.request('POST', `/edges/${seg(edgeId)}/tasks`, body, options);
  }

  /** `GET /api/v1/tasks/{task_id}`: the task with its state, status message and artifacts. Errors: `not_found`. */
  getTask(taskId: string, options?: { signal?: AbortSignal }): Promise<Task> {
    return this.request('GET', `/tasks/${seg(taskId)}`, undefined, options);
  }

  /**
   * `GET /api/v1/teams/{team_id}/tasks`: one page of the team's tasks, newest first, of one
   * `state`, of one `assignee_id`, after the task `after`; `limit` 1–200 (default 50). Pass
   * `next_after` as the next `after`; an empty page ends the list.
   * Errors: `not_found` (team), `invalid_cursor` (an `after` that is no task of the team), `invalid_request`.
   */
  listTasks(teamId: string, query: { state?: TaskState; assignee_id?: string; after?: string | undefined; limit?: number } = {}, options?: { signal?: AbortSignal }): Promise<TaskList> {
    const params = new URLSearchParams();
    if (query.state) params.set('state', query.state);
    if (query.assignee_id) params.set('assignee_id', query.assignee_id);
    if (query.after) params.set('after', query.after);
    if (query.limit !== undefined) params.set('limit', String(query.limit));
    const qs = params.size > 0 ? `?${params}` : '';
    return this.request('GET', `/teams/${seg(teamId)}/tasks${qs}`, undefined, options);
  }

  /**
   * `POST /api/v1/tasks/{task_id}/cancel` → the task, `canceled` (as its requester).
   * Errors: `not_found`, `task_final` (409: it is completed, failed, canceled or rejected already; nothing changed).
   */
  cancelTask(taskId: string, options?: PostOptions): Promise<Task> {
    return this.request('POST', `/tasks/${seg(taskId)}/cancel`, undefined, options);
  }

  /**
   * `POST /api/v1/tasks/{task_id}/status` → the task after the change (as its assignee): `state`
   * (any but `submitted`) and an optional `message`, posted to the task's thread as the assignee
   * and kept as its `status_message`. Errors: `not_found`, `task_final` (409), `invalid_request`.
   */
  setTaskStatus(taskId: string, body: BodyOf<typeof TaskStatusBody>, options?: PostOptions): Promise<Task> {
    return this.request('POST', `/tasks/${seg(taskId)}/status`, body, options);
  }

  /**
   * `POST /api/v1/tasks/{task_id}/artifacts` → 201 the task, the new artifact last (as its
   * assignee): `{name?, parts}`. Errors: `not_found`, `task_final` (409), `unknown_reference`, `invalid_request`.
   */
  addTaskArtifact(taskId: string, body: BodyOf<typeof TaskArtifactBody>, options?: PostOptions): Promise<Task> {
    return this.request('POST', `/tasks/${seg(taskId)}/artifacts`, body, options);
  }

  // ---- tool calls (contract §11) ------------------------------------------------------------

  /**
   * `GET /api/v1/threads/{thread_id}/tool-calls`: one page of the tool calls of the agents' turns
   * on the thread (each answers a message of it), oldest first, after the tool call `after`
   * (absent: from the first); `limit` 1–500 (default 100). Pass `next_after` as the next `after`;
   * a page shorter than `limit` is the last for now. Errors: `not_found` (thread out of reach),
   * `invalid_cursor` (an `after` that is no tool call of the thread), `invalid_request`.
   */
  listToolCalls(threadId: string, query: { after?: string | undefined; limit?: number } = {}, options?: { signal?: AbortSignal }): Promise<ToolCallList> {
    const params = new URLSearchParams();
    if (query.after) params.set('after', query.after);
    if (query.limit !== undefined) params.set('limit', String(query.limit));
    const qs = params.size > 0 ? `?${params}` : '';
    return this.request('GET', `/threads/${seg(threadId)}/tool-calls${qs}`, undefined, options);
  }

  /**
   * Every tool call of the thread's turns, oldest first: {@link listToolCalls} page after page
   * (`pageSize` a page, 1–500, default 500) until a short page, from after the tool call `after`
   * when given. Errors: those of {@link listToolCalls}.
   */
  async allToolCalls(threadId: string, options: { after?: string; pageSize?: number; signal?: AbortSignal } = {}): Promise<ToolCall[]> {
    const pageSize = options.pageSize ?? 500;
    const all: ToolCall[] = [];
    let after = options.after;
    for (;;) {
      const page = await this.listToolCalls(threadId, { after, limit: pageSize }, options.signal ? { signal: options.signal } : undefined);
      all.push(...page.tool_calls);
      if (page.tool_calls.length < pageSize || page.next_after === null) return all;
      after = page.next_after;
    }
  }

  // ---- provider keys ------------------------------------------------------------------------

  /** `PUT /api/v1/organizations/{org_id}/api-keys/{provider}`: sets a provider key (write-only). */
  putProviderKey(orgId: string, provider: Provider, apiKey: string): Promise<ProviderKey> {
    return this.request('PUT', `/organizations/${seg(orgId)}/api-keys/${seg(provider)}`, { api_key: apiKey });
  }

  /** `GET /api/v1/organizations/{org_id}/api-keys`: providers with a key, each with its `key_hint`. */
  async listProviderKeys(orgId: string): Promise<ProviderKey[]> {
    return (await this.request<{ provider_keys: ProviderKey[] }>('GET', `/organizations/${seg(orgId)}/api-keys`)).provider_keys;
  }

  /**
   * `DELETE /api/v1/organizations/{org_id}/api-keys/{provider}`. Errors: `not_found` (organization,
   * or no key set for the provider), `invalid_request` (unknown provider).
   */
  deleteProviderKey(orgId: string, provider: Provider): Promise<{ deleted: true; provider: string }> {
    return this.request('DELETE', `/organizations/${seg(orgId)}/api-keys/${seg(provider)}`);
  }

  // ---- MCP keys -----------------------------------------------------------------------------

  /**
   * `POST /api/v1/agents/{agent_id}/mcp-keys` → 201 the agent's new MCP key with its secret
   * (`mcp_key`, shown only here). Errors: `not_found` (agent).
   */
  createMcpKey(agentId: string, options?: PostOptions): Promise<CreatedMcpKey> {
    return this.request('POST', `/agents/${seg(agentId)}/mcp-keys`, {}, options);
  }

  /** `GET /api/v1/agents/{agent_id}/mcp-keys`: the agent's active MCP keys, without secrets. Errors: `not_found`. */
  async listMcpKeys(agentId: string): Promise<McpKey[]> {
    return (await this.request<{ mcp_keys: McpKey[] }>('GET', `/agents/${seg(agentId)}/mcp-keys`)).mcp_keys;
  }

  /** `DELETE /api/v1/agents/{agent_id}/mcp-keys/{key_id}`: revokes the key at once. Errors: `not_found` (agent or key). */
  revokeMcpKey(agentId: string, keyId: string): Promise<{ revoked: true; key_id: string }> {
    return this.request('DELETE', `/agents/${seg(agentId)}/mcp-keys/${seg(keyId)}`);
  }

  /**
   * `POST /api/v1/humans/{human_id}/sign-in-links` → 201 a one-time sign-in link of the human
   * for the console (contract §10): `{url, expires_at, human_id}`; the URL works once, for
   * `ttlSeconds` (60–604800, default 900). Errors: `not_found` (human), `invalid_request`.
   */
  createSignInLink(humanId: string, options: { ttlSeconds?: number } = {}): Promise<SignInLink> {
    return this.request('POST', `/humans/${seg(humanId)}/sign-in-links`, options.ttlSeconds === undefined ? {} : { ttl_seconds: options.ttlSeconds });
  }

  // ---- events and webhooks (contract §9) ------------------------------------------------------

  /**
   * `GET /api/v1/organizations/{org_id}/events`: events after the seq `after` (absent: from the
   * oldest kept), oldest first, of `types` (`message.*` for a family) and `teamId`; pass
   * `next_after` as the next `after`. `wait` (seconds, 0–30) holds the request until an event comes.
   * Errors: `events_expired` (410: `after` is older than the oldest event kept), `invalid_cursor`,
   * `not_found`, `too_many_waits` (429).
   */
  listEvents(
    orgId: string,
    query: { after?: number; limit?: number; wait?: number; types?: readonly string[]; teamId?: string } = {},
    options?: { signal?: AbortSignal },
  ): Promise<EventPage> {
    const params = new URLSearchParams();
    if (query.after !== undefined) params.set('after', String(query.after));
    if (query.limit !== undefined) params.set('limit', String(query.limit));
    if (query.wait !== undefined) params.set('wait', String(query.wait));
    if (query.types?.length) params.set('types', query.types.join(','));
    if (query.teamId) params.set('team_id', query.teamId);
    const qs = params.size > 0 ? `?${params}` : '';
    return this.request('GET', `/organizations/${seg(orgId)}/events${qs}`, undefined, options, (query.wait ?? 0) * 1000);
  }

  /**
   * `GET /api/v1/organizations/{org_id}/events/stream` as an async iterator of events, in seq
   * order, from `after` (absent: from now), reconnecting from the last event received when the
   * connection drops (client/event-stream.ts). Ends when `signal` aborts.
   * Errors (thrown by the iterator): `events_expired`, `invalid_cursor`, `not_found`, `too_many_waits`.
   */
  streamEvents(orgId: string, request: EventStreamRequest = {}): AsyncGenerator<Event> {
    return readEventStream(
      // A stream held open for a long time: its per-request CPU does not matter, fetch's streaming body does.
      { fetch: this.#fetch ?? globalThis.fetch, url: `${this.baseUrl}/api/v1/organizations/${seg(orgId)}/events/stream`, headers: { 'x-api-key': this.#apiKey, 'user-agent': this.#userAgent } },
      request,
    );
  }

  /**
   * `POST /api/v1/organizations/{org_id}/webhooks` → 201 the webhook with its `secret` (shown only
   * here and by rotation). Errors: `webhook_url_refused`, `webhook_limit`, `invalid_request`.
   */
  createWebhook(orgId: string, body: BodyOf<typeof CreateWebhookBody>, options?: PostOptions): Promise<CreatedWebhook> {
    return this.request('POST', `/organizations/${seg(orgId)}/webhooks`, body, options);
  }

  /** `GET /api/v1/organizations/{org_id}/webhooks`: the organization's webhooks, without secrets. */
  async listWebhooks(orgId: string): Promise<Webhook[]> {
    return (await this.request<{ webhooks: Webhook[] }>('GET', `/organizations/${seg(orgId)}/webhooks`)).webhooks;
  }

  /** `GET /api/v1/webhooks/{webhook_id}`. Errors: `not_found`. */
  getWebhook(webhookId: string): Promise<Webhook> {
    return this.request('GET', `/webhooks/${seg(webhookId)}`);
  }

  /** `PATCH /api/v1/webhooks/{webhook_id}` (`url`, `events`, `description`, `status`). Errors: `not_found`, `webhook_url_refused`. */
  updateWebhook(webhookId: string, body: BodyOf<typeof PatchWebhookBody>): Promise<Webhook> {
    return this.request('PATCH', `/webhooks/${seg(webhookId)}`, body);
  }

  /** `DELETE /api/v1/webhooks/{webhook_id}`: the webhook and its delivery log. Errors: `not_found`. */
  deleteWebhook(webhookId: string): Promise<{ deleted: true; webhook_id: string }> {
    return this.request('DELETE', `/webhooks/${seg(webhookId)}`);
  }

  /**
   * `POST /api/v1/webhooks/{webhook_id}/rotate-secret`: a new secret (given or generated, shown only
   * here); the previous one still signs for `grace_seconds` (default 86400). Errors: `not_found`.
   */
  rotateWebhookSecret(webhookId: string, body: BodyOf<typeof RotateWebhookSecretBody> = {}, options?: PostOptions): Promise<RotatedWebhookSecret> {
    return this.request('POST', `/webhooks/${seg(webhookId)}/rotate-secret`, body, options);
  }

  /** `GET /api/v1/webhooks/{webhook_id}/deliveries`: the delivery log, newest event first. Errors: `not_found`, `invalid_cursor`. */
  listWebhookDeliveries(webhookId: string, query: { status?: DeliveryStatus; limit?: number; after?: string } = {}): Promise<DeliveryList> {
    const params = new URLSearchParams();
    if (query.status) params.set('status', query.status);
    if (query.limit !== undefined) params.set('limit', String(query.limit));
    if (query.after) params.set('after', query.after);
    const qs = params.size > 0 ? `?${params}` : '';
    return this.request('GET', `/webhooks/${seg(webhookId)}/deliveries${qs}`);
  }

  /** `POST /api/v1/webhooks/{webhook_id}/deliveries/{delivery_id}/retry` → 202: the event is sent again now, once. Errors: `not_found`. */
  retryWebhookDelivery(webhookId: string, deliveryId: string, options?: PostOptions): Promise<WebhookDelivery> {
    return this.request('POST', `/webhooks/${seg(webhookId)}/deliveries/${seg(deliveryId)}/retry`, undefined, options);
  }

  // ---- transport ----------------------------------------------------------------------------

  /**
   * Sends one request under `/api/v1` and returns the parsed JSON body of a 2xx answer.
   * Raises {@link AcsApiError} for every other answer and for network failures.
   */
  async request<T>(
    method: string,
    path: string,
    body?: unknown,
    options?: PostOptions,
    extraTimeoutMs = 0,
  ): Promise<T> {
    const headers: Record<string, string> = {
      accept: 'application/json',
      'x-api-key': this.#apiKey,
      'user-agent': this.#userAgent,
    };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (options?.idempotencyKey) headers['idempotency-key'] = options.idempotencyKey;
    await this.#pace(method, path);
    const timeoutMs = this.#timeoutMs + extraTimeoutMs;
    let answer: Answer;
    try {
      answer = await this.#send(method, path, headers, body === undefined ? undefined : JSON.stringify(body), timeoutMs, options?.signal);
    } catch (cause) {
      this.#pacer?.settle(Date.now(), 0, undefined);
      throw new AcsApiError({
        status: 0,
        code: NETWORK_ERROR,
        message: `${method} ${path}: cannot reach ACS at ${this.baseUrl} (${describeNetworkFailure(cause, timeoutMs)})`,
        cause,
      });
    }
    this.#pacer?.settle(Date.now(), answer.status, answer.headers);
    if (answer.status >= 200 && answer.status < 300) return (answer.text ? JSON.parse(answer.text) : undefined) as T;
    throw errorFromResponse(method, path, answer);
  }

  /**
   * Sends one request and reads its whole answer, within `timeoutMs` from now (the answer's body
   * included) or until `signal` aborts: through undici's dispatcher ({@link dispatch}), or the
   * `fetch` given. A timeout rejects with an error named `TimeoutError`, an abort with the
   * signal's reason.
   */
  async #send(method: string, path: string, headers: Record<string, string>, body: string | undefined, timeoutMs: number, signal: AbortSignal | undefined): Promise<Answer> {
    if (!this.#fetch) {
      if (!this.#target) throw new TypeError(`Invalid URL: ${this.baseUrl}`);
      return dispatch(this.#target.origin, `${this.#target.prefix}/api/v1${path}`, method, headers, body, timeoutMs, signal);
    }
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(timeoutError(timeoutMs)), timeoutMs);
    const onAbort = () => controller.abort(signal?.reason);
    if (signal?.aborted) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const response = await this.#fetch(`${this.baseUrl}/api/v1${path}`, { method, headers, body, signal: controller.signal });
      return { status: response.status, statusText: response.statusText, headers: response.headers, text: await response.text() };
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
  }

  /** Waits for the pacer's leave to send; a wait longer than `maxPaceWaitMs` becomes a 429 at once. */
  async #pace(method: string, path: string): Promise<void> {
    if (!this.#pacer) return;
    for (;;) {
      const waitMs = this.#pacer.reserve(Date.now());
      if (waitMs === 0) return;
      if (waitMs > this.#maxPaceWaitMs) {
        const retryAfterSeconds = Math.ceil(waitMs / 1000);
        throw new AcsApiError({
          status: 429,
          code: 'rate_limited',
          message: `${method} ${path}: not sent: this key's rate limit is spent for ${retryAfterSeconds} s more (RateLimit-Remaining 0)`,
          retryAfterSeconds,
        });
      }
      await new Promise((resolve) => setTimeout(resolve, waitMs));
    }
  }

  /** Keeps the key out of `console.log(client)` and `util.inspect`. */
  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return `AcsClient { baseUrl: '${this.baseUrl}' }`;
  }
}

function seg(value: string): string {
  return encodeURIComponent(value);
}

function sinceQuery(since: string | undefined): string {
  return since === undefined ? '' : `?${new URLSearchParams({ since })}`;
}

/** Why a request got no answer, by the system's or undici's error code, as a person reads it. */
const NETWORK_FAILURES: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ENOTFOUND: 'no such host',
  EAI_AGAIN: 'name lookup failed',
  ETIMEDOUT: 'connection timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  EPIPE: 'connection closed while sending',
  UND_ERR_CONNECT_TIMEOUT: 'connection timed out',
  UND_ERR_SOCKET: 'connection closed',
  UND_ERR_HEADERS_TIMEOUT: 'no answer in time',
  UND_ERR_BODY_TIMEOUT: 'the answer stopped arriving',
};

/**
 * The reason a request failed, in words: `connection refused`, `no such host`, `no answer within
 * 60 s`, `TLS: certificate has expired`; the innermost error's message when its code is not
 * known (undici's `bad port`), never a bare class name such as `TypeError`.
 * Input: what the request threw (undici's dispatcher or a `fetch`) and the request's timeout in ms.
 */
export function describeNetworkFailure(cause: unknown, timeoutMs: number): string {
  if (cause instanceof Error && cause.name === 'TimeoutError') return `no answer within ${Math.round(timeoutMs / 1000)} s`;
  if (cause instanceof Error && cause.name === 'AbortError') return 'aborted';
  // fetch wraps the socket's error in a TypeError("fetch failed"); happy eyeballs in an AggregateError.
  let inner: unknown = cause instanceof Error && cause.cause !== undefined ? cause.cause : cause;
  if (inner instanceof AggregateError && inner.errors.length > 0) inner = inner.errors[0];
  const { code, message } = (inner ?? {}) as { code?: unknown; message?: unknown };
  if (typeof code === 'string') {
    if (NETWORK_FAILURES[code]) return NETWORK_FAILURES[code];
    if (isTlsFailure(code)) return `TLS: ${tlsReason(code, typeof message === 'string' ? message : undefined)}`;
    return code;
  }
  if (typeof message === 'string' && message !== '' && message !== 'fetch failed') return message;
  return 'no connection';
}

/**
 * A base URL as the client uses it: without trailing slashes and without the API prefix, which
 * the client adds itself — `http://127.0.0.1:8080/api/v1/` and `…/v1` are `http://127.0.0.1:8080`,
 * so a URL copied from the API's documentation works as given.
 */
export function normalizeBaseUrl(url: string): string {
  return url.replace(/\/+$/, '').replace(/\/(?:api\/)?v1$/, '');
}

let ownAgent: UndiciAgent | undefined;

/**
 * undici's global dispatcher when it is this package's (it is unless something replaced it): the
 * keep-alive pool every client shares, and the one tests swap. Node 22's own `fetch` installs its
 * bundled undici 6 under the same global name when it runs before this package is loaded, and that
 * dispatcher does not take the handler API used here (it fails with `UND_ERR_INVALID_ARG`): then
 * a pool of this package's own, made once.
 */
function usableDispatcher(): Dispatcher {
  const global = getGlobalDispatcher();
  if (global instanceof Dispatcher) return global;
  ownAgent ??= new UndiciAgent();
  return ownAgent;
}

/**
 * Sends one request through undici's global dispatcher (its keep-alive pool) and collects the
 * whole answer, within `timeoutMs` from now or until `signal` aborts: the lowest level of undici,
 * with no body stream and one promise per request. A timeout rejects with an error named
 * `TimeoutError`, an abort with the signal's reason, a failure with undici's or the socket's
 * error (`ECONNREFUSED`, …).
 */
function dispatch(
  origin: string,
  path: string,
  method: string,
  headers: Record<string, string>,
  body: string | undefined,
  timeoutMs: number,
  signal: AbortSignal | undefined,
): Promise<Answer> {
  return new Promise<Answer>((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    let controller: Dispatcher.DispatchController | undefined;
    let abortedWith: Error | undefined;
    const timer = setTimeout(() => abort(timeoutError(timeoutMs)), timeoutMs);
    signal?.addEventListener('abort', onAbort, { once: true });
    function onAbort(): void {
      abort(signal?.reason instanceof Error ? signal.reason : new DOMException('This operation was aborted', 'AbortError'));
    }
    function abort(reason: Error): void {
      abortedWith ??= reason;
      if (controller) controller.abort(reason);
      else {
        // Still connecting: fail now; the request is cancelled as soon as undici starts it.
        done();
        reject(reason);
      }
    }
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
    let status = 0;
    let responseHeaders: Record<string, string | string[] | undefined> = {};
    const chunks: Buffer[] = [];
    usableDispatcher().dispatch(
      { origin, path, method, headers, body: body ?? null },
      {
        onRequestStart(started) {
          controller = started;
          if (abortedWith) started.abort(abortedWith);
        },
        // Called again for each 1xx before the final answer: the last one counts.
        onResponseStart(_controller, statusCode, received) {
          status = statusCode;
          responseHeaders = received as Record<string, string | string[] | undefined>;
        },
        onResponseData(_controller, chunk) {
          chunks.push(chunk);
        },
        onResponseEnd() {
          done();
          resolve({ status, statusText: STATUS_CODES[status] ?? '', headers: headerSource(responseHeaders), text: Buffer.concat(chunks).toString('utf8') });
        },
        onResponseError(_controller, error) {
          done();
          reject(abortedWith ?? error);
        },
      },
    );
  });
}

/** undici's header object (lower-case names; a repeated header as an array) read as `Headers` are. */
function headerSource(headers: Record<string, string | string[] | undefined>): HeaderSource {
  return {
    get(name: string): string | null {
      const value = headers[name.toLowerCase()];
      if (value === undefined) return null;
      return Array.isArray(value) ? value.join(', ') : value;
    },
  };
}

/** The error a request's deadline aborts it with (its name is what {@link describeNetworkFailure} reads). */
function timeoutError(timeoutMs: number): Error {
  const error = new Error(`no answer within ${timeoutMs} ms`);
  error.name = 'TimeoutError';
  return error;
}
