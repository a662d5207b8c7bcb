/**
 * Reading a definition file for a command: the size limit (`--max-file-size`,
 * `TEAMCTL_MAX_FILE_SIZE`) and the secrets it references. Kept apart from `desired.ts` (the apply
 * input, which needs the connection and the client) so that `teamctl validate` loads only this.
 */
import { DEFAULT_MAX_DEFINITION_BYTES, loadDefinitionFile } from '../definitions/load.ts';
import { ToolkitError } from '../errors/catalogue.ts';
import { resolveSecret, resolveSecretTemplate, resolveWebhookSecret } from '../definitions/secrets.ts';
import type { Definition } from '../definitions/schema.ts';

/** The variable with the largest definition file accepted (`--max-file-size` sets it). */
export const MAX_FILE_SIZE_ENV = 'TEAMCTL_MAX_FILE_SIZE';

/**
 * Parses a size: bytes (`1048576`) or with a binary unit (`512KiB`, `2MiB`; `K`/`KB`, `M`/`MB`
 * read the same). Output: bytes. Errors: `invalid_usage` naming `what` (the flag or variable).
 */
export function parseByteSize(text: string, what: string): number {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(|b|bytes?|k|kb|kib|m|mb|mib)\s*$/i.exec(text);
  const unit = match?.[2]?.toLowerCase() ?? '';
  const factor = unit.startsWith('k') ? 1024 : unit.startsWith('m') ? 1024 * 1024 : 1;
  const bytes = match ? Math.floor(Number(match[1]) * factor) : NaN;
  if (!Number.isSafeInteger(bytes) || bytes < 1) throw new ToolkitError('invalid_usage', `${what}: not a size (bytes, or with KiB or MiB): ${JSON.stringify(text)}`);
  return bytes;
}

/**
 * Loads a definition file, no larger than `TEAMCTL_MAX_FILE_SIZE` of `env` (default 1 MiB).
 * With `checkSecrets`, every `${env:NAME}` it references must be set (a webhook's to a webhook
 * secret; those of agents' MCP header values too), so an apply fails before
 * its first request rather than halfway.
 * Errors: `invalid_definition` (with `FILE:LINE:COL` lines, or one file-level problem: too large,
 * not UTF-8, unreadable), `unresolved_secret`, `invalid_usage` (a bad size in the variable).
 */
export async function loadDesired(file: string, env: NodeJS.ProcessEnv, checkSecrets: boolean): Promise<Definition> {
  const limit = env[MAX_FILE_SIZE_ENV];
  const maxBytes = limit ? parseByteSize(limit, MAX_FILE_SIZE_ENV) : DEFAULT_MAX_DEFINITION_BYTES;
  const definition: Definition = await loadDefinitionFile(file, { maxBytes });
  if (checkSecrets) {
    for (const ref of Object.values(definition.organization.providerKeys ?? {})) {
      if (ref) resolveSecret(ref, env);
    }
    for (const hook of definition.organization.webhooks ?? []) resolveWebhookSecret(hook.secret, env);
    // Agents' MCP and A2A header values: every variable a template names (the values themselves are dropped here).
    for (const team of definition.teams) {
      for (const agent of team.agents) {
        for (const server of agent.tools?.mcp ?? []) for (const template of Object.values(server.headers ?? {})) resolveSecretTemplate(template, env);
        for (const template of Object.values(agent.a2a?.headers ?? {})) resolveSecretTemplate(template, env);
      }
    }
  }
  return definition;
}
