/**
 * Shapes of the plan: the desired state (from a definition), the observed state (from the
 * service) and the changes between them. Plain data only: these travel through Temporal
 * workflow inputs and histories, so they hold secret *references*, never secret values.
 */
import type { Agent, AgentStatus, Edge, Human, Organization, Provider, Team } from '../api/schemas.ts';

/** An agent as a definition wants it. Omitted fields mean the service's defaults, except `status`. */
export interface DesiredAgent {
  name: string;
  provider?: Provider | null | undefined;
  model?: string | null | undefined;
  description?: string | undefined;
  instructions?: string | undefined;
  /** Omitted: not managed (an operator may pause an agent without the next apply undoing it). */
  status?: AgentStatus | undefined;
  /** Daily token budget (the service's `max_tokens_per_day`); null: unlimited; omitted: not managed. */
  maxTokensPerDay?: number | null | undefined;
}

/** A human as a definition wants it. */
export interface DesiredHuman {
  name: string;
  email?: string | null | undefined;
}

/** A team as a definition wants it; edges name two participants of the team. */
export interface DesiredTeam {
  name: string;
  description?: string | undefined;
  agents: DesiredAgent[];
  humans: DesiredHuman[];
  edges: Array<readonly [string, string]>;
}

/** The desired state: structurally a validated definition (`definitions/`). */
export interface DesiredState {
  organization: {
    name: string;
    /** Provider name → secret reference (`${env:NAME}`), never a value. */
    providerKeys?: Partial<Record<Provider, string>> | undefined;
  };
  teams: DesiredTeam[];
}

/** A team as observed, with its graph. */
export interface ObservedTeam {
  team: Team;
  agents: Agent[];
  humans: Human[];
  edges: Edge[];
}

/** A provider key as observed: whether it equals the definition's is judged where the secret is resolved. */
export interface ObservedProviderKey {
  provider: Provider;
  key_hint: string;
  /** Whether the live key's hint matches the desired secret's last characters; undefined when not compared. */
  matchesDesired?: boolean | undefined;
}

/** What the key can see of the definition's organization. `organization` is null when it does not exist yet. */
export interface ObservedState {
  organization: Organization | null;
  providerKeys: ObservedProviderKey[];
  /** The organization's teams that the definition names (found by name). */
  teams: ObservedTeam[];
}

/** Kinds of resources a plan can change. */
export const ResourceKinds = {
  organization: 'organization',
  provider_key: 'provider_key',
  team: 'team',
  agent: 'agent',
  human: 'human',
  edge: 'edge',
} as const;
export type ResourceKind = keyof typeof ResourceKinds;

/** Plan actions. v1 creates and updates; nothing is deleted by `apply`. */
export const ChangeActions = { create: 'create', update: 'update' } as const;
export type ChangeAction = keyof typeof ChangeActions;

/** One field that differs: live value and desired value (secrets are never shown). */
export interface FieldDiff {
  from: unknown;
  to: unknown;
}

/** One change of a plan. `team` names the team of agents, humans and edges. */
export interface Change {
  action: ChangeAction;
  kind: ResourceKind;
  /** The resource's name; an edge is named `a<->b`, a provider key by its provider. */
  name: string;
  team?: string;
  /** The live id, for updates. */
  id?: string;
  /** For updates: the fields that differ. For creates: the fields sent (secrets as `(sensitive)`). */
  fields: Record<string, unknown>;
  diff?: Record<string, FieldDiff>;
}

/** A plan: the ordered changes that make the observed state match the desired one. */
export interface Plan {
  changes: Change[];
}
