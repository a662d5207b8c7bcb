/**
 * Zod schemas of the service's wire format: request bodies, query strings and resources.
 *
 * Single source of truth (contract §1, §4, §5): the service validates requests with them, the
 * client types its results with them, and the OpenAPI document is generated from them.
 */
import { z } from 'zod';
import { AgentTools, AgentToolsBody, defaultMaxSteps, maxMaxSteps } from './agent-tools.ts';
import { A2aParticipant, A2aParticipantBody } from './remote-a2a.ts';
import { Id, Timestamp } from './primitives.ts';
import { minProviderKeyLength } from './provider-key-hint.ts';
import { resourceFields } from './resource-fields.ts';

const trimmed = (min: number, max: number) => z.string().trim().min(min).max(max);

/**
 * A resource name: 1–100 characters after trimming (contract §1), with no control character but
 * tab and newline (C0, DEL and C1 refused): names are printed on terminals, which would obey
 * them (`ESC [ 2 J` clears the screen).
 */
export const Name = trimmed(1, 100).regex(/^[^\u0000-\u0008\u000b-\u001f\u007f-\u009f]*$/, 'must not contain control characters (tab and newline aside)');
/** A description or instructions: up to 4,000 characters (contract §1). */
export const LongText = trimmed(0, 4000);
/** A thread subject: up to 200 characters (contract §1). */
export const Subject = trimmed(0, 200);
/** Message content: 1–32,768 characters (contract §1). */
export const Content = trimmed(1, 32768);
/** A channel hint (contract §1). */
export const Channel = z.string().regex(/^[a-z][a-z0-9_-]{0,31}$/, 'must match ^[a-z][a-z0-9_-]{0,31}$');
export { Id, Timestamp } from './primitives.ts';

/** The LLM providers the service knows (contract §5). */
export const Providers = ['openai', 'anthropic', 'google', 'mistral', 'groq', 'openrouter', 'echo'] as const;
/** A provider name. */
export const Provider = z.enum(Providers);
export type Provider = z.infer<typeof Provider>;
/** The providers that are LLM vendors: every one but the built-in `echo`. */
export const VendorProvider = z.enum(Providers.filter((p) => p !== 'echo') as [Exclude<Provider, 'echo'>, ...Array<Exclude<Provider, 'echo'>>]);

/** The most tokens a daily budget may name (`max_tokens_per_day`). */
export const maxDailyTokenBudget = 2_000_000_000;

/** Agent statuses (contract §4). */
export const AgentStatuses = { active: 'active', paused: 'paused' } as const;
export const AgentStatus = z.enum(AgentStatuses);
export type AgentStatus = z.infer<typeof AgentStatus>;

/**
 * `deletion_protection` (contract §4): while true, the service refuses to delete the resource, or
 * anything whose deletion would take it along, with 409 `deletion_protected`.
 */
export const DeletionProtection = z.boolean().meta({
  description: 'While true, deleting this resource, or anything whose deletion would take it along, is refused (409 `deletion_protected`).',
});

// ---- managed fields (declared once: definitions, bodies, resources and plans derive from them) --

/** The model of an agent's provider: 1–200 characters. */
const Model = trimmed(1, 200);

/** `protect` in a definition, `deletion_protection` on the wire (contract §4), on every kind that has it. */
const protect = {
  rest: 'deletion_protection',
  value: DeletionProtection,
  default: false,
  description: 'Deletion protection: while true, the service refuses to delete it, or anything whose deletion would take it along (409 deletion_protected); set it false and apply before removing it',
} as const;

/** An organization's managed fields (contract §4, §5); `providerKeys` are a resource of their own. */
export const OrganizationFields = resourceFields({
  name: { rest: 'org_name', value: Name, required: true, description: 'Organization name (1–100 characters)' },
  protect,
});

/** A team's managed fields (contract §4, §5). */
export const TeamFields = resourceFields({
  name: { rest: 'team_name', value: Name, required: true, description: 'Team name, unique in the organization (1–100 characters)' },
  description: { rest: 'description', value: LongText, default: '', description: 'What the team is for (up to 4000 characters)' },
  protect,
});

