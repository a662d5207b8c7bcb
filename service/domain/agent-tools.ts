/**
 * An agent's `tools` as the service keeps them (contract §11): checked when a create or PATCH sets
 * them, stored in the form the API returns (each remote MCP server's headers as fingerprints), with
 * the header values sealed apart (`tool_secrets`, the secret box, as provider keys are) and opened
 * only for a connection to that server (service/tools/remote-mcp.ts).
 */
import {
  defaultAskTimeoutSeconds,
  defaultToolTimeoutSeconds,
  TeamToolNames,
  type AgentTools,
  type AgentToolsBody,
  type McpServer,
} from '../../api/agent-tools.ts';
import { secretFingerprint } from '../../api/webhook-fingerprint.ts';
import { ServiceError, type FieldProblem } from '../../errors/catalogue.ts';
import { assertDeliverableUrl, type UrlPolicy } from '../outbound/url-guard.ts';
import type { Queryable } from '../storage/db.ts';
import type { SecretBox } from './secret-box.ts';

/** The sealed header values of an agent's servers: server name → header name → value. */
export type ToolSecrets = Record<string, Record<string, string>>;

/** What a create or PATCH stores: the `tools` column (the API's form) and `tool_secrets` (sealed, or null when no header). */
export interface StoredTools {
  tools: AgentTools | null;
  sealed: string | null;
}

/** The agent's tools as they were before a PATCH, to keep header values a PATCH leaves out. */
export interface PreviousTools {
  tools: AgentTools | null;
  sealed: string | null;
}

/** An object with its keys in sorted order: the stored JSON and the event's data then agree, whatever order jsonb keeps. */
function sortedKeys<T>(record: Record<string, T>): Record<string, T> {
  return Object.fromEntries(Object.entries(record).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/**
 * `tools` as the API shows it, from the stored JSON (or null): every member in one fixed order, so
 * that an agent read back from storage serialises exactly as the one just written (its event's
 * data is compared with the row, events/log.ts). Raises nothing.
 */
export function toolsResource(stored: unknown): AgentTools | null {
  if (stored === null || stored === undefined) return null;
  const raw = (typeof stored === 'string' ? JSON.parse(stored) : stored) as AgentTools;
  return {
    team: raw.team,
    ask_timeout_seconds: raw.ask_timeout_seconds,
    tool_timeout_seconds: raw.tool_timeout_seconds,
    mcp: raw.mcp.map((server) => ({ name: server.name, url: server.url, allow: server.allow, header_fingerprints: sortedKeys(server.header_fingerprints) })),
    approval: raw.approval === null ? null : { by: raw.approval.by, tools: [...raw.approval.tools] },
  };
}

/** Opens an agent's sealed header values. Errors: throws when the box cannot open them (another encryption key). */
export function openToolSecrets(secrets: SecretBox, sealed: string | null): ToolSecrets {
  return sealed === null ? {} : (JSON.parse(secrets.open(sealed)) as ToolSecrets);
}

/**
 * Checks `body` (a create's or PATCH's `tools`) for an agent of `teamId` whose provider (after the
 * change) is `provider`, and makes what is stored. Rules (contract §11): only an agent with a
 * provider has tools; an approval's team tool needs `team: true`, its `SERVER.TOOL` one of the
 * servers and, when that server has `allow`, one of its tools; `approval.by` names a human of the
 * team; every server URL passes the rules of webhook URLs (`policy`). A server of a PATCH without
 * `headers` keeps the values stored for the server of that name (`previous`).
 * Input: the transaction, the body's `tools` (null: none), the previous tools (PATCH) or null.
 * Output: {@link StoredTools}. Errors: `invalid_request` (with a path per problem),
 * `unknown_reference` (`tools.approval.by`), `webhook_url_refused` (`tools.mcp.N.url`).
 */
export async function prepareTools(
  tx: Queryable,
  context: { teamId: string; provider: string | null; secrets: SecretBox; policy: UrlPolicy },
  body: AgentToolsBody | null,
  previous: PreviousTools | null,
): Promise<StoredTools> {
  if (body === null) return { tools: null, sealed: null };
  const problems: FieldProblem[] = [];
  if (context.provider === null) problems.push({ path: 'tools', message: 'only an agent with a provider calls tools (an external agent acts over MCP)' });
  const team = body.team ?? false;
  const servers = body.mcp ?? [];
  const approval = body.approval ?? null;
  if (approval) {
    approval.tools.forEach((ref, i) => {
      const path = `tools.approval.tools.${i}`;
      const dot = ref.indexOf('.');
      if (dot < 0) {
        if (!Object.hasOwn(TeamToolNames, ref)) problems.push({ path, message: `${ref} is no team tool (${Object.keys(TeamToolNames).join(', ')}); a server's tool is SERVER.TOOL` });
        else if (!team) problems.push({ path, message: `${ref} is a team tool, and the agent has no team tools (set team: true)` });
        return;
      }
      const serverName = ref.slice(0, dot);
      const toolName = ref.slice(dot + 1);
      const server = servers.find((s) => s.name === serverName);
      if (!server) problems.push({ path, message: `${serverName} is none of the agent's MCP servers (${servers.map((s) => s.name).join(', ') || 'it has none'})` });
      else if (server.allow && !server.allow.includes(toolName)) problems.push({ path, message: `${toolName} is not among the tools allowed on ${serverName} (${server.allow.join(', ')})` });
    });
  }
  if (problems.length > 0) {
    throw new ServiceError('invalid_request', problems.map((p) => `${p.path}: ${p.message}`).join('; '), { errors: problems });
  }
  for (const [i, server] of servers.entries()) {
    await assertDeliverableUrl(server.url, context.policy, { path: `tools.mcp.${i}.url`, what: 'remote MCP servers' });
  }
  if (approval) {
    const human = await tx.query(`SELECT 1 FROM participants WHERE team_id = $1 AND kind = 'human' AND name = $2`, [context.teamId, approval.by]);
    if (human.length === 0) {
      throw new ServiceError('unknown_reference', `tools.approval.by: no human named ${JSON.stringify(approval.by)} in the agent's team`, {
        errors: [{ path: 'tools.approval.by', message: `no human named ${JSON.stringify(approval.by)} in the agent's team` }],
      });
    }
  }
  const kept = previous ? openToolSecrets(context.secrets, previous.sealed) : {};
  const values: ToolSecrets = {};
  const mcp: McpServer[] = servers.map((server) => {
    const headers = server.headers ?? kept[server.name] ?? {};
    const previousServer = previous?.tools?.mcp.find((s) => s.name === server.name);
    if (Object.keys(headers).length > 0) values[server.name] = sortedKeys(headers);
    // A header kept from before keeps its fingerprint: a PATCH that does not touch it shows no change.
    const fingerprints = Object.fromEntries(
      Object.entries(headers).map(([name, value]) => [
        name,
        server.headers === undefined && previousServer?.header_fingerprints[name] !== undefined ? previousServer.header_fingerprints[name]! : secretFingerprint(value),
      ]),
    );
    return { name: server.name, url: server.url, allow: server.allow ?? null, header_fingerprints: sortedKeys(fingerprints) };
  });
  const tools: AgentTools = {
    team,
    ask_timeout_seconds: body.ask_timeout_seconds ?? defaultAskTimeoutSeconds,
    tool_timeout_seconds: body.tool_timeout_seconds ?? defaultToolTimeoutSeconds,
    mcp,
    approval,
  };
  return { tools: toolsResource(tools), sealed: Object.keys(values).length > 0 ? context.secrets.seal(JSON.stringify(values)) : null };
}
