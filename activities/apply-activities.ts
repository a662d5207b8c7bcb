/**
 * The activities of `apply`: each makes one idempotent change on the service.
 *
 * Idempotency comes from business keys, never from activity ids (they restart in every run):
 * a create whose name is already taken (409 `conflict`, a retry after a lost response, or an
 * interrupted earlier run) adopts the `existing_id` and brings it up to date instead. No
 * `Idempotency-Key` is sent: a replayed answer could name a resource deleted since, for 24 hours,
 * while the name is always the live truth. Secrets
 * (the organization key, provider keys, webhook secrets, agents' MCP header values, `tool-headers.ts`)
 * are resolved here, at the moment of the call; the
 * organization key from the connection's keyring (`apiKeyEnv`, then `apiKeyEnvFallbacks`,
 * `activities/keyring.ts`), so an apply carries on when a key is rotated out under it.
 */
import type { Organization, OrganizationDeletionPreview, Provider, Team, TeamDeletionPreview, TeamGraph } from '../api/schemas.ts';
import { AcsApiError } from '../client/errors.ts';
import { AcsClient } from '../client/acs-client.ts';
import { RateLimitPacer } from '../client/rate-limit-pacer.ts';
import { maskedKeyHint } from '../api/provider-key-hint.ts';
import { fingerprintMatches } from '../api/webhook-fingerprint.ts';
import { resolveSecret, resolveWebhookSecret, secretHint } from '../definitions/secrets.ts';
import { agentDiff, diffFields, patchOf } from '../plan/plan.ts';
import { agentHeaderRefs, type AgentHeaderRefs } from '../plan/agent-tools.ts';
import { A2A_HEADERS } from '../plan/remote-a2a.ts';
import type { DeletionPreviews } from '../plan/cascades.ts';
import { runPlan, type PlanRequest } from '../plan/run-plan.ts';
import type { AgentWire, Cascade, DesiredState, FieldDiff, HumanWire, ObservedProviderKey, ObservedTeam, ObservedWebhook, OrganizationWire, TeamWire, WebhookWire } from '../plan/types.ts';
import type { Connection } from './connection.ts';
import { activityContext } from './activity-context.ts';
import { toApplicationFailure } from './failures.ts';
import { createKeyring } from './keyring.ts';
import { retrying } from './retrying.ts';
import type { RetryWait } from './retrying.ts';
import { readRemoteCard, requireRemoteCard, type CardVerdict } from './remote-cards.ts';
import { agentHeaderMatches, judgeHeaders, resolveAgentHeaders, resolveHeaders, resolveToolFields, type ResolvedAgentHeaders } from './tool-headers.ts';
import { mapBounded } from '../workflows/bounded.ts';
import { jsonBytes } from '../workflows/payload-bytes.ts';
import { ApplicationFailure } from '@temporalio/common';
import type { ActivityMetrics, ApplyChangeKind } from './activity-metrics.ts';

/** Dependencies of the activities: where secrets come from and how HTTP is sent. */
export interface ActivityDeps {
  /** Environment that `${env:NAME}` references and the keyring's variables resolve against (default `process.env`). */
  env?: NodeJS.ProcessEnv;
  /** `fetch` for the client; tests pass a counting or failing one. */
  fetch?: typeof fetch;
  /** Hears of each long wait before a step's next attempt in `runSteps` (the CLI shows it; see `RetryOptions.onWait`). */
  onRetryWait?: (wait: RetryWait) => void;
  /** A worker's metrics (`teamctl worker --metrics-listen`): each change of `runSteps` is counted once its retries ended. */
  metrics?: ActivityMetrics;
}

/** Result of a change-activity: the resource's id and what was done. */
export interface EnsureResult {
  id: string;
  outcome: 'created' | 'updated' | 'deleted' | 'unchanged';
}

/** What {@link createApplyActivities}' `readOrganization` sees: the organization, its provider keys and its teams (no graphs). */
export interface ObservedOrganization {
  /** Null when no organization of that name is reachable with the key. */
  organization: Organization | null;
  providerKeys: ObservedProviderKey[];
  /** Every team of the organization, without its graph. */
  teams: Team[];
  /** The organization's webhooks, each compared with the desired secret of its name (when there is one). */
  webhooks: ObservedWebhook[];
  /**
   * With `teamGraphs` asked: the graphs of the first teams of `teams`, in that order, as many as
   * fit in the byte budget (see {@link GraphRead}); the others are read with `readTeams`.
   */
  graphs?: ObservedTeam[];
  /**
   * With `inSyncFor` asked and every team's graph read: true when that plan over the live state
   * has no change; the provider keys, teams and graphs are then left out (nothing needs them).
   */
  inSync?: boolean;
}