/** An agent's managed fields (contract §4, §5). */
export const AgentFields = resourceFields({
  name: { rest: 'name', value: Name, required: true, description: 'Agent name, unique among the participants of its team (1–100 characters)' },
  provider: { rest: 'provider', value: Provider, default: null, description: 'LLM provider; none for an external agent taking part over MCP' },
  model: { rest: 'model', value: Model, default: null, description: 'Model of the provider; only for agents with a provider' },
  description: { rest: 'description', value: LongText, default: '', description: 'What the agent does (up to 4000 characters)' },
  instructions: { rest: 'instructions', value: LongText, default: '', description: 'System instructions of the agent (up to 4000 characters)' },
  status: {
    rest: 'status',
    value: AgentStatus,
    serviceDefault: 'active',
    description: 'active (a new agent\'s default) or paused; a definition that leaves it out leaves it as it is',
  },
  maxTokensPerDay: {
    rest: 'max_tokens_per_day',
    value: z.number().int().min(1).max(maxDailyTokenBudget),
    nullable: true,
    serviceDefault: null,
    description:
      'Daily token budget (input plus output tokens per UTC day); once spent the agent calls no provider until the next UTC day. null: unlimited; left out: left as it is on the service (unlimited for a new agent)',
  },
  maxSteps: {
    rest: 'max_steps',
    value: z.number().int().min(1).max(maxMaxSteps),
    default: defaultMaxSteps,
    description: `Most model calls of one turn of an agent with tools (1–${maxMaxSteps}, default ${defaultMaxSteps}); a turn that reaches it ends with a reply saying so`,
  },
  protect,
});

/** A human's managed fields (contract §4, §5). */
export const HumanFields = resourceFields({
  name: { rest: 'name', value: Name, required: true, description: 'Human name, unique among the participants of its team (1–100 characters)' },
  email: { rest: 'email', value: z.email('must be an email address').max(320), default: null, description: 'Email address' },
  protect,
});

// ---- request bodies -------------------------------------------------------------------------

export const CreateOrganizationBody = OrganizationFields.createBody.meta({ id: 'CreateOrganizationBody' });
// An organization keeps its name (contract §5: PATCH takes `deletion_protection` only).
export const PatchOrganizationBody = OrganizationFields.patchBody.omit({ org_name: true }).meta({ id: 'PatchOrganizationBody' });
export const CreateTeamBody = TeamFields.createBody.meta({ id: 'CreateTeamBody' });
export const PatchTeamBody = TeamFields.patchBody.meta({ id: 'PatchTeamBody' });
/** `tools` in an agent's create and PATCH bodies (contract §11): null or absent at creation, no tools. */
const toolsBody = AgentToolsBody.nullable().optional();
/** `a2a` in an agent's create and PATCH bodies (contract §12, A2A participants): null or absent, not a remote A2A agent. */
const a2aBody = A2aParticipantBody.nullable().optional();
export const CreateAgentBody = AgentFields.createBody.extend({ tools: toolsBody, a2a: a2aBody }).meta({
  id: 'CreateAgentBody',
  description: 'A provider other than `echo` needs a `model` (400 `invalid_request` naming `model` otherwise).',
});
export const PatchAgentBody = AgentFields.patchBody.extend({ tools: toolsBody, a2a: a2aBody }).meta({
  id: 'PatchAgentBody',
  description: 'The agent after the change must have a `model` if its provider is not `echo` (400 `invalid_request` naming `model` otherwise).',
});
export const CreateHumanBody = HumanFields.createBody.meta({ id: 'CreateHumanBody' });
export const PatchHumanBody = HumanFields.patchBody.meta({ id: 'PatchHumanBody' });
export const CreateEdgeBody = z
  // Two different participants: the domain refuses the same id twice; `uniqueItems` documents it.
  .strictObject({ participants: z.tuple([Id, Id]).meta({ uniqueItems: true }) })
  .meta({ id: 'CreateEdgeBody' });
/**
 * Whether the writer waits for the other participant's answer (an addition to the contract): the
 * thread then shows that participant in `awaiting_reply_from` until they write, and an agent with a
 * provider leaves that one answer to whoever wrote the message through the API (a program such as
 * a pipeline step speaking as the agent) rather than answering it itself.
 */
const ExpectsReply = z
  .boolean()
  .optional()
  .describe('The writer waits for the other participant\'s answer (default false): the thread shows whose answer it awaits, and an agent with a provider that is the writer leaves that answer to the program that wrote as it.');
