/**
 * Shapes of the plan: the desired state (from a definition), the observed state (from the
 * service) and the changes between them. Plain data only: these travel through Temporal
 * workflow inputs and histories, so they hold secret *references*, never secret values.
 *
 * A resource's fields are declared once (`TeamFields`, `AgentFields`, … in `api/schemas.ts`);
 * the desired state holds them in the service's own names with every default filled in
 * (`WireOf`), so comparing with a live resource and creating one need no mapping here — and the
 * workflow's sandbox never loads the schemas.
 */
import type { AgentTools, ToolApproval } from '../api/agent-tools.ts';
import type { Webhook, WebhookFields } from '../api/events.ts';
import type { WireOf } from '../api/resource-fields.ts';
import type {
  Agent,
  AgentFields,
  Edge,
  Human,
  HumanFields,
  Organization,
  OrganizationDeletionPreview,
  OrganizationFields,
  Provider,
  Team,
  TeamFields,
} from '../api/schemas.ts';

/** What a definition asks an organization to hold, in wire names (`org_name`). */
export type OrganizationWire = WireOf<typeof OrganizationFields>;
/** What a definition asks a team to hold, in wire names (`team_name`, `description`). */
export type TeamWire = WireOf<typeof TeamFields>;
/**
 * A remote MCP server as a definition wants it, in wire names, with every default filled in:
 * `headers` maps each header to its *template* (`Bearer ${env:TRACKER_TOKEN}`), never a value
 * (the activities resolve it); `allow` null: every tool the server lists.
 */
export interface DesiredMcpServer {
  name: string;
  url: string;
  headers: Record<string, string>;
  allow: string[] | null;
}

/** An agent's `tools` as a definition wants them (contract §11), in wire names, with every default filled in. */
export interface DesiredAgentTools {
  team: boolean;
  ask_timeout_seconds: number;
  tool_timeout_seconds: number;
  mcp: DesiredMcpServer[];
  approval: ToolApproval | null;
}

/**
 * A remote A2A agent as a definition wants it (contract §12), in wire names: its URL (normalized
 * as the service stores it) and `headers` mapping each header to its *template*
 * (`Bearer ${env:SCOUT_TOKEN}`), never a value (the activities resolve it).
 */
export interface DesiredA2a {
  url: string;
  headers: Record<string, string>;
}

/**
 * What a definition asks an agent to hold, in wire names; `status` only when the definition sets
 * it. `tools` is null for an agent without tools, and absent only in desired states recorded
 * before tools were managed (then the live tools are left as they are); `a2a` likewise (null: not
 * a remote A2A agent; absent: recorded before remote agents were managed).
 */
export type AgentWire = WireOf<typeof AgentFields> & { tools?: DesiredAgentTools | null; a2a?: DesiredA2a | null };

/**
 * Header templates of an agent: MCP server name → header name → template (`Bearer
 * ${env:TRACKER_TOKEN}`); a remote A2A agent's own headers under `@a2a` (`A2A_HEADERS` of
 * `plan/remote-a2a.ts`), a key no MCP server name can take.
 */
export type HeaderRefs = Record<string, Record<string, string>>;

/**
 * Whether each live header value of an agent's MCP servers (and, under `@a2a`, of its remote A2A
 * agent) is the one the definition asks for (server name → header name → whether its fingerprint
 * is of the desired value), judged where the secrets are resolved (the read activities); only
 * headers both sides name are compared.
 */
export type HeaderMatches = Record<string, Record<string, boolean>>;

/** The live `tools` of an agent (null: none). */
export type LiveAgentTools = AgentTools | null;
/** What a definition asks a human to hold, in wire names. */
export type HumanWire = WireOf<typeof HumanFields>;

/** What a definition asks a webhook to hold, in wire names; `status` only when the definition sets it. */
export type WebhookWire = WireOf<typeof WebhookFields>;

/** One resource as a definition wants it: its name, the name it had before, and its fields. */
export interface Desired<F> {
  name: string;
  /** `renamedFrom` of the definition: the live resource of that name is renamed, not replaced. */
  renamedFrom?: string | undefined;
  /** The fields the service should hold (the name included, under its wire key). */
  fields: F;
}

/** A team as a definition wants it; edges name two participants of the team. */
export interface DesiredTeam extends Desired<TeamWire> {
  agents: Array<Desired<AgentWire>>;
  humans: Array<Desired<HumanWire>>;
  edges: Array<readonly [string, string]>;
}

/** A provider key as a definition wants it: a reference to the secret, resolved only by the activity that sets it. */
export interface DesiredProviderKey {
  provider: Provider;
  secretRef: string;
}

/** A webhook as a definition wants it: its fields and a reference to its secret, resolved only by the activities. */
export interface DesiredWebhook extends Desired<WebhookWire> {
  secretRef: string;
}

/** The desired state of an apply: the organization and its teams (`plan/desired.ts` builds it from a definition). */
export interface DesiredState {
  organization: Desired<OrganizationWire> & {
    /** The provider keys, sorted by provider, each a secret reference (`${env:NAME}`), never a value. */
    providerKeys: DesiredProviderKey[];
    /**
     * The webhooks, each with its secret as a reference. Absent in the inputs of applies recorded
     * before webhooks were managed: then the live webhooks are left as they are.
     */
    webhooks?: DesiredWebhook[];
  };
  teams: DesiredTeam[];
}

/** An agent as observed; whether its MCP header values are the definition's is judged where the secrets are resolved. */
export type ObservedAgent = Agent & {
  /** See {@link HeaderMatches}; undefined when not compared (no desired headers for it, destroy, an older read). */
  headerMatches?: HeaderMatches | undefined;
};