/**
 * How many team graphs one read call returns: it reads up to `maxTeams` at once, `parallelism`
 * requests in flight, and returns the first of them, in order, while their JSON stays within
 * `maxBytes` bytes of UTF-8 (`workflows/payload-bytes.ts`; at least one), so that a call's result
 * stays below Temporal's 2 MB per payload whatever the teams hold.
 */
export interface GraphRead {
  parallelism: number;
  maxTeams: number;
  maxBytes: number;
}

/**
 * Reads the graphs of up to `read.maxTeams` of `teamIds` and returns the first, in order, that fit
 * in `read.maxBytes` of JSON (at least one), each agent's MCP header values judged against
 * `headers` (the desired agents' resolved values).
 */
async function readGraphs(client: AcsClient, teamIds: readonly string[], read: GraphRead, headers: readonly ResolvedAgentHeaders[] = []): Promise<ObservedTeam[]> {
  const graphs = await mapBounded(teamIds.slice(0, read.maxTeams), read.parallelism, async (teamId) => judgeHeaders(observedTeam(await client.getTeam(teamId)), headers));
  let bytes = 0;
  let keep = 0;
  while (keep < graphs.length) {
    bytes += jsonBytes(graphs[keep]);
    if (keep > 0 && bytes > read.maxBytes) break;
    keep++;
  }
  return graphs.slice(0, keep);
}

/** The bodies a create sends, by kind (the desired fields, `plan/types.ts`). */
export interface CreateBodies {
  organization: OrganizationWire;
  team: TeamWire;
  agent: AgentWire;
  human: HumanWire;
  /** The two participants' ids. */
  edge: { participants: [string, string] };
}

/** Kinds of resource the activities create, patch and delete alike (provider keys are set by PUT). */
export type ResourceKind = keyof CreateBodies;

/** Kinds with fields to patch. */
export type PatchableKind = Exclude<ResourceKind, 'edge'>;

/**
 * `ensure`'s input: the kind, the parent it is created under (the organization for a team, the
 * team for a participant or an edge; unused for the organization) and the body.
 */
export type EnsureInput = { [K in ResourceKind]: { connection: Connection; kind: K; parentId: string; fields: CreateBodies[K] } }[ResourceKind];

/** `update`'s input: the kind, the live id and the fields to change. */
export type UpdateInput = { [K in PatchableKind]: { connection: Connection; kind: K; id: string; patch: Partial<CreateBodies[K]> } }[PatchableKind];

/** `remove`'s input: the kind and the live id (a delete of an id already gone succeeds). */
export interface RemoveInput {
  connection: Connection;
  kind: ResourceKind;
  id: string;
}

/** The input of each activity that makes one change, by name. */
export interface StepInputs {
  ensure: EnsureInput;
  update: UpdateInput;
  remove: RemoveInput;
  putProviderKey: { connection: Connection; orgId: string; provider: Provider; secretRef: string };
  deleteProviderKey: { connection: Connection; orgId: string; provider: Provider };
  /** Creates a webhook by name (or adopts the one of that name) with the secret `secretRef` points at. */
  ensureWebhook: { connection: Connection; orgId: string; fields: WebhookWire; secretRef: string };
  /** Patches a webhook; with `secretRef`, rotates its secret to that one (unless it holds it already). */
  updateWebhook: { connection: Connection; id: string; patch: Partial<WebhookWire>; secretRef?: string | undefined };
  deleteWebhook: { connection: Connection; id: string };
}

/** One change as a call of the activity that makes it (`runSteps` carries several). */
export type Step = { [K in keyof StepInputs]: { op: K; input: StepInputs[K] } }[keyof StepInputs];

/**
 * In a step's input, in place of an id: the id of what an earlier step of the same `runSteps` call
 * made (its index in `steps`), so that one call can create a team and then its participants and
 * edges. `runSteps` puts the id in before it runs the step.
 */
export interface ResultOf {
  resultOf: number;
}

/** Whether `value` is a {@link ResultOf}. */
function isResultOf(value: unknown): value is ResultOf {
  return typeof value === 'object' && value !== null && Object.keys(value).length === 1 && typeof (value as ResultOf).resultOf === 'number';
}

/**
 * A step's input with every {@link ResultOf} replaced by the id that step made. Errors: a
 * reference to a step not run before this one (a bug in the caller's batch) throws.
 */
function resolveResults<T>(input: T, results: readonly EnsureResult[]): T {
  if (isResultOf(input)) {
    const made = results[input.resultOf];
    if (!made) throw new Error(`runSteps: a step refers to the result of step ${input.resultOf}, which has not run before it`);
    return made.id as T;
  }
  if (Array.isArray(input)) return input.map((item) => resolveResults(item, results)) as T;
  if (typeof input === 'object' && input !== null) {
    return Object.fromEntries(Object.entries(input).map(([key, value]) => [key, resolveResults(value, results)])) as T;
  }
  return input;
}

