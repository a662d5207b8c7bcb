/**
 * The organization keyring: the variables of a {@link Connection} (`apiKeyEnv`, then
 * `apiKeyEnvFallbacks`), tried in order when the service refuses a key (401). It lets a
 * long-running worker, or a CLI command, carry on across a key rotation (`ACS_API_KEY` revoked,
 * `ACS_API_KEY_NEXT` holding the next key) without a failed activity or a retry storm.
 *
 * Failing over by running the same call again with the next key is safe even for a POST: the
 * service resolves the key before it reads the body or does anything (contract §3), so a refused
 * request changed nothing.
 */
import type { AcsClient } from '../client/acs-client.ts';
import { AcsApiError } from '../client/errors.ts';
import { ToolkitError } from '../errors/catalogue.ts';
import type { Connection } from './connection.ts';

/**
 * The variable names of a connection's keyring, in the order they are tried: `apiKeyEnv`, then
 * `apiKeyEnvFallbacks`. Input: a connection. Output: one name or more. Raises nothing.
 */
export function keyringNames(connection: Connection): string[] {
  return [connection.apiKeyEnv, ...(connection.apiKeyEnvFallbacks ?? [])];
}

/**
 * Makes the client of one key of a keyring. Input: the service's base URL, the variable's name
 * (to share per-key state such as a rate-limit pacer) and the key itself.
 */
export type KeyClientFactory = (baseUrl: string, apiKeyEnv: string, apiKey: string) => AcsClient;

/** Runs `fn` with a client on a key of the connection's keyring (see {@link createKeyring}). */
export type WithKeyring = <T>(connection: Connection, fn: (client: AcsClient) => Promise<T>) => Promise<T>;

/**
 * Creates a keyring runner over an environment (read at each call, so a key set later is seen)
 * and a client factory. The runner calls `fn` with a client on each key of the connection's
 * keyring in turn, unset variables skipped, until `fn` settles with anything but a 401; the key
 * that worked is tried first by the next call of the same service and keyring. Output: what `fn`
 * returns. Errors: whatever `fn` raises other than a 401, unchanged; `unresolved_secret` when no
 * variable of the keyring is set (naming them); when every set key is refused, the service's own
 * error for a keyring of one variable (`invalid_api_key`, as without a keyring), else
 * `keys_refused` naming each variable with why it failed — never a key's value. Each key is
 * tried at most once per call: no storm.
 */
export function createKeyring(env: NodeJS.ProcessEnv, clientFor: KeyClientFactory): WithKeyring {
  // Index of the key that last worked, per service and keyring: later calls start there.
  const preferred = new Map<string, number>();
  return async function withKeyring<T>(connection: Connection, fn: (client: AcsClient) => Promise<T>): Promise<T> {
    const names = keyringNames(connection);
    const ringId = `${connection.baseUrl}\u0000${names.join('\u0000')}`;
    const start = preferred.get(ringId) ?? 0;
    const failed: string[] = [];
    let refusal: AcsApiError | undefined;
    for (let k = 0; k < names.length; k++) {
      const i = (start + k) % names.length;
      const name = names[i]!;
      const apiKey = env[name];
      if (!apiKey) {
        failed.push(`${name} (not set)`);
        continue;
      }
      try {
        const result = await fn(clientFor(connection.baseUrl, name, apiKey));
        preferred.set(ringId, i);
        return result;
      } catch (error) {
        if (!(error instanceof AcsApiError) || error.status !== 401) throw error;
        refusal = error;
        failed.push(`${name} (${error.code}${error.requestId ? `, request ${error.requestId}` : ''})`);
      }
    }
    if (!refusal) {
      throw new ToolkitError(
        'unresolved_secret',
        names.length === 1
          ? `environment variable ${names[0]} (the organization API key) is not set`
          : `no variable of the organization keyring is set: ${names.join(', ')}`,
      );
    }
    if (names.length === 1) throw refusal;
    throw new ToolkitError('keys_refused', `every organization key was refused: ${failed.join(', ')}`);
  };
}
