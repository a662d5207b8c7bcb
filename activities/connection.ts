/**
 * How an activity reaches the service: a base URL and the *name* of the environment variable
 * holding the organization key. The key itself is resolved inside the activity, at call time,
 * so it never enters a workflow input or history.
 */
export interface Connection {
  /** Base URL of the service, e.g. `http://127.0.0.1:8080`. */
  baseUrl: string;
  /** Name of the environment variable holding the organization API key (default `ACS_API_KEY`). */
  apiKeyEnv: string;
  /**
   * More variables holding keys of the same organization, tried in order when a key is refused
   * (401): the keyring that lets a long-running workflow survive a key rotation (e.g.
   * `ACS_API_KEY_NEXT`). Used by the conversation and apply activities (`activities/keyring.ts`)
   * and the CLI (`--api-key-env`, repeatable).
   */
  apiKeyEnvFallbacks?: string[];
}