/** How the activities create, read back, patch and delete one kind of resource through the client. */
interface Endpoint<B> {
  /** Creates under its parent; returns the new id. */
  create(parentId: string, body: B): Promise<string>;
  /** Reads the resource that holds a name (the `existing_id` of a 409). */
  read(id: string): Promise<object>;
  update?(id: string, patch: Partial<B>): Promise<unknown>;
  remove(id: string): Promise<unknown>;
}

/** Every kind's endpoint on one client: the one table the generic create, patch and delete paths use. */
function endpointsOf(client: AcsClient): { [K in ResourceKind]: Endpoint<CreateBodies[K]> } {
  return {
    organization: {
      create: async (_parent, body) => (await client.createOrganization(body)).org_id,
      read: (id) => client.getOrganization(id),
      // An organization keeps its name (found by it): only `deletion_protection` is patched.
      update: (id, { org_name: _name, ...patch }) => client.patchOrganization(id, patch),
      remove: (id) => client.deleteOrganization(id),
    },
    team: {
      create: async (orgId, body) => (await client.createTeam(orgId, body)).team_id,
      read: (id) => client.getTeam(id),
      update: (id, patch) => client.updateTeam(id, patch),
      remove: (id) => client.deleteTeam(id),
    },
    agent: {
      create: async (teamId, body) => (await client.createAgent(teamId, body)).agent_id,
      read: (id) => heldBy(client.getAgent(id), 'a human'),
      update: (id, patch) => client.updateAgent(id, patch),
      remove: (id) => client.deleteAgent(id),
    },
    human: {
      create: async (teamId, body) => (await client.createHuman(teamId, body)).human_id,
      read: (id) => heldBy(client.getHuman(id), 'an agent'),
      update: (id, patch) => client.updateHuman(id, patch),
      remove: (id) => client.deleteHuman(id),
    },
    // An edge has no field to patch: adopting the edge of the same pair is all there is.
    edge: {
      create: async (teamId, body) => (await client.createEdge(teamId, body.participants)).edge_id,
      read: (id) => client.getEdge(id),
      remove: (id) => client.deleteEdge(id),
    },
  };
}

/**
 * The one create path of every kind: creates the resource; when its name (or an edge's pair) is
 * taken — 409 `conflict` with `existing_id`: a retry after a lost answer, an interrupted earlier
 * run, or a resource made by hand — adopts the existing one and patches the fields that differ
 * (by `diffOf`, default {@link diffFields}; an agent's tools compare their own way).
 * Output: its id and `created`, `updated` or `unchanged`. Errors: the client's.
 */
async function createOrAdopt<B extends object>(
  endpoint: Endpoint<B>,
  parentId: string,
  desired: B,
  diffOf: (live: object, desired: B) => Record<string, FieldDiff> = diffFields,
): Promise<EnsureResult> {
  try {
    return { id: await endpoint.create(parentId, desired), outcome: 'created' };
  } catch (error) {
    if (!(error instanceof AcsApiError) || error.code !== 'conflict' || !error.existingId) throw error;
    const id = error.existingId;
    if (!endpoint.update) return { id, outcome: 'unchanged' };
    const diff = diffOf(await endpoint.read(id), desired);
    if (Object.keys(diff).length === 0) return { id, outcome: 'unchanged' };
    await endpoint.update(id, patchOf(desired, diff));
    return { id, outcome: 'updated' };
  }
}

/** Creates or adopts a resource of kind `K` (see {@link createOrAdopt}). */
function ensureKind<K extends ResourceKind>(client: AcsClient, kind: K, parentId: string, fields: CreateBodies[K]): Promise<EnsureResult> {
  const endpoint: Endpoint<CreateBodies[K]> = endpointsOf(client)[kind];
  return createOrAdopt(endpoint, parentId, fields);
}

/**
 * Creates or adopts an agent whose `fields.tools` (or `fields.a2a`) may hold header templates:
 * each is resolved (from `env`) before any request and sent as its value; an adopted agent's
 * header values are compared through its fingerprints, and patched only when they differ. A
 * remote A2A agent's card is read and checked first (`activities/remote-cards.ts`). Errors:
 * `unresolved_secret`, `invalid_usage` (see `tool-headers.ts`), `invalid_agent_card` (nothing
 * sent), the client's.
 */
