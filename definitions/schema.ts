/**
 * The Zod schema of a teamctl definition file (`apiVersion: teamctl/v1`).
 *
 * Objects are strict (an unknown key is an error, so a typo never silently drops a setting) and
 * reuse the service's text limits from `api/schemas.ts`, so a file that validates here is not
 * rejected later by the service for a length. Cross-field rules (unique names, edges between
 * existing participants) are in `semantics.ts`: they need the whole document.
 */
import { z } from 'zod';
import { AgentStatus, LongText, MaxTokensPerDay, Name, Provider, Providers } from '../api/schemas.ts';
import { PipelineDefinitionSchema, ScheduleDefinitionSchema } from './pipeline-schema.ts';
import { SecretRefSchema } from './secrets.ts';

/** The only definition format version so far. */
export const API_VERSION = 'teamctl/v1';

/** Same model limit as the service's agent body (`CreateAgentBody.model`). */
const Model = z.string().trim().min(1).max(200);

/** An agent: with a provider it runs a model in the service; without, it is external (MCP). */
export const AgentDefinitionSchema = z
  .strictObject({
    name: Name.describe('Agent name, unique among the participants of its team (1–100 characters)'),
    provider: Provider.optional().describe('LLM provider; leave out for an external agent taking part over MCP'),
    model: Model.optional().describe('Model of the provider; only for agents with a provider'),
    description: LongText.optional().describe('What the agent does (up to 4000 characters)'),
    instructions: LongText.optional().describe('System instructions of the agent (up to 4000 characters)'),
    status: AgentStatus.optional().describe('active (default) or paused'),
    maxTokensPerDay: MaxTokensPerDay.optional().describe(
      'Daily token budget (input plus output tokens per UTC day); once spent the agent calls no provider until the next UTC day. null: unlimited; omitted: left as it is on the service (unlimited for a new agent)',
    ),
  })
  .describe('An agent of the team');
export type AgentDefinition = z.infer<typeof AgentDefinitionSchema>;

/** A human participant. */
export const HumanDefinitionSchema = z
  .strictObject({
    name: Name.describe('Human name, unique among the participants of its team (1–100 characters)'),
    email: z.email('must be an email address').max(320).optional().describe('Email address'),
  })
  .describe('A human of the team');
export type HumanDefinition = z.infer<typeof HumanDefinitionSchema>;

/** An undirected edge between two participants of the same team, by name. */
export const EdgeDefinitionSchema = z
  .tuple([Name, Name])
  .describe('Two participant names (agents or humans) of the team that may talk: [a, b]');
export type EdgeDefinition = z.infer<typeof EdgeDefinitionSchema>;

/** A team with its participants and edges. */
export const TeamDefinitionSchema = z
  .strictObject({
    name: Name.describe('Team name, unique in the organization (1–100 characters)'),
    description: LongText.optional().describe('What the team is for (up to 4000 characters)'),
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

/** The organization the definition manages. */
export const OrganizationDefinitionSchema = z
  .strictObject({
    name: Name.describe('Organization name (1–100 characters)'),
    providerKeys: ProviderKeysSchema.optional(),
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
