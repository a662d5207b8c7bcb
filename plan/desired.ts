/**
 * The desired state of an apply, from a validated definition: each resource's fields in the
 * service's names with their defaults filled in, by the one declaration of its fields
 * (`api/schemas.ts`). Outside the workflow: it loads the schemas, which the workflow's sandbox
 * does not need (the workflow's input already holds what this returns).
 */
import { defaultAskTimeoutSeconds, defaultToolTimeoutSeconds } from '../api/agent-tools.ts';
import { WebhookFields } from '../api/events.ts';
import { AgentFields, HumanFields, OrganizationFields, Providers, TeamFields } from '../api/schemas.ts';
import type { A2aDefinition } from '../definitions/a2a-schema.ts';
import type { AgentToolsDefinition } from '../definitions/agent-tools-schema.ts';
import { durationSeconds } from '../definitions/durations.ts';
import type { Definition } from '../definitions/schema.ts';
import type { DesiredA2a, DesiredAgentTools, DesiredState, DesiredTeam } from './types.ts';

/** The part of a definition an apply of resources works on (pipelines and schedules stay out). */
export type ResourceDefinition = Pick<Definition, 'organization' | 'teams'>;

/**
 * An agent's `tools` in wire names with every default filled in, as the service returns them
 * (contract §11): `askTimeout`/`toolTimeout` → `ask_timeout_seconds`/`tool_timeout_seconds`
 * (default 86400 and 60), `team` (default false), `mcp` (default []: each server's `headers`
 * default {} and kept as templates, `allow` default null), `approval` (default null). No `tools`
 * in the definition: null. Input: a validated entry (its durations parse). Raises nothing.
 */
export function toolsToWire(tools: AgentToolsDefinition | undefined): DesiredAgentTools | null {
  if (tools === undefined) return null;
  const seconds = (text: string | undefined, fallback: number) => (text === undefined ? fallback : (durationSeconds(text) ?? fallback));
  return {
    team: tools.team ?? false,
    ask_timeout_seconds: seconds(tools.askTimeout, defaultAskTimeoutSeconds),
    tool_timeout_seconds: seconds(tools.toolTimeout, defaultToolTimeoutSeconds),
    mcp: (tools.mcp ?? []).map((server) => ({ name: server.name, url: server.url, headers: { ...(server.headers ?? {}) }, allow: server.allow ?? null })),
    approval: tools.approval ?? null,
  };
}

/**
 * An agent's `a2a` in wire form (contract §12): its URL and its headers kept as templates
 * (default {}); no `a2a` in the definition: null. Raises nothing.
 */
export function a2aToWire(a2a: A2aDefinition | undefined): DesiredA2a | null {
  return a2a === undefined ? null : { url: a2a.url, headers: { ...(a2a.headers ?? {}) } };
}

/**
 * The desired state of a definition's organization and teams. Input: a validated definition (or
 * its organization and teams). Output: a {@link DesiredState} holding secret references (and MCP and A2A header templates),
 * never values. Raises nothing.
 */
export function desiredState(definition: ResourceDefinition): DesiredState {
  const { providerKeys, webhooks, ...organization } = definition.organization;
  return {
    organization: {
      name: organization.name,
      fields: OrganizationFields.toWire(organization),
      providerKeys: [...Providers].sort().flatMap((provider) => {
        const secretRef = providerKeys?.[provider];
        return secretRef === undefined ? [] : [{ provider, secretRef }];
      }),
      webhooks: (webhooks ?? []).map(({ secret, renamedFrom, ...hook }) => ({ name: hook.name, renamedFrom, fields: WebhookFields.toWire(hook), secretRef: secret })),
    },
    teams: definition.teams.map(
      (team): DesiredTeam => ({
        name: team.name,
        renamedFrom: team.renamedFrom,
        fields: TeamFields.toWire(team),
        agents: team.agents.map((agent) => ({
          name: agent.name,
          renamedFrom: agent.renamedFrom,
          fields: { ...AgentFields.toWire(agent), tools: toolsToWire(agent.tools), a2a: a2aToWire(agent.a2a) },
        })),
        humans: team.humans.map((human) => ({ name: human.name, renamedFrom: human.renamedFrom, fields: HumanFields.toWire(human) })),
        edges: team.edges,
      }),
    ),
  };
}