async function ensureAgent(client: AcsClient, parentId: string, fields: AgentWire, env: NodeJS.ProcessEnv, cardFetch?: typeof fetch): Promise<EnsureResult> {
  const { fields: body, resolved } = resolveToolFields(fields, env);
  // A remote A2A agent whose card does not parse is not created (nor adopted and changed).
  if (body.a2a) await requireRemoteCard(body.name, body.a2a.url, body.a2a.headers, cardFetch ? { fetch: cardFetch } : {});
  const diffOf = (live: object, desired: AgentWire) => {
    const agent = live as Parameters<typeof agentDiff>[0];
    return agentDiff({ ...agent, headerMatches: agentHeaderMatches(agent, resolved) }, desired);
  };
  return createOrAdopt(endpointsOf(client).agent, parentId, body, diffOf);
}

/**
 * Patches a resource of kind `K`; an agent's MCP and A2A header templates are resolved (from
 * `env`) first, and a new or changed `a2a` has its card read and checked before the PATCH
 * (`invalid_agent_card`: nothing sent).
 */
async function updateKind<K extends PatchableKind>(client: AcsClient, kind: K, id: string, patch: Partial<CreateBodies[K]>, env: NodeJS.ProcessEnv, cardFetch?: typeof fetch): Promise<EnsureResult> {
  const endpoint: Endpoint<CreateBodies[K]> = endpointsOf(client)[kind];
  let body = patch;
  if (kind === 'agent') {
    const fields = resolveToolFields(patch as Partial<AgentWire>, env).fields;
    if (fields.a2a) await requireRemoteCard(fields.name ?? id, fields.a2a.url, fields.a2a.headers, cardFetch ? { fetch: cardFetch } : {});
    body = fields as Partial<CreateBodies[K]>;
  }
  await endpoint.update?.(id, body);
  return { id, outcome: 'updated' };
}

/** Deletes a resource; one already gone (404) counts as deleted, so a re-run never fails on what an earlier run removed. */
async function removeKind(client: AcsClient, kind: ResourceKind, id: string): Promise<EnsureResult> {
  try {
    await endpointsOf(client)[kind].remove(id);
  } catch (error) {
    if (!(error instanceof AcsApiError) || error.code !== 'not_found') throw error;
  }
  return { id, outcome: 'deleted' };
}

/**
 * Creates the activities over their dependencies. Every activity raises `ApplicationFailure`s
 * typed by the stable codes of contract §2 (see `toApplicationFailure`), and non-retryable
 * `unresolved_secret` (no variable of the connection's keyring is set) or `keys_refused` (every
 * key of a keyring of several variables refused; a keyring of one fails with `invalid_api_key`).
 */
