/**
 * What every command that talks to the service needs: the connection (flags over environment),
 * validated before any request is sent.
 */
import type { Connection } from '../activities/connection.ts';
import { AcsClient } from '../client/acs-client.ts';
import { ToolkitError } from '../errors/catalogue.ts';

/** Connection flags shared by commands. */
export interface ConnectionFlags {
  baseUrl?: string;
  apiKeyEnv?: string;
}

/**
 * Resolves the connection: `--base-url` or `ACS_BASE_URL`, and the name of the variable holding
 * the key (`--api-key-env`, default `ACS_API_KEY`). Raises `invalid_usage` when the URL is
 * missing or malformed and `unresolved_secret` when the key variable is unset.
 */
export function resolveConnection(flags: ConnectionFlags, env: NodeJS.ProcessEnv): Connection {
  const baseUrl = flags.baseUrl ?? env.ACS_BASE_URL;
  if (!baseUrl) throw new ToolkitError('invalid_usage', 'no service URL: set ACS_BASE_URL or pass --base-url');
  if (!URL.canParse(baseUrl) || !/^https?:$/.test(new URL(baseUrl).protocol)) {
    throw new ToolkitError('invalid_usage', `--base-url: not an http(s) URL: ${baseUrl}`);
  }
  const apiKeyEnv = flags.apiKeyEnv ?? 'ACS_API_KEY';
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(apiKeyEnv)) throw new ToolkitError('invalid_usage', `--api-key-env: not a variable name: ${apiKeyEnv}`);
  if (!env[apiKeyEnv]) throw new ToolkitError('unresolved_secret', `environment variable ${apiKeyEnv} (the organization API key) is not set`);
  return { baseUrl, apiKeyEnv };
}

/** A client for a resolved connection (the key read from the environment here). */
export function clientFor(connection: Connection, env: NodeJS.ProcessEnv): AcsClient {
  return new AcsClient({ baseUrl: connection.baseUrl, apiKey: env[connection.apiKeyEnv] as string });
}
