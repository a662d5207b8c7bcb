/**
 * The one place that reads how to reach Temporal, for the CLI, the worker and the tests: the
 * SDK's environment configuration (`@temporalio/envconfig`), so a profile of the TOML config
 * file (`TEMPORAL_CONFIG_FILE`, default `~/.config/temporalio/temporal.toml`, chosen by
 * `TEMPORAL_PROFILE`) and the variables `TEMPORAL_ADDRESS`, `TEMPORAL_NAMESPACE`,
 * `TEMPORAL_API_KEY`, `TEMPORAL_TLS*` and `TEMPORAL_GRPC_META_*` all work, Temporal Cloud too.
 * Nothing set: the local development server, `localhost:7233`, namespace `default`.
 */
import { loadClientConnectConfig } from '@temporalio/envconfig';
import type { NativeConnectionOptions } from '@temporalio/worker';
import { ToolkitError } from '../errors/catalogue.ts';

/** The default task queue of workers and clients. */
export const DEFAULT_TASK_QUEUE = 'teamctl';

/** How to reach Temporal: connection options (never printed: they may hold an API key) and namespace. */
export interface TemporalSettings {
  /** `host:port` of the frontend, for messages. */
  address: string;
  namespace: string;
  /** For `Connection.connect` / `NativeConnection.connect` (address, TLS, API key, gRPC metadata). */
  connectionOptions: NativeConnectionOptions;
}

/**
 * Reads the settings from `env` (and the config file it points at). `profile` overrides
 * `TEMPORAL_PROFILE`. Errors: `invalid_usage` when the config file or profile cannot be read.
 */
export function loadTemporalSettings(env: NodeJS.ProcessEnv, profile?: string): TemporalSettings {
  const overrideEnvVars = Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => typeof e[1] === 'string'));
  let config: ReturnType<typeof loadClientConnectConfig>;
  try {
    config = loadClientConnectConfig({ overrideEnvVars, ...(profile ? { profile } : {}) });
  } catch (error) {
    throw new ToolkitError('invalid_usage', `Temporal configuration: ${(error as Error).message}`);
  }
  const address = config.connectionOptions.address || 'localhost:7233';
  return {
    address,
    namespace: config.namespace || 'default',
    connectionOptions: { ...config.connectionOptions, address },
  };
}

/**
 * The `temporal_unreachable` error for a failed connection to `settings` (the cause's message,
 * without the transport's stack). Used by every command that connects.
 */
export function temporalUnreachable(settings: TemporalSettings, cause: unknown): ToolkitError {
  const reason = cause instanceof Error ? cause.message.split('\n')[0] : String(cause);
  return new ToolkitError('temporal_unreachable', `cannot reach Temporal at ${settings.address} (namespace ${settings.namespace}): ${reason}`);
}