export function createApplyActivities(deps: ActivityDeps = {}) {
  const env = deps.env ?? process.env;
  // One pacer per service and key, shared by every activity of this process (a worker's or the CLI's).
  const pacers = new Map<string, RateLimitPacer>();

  // One client per service, variable and key, made once: an apply makes thousands of calls.
  const clients = new Map<string, AcsClient>();

  /** The client of one key: paced by that key's pacer (one per service and variable). */
  function keyClient(baseUrl: string, apiKeyEnv: string, apiKey: string): AcsClient {
    const clientKey = `${baseUrl}\u0000${apiKeyEnv}\u0000${apiKey}`;
    const known = clients.get(clientKey);
    if (known) return known;
    const pacerKey = `${baseUrl}\u0000${apiKeyEnv}`;
    let pacer = pacers.get(pacerKey);
    if (!pacer) pacers.set(pacerKey, (pacer = new RateLimitPacer()));
    // Activities are short calls under a startToClose timeout: they fail fast rather than hang.
    const client = new AcsClient({ baseUrl, apiKey, pacer, timeoutMs: 20_000, ...(deps.fetch ? { fetch: deps.fetch } : {}) });
    clients.set(clientKey, client);
    return client;
  }
  // The organization key comes from the connection's keyring (activities/keyring.ts): a 401
  // runs the activity's calls again with the next key. Each activity is idempotent by business
  // key and a refused request changed nothing, so running it again is safe.
  const withKeyring = createKeyring(env, keyClient);

  /** Runs `fn` with a client on the connection's keyring, mapping its errors to `ApplicationFailure`s. */
  async function withClient<T>(connection: Connection, fn: (client: AcsClient) => Promise<T>): Promise<T> {
    try {
      return await withKeyring(connection, fn);
    } catch (error) {
      throw toApplicationFailure(error);
    }
  }

  /** Resolves a read's `toolHeaders` before its first request, its errors as `ApplicationFailure`s. */
  function resolvedToolHeaders(refs: readonly AgentHeaderRefs[] | undefined): ResolvedAgentHeaders[] {
    try {
      return resolveAgentHeaders(refs ?? [], env);
    } catch (error) {
      throw toApplicationFailure(error);
    }
  }

  const reads = {
    /**
     * Reads what the key can see of the definition's organization: the organization (by name),
     * its provider keys (each compared with the desired secret's hint, resolved here), its
     * webhooks (each compared with the desired secret of its name through the live fingerprint),
     * its teams without their graphs (`readTeam` reads those), and with `teamGraphs` the graphs of
     * its first teams as well ({@link GraphRead}: one call for the whole live state of a small
     * organization), their agents' MCP header values judged against the desired ones through the
     * live fingerprints. Read-only. Raises `unresolved_secret` (or `invalid_usage`, a webhook
     * secret or a header value of the wrong form) before any request when a secret reference does
     * not resolve (unless `compareProviderKeys` is false: then nothing is compared).
     */
    async readOrganization(input: {
      connection: Connection;
      desired: DesiredState;
      compareProviderKeys?: boolean;
      teamGraphs?: GraphRead;
      /** The rest of the plan's request (selection, destroy): with it, a live state that needs no change comes back as `inSync` alone. */
      inSyncFor?: Omit<PlanRequest, 'desired'>;
    }): Promise<ObservedOrganization> {
      // Every secret must resolve before the first request, so an apply never stops halfway for want of one.
      let hints: Map<string, string>;
      let webhookSecrets: Map<string, string>;
      let toolHeaders: ResolvedAgentHeaders[];
      try {
        const compare = input.compareProviderKeys !== false;
        const wanted = compare ? input.desired.organization.providerKeys : [];
        hints = new Map(wanted.map((k) => [k.provider, secretHint(resolveSecret(k.secretRef, env))]));
        // A webhook is compared under its desired name and, for a rename, its old one.
        webhookSecrets = new Map(
          (compare ? (input.desired.organization.webhooks ?? []) : []).flatMap((w) => {
            const secret = resolveWebhookSecret(w.secretRef, env);
            return [[w.name, secret] as const, ...(w.renamedFrom !== undefined ? [[w.renamedFrom, secret] as const] : []), [`url\u0000${w.fields.url}`, secret] as const];
          }),
        );
        // Agents' MCP header values, for the graphs read here (the others: readTeam, readTeams).
        toolHeaders = compare && input.teamGraphs ? resolveAgentHeaders(agentHeaderRefs(input.desired), env) : [];
      } catch (error) {
        throw toApplicationFailure(error);
      }
      return withClient(input.connection, async (client) => {
        const org = (await client.listOrganizations()).find((o) => o.org_name === input.desired.organization.name) ?? null;
        if (!org) return { organization: null, providerKeys: [], teams: [], webhooks: [] };
        const [keys, teams, hooks] = await Promise.all([client.listProviderKeys(org.org_id), client.listTeams(org.org_id), client.listWebhooks(org.org_id)]);
        const providerKeys = keys.map((k) => {
          const hint = hints.get(k.provider);
          // Two masked hints (keys under 12 characters) tell nothing: such a key is not compared.
          const comparable = hint !== undefined && !(hint === maskedKeyHint && k.key_hint === maskedKeyHint);
          return { provider: k.provider, key_hint: k.key_hint, matchesDesired: comparable ? hint === k.key_hint : undefined };
        });
        const webhooks = hooks.map((w): ObservedWebhook => {
          // An unnamed webhook may be adopted by a desired one of the same URL (plan/plan.ts).
          const secret = webhookSecrets.get(w.name ?? `url\u0000${w.url}`);
          return { ...w, secretMatches: secret === undefined ? undefined : fingerprintMatches(w.secret_fingerprint, secret) };
        });
        if (!input.teamGraphs) return { organization: org, providerKeys, teams, webhooks };
        const graphs = teams.length > 0 ? await readGraphs(client, teams.map((t) => t.team_id), input.teamGraphs, toolHeaders) : [];
        // A live state that needs nothing: the workflow records one small result instead of every graph.
        if (input.inSyncFor && graphs.length === teams.length && runPlan({ ...input.inSyncFor, desired: input.desired }, { organization: org, providerKeys, teams: graphs, webhooks }).length === 0) {
          return { organization: org, providerKeys: [], teams: [], webhooks: [], inSync: true };
        }
        return { organization: org, providerKeys, teams, webhooks, graphs };
      });
    },

    /**
     * Reads what the deletes of a plan would take along (`plan/cascades.ts`): each team's deletion
     * preview (contract §5), each edge's threads and their messages, and the organization's
     * deletion preview when asked. Read-only; for the plan a user reads, not for the workflow.
     * Errors: `not_found`.
     */
    async readDeletionPreviews(input: { connection: Connection; teams: string[]; edges: string[]; organization?: string }): Promise<DeletionPreviews> {
      return withClient(input.connection, async (client) => {
        const teams = await Promise.all(input.teams.map(async (id) => [id, teamCounts(await client.teamDeletionPreview(id))] as const));
        const edges = await Promise.all(
          input.edges.map(async (id) => {
            const threads = await client.listThreads(id);
            return [id, { threads: threads.length, messages: threads.reduce((sum, t) => sum + t.message_count, 0) }] as const;
          }),
        );
        const organization = input.organization ? await client.organizationDeletionPreview(input.organization) : undefined;
        return {
          teams: Object.fromEntries(teams),
          edges: Object.fromEntries(edges),
          ...(organization ? { organization: organizationCounts(organization), organizationRefusal: organizationRefusal(organization) } : {}),
        };
      });
    },

    /**
     * Reads one team with its graph (agents, humans, edges). With `toolHeaders` (the desired
     * agents' MCP header templates, `plan/agent-tools.ts`), each agent's live header values are
     * judged against them (`headerMatches`), the templates resolved before any request. Read-only.
     * Errors: `not_found`, `unresolved_secret`, `invalid_usage`.
     */
    async readTeam(input: { connection: Connection; teamId: string; toolHeaders?: AgentHeaderRefs[] }): Promise<ObservedTeam> {
      const headers = resolvedToolHeaders(input.toolHeaders);
      return judgeHeaders(observedTeam(await withClient(input.connection, (client) => client.getTeam(input.teamId))), headers);
    },

    /**
     * Reads several teams with their graphs: one activity call for what `readTeam` reads one team
     * at a time, so that re-reading a large organization costs a workflow a few markers instead of
     * one per team. With `read` ({@link GraphRead}), the first of `teamIds` that fit its budget
     * (the caller asks again for the rest); without, all of them, 8 at a time. Read-only. Output:
     * the graphs in the order of `teamIds`; with `toolHeaders`, agents' header values judged as
     * `readTeam` judges them. Errors: `not_found` (a team deleted meanwhile), `unresolved_secret`,
     * `invalid_usage`.
     */
    async readTeams(input: { connection: Connection; teamIds: string[]; read?: GraphRead; toolHeaders?: AgentHeaderRefs[] }): Promise<ObservedTeam[]> {
      const headers = resolvedToolHeaders(input.toolHeaders);
      return withClient(input.connection, (client) => readGraphs(client, input.teamIds, input.read ?? { parallelism: 8, maxTeams: input.teamIds.length, maxBytes: Infinity }, headers));
    },

    /**
     * Reads and checks the Agent Cards of remote A2A agents (contract §12), for `plan` to show and
     * `validate --remote` to judge: each `url` with its `headers` (templates, resolved here before
     * any request), at most 8 at once, each within `timeoutMs` (default 5 s). Output: one
     * {@link CardVerdict} per agent, in order (a card that cannot be read or does not parse is a
     * verdict, not an error). Read-only; no header value is returned. Errors: `unresolved_secret`,
     * `invalid_usage` (a header value of the wrong form).
     */
    async readAgentCards(input: { agents: Array<{ url: string; headers: Record<string, string> }>; timeoutMs?: number }): Promise<CardVerdict[]> {
      let resolved: Array<Record<string, string>>;
      try {
        resolved = input.agents.map((agent) => resolveHeaders({ [A2A_HEADERS]: agent.headers }, env)[A2A_HEADERS] ?? {});
      } catch (error) {
        throw toApplicationFailure(error);
      }
      const options = { ...(deps.fetch ? { fetch: deps.fetch } : {}), ...(input.timeoutMs !== undefined ? { timeoutMs: input.timeoutMs } : {}) };
      return mapBounded(input.agents, 8, (agent, i) => readRemoteCard(agent.url, resolved[i]!, options));
    },
  };

  const changes = {
    /**
     * Creates a resource by name (an edge by its pair) under its parent, or adopts the existing one
     * of that name and patches the fields that differ. A participant name held by the other kind
     * (an agent's name by a human) is a non-retryable `conflict`. An agent's MCP header templates
     * are resolved here, before any request (`unresolved_secret`, `invalid_usage`), and sent as
     * their values; nothing resolved is returned. A remote A2A agent's card is read and checked
     * first: one that cannot be read or does not parse is `invalid_agent_card`, nothing sent.
     */
    ensure: (input: EnsureInput): Promise<EnsureResult> =>
      withClient(input.connection, (client) =>
        input.kind === 'agent' ? ensureAgent(client, input.parentId, input.fields, env, deps.fetch) : ensureKind(client, input.kind, input.parentId, input.fields),
      ),

    /**
     * Patches a resource's drifted fields (as the plan computed them); an agent's `tools` go with
     * their MCP header templates resolved here. Errors: `not_found`, `conflict` (a rename to a
     * taken name), `unresolved_secret` and `invalid_usage` (a header value, before the request),
     * and the service's refusals of tools (`invalid_request`, `unknown_reference`, `webhook_url_refused`);
     * with `a2a` in the patch, `invalid_agent_card` (its card read and checked first, nothing sent).
     */
    update: (input: UpdateInput): Promise<EnsureResult> => withClient(input.connection, (client) => updateKind(client, input.kind, input.id, input.patch, env, deps.fetch)),

    /**
     * Deletes a resource by id (contract §5; a team cascades to its graph and threads, an edge to its
     * threads). Idempotent: an id already gone is `deleted` too. Errors: `in_use` (a participant
     * still on an edge), `deletion_protected`, `forbidden` (the key's own organization).
     */
    remove: (input: RemoveInput): Promise<EnsureResult> => withClient(input.connection, (client) => removeKind(client, input.kind, input.id)),

    /** Sets a provider key from its secret reference (resolved here). PUT is idempotent by nature. */
    putProviderKey: (input: StepInputs['putProviderKey']): Promise<EnsureResult> =>
      withClient(input.connection, async (client) => {
        await client.putProviderKey(input.orgId, input.provider, resolveSecret(input.secretRef, env));
        return { id: input.provider, outcome: 'updated' };
      }),

    /**
     * Creates a webhook of the organization with its fields and the secret `secretRef` points at
     * (resolved here); when its name is taken (409 `conflict`: a retry after a lost answer, an
     * interrupted run, a webhook made by hand), adopts that webhook, patches the fields that differ
     * and rotates its secret unless it holds this one already. Errors: `webhook_url_refused`,
     * `webhook_limit`, `unresolved_secret`, `invalid_usage`.
     */
    ensureWebhook: (input: StepInputs['ensureWebhook']): Promise<EnsureResult> =>
      withClient(input.connection, async (client) => {
        const secret = resolveWebhookSecret(input.secretRef, env);
        try {
          const created = await client.createWebhook(input.orgId, { ...input.fields, secret });
          return { id: created.webhook_id, outcome: 'created' };
        } catch (error) {
          if (!(error instanceof AcsApiError) || error.code !== 'conflict' || !error.existingId) throw error;
          const id = error.existingId;
          const live = await client.getWebhook(id);
          const diff = diffFields(live, input.fields);
          const stale = !fingerprintMatches(live.secret_fingerprint, secret);
          if (Object.keys(diff).length > 0) await client.updateWebhook(id, patchOf(input.fields, diff));
          if (stale) await client.rotateWebhookSecret(id, { secret });
          return { id, outcome: Object.keys(diff).length > 0 || stale ? 'updated' : 'unchanged' };
        }
      }),

    /**
     * Patches a webhook's fields (as the plan computed them) and, with `secretRef`, rotates its
     * secret to the one it points at (the previous one signs beside it for the service's default
     * grace, a day), unless the webhook holds it already (a retry). Errors: `not_found`,
     * `conflict` (a rename to a taken name), `webhook_url_refused`.
     */
    updateWebhook: (input: StepInputs['updateWebhook']): Promise<EnsureResult> =>
      withClient(input.connection, async (client) => {
        const secret = input.secretRef === undefined ? undefined : resolveWebhookSecret(input.secretRef, env);
        if (Object.keys(input.patch).length > 0) await client.updateWebhook(input.id, input.patch);
        if (secret !== undefined && !fingerprintMatches((await client.getWebhook(input.id)).secret_fingerprint, secret)) {
          await client.rotateWebhookSecret(input.id, { secret });
        }
        return { id: input.id, outcome: 'updated' };
      }),

    /** Deletes a webhook with its delivery log; one already gone is `deleted` too. */
    deleteWebhook: (input: StepInputs['deleteWebhook']): Promise<EnsureResult> =>
      withClient(input.connection, async (client) => {
        try {
          await client.deleteWebhook(input.id);
        } catch (error) {
          if (!(error instanceof AcsApiError) || error.code !== 'not_found') throw error;
        }
        return { id: input.id, outcome: 'deleted' };
      }),

    /** Deletes a provider key; one already gone is `deleted` too. */
    deleteProviderKey: (input: StepInputs['deleteProviderKey']): Promise<EnsureResult> =>
      withClient(input.connection, async (client) => {
        try {
          await client.deleteProviderKey(input.orgId, input.provider);
        } catch (error) {
          if (!(error instanceof AcsApiError) || error.code !== 'not_found') throw error;
        }
        return { id: input.provider, outcome: 'deleted' };
      }),
  };

  return {
    ...reads,
    ...changes,
    /**
     * Does nothing, as a regular (not local) activity: the apply workflow awaits it once its plan
     * is made, which completes the workflow task and so records the reads' results (local
     * activities' markers) in the history before any change starts (`workflows/apply-workflow.ts`).
     * A 1 ms timer did the same, but Temporal's development server fired it 0.8 s late.
     * Input: nothing. Output: nothing. Errors: none.
     */
    async planRecorded(): Promise<void> {},
    /**
     * Makes several changes, one after another, each retried under the one retry policy
     * (`workflows/retry-policy.ts`, `Retry-After` honoured): one activity call for a batch of a
     * team's changes, so a large apply costs Temporal a few hundred activities instead of
     * thousands. Each step is idempotent by business key, so a batch run again after a crash
     * adopts what it had made. Output: each step's result, in order. Errors: the first step
     * that fails for good, as a non-retryable `ApplicationFailure` of its code (its retries are
     * spent); `maximumAttempts` bounds each step's attempts (default the policy's 10). A step's
     * input may name, in place of an id, the result of an earlier step of the call
     * ({@link ResultOf}): a team created by step 0 is the parent of the agents of steps 1 to 10.
     */
    async runSteps(input: { steps: Step[]; maximumAttempts?: number }): Promise<EnsureResult[]> {
      // A cancelled or timed-out activity stops retrying its step and makes no further step.
      const signal = activityContext()?.cancellationSignal;
      const results: EnsureResult[] = [];
      for (const step of input.steps) {
        if (signal?.aborted) throw signal.reason;
        const make = changes[step.op] as (stepInput: unknown) => Promise<EnsureResult>;
        try {
          const stepInput = resolveResults(step.input, results);
          const result = await retrying(() => make(stepInput), {
            ...(input.maximumAttempts ? { maximumAttempts: input.maximumAttempts } : {}),
            ...(signal ? { signal } : {}),
            ...(deps.onRetryWait ? { onWait: deps.onRetryWait } : {}),
          });
          deps.metrics?.applyChange(changeKind(step), result.outcome);
          results.push(result);
        } catch (error) {
          if (signal?.aborted) throw signal.reason;
          deps.metrics?.applyChange(changeKind(step), 'failed');
          throw spent(error);
        }
      }
      return results;
    },
  };
}

