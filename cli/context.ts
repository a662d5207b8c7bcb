/**
 * What every command that talks to the service needs: the connection (flags over environment),
 * validated before any request is sent, and clients on its organization keyring.
 */
import type { Connection } from '../activities/connection.ts';
import { createKeyring, keyringNames } from '../activities/keyring.ts';
import type { WithKeyring } from '../activities/keyring.ts';
import { AcsClient, normalizeBaseUrl } from '../client/acs-client.ts';
import type { PostOptions } from '../client/acs-client.ts';
import { AcsApiError } from '../client/errors.ts';
import type { EventStreamRequest } from '../client/event-stream.ts';
import type { ThreadStreamItem, ThreadStreamRequest } from '../client/thread-stream.ts';
import type { Event } from '../api/events.ts';
import { ToolkitError } from '../errors/catalogue.ts';
import { KEYRING_ENV, settingOrigin } from './config.ts';

/** The keyring without `--api-key-env`: the key, then the next key of a rotation. */
export const DEFAULT_KEYRING: readonly string[] = ['ACS_API_KEY', 'ACS_API_KEY_NEXT'];

/** Connection flags shared by commands. */
export interface ConnectionFlags {
  baseUrl?: string;
  /**
   * `--api-key-env`, repeatable: the variables of the organization keyring, in the order they
   * are tried (one name is accepted too). Unset: {@link DEFAULT_KEYRING}.
   */
  apiKeyEnv?: string[] | string;
}

/**
 * Resolves the connection: `--base-url` or `ACS_BASE_URL` (a context of the config file fills
 * the variable in when unset, `cli/config.ts`; `/api/v1`, `/v1` or `/api` at its end is dropped), and the keyring:
 * the names of the variables holding the organization key (`--api-key-env`, repeatable, else
 * `TEAMCTL_API_KEY_ENV`, comma-separated, which a context also fills in; the first is
 * `apiKeyEnv`, the others `apiKeyEnvFallbacks`, in order, duplicates dropped; default
 * `ACS_API_KEY` then `ACS_API_KEY_NEXT`). The fallbacks are kept even when unset here: a worker
 * whose environment has them fails over after a rotation. Output: a {@link Connection} holding
 * names, never values; it also records where the URL and keyring came from
 * ({@link connectionOrigin}). Errors: `invalid_usage` when the URL is missing or malformed
 * (naming where it came from, with the fix as its hint) or a name is not a variable name;
 * `unresolved_secret` when no variable of the keyring is set (naming them, never a value; with
 * the default keyring it asks for `ACS_API_KEY`).
 */
