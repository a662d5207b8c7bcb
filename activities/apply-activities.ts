/**
 * The activities of `apply`: each makes one idempotent change on the service.
 *
 * Idempotency comes from business keys, never from activity ids (they restart in every run):
 * a create whose name is already taken (409 `conflict`, a retry after a lost response, or an
 * interrupted earlier run) adopts the `existing_id` and brings it up to date instead. No
 * `Idempotency-Key` is sent: a replayed answer could name a resource deleted since, for 24 hours,
 * while the name is always the live truth. Secrets
 * (the organization key, provider keys) are resolved here, at the moment of the call; the
 * organization key from the connection's keyring (`apiKeyEnv`, then `apiKeyEnvFallbacks`,
 * `activities/keyring.ts`), so an apply carries on when a key is rotated out under it.
 */
import type { Agent, Human, Provider, Team } from '../api/schemas.ts';
import { AcsApiError } from '../client/errors.ts';
import { AcsClient } from '../client/acs-client.ts';
import { RateLimitPacer } from '../client/rate-limit-pacer.ts';
import { resolveSecret, secretHint } from '../definitions/secrets.ts';
import { diffFields, patchOf } from '../plan/plan.ts';
import type { DesiredState, ObservedProviderKey, ObservedTeam } from '../plan/types.ts';
import type { Organization } from '../api/schemas.ts';
import type { Connection } from './connection.ts';
import { activityContext } from './activity-context.ts';
import { toApplicationFailure } from './failures.ts';
import { createKeyring } from './keyring.ts';
import { retrying } from './retrying.ts';
import { ApplicationFailure } from '@temporalio/common';

/** Dependencies of the activities: where secrets come from and how HTTP is sent. */
export interface ActivityDeps {
  /** Environment that `${env:NAME}` references and the keyring's variables resolve against (default `process.env`). */
  env?: NodeJS.ProcessEnv;
  /** `fetch` for the client; tests pass a counting or failing one. */
  fetch?: typeof fetch;
}

/** Result of an ensure-activity: the resource's id and what was done. */
export interface EnsureResult {
  id: string;
  outcome: 'created' | 'updated' | 'unchanged';
}

/** What {@link createApplyActivities}' `readOrganization` sees: the organization, its provider keys and its teams (no graphs). */
export interface ObservedOrganization {
  /** Null when no organization of that name is reachable with the key. */
  organization: Organization | null;
  providerKeys: ObservedProviderKey[];
  /** Every team of the organization, without its graph. */
  teams: Team[];
}

/** Fields of a team to ensure. */
export interface TeamFields {
  team_name: string;
  description: string;
}

/** The input of each activity that makes one change, by name. */
export interface StepInputs {
  ensureOrganization: { connection: Connection; name: string };
  putProviderKey: { connection: Connection; orgId: string; provider: Provider; secretRef: string };
  ensureTeam: { connection: Connection; orgId: string; fields: TeamFields };
  updateTeam: { connection: Connection; teamId: string; patch: Record<string, unknown> };
  ensureAgent: { connection: Connection; teamId: string; fields: Partial<Agent> & { name: string } };
  updateAgent: { connection: Connection; agentId: string; patch: Record<string, unknown> };
  ensureHuman: { connection: Connection; teamId: string; fields: Partial<Human> & { name: string } };
  updateHuman: { connection: Connection; humanId: string; patch: Record<string, unknown> };
  ensureEdge: { connection: Connection; teamId: string; participants: [string, string] };
}