/** The kind of resource a step changes, for the metrics: the resource's kind, or a provider key or webhook. */
function changeKind(step: Step): ApplyChangeKind {
  if (step.op === 'ensure' || step.op === 'update' || step.op === 'remove') return step.input.kind;
  return step.op === 'putProviderKey' || step.op === 'deleteProviderKey' ? 'provider_key' : 'webhook';
}

/** A failure whose retries were spent inside `runSteps`: retrying the whole batch would only repeat them. */
function spent(error: unknown): unknown {
  if (error instanceof ApplicationFailure) {
    if (error.nonRetryable) return error;
    return ApplicationFailure.create({ type: error.type ?? undefined, message: error.message, nonRetryable: true, details: error.details ? [...error.details] : [], cause: error });
  }
  const cause = error instanceof Error ? error : new Error(String(error));
  return ApplicationFailure.create({ type: cause.name, message: cause.message, nonRetryable: true, cause });
}

/** The activities of `apply`, as workflows see them (`import type` only). */
export type ApplyActivities = ReturnType<typeof createApplyActivities>;

/** A team's graph as the plan compares it (the read-only thread count left out). */
function observedTeam(graph: TeamGraph): ObservedTeam {
  const { agents, humans, edges, active_thread_count: _count, ...team } = graph;
  return { team, agents, humans, edges };
}