export const OpenThreadBody = z.strictObject({
  sender_agent_id: Id,
  subject: Subject.optional(),
  content: Content,
  channel: Channel.optional(),
  expects_reply: ExpectsReply,
}).meta({ id: 'OpenThreadBody' });
export const AppendMessageBody = z.strictObject({
  sender_agent_id: Id,
  content: Content,
  attachments: z.array(Id).max(100).optional(),
  expects_reply: ExpectsReply,
}).meta({ id: 'AppendMessageBody' });
/** The body of `PUT …/api-keys/echo`: the development provider takes any non-empty key (contract §8). */
export const PutProviderKeyBody = z.strictObject({ api_key: trimmed(1, 4096) }).meta({ id: 'PutProviderKeyBody' });
/** The body of `PUT …/api-keys/{provider}` for an LLM vendor: a key of at least 8 characters (api/provider-key-hint.ts). */
export const PutVendorProviderKeyBody = z.strictObject({ api_key: trimmed(minProviderKeyLength, 4096) }).meta({ id: 'PutVendorProviderKeyBody' });
export const ThreadPageQuery = z.strictObject({
  after: Id.optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
  wait: z.coerce.number().min(0).max(30).default(0),
});

// ---- resources ------------------------------------------------------------------------------

export const Organization = z.object({
  org_id: Id,
  ...OrganizationFields.resourceShape,
  team_count: z.number().int(),
  human_count: z.number().int(),
  is_personal: z.boolean(),
  created_at: Timestamp,
}).meta({ id: 'Organization' });
export type Organization = z.infer<typeof Organization>;

export const Team = z.object({
  team_id: Id,
  org_id: Id,
  ...TeamFields.resourceShape,
  agent_count: z.number().int(),
  edge_count: z.number().int(),
  engine_id: z.string(),
  created_at: Timestamp,
}).meta({ id: 'Team' });
export type Team = z.infer<typeof Team>;

export const Agent = z.object({
  agent_id: Id,
  team_id: Id,
  ...AgentFields.resourceShape,
  tools: AgentTools.nullable(),
  a2a: A2aParticipant.nullable().optional().meta({ description: 'Set for a remote A2A agent: the service sends the messages and tasks on its edges to it; null (or absent, from a server before it) for any other agent.' }),
  created_at: Timestamp,
}).meta({ id: 'Agent' });
export type Agent = z.infer<typeof Agent>;

export const Human = z.object({
  human_id: Id,
  team_id: Id,
  ...HumanFields.resourceShape,
  created_at: Timestamp,
}).meta({ id: 'Human' });
export type Human = z.infer<typeof Human>;

export const Edge = z.object({
  edge_id: Id,
  team_id: Id,
  participants: z.tuple([Id, Id]),
  created_at: Timestamp,
}).meta({ id: 'Edge' });
export type Edge = z.infer<typeof Edge>;

export const TeamGraph = Team.extend({
  agents: z.array(Agent),
  humans: z.array(Human),
  edges: z.array(Edge),
  active_thread_count: z.number().int(),
}).meta({ id: 'TeamGraph' });
export type TeamGraph = z.infer<typeof TeamGraph>;

export const Thread = z.object({
  thread_id: Id,
  edge_id: Id,
  team_id: Id,
  subject: z.string(),
  message_count: z.number().int(),
  unread_count: z.number().int(),
  channel: z.string(),
  awaiting_reply_from: Id.nullable().describe('The participant whose answer the thread awaits: the recipient of the latest message that expects a reply, until they write; null when none.'),
  created_at: Timestamp,
}).meta({ id: 'Thread' });
export type Thread = z.infer<typeof Thread>;

export const Message = z.object({
  message_id: Id,
  thread_id: Id,
  sender_id: Id,
  content: z.string(),
  attachments: z.array(Id),
  expects_reply: z.boolean().describe('Whether the writer waits for the other participant\'s answer.'),
  stopped: z
    .boolean()
    .describe('Whether this is an agent\'s reply that was stopped while it was being written (POST /threads/{thread_id}/stop): its content is what was written until then.'),
  sent_at: Timestamp,
}).meta({ id: 'Message' });
export type Message = z.infer<typeof Message>;

export const ThreadPage = Thread.extend({
  messages: z.array(Message),
  has_more: z.boolean(),
  next_after: Id.nullable(),
}).meta({ id: 'ThreadPage' });
export type ThreadPage = z.infer<typeof ThreadPage>;

export const ProviderKey = z.object({ provider: Provider, key_hint: z.string(), updated_at: Timestamp }).meta({ id: 'ProviderKey' });
export type ProviderKey = z.infer<typeof ProviderKey>;