export function resolveConnection(flags: ConnectionFlags, env: NodeJS.ProcessEnv): Connection {
  const url = flags.baseUrl ?? env.ACS_BASE_URL;
  if (!url) throw new ToolkitError('invalid_usage', 'no service URL: set ACS_BASE_URL or pass --base-url');
  const from = flags.baseUrl !== undefined ? '--base-url' : settingOrigin(env, 'ACS_BASE_URL');
  if (!URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol)) {
    // `127.0.0.1:8080` parses as a URL of scheme `127.0.0.1:`: a host and port without a scheme.
    const hostAndPort = /^[\w.-]+:\d+(?:\/.*)?$/.test(url) || /^[\w.-]+$/.test(url);
    throw new ToolkitError('invalid_usage', `${from} is not an http(s) URL: ${url}`, {
      hint: `write it with its scheme${hostAndPort ? `: http://${url}` : ', e.g. http://127.0.0.1:8080'} (the service's root URL; teamctl adds /api/v1)`,
    });
  }
  // The workflow input and every client get the service's root: without `/api/v1` (or `/v1`),
  // which the client adds, nor a lone `/api` (`ACS_BASE_URL=…/api` would ask for /api/api/v1/…).
  const baseUrl = normalizeBaseUrl(url).replace(/\/api$/, '');
  // --api-key-env, else the keyring a context or the environment names (TEAMCTL_API_KEY_ENV).
  const fromEnv = env[KEYRING_ENV]?.split(',').map((name) => name.trim()).filter(Boolean) ?? [];
  const given = flags.apiKeyEnv === undefined ? fromEnv : [flags.apiKeyEnv].flat();
  const names = [...new Set(given.length > 0 ? given : DEFAULT_KEYRING)];
  for (const name of names) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new ToolkitError('invalid_usage', `--api-key-env: not a variable name: ${name}`);
  }
  if (!names.some((name) => env[name])) {
    let message: string;
    if (given.length === 0) {
      message = `environment variable ACS_API_KEY (the organization API key) is not set: set ACS_API_KEY (its rotation fallback ${DEFAULT_KEYRING.slice(1).join(', ')} is not set either)`;
    } else if (names.length === 1) {
      message = `environment variable ${names[0]} (the organization API key) is not set`;
    } else {
      message = `none of the organization keyring's environment variables is set: ${names.join(', ')}; set at least one`;
    }
    throw new ToolkitError('unresolved_secret', message);
  }
  const [apiKeyEnv, ...fallbacks] = names as [string, ...string[]];
  const keysFrom = flags.apiKeyEnv !== undefined ? '--api-key-env' : fromEnv.length > 0 ? settingOrigin(env, KEYRING_ENV) : undefined;
  origins.set(env, { baseUrl, baseUrlFrom: from, keyEnvs: names, ...(keysFrom ? { keyEnvsFrom: keysFrom } : {}) });
  return { baseUrl, apiKeyEnv, ...(fallbacks.length > 0 ? { apiKeyEnvFallbacks: fallbacks } : {}) };
}

/** Where a command's connection came from, for messages that say which setting to fix. */
export interface ConnectionOrigin {
  /** The service's root URL as the command used it. */
  baseUrl: string;
  /** Where it was given: `--base-url`, `ACS_BASE_URL`, or `context "prod"'s baseUrl`. */
  baseUrlFrom: string;
  /** The variables of the organization keyring, in order. */
  keyEnvs: string[];
  /** Where the keyring was named (`--api-key-env`, `TEAMCTL_API_KEY_ENV`, a context); absent: the default. */
  keyEnvsFrom?: string;
}

/** The origin of the connection {@link resolveConnection} last resolved for an environment object (a command's own). */
const origins = new WeakMap<NodeJS.ProcessEnv, ConnectionOrigin>();

/**
 * Where the connection of the command running with `env` came from (see {@link ConnectionOrigin}),
 * once {@link resolveConnection} resolved one; undefined before, or for a command that connects
 * to no service.
 */
export function connectionOrigin(env: NodeJS.ProcessEnv): ConnectionOrigin | undefined {
  return origins.get(env);
}

/**
 * The variable of the keyring the CLI runs with: the first one that is set in `env`.
 * Input: a resolved connection and the environment. Output: the variable's name.
 * Errors: `unresolved_secret` when none is set (naming them).
 */
export function activeKeyEnv(connection: Connection, env: NodeJS.ProcessEnv): string {
  const names = keyringNames(connection);
  const name = names.find((n) => env[n]);
  if (!name) throw new ToolkitError('unresolved_secret', `no variable of the organization keyring is set: ${names.join(', ')}`);
  return name;
}

/**
 * A plain client on the first key of the keyring that is set (see {@link activeKeyEnv}), for a
 * command that acts on that very key (`keys rotate`); it does not fail over. Input: a resolved
 * connection and the environment the key is read from. Output: an {@link AcsClient}.
 * Errors: `unresolved_secret` when no variable of the keyring is set.
 */
export function clientFor(connection: Connection, env: NodeJS.ProcessEnv): AcsClient {
  return new AcsClient({ baseUrl: connection.baseUrl, apiKey: env[activeKeyEnv(connection, env)] as string });
}