/** A team as observed, with its graph. */
export interface ObservedTeam {
  team: Team;
  agents: ObservedAgent[];
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

/** A webhook as observed; whether its secret is the definition's is judged where the secret is resolved. */
export interface ObservedWebhook extends Webhook {
  /** Whether `secret_fingerprint` is the desired secret's; undefined when not compared (no desired webhook of its name, destroy). */
  secretMatches?: boolean | undefined;
}

/** What the key can see of the definition's organization. `organization` is null when it does not exist yet. */
export interface ObservedState {
  organization: Organization | null;
  providerKeys: ObservedProviderKey[];
  /** The organization's webhooks (absent in reads recorded before webhooks were managed). */
  webhooks?: ObservedWebhook[];
  /** The organization's teams, with their graphs. */
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
  webhook: 'webhook',
} as const;
export type ResourceKind = keyof typeof ResourceKinds;

/** Plan actions. A rename is an update of the name (the resource keeps its id and threads). */
export const ChangeActions = { create: 'create', update: 'update', delete: 'delete' } as const;
export type ChangeAction = keyof typeof ChangeActions;

/** One field that differs: live value and desired value (secrets are never shown). */
export interface FieldDiff {
  from: unknown;
  to: unknown;
  /**
   * Secrets inside the field (shown as {@link SENSITIVE} on both sides) whose values differ, by
   * their path under it: `mcp[tracker].headers.Authorization` of an agent's `tools`,
   * `headers.Authorization` of its `a2a`.
   */
  sensitiveChanges?: string[];
}

/** The value shown in place of a secret. */
export const SENSITIVE = '(sensitive)';

/**
 * What a delete takes along: the counts of the service's deletion previews (their shape is declared
 * once, in `api/schemas.ts`) for the organization and a team; counted from the live graph for an
 * agent or human (its edges and their threads) and an edge (its threads).
 */
export type Cascade = Partial<Pick<OrganizationDeletionPreview, 'teams' | 'agents' | 'humans' | 'edges' | 'threads' | 'messages' | 'attachments' | 'keys' | 'provider_keys'>>;

/** What every change has: what it acts on and where (`team` names the team of a participant or edge). */
interface ChangeBase {
  /** The resource's name; an edge is named `a<->b`, a provider key by its provider. */
  name: string;
  /** The resource's address, as `--target` and `--exclude` take it (`team/intake/agent/triager`; see `plan/addresses.ts`). */
  address: string;
}

/** A participant's or edge's change: it belongs to a team. */
interface InTeam {
  team: string;
}

/** A create: `fields` is the body sent (a provider key's secret shown as {@link SENSITIVE}). */
export type CreateChange = { action: 'create' } & (
  | (ChangeBase & { kind: 'organization'; fields: OrganizationWire })
  | (ChangeBase & { kind: 'provider_key'; name: Provider; fields: { api_key: typeof SENSITIVE }; secretRef: string })
  | (ChangeBase & { kind: 'team'; fields: TeamWire })
  /** An agent: `fields.tools` shows each MCP header value as {@link SENSITIVE}; `headerRefs` holds their templates, resolved by the activity. */
  | (ChangeBase & InTeam & { kind: 'agent'; fields: AgentWire; headerRefs?: HeaderRefs })
  | (ChangeBase & InTeam & { kind: 'human'; fields: HumanWire })
  | (ChangeBase & InTeam & { kind: 'edge'; fields: { participants: [string, string] } })
  /** A webhook: `fields` is the body sent, its secret shown as {@link SENSITIVE}; `secretRef` is resolved by the activity. */
  | (ChangeBase & { kind: 'webhook'; fields: WebhookWire & { secret: typeof SENSITIVE }; secretRef: string })
);

/** What every update has: the live id and the fields that differ, live → desired. */
interface UpdateBase extends ChangeBase {
  id: string;
  diff: Record<string, FieldDiff>;
  /** Set when the update renames the resource (`renamedFrom` in the definition): its name before. */
  renamedFrom?: string;
}

/** An update: `fields` is the PATCH body (the desired value of each field in `diff`). */
export type UpdateChange = { action: 'update' } & (
  | (UpdateBase & { kind: 'organization'; fields: Partial<OrganizationWire> })
  | (UpdateBase & { kind: 'provider_key'; name: Provider; fields: { api_key: typeof SENSITIVE }; secretRef: string })
  | (UpdateBase & { kind: 'team'; fields: Partial<TeamWire> })
  /** An agent: as its create, `fields.tools` (when it changes) shows header values as {@link SENSITIVE}, `headerRefs` holds their templates. */
  | (UpdateBase & InTeam & { kind: 'agent'; fields: Partial<AgentWire>; headerRefs?: HeaderRefs })
  | (UpdateBase & InTeam & { kind: 'human'; fields: Partial<HumanWire> })
  /** A webhook: `fields` is the PATCH body; `secretRef` is set when its secret differs (apply rotates it). */
  | (UpdateBase & { kind: 'webhook'; fields: Partial<WebhookWire>; secretRef?: string })
);

/** A delete of a live resource the definition does not name; `cascade` counts what goes with it. */
export type DeleteChange = { action: 'delete'; id: string; cascade?: Cascade } & (
  | (ChangeBase & { kind: 'organization' | 'team' | 'webhook' })
  | (ChangeBase & { kind: 'provider_key'; name: Provider })
  | (ChangeBase & InTeam & { kind: 'agent' | 'human' })
  /** `participants`: the two participant names, so that their deletes wait for this one. */
  | (ChangeBase & InTeam & { kind: 'edge'; participants: [string, string] })
);

/** One change of a plan, discriminated by `action`, then by `kind`. */
export type Change = CreateChange | UpdateChange | DeleteChange;

/** A plan: the ordered changes that make the observed state match the desired one. */
export interface Plan {
  changes: Change[];
}