/** A team deletion preview's counts (what is protected is read from the live graph: `plan/protection.ts`). */
function teamCounts(preview: TeamDeletionPreview): Cascade {
  const { team_id: _team, protected: _protected, ...counts } = preview;
  return counts;
}

/** An organization deletion preview's counts. */
function organizationCounts(preview: OrganizationDeletionPreview): Cascade {
  const { org_id: _org, protected: _protected, provisioned_organizations: _provisioned, own_organization: _own, ...counts } = preview;
  return counts;
}

/** Why the service would refuse to delete the organization other than protection, or undefined. */
function organizationRefusal(preview: OrganizationDeletionPreview): DeletionPreviews['organizationRefusal'] {
  if (preview.own_organization) return { code: 'forbidden', message: 'it is the organization of the key in use, which a key may not delete: use a key of the organization that provisioned it' };
  const provisioned = preview.provisioned_organizations.map((o) => o.org_name);
  if (provisioned.length > 0) return { code: 'in_use', message: `it provisioned organizations that still exist (${provisioned.join(', ')}): destroy those first` };
  return undefined;
}

/**
 * Turns a 404 on the existing id of a participant name (the name belongs to the other kind of
 * participant, `holder`) into a conflict saying so.
 */
async function heldBy<T>(lookup: Promise<T>, holder: string): Promise<T> {
  try {
    return await lookup;
  } catch (error) {
    if (error instanceof AcsApiError && error.status === 404) throw new AcsApiError({ status: 409, code: 'conflict', message: `the participant name is held by ${holder}` });
    throw error;
  }
}