export const Deleted = (idField: string) => z.object({ deleted: z.literal(true), [idField]: Id });

// ---- deletions (contract §4 `deletion_protection`, §5 DELETE and the deletion previews) --------

/** The kinds of resource that carry `deletion_protection` (contract §4). */
export const ProtectableKinds = { organization: 'organization', team: 'team', agent: 'agent', human: 'human' } as const;
export const ProtectableKind = z.enum(ProtectableKinds);
export type ProtectableKind = z.infer<typeof ProtectableKind>;

/** A resource whose `deletion_protection` is true, as previews and 409 `deletion_protected` name it. */
export const ProtectedResource = z.object({ kind: ProtectableKind, id: Id, name: z.string() }).meta({ id: 'ProtectedResource' });
export type ProtectedResource = z.infer<typeof ProtectedResource>;

const count = z.number().int().min(0);
/**
 * What a deletion takes along, counted the same way for a team and for all the teams of an
 * organization: the one declaration of the counts both deletion previews share.
 */
const cascadeCounts = { agents: count, humans: count, edges: count, threads: count, messages: count, attachments: count };
const protectedList = z
  .array(ProtectedResource)
  .meta({ description: 'Every resource with deletion_protection that the deletion would remove, the resource itself first; while any is listed, DELETE is refused (409 `deletion_protected`).' });

/** `GET /teams/{team_id}/deletion-preview` (contract §5): what `DELETE /teams/{team_id}` would remove. */
export const TeamDeletionPreview = z.object({ team_id: Id, ...cascadeCounts, protected: protectedList }).meta({ id: 'TeamDeletionPreview' });
export type TeamDeletionPreview = z.infer<typeof TeamDeletionPreview>;

/** `GET /organizations/{org_id}/deletion-preview` (contract §5): what `DELETE /organizations/{org_id}` would remove. */
export const OrganizationDeletionPreview = z.object({
  org_id: Id,
  teams: count,
  ...cascadeCounts,
  keys: count.meta({ description: 'Active organization keys of the organization: deleted with it, they stop working at once.' }),
  provider_keys: count.meta({ description: 'Provider keys set on the organization, deleted with it.' }),
  protected: protectedList,
  provisioned_organizations: z
    .array(z.object({ org_id: Id, org_name: z.string() }))
    .meta({ description: 'Organizations this one provisioned; while any exists, DELETE is refused (409 `in_use`): delete them first.' }),
  own_organization: z.boolean().meta({ description: "Whether this is the calling key's own organization, which the key may not delete (403 `forbidden`)." }),
}).meta({ id: 'OrganizationDeletionPreview' });
export type OrganizationDeletionPreview = z.infer<typeof OrganizationDeletionPreview>;

/** The problem+json body of every error (RFC 9457, contract §2). */
export const Problem = z.object({
  type: z.string(),
  title: z.string(),
  status: z.number().int(),
  detail: z.string(),
  code: z.string(),
  request_id: z.string(),
  errors: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
  existing_id: z.string().optional(),
  protected: z.array(ProtectedResource).optional(),
});
export type Problem = z.infer<typeof Problem>;

// ---- organization keys, MCP keys, access requests (contract §3, §4, §5, §6) ----------------

/** The longest rotation grace period: 30 days, in seconds. */
export const maxGraceSeconds = 30 * 24 * 3600;
/** The most active organization keys one organization may hold (contract §2 `key_limit`). */
export const maxActiveOrgKeys = 10;

/** An ISO 8601 timestamp with a time zone (`Z` or an offset) in a request. */
export const TimestampInput = z.iso.datetime({ offset: true });

/** `POST /organizations/{org_id}/keys` (contract §5): an optional name and expiry. */
export const CreateOrgKeyBody = z.strictObject({ name: Name.optional(), expires_at: TimestampInput.optional() }).meta({ id: 'CreateOrgKeyBody' });
/** `POST …/keys/{key_id}/rotate` (contract §5): how long the old key keeps working, in seconds (default 86400). */
export const RotateOrgKeyBody = z.strictObject({ grace_seconds: z.number().int().min(0).max(maxGraceSeconds).optional() }).meta({ id: 'RotateOrgKeyBody' });