/** One change as a call of the activity that makes it (`runSteps` carries several). */
export type Step = { [K in keyof StepInputs]: { op: K; input: StepInputs[K] } }[keyof StepInputs];

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

  /** The client of one key: paced by that key's pacer (one per service and variable). */
  function keyClient(baseUrl: string, apiKeyEnv: string, apiKey: string): AcsClient {
    const pacerKey = `${baseUrl}\u0000${apiKeyEnv}`;
    let pacer = pacers.get(pacerKey);
    if (!pacer) pacers.set(pacerKey, (pacer = new RateLimitPacer()));
    // Activities are short calls under a startToClose timeout: they fail fast rather than hang.
    return new AcsClient({ baseUrl, apiKey, pacer, timeoutMs: 20_000, ...(deps.fetch ? { fetch: deps.fetch } : {}) });
  }
  // The organization key comes from the connection's keyring (activities/keyring.ts): a 401
  // runs the activity's calls again with the next key. Each activity is idempotent by business
  // key and a refused request changed nothing, so running it again is safe.
  const withKeyring = createKeyring(env, keyClient);

  /** Runs `fn`, mapping its errors to `ApplicationFailure`s. */
  async function call<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (error) {
      throw toApplicationFailure(error);
    }
  }

  /** Creates with `create`; on a name conflict adopts the existing resource and patches it when drifted. */
  async function createOrAdopt<T extends object>(
    create: () => Promise<T>,
    idOf: (resource: T) => string,
    fetchExisting: (id: string) => Promise<T>,
    update: (id: string, patch: Record<string, unknown>) => Promise<unknown>,
    desired: object,
  ): Promise<EnsureResult> {
    try {
      return { id: idOf(await create()), outcome: 'created' };
    } catch (error) {
      if (!(error instanceof AcsApiError) || error.code !== 'conflict' || !error.existingId) throw error;
      const existing = await fetchExisting(error.existingId);
      const diff = diffFields(existing, desired);
      if (Object.keys(diff).length === 0) return { id: error.existingId, outcome: 'unchanged' };
      await update(error.existingId, patchOf(diff));
      return { id: error.existingId, outcome: 'updated' };
    }
  }

  const reads = {
    /**
     * Reads what the key can see of the definition's organization: the organization (by name),
     * its provider keys (each compared with the desired secret's hint, resolved here), and its
     * teams without their graphs (`readTeam` reads those). Read-only. Raises `unresolved_secret`
     * before any request when a secret reference does not resolve.
     */
    async readOrganization(input: { connection: Connection; desired: DesiredState }): Promise<ObservedOrganization> {
      return call(async () => {
        // Every secret must resolve before the first request, so an apply never stops halfway for want of one.
        const hints = new Map<string, string>();
        for (const [provider, ref] of Object.entries(input.desired.organization.providerKeys ?? {})) {
          if (ref) hints.set(provider, secretHint(resolveSecret(ref, env)));
        }
        return withKeyring(input.connection, async (client) => {
          const org = (await client.listOrganizations()).find((o) => o.org_name === input.desired.organization.name) ?? null;
          if (!org) return { organization: null, providerKeys: [], teams: [] };
          const [keys, teams] = await Promise.all([client.listProviderKeys(org.org_id), client.listTeams(org.org_id)]);
          const providerKeys = keys.map((k) => {
            const hint = hints.get(k.provider);
            return { provider: k.provider, key_hint: k.key_hint, matchesDesired: hint === undefined ? undefined : hint === k.key_hint };
          });
          return { organization: org, providerKeys, teams };
        });
      });
    },

    /** Reads one team with its graph (agents, humans, edges). Read-only. Errors: `not_found`. */
    async readTeam(input: { connection: Connection; teamId: string }): Promise<ObservedTeam> {
      return call(async () => {
        const { agents, humans, edges, active_thread_count: _count, ...team } = await withKeyring(input.connection, (client) => client.getTeam(input.teamId));
        return { team: team as Team, agents, humans, edges };
      });
    },
  };

  const changes = {
    /** Creates the organization, or adopts the one of that name this key reaches. Returns its id. */
    async ensureOrganization(input: StepInputs['ensureOrganization']): Promise<EnsureResult> {
      return call(() =>
        withKeyring(input.connection, async (client): Promise<EnsureResult> => {
          try {
            const org = await client.createOrganization(input.name);
            return { id: org.org_id, outcome: 'created' };
          } catch (error) {
            if (error instanceof AcsApiError && error.code === 'conflict' && error.existingId) {
              return { id: error.existingId, outcome: 'unchanged' };
            }
            throw error;
          }
        }),
      );
    },

    /** Sets a provider key from its secret reference (resolved here). PUT is idempotent by nature. */
    async putProviderKey(input: StepInputs['putProviderKey']): Promise<EnsureResult> {
      return call(async () => {
        const value = resolveSecret(input.secretRef, env);
        await withKeyring(input.connection, (client) => client.putProviderKey(input.orgId, input.provider, value));
        return { id: input.provider, outcome: 'updated' };
      });
    },

    /** Creates a team by name in the organization, or adopts and updates the existing one. */
    async ensureTeam(input: StepInputs['ensureTeam']): Promise<EnsureResult> {
      return call(() =>
        withKeyring(input.connection, (client) =>
          createOrAdopt(
            () => client.createTeam(input.orgId, input.fields),
            (t) => t.team_id,
            (id) => client.getTeam(id),
            (id, patch) => client.updateTeam(id, patch),
            input.fields,
          ),
        ),
      );
    },

    /** Patches a team's drifted fields. */
    async updateTeam(input: StepInputs['updateTeam']): Promise<EnsureResult> {
      return call(async () => {
        await withKeyring(input.connection, (client) => client.updateTeam(input.teamId, input.patch));
        return { id: input.teamId, outcome: 'updated' };
      });
    },

    /**
     * Creates an agent by name in the team, or adopts and updates the existing one. A human of
     * that name holds it instead: non-retryable `conflict`.
     */
    async ensureAgent(input: StepInputs['ensureAgent']): Promise<EnsureResult> {
      return call(() =>
        withKeyring(input.connection, (client) =>
          createOrAdopt(
            () => client.createAgent(input.teamId, input.fields as Parameters<AcsClient['createAgent']>[1]),
            (a) => a.agent_id,
            (id) => adoptable(client.getAgent(id), `participant name "${input.fields.name}" is held by a human`),
            (id, patch) => client.updateAgent(id, patch),
            input.fields,
          ),
        ),
      );
    },

    /** Patches an agent's drifted fields. */
    async updateAgent(input: StepInputs['updateAgent']): Promise<EnsureResult> {
      return call(async () => {
        await withKeyring(input.connection, (client) => client.updateAgent(input.agentId, input.patch));
        return { id: input.agentId, outcome: 'updated' };
      });
    },

    /** Creates a human by name in the team, or adopts and updates the existing one. */
    async ensureHuman(input: StepInputs['ensureHuman']): Promise<EnsureResult> {
      return call(() =>
        withKeyring(input.connection, (client) =>
          createOrAdopt(
            () => client.createHuman(input.teamId, input.fields),
            (h) => h.human_id,
            async (id) => {
              const humans = await client.listHumans(input.teamId);
              const human = humans.find((h) => h.human_id === id);
              if (!human) throw new AcsApiError({ status: 409, code: 'conflict', message: `participant name "${input.fields.name}" is held by an agent` });
              return human;
            },
            (id, patch) => client.updateHuman(id, patch),
            input.fields,
          ),
        ),
      );
    },

    /** Patches a human's drifted fields. */
    async updateHuman(input: StepInputs['updateHuman']): Promise<EnsureResult> {
      return call(async () => {
        await withKeyring(input.connection, (client) => client.updateHuman(input.humanId, input.patch));
        return { id: input.humanId, outcome: 'updated' };
      });
    },

    /** Creates the edge between two participants, or adopts the existing edge of that pair. */
    async ensureEdge(input: StepInputs['ensureEdge']): Promise<EnsureResult> {
      return call(() =>
        withKeyring(input.connection, async (client): Promise<EnsureResult> => {
          try {
            const edge = await client.createEdge(input.teamId, input.participants);
            return { id: edge.edge_id, outcome: 'created' };
          } catch (error) {
            if (error instanceof AcsApiError && error.code === 'conflict' && error.existingId) {
              return { id: error.existingId, outcome: 'unchanged' };
            }
            throw error;
          }
        }),
      );
    },
  };

  return {
    ...reads,
    ...changes,
    /**
     * Makes several changes, one after another, each retried under the one retry policy
     * (`workflows/retry-policy.ts`, `Retry-After` honoured): one activity call for a batch of a
     * team's changes, so a large apply costs Temporal a few hundred activities instead of
     * thousands. Each step is idempotent by business key, so a batch run again after a crash
     * adopts what it had made. Output: each step's result, in order. Errors: the first step
     * that fails for good, as a non-retryable `ApplicationFailure` of its code (its retries are
     * spent); `maximumAttempts` bounds each step's attempts (default the policy's 10).
     */
    async runSteps(input: { steps: Step[]; maximumAttempts?: number }): Promise<EnsureResult[]> {
      // A cancelled or timed-out activity stops retrying its step and makes no further step.
      const signal = activityContext()?.cancellationSignal;
      const results: EnsureResult[] = [];
      for (const step of input.steps) {
        if (signal?.aborted) throw signal.reason;
        const make = changes[step.op] as (stepInput: unknown) => Promise<EnsureResult>;
        try {
          results.push(await retrying(() => make(step.input), { ...(input.maximumAttempts ? { maximumAttempts: input.maximumAttempts } : {}), ...(signal ? { signal } : {}) }));
        } catch (error) {
          if (signal?.aborted) throw signal.reason;
          throw spent(error);
        }
      }
      return results;
    },
  };
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

/** Turns a 404 on the existing id (the name belongs to the other kind of participant) into a conflict. */
async function adoptable<T>(lookup: Promise<T>, message: string): Promise<T> {
  try {
    return await lookup;
  } catch (error) {
    if (error instanceof AcsApiError && error.status === 404) throw new AcsApiError({ status: 409, code: 'conflict', message });
    throw error;
  }
}