/**
 * A client that fails over along the keyring: every request goes out on the key that last
 * worked (at first the first key that is set) and, when the service refuses it (401), is sent
 * again on the next key of the keyring, which is then kept for the requests that follow.
 *
 * Why wrap every request rather than probe once: a probe (`listOrganizations()` up front) would
 * cost every command one more request, and would still miss a key revoked in the middle of a
 * long command (`thread follow`, `thread open --wait`). Wrapping costs nothing while the key
 * works, one refused request when it does not, and is safe for posts too: the service checks the
 * key before it reads the body (contract §3), so a refused request changed nothing.
 */
class KeyringClient extends AcsClient {
  readonly #connection: Connection;
  readonly #withKeyring: WithKeyring;

  constructor(connection: Connection, env: NodeJS.ProcessEnv) {
    // The base class's own key is never sent: `request` below picks one from the keyring.
    super({ baseUrl: connection.baseUrl, apiKey: '' });
    this.#connection = connection;
    this.#withKeyring = createKeyring(env, (baseUrl, _name, apiKey) => new AcsClient({ baseUrl, apiKey }));
  }

  override request<T>(method: string, path: string, body?: unknown, options?: PostOptions, extraTimeoutMs = 0): Promise<T> {
    return this.#withKeyring(this.#connection, (client) => client.request<T>(method, path, body, options, extraTimeoutMs));
  }

  /**
   * The event stream on the key that works: a read of the organization through the keyring picks
   * it (and moves on past a refused one); a key refused when the stream reconnects (rotated out
   * while tailing) does the same, and the stream resumes after the last event it yielded.
   */
  override async *streamEvents(orgId: string, request: EventStreamRequest = {}): AsyncGenerator<Event> {
    let after = request.after;
    for (let refusedInARow = 0; ; ) {
      const client = await this.#withKeyring(this.#connection, async (c) => {
        await c.getOrganization(orgId);
        return c;
      });
      try {
        for await (const event of client.streamEvents(orgId, { ...request, after })) {
          after = event.seq;
          refusedInARow = 0;
          yield event;
        }
        return;
      } catch (error) {
        if (!(error instanceof AcsApiError) || error.status !== 401 || ++refusedInARow > 1) throw error;
      }
    }
  }

  /**
   * A thread's stream (contract §13) on the key that works, as {@link streamEvents}: a read of the
   * thread through the keyring picks the key; a key refused when the stream reconnects does the
   * same, and the stream resumes after the last item it yielded (no gap, no repeat).
   */
  override async *streamThread(threadId: string, request: ThreadStreamRequest = {}): AsyncGenerator<ThreadStreamItem> {
    let after = request.after;
    for (let refusedInARow = 0; ; ) {
      const client = await this.#withKeyring(this.#connection, async (c) => {
        await c.getThread(threadId, { limit: 1 });
        return c;
      });
      try {
        // Where the first connection started: a reconnection on another key before any item resumes there.
        const onConnected = (position: string) => {
          after ??= position;
          request.onConnected?.(position);
        };
        for await (const item of client.streamThread(threadId, { ...request, after, onConnected })) {
          after = item.id;
          refusedInARow = 0;
          yield item;
        }
        return;
      } catch (error) {
        if (!(error instanceof AcsApiError) || error.status !== 401 || ++refusedInARow > 1) throw error;
      }
    }
  }
}

/**
 * A client on the connection's keyring for commands that send several requests (`thread …`):
 * a 401 moves on to the next key of the keyring, which the following requests keep (see
 * {@link KeyringClient}). Input: a resolved connection and the environment the keys are read
 * from (at each request). Output: an {@link AcsClient}. Errors of its requests: the service's own
 * (`invalid_api_key` for a keyring of one refused key), `keys_refused` when every key of a
 * keyring of several is refused (naming the variables, never a value), `unresolved_secret` when
 * no variable of the keyring is set.
 */
export function keyringClient(connection: Connection, env: NodeJS.ProcessEnv): AcsClient {
  return new KeyringClient(connection, env);
}