/** An organization key as listed (contract §4): never its secret or hash. */
export const OrgKey = z.object({
  key_id: Id,
  name: z.string(),
  prefix: z.string(),
  created_at: Timestamp,
  last_used_at: Timestamp.nullable(),
  expires_at: Timestamp.nullable(),
}).meta({ id: 'OrgKey' });
export type OrgKey = z.infer<typeof OrgKey>;
/** An organization key as created: with its secret, shown only in this response. */
export const CreatedOrgKey = OrgKey.extend({ api_key: z.string() }).meta({ id: 'CreatedOrgKey' });
export type CreatedOrgKey = z.infer<typeof CreatedOrgKey>;

/** `POST /agents/{agent_id}/mcp-keys` takes no fields (an empty object or no body). */
export const CreateMcpKeyBody = z.strictObject({}).meta({ id: 'CreateMcpKeyBody' });

/** An MCP key as listed (contract §4): bound to one agent; never its secret or hash. */
export const McpKey = z.object({
  key_id: Id,
  agent_id: Id,
  prefix: z.string(),
  created_at: Timestamp,
  last_used_at: Timestamp.nullable(),
}).meta({ id: 'McpKey' });
export type McpKey = z.infer<typeof McpKey>;
/** An MCP key as created: with its secret, shown only in this response. */
export const CreatedMcpKey = McpKey.extend({ mcp_key: z.string() }).meta({ id: 'CreatedMcpKey' });
export type CreatedMcpKey = z.infer<typeof CreatedMcpKey>;

/** The answer of a key revocation (contract §5). */
export const Revoked = z.object({ revoked: z.literal(true), key_id: Id }).meta({ id: 'Revoked' });

/** Access request states: pending until the operator approves or rejects it. */
export const AccessRequestStatuses = { pending: 'pending', approved: 'approved', rejected: 'rejected' } as const;
/** Zod schema of an access request's state. */
export const AccessRequestStatus = z.enum(AccessRequestStatuses).meta({ id: 'AccessRequestStatus' });
export type AccessRequestStatus = z.infer<typeof AccessRequestStatus>;

/** `POST /access-requests` (contract §5; no API key needed). */
export const CreateAccessRequestBody = z.strictObject({
  email: z.email().max(320),
  org_name: Name,
  intended_use: trimmed(1, 2000),
}).meta({ id: 'CreateAccessRequestBody' });
/** The 202 answer of `POST /access-requests`. */
export const AccessRequestReceipt = z.object({ request_id: Id, status: z.literal('pending') }).meta({ id: 'AccessRequestReceipt' });
/** Query of the operator's access-request list (contract §6). */
export const AccessRequestListQuery = z.strictObject({ status: AccessRequestStatus.optional() });
/** Body of the operator's rejection (contract §6): an optional reason. */
export const RejectAccessRequestBody = z.strictObject({ reason: trimmed(1, 2000).optional() }).meta({ id: 'RejectAccessRequestBody' });

/** An access request as the operator sees it (contract §6). */
export const AccessRequest = z.object({
  request_id: Id,
  email: z.string(),
  org_name: z.string(),
  intended_use: z.string(),
  status: AccessRequestStatus,
  /** The rejection reason, null when none was given or not rejected. */
  reason: z.string().nullable(),
  /** The organization created on approval, null before. */
  org_id: Id.nullable(),
  created_at: Timestamp,
  decided_at: Timestamp.nullable(),
}).meta({ id: 'AccessRequest' });
export type AccessRequest = z.infer<typeof AccessRequest>;
/** What approving an access request returns, once: the request, its new organization and first key. */
export const ApprovedAccessRequest = z.object({ request: AccessRequest, organization: Organization, api_key: z.string() }).meta({ id: 'ApprovedAccessRequest' });
export type ApprovedAccessRequest = z.infer<typeof ApprovedAccessRequest>;

// ---- attachments (contract §4, §5) -----------------------------------------------------------

/** The most bytes one attachment may hold once decoded: 5 MiB (contract §5). */
export const maxAttachmentBytes = 5 * 1024 * 1024;
/** The body limit of `POST /attachments`: 8 MiB, room for 5 MiB in base64 (contract §5). */
export const attachmentBodyLimitBytes = 8 * 1024 * 1024;

// RFC 9110 token characters: a MIME type is `type/subtype` plus optional `; name=value` parameters.
// Only what a Content-Type header may carry: spaces and tabs around `;` (OWS), and printable
// ASCII or tabs inside a quoted value (qdtext), since the content is served back under this type.
const mimeToken = "[A-Za-z0-9!#$%&'*+.^_`|~-]+";
const mimeType = new RegExp(`^${mimeToken}/${mimeToken}(?:[ \\t]*;[ \\t]*${mimeToken}=(?:${mimeToken}|"[\\t\\x20\\x21\\x23-\\x5b\\x5d-\\x7e]*"))*$`);

