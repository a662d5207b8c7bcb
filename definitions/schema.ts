/**
 * The Zod schema of a teamctl definition file (`apiVersion: teamctl/v1`).
 *
 * Objects are strict (an unknown key is an error, so a typo never silently drops a setting). A
 * resource's fields are declared once, in `api/schemas.ts` (`TeamFields`, `AgentFields`, …):
 * the same declaration gives the service's request bodies, so a file that validates here is not
 * rejected later by the service for a length; this module adds the keys of the file alone
 * (`renamedFrom`, the lists of a team, provider keys). Cross-field rules (unique names, edges between
 * existing participants) are in `semantics.ts`: they need the whole document.
 */
import { z } from 'zod';
import { WebhookFields } from '../api/events.ts';
import { AgentFields, HumanFields, Name, OrganizationFields, Providers, TeamFields } from '../api/schemas.ts';
import { A2aDefinitionSchema } from './a2a-schema.ts';
import { AgentToolsDefinitionSchema } from './agent-tools-schema.ts';
import { PipelineDefinitionSchema, ScheduleDefinitionSchema } from './pipeline-schema.ts';
import { SecretRefSchema, WebhookSecretRefSchema } from './secrets.ts';

/** The only definition format version so far. */
export const API_VERSION = 'teamctl/v1';

/**
 * The name a resource had before: the plan renames the live resource of that name (an update that
 * keeps its id and what hangs on it, `kept`: a team's, agent's or human's threads, a webhook's
 * secret and delivery log) instead of deleting it and creating another. Harmless once done, or
 * when neither name exists (then it is created).
 */
const renamedFrom = (kept: string) =>
  Name.optional().describe(`The name it had before: plan and apply rename the live one of that name (${kept} kept) instead of deleting it and creating another; harmless once renamed`);
const RenamedFrom = renamedFrom('threads');

/**
 * An agent: with a provider it runs a model in the service; with `a2a` it is a remote A2A agent
 * (`a2a-schema.ts`); with neither, it is external (MCP). Fields: `AgentFields` (api/schemas.ts,
 * `maxSteps` among them), `tools` (`agent-tools-schema.ts`) and `a2a`, whose header values are
 * secret templates.
 */
export const AgentDefinitionSchema = AgentFields.definition
  .extend({ renamedFrom: RenamedFrom, tools: AgentToolsDefinitionSchema.optional(), a2a: A2aDefinitionSchema.optional() })
  .describe('An agent of the team');
export type AgentDefinition = z.infer<typeof AgentDefinitionSchema>;

/** A human participant. Fields: `HumanFields` (api/schemas.ts). */
export const HumanDefinitionSchema = HumanFields.definition.extend({ renamedFrom: RenamedFrom }).describe('A human of the team');
export type HumanDefinition = z.infer<typeof HumanDefinitionSchema>;

/** An undirected edge between two participants of the same team, by name. */
export const EdgeDefinitionSchema = z
  .tuple([Name, Name])
  .describe('Two participant names (agents or humans) of the team that may talk: [a, b]');
export type EdgeDefinition = z.infer<typeof EdgeDefinitionSchema>;

/** A team with its participants and edges. Fields: `TeamFields` (api/schemas.ts). */
export const TeamDefinitionSchema = TeamFields.definition
  .extend({
    renamedFrom: RenamedFrom,
    agents: z.array(AgentDefinitionSchema).default([]),
    humans: z.array(HumanDefinitionSchema).default([]),
    edges: z.array(EdgeDefinitionSchema).default([]),
  })
  .describe('A team');
export type TeamDefinition = z.infer<typeof TeamDefinitionSchema>;

/**
 * Provider keys by provider, each a `${env:NAME}` reference. An object with one optional member
 * per provider rather than a record: editors then complete provider names, and an unknown
 * provider is reported like any unknown key.
 */
export const ProviderKeysSchema = z
  .strictObject(Object.fromEntries(Providers.map((p) => [p, SecretRefSchema.optional()])) as {
    [P in (typeof Providers)[number]]: z.ZodOptional<typeof SecretRefSchema>;
  })
  .describe('API keys of LLM providers, as references to environment variables: ${env:NAME}');

/**
 * A webhook of the organization (contract §9), matched to the live one by its name. Fields:
 * `WebhookFields` (api/events.ts); the signing secret is a `${env:NAME}` reference (a Standard
 * Webhooks secret, `whsec_…`), never in the file, compared with the live one through its
 * fingerprint and set by apply only when it differs.
 */
export const WebhookDefinitionSchema = WebhookFields.definition
  .extend({
    renamedFrom: renamedFrom('its secret and delivery log'),
    secret: WebhookSecretRefSchema.describe('The signing secret (whsec_ and the base64 of 24–64 random bytes), as a reference to an environment variable: ${env:NAME}'),
  })
  .describe('A webhook: where the service POSTs the events of the organization, signed (Standard Webhooks)');
export type WebhookDefinition = z.infer<typeof WebhookDefinitionSchema>;

/** The organization the definition manages. Fields: `OrganizationFields` (api/schemas.ts). */
export const OrganizationDefinitionSchema = OrganizationFields.definition
  .extend({
    providerKeys: ProviderKeysSchema.optional(),
    webhooks: z.array(WebhookDefinitionSchema).optional().describe('Webhooks of the organization (reconciled by plan and apply; one that the file does not name is deleted)'),
  })
  .describe('The organization');
export type OrganizationDefinition = z.infer<typeof OrganizationDefinitionSchema>;

/** A whole definition file. */
export const DefinitionSchema = z
  .strictObject({
    apiVersion: z.literal(API_VERSION).describe('Version of the definition format'),
    organization: OrganizationDefinitionSchema,
    teams: z.array(TeamDefinitionSchema).default([]),
    pipelines: z.array(PipelineDefinitionSchema).default([]).describe('Pipelines: conversation steps run durably (`teamctl run`)'),
    schedules: z.array(ScheduleDefinitionSchema).default([]).describe('Schedules that run pipelines (Temporal Schedules, reconciled by apply)'),
  })
  .describe('A teamctl definition: an organization, its teams, their agents, humans and edges, pipelines and schedules');
export type Definition = z.infer<typeof DefinitionSchema>;