/** `POST /attachments` (contract §5); the body limit of this route is {@link attachmentBodyLimitBytes}. */
export const CreateAttachmentBody = z.strictObject({
  /** 1–255 characters after trimming, no control characters. */
  filename: trimmed(1, 255).regex(/^[^\u0000-\u001f\u007f]*$/, 'must not contain control characters'),
  /** A MIME type such as `text/plain; charset=utf-8`; served back as the content's Content-Type. */
  content_type: z.string().trim().max(255).regex(mimeType, 'must be a MIME type such as text/plain'),
  /** Standard base64 with padding; at most 5 MiB once decoded (more is 413 `payload_too_large`). */
  data_base64: z
    .string()
    .regex(/^[A-Za-z0-9+/]*={0,2}$/, 'must be base64 (A–Z, a–z, 0–9, +, /, = padding)')
    .refine((value) => value.length % 4 === 0, 'must be padded base64 (length a multiple of 4)')
    // The two checks above as one pattern, so that the OpenAPI document states the padding rule too.
    .meta({ pattern: '^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$' }),
  /** The organization that owns the attachment; default the key's own. Must be reachable. */
  org_id: Id.optional(),
}).meta({ id: 'CreateAttachmentBody' });

/** An attachment's metadata (contract §4), plus the owning `org_id`. */
export const Attachment = z.object({
  attachment_id: Id,
  org_id: Id,
  filename: z.string(),
  content_type: z.string(),
  size_bytes: z.number().int(),
  created_at: Timestamp,
}).meta({ id: 'Attachment' });
export type Attachment = z.infer<typeof Attachment>;

// ---- usage and budgets (addition to the contract: provider agents' token usage) -------------

// The earliest `since`: storage has no year 0 (the year before 1 is 1 BC), which an answer's
// ISO 8601 `since` could not spell, so earlier instants are refused rather than answered 500.
const earliestSince = Date.parse('0001-01-01T00:00:00Z');

/**
 * Query of the usage routes: usage from `since` on (ISO 8601 with `Z` or an offset, not before
 * 0001-01-01T00:00:00Z); default: the start of the current UTC day.
 */
export const UsageQuery = z.strictObject({
  // (A value that is no time at all is already refused by TimestampInput: one issue is enough.)
  since: TimestampInput.refine((value) => !(Date.parse(value) < earliestSince), 'must not be before 0001-01-01T00:00:00Z').optional(),
});

/** Token usage of one provider and model. */
export const ModelUsage = z.object({
  provider: Provider,
  model: z.string(),
  /** Provider calls that were answered and paid: replies, and empty answers that were not posted. */
  calls: z.number().int(),
  input_tokens: z.number().int(),
  output_tokens: z.number().int(),
}).meta({ id: 'ModelUsage' });
export type ModelUsage = z.infer<typeof ModelUsage>;

/** Token usage of one agent since a time, and the state of its daily budget. */
export const AgentUsage = z.object({
  agent_id: Id,
  team_id: Id,
  /** The agent's name; null once the agent is deleted (its usage stays on the team's record). */
  name: z.string().nullable(),
  since: Timestamp,
  calls: z.number().int(),
  input_tokens: z.number().int(),
  output_tokens: z.number().int(),
  total_tokens: z.number().int(),
  by_model: z.array(ModelUsage),
  /** The agent's daily budget; null = unlimited (and for a deleted agent). */
  max_tokens_per_day: z.number().int().nullable(),
  /** Tokens counted against the budget in the current UTC day. */
  tokens_today: z.number().int(),
  /** When the budget is spent: the start of the next UTC day, until which the agent calls no provider; else null. */
  budget_exhausted_until: Timestamp.nullable(),
}).meta({ id: 'AgentUsage' });
export type AgentUsage = z.infer<typeof AgentUsage>;

/** Token usage of a team since a time: totals and each agent that has a provider or used tokens. */
export const TeamUsage = z.object({
  team_id: Id,
  since: Timestamp,
  calls: z.number().int(),
  input_tokens: z.number().int(),
  output_tokens: z.number().int(),
  total_tokens: z.number().int(),
  agents: z.array(AgentUsage),
}).meta({ id: 'TeamUsage' });
export type TeamUsage = z.infer<typeof TeamUsage>;
