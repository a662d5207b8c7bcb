/**
 * The one place that reads how to reach Temporal, for the CLI, the worker and the tests: the
 * SDK's environment configuration (`@temporalio/envconfig`), so a profile of the TOML config
 * file (`TEMPORAL_CONFIG_FILE`, default `~/.config/temporalio/temporal.toml`, chosen by
 * `TEMPORAL_PROFILE`) and the variables `TEMPORAL_ADDRESS`, `TEMPORAL_NAMESPACE`,
 * `TEMPORAL_API_KEY`, `TEMPORAL_TLS*` and `TEMPORAL_GRPC_META_*` all work, Temporal Cloud too.
 * Nothing set: the local development server, `localhost:7233`, namespace `default`.
 */
import { connect } from 'node:net';
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

/**
 * Whether the environment names a Temporal server explicitly (`TEMPORAL_ADDRESS`,
 * `TEMPORAL_PROFILE` — which a context fills in — or `TEMPORAL_CONFIG_FILE`); when none is set,
 * the settings are the defaults (`localhost:7233`), which may have no server behind them.
 */
export function temporalConfigured(env: NodeJS.ProcessEnv): boolean {
  return Boolean(env.TEMPORAL_ADDRESS || env.TEMPORAL_PROFILE || env.TEMPORAL_CONFIG_FILE);
}

/**
 * Whether anything accepts a TCP connection at `address` (`host:port`, `[::1]:port`) within
 * `timeoutMs` (default 1 s): a look at the default address before a Temporal client, which
 * retries for 10 s where nothing listens. Output: true when a connection opened (it is closed
 * at once). Errors: none (a malformed address is false).
 */
export function listensAt(address: string, timeoutMs = 1_000): Promise<boolean> {
  const at = address.lastIndexOf(':');
  const host = address.slice(0, at).replace(/^\[(.*)\]$/, '$1');
  const port = Number(address.slice(at + 1));
  if (at <= 0 || !Number.isInteger(port) || port <= 0 || port > 65_535) return Promise.resolve(false);
  return new Promise((resolve) => {
    const socket = connect({ host, port, timeout: timeoutMs });
    const done = (open: boolean) => {
      socket.destroy();
      resolve(open);
    };
    socket.once('connect', () => done(true));
    socket.once('timeout', () => done(false));
    socket.once('error', () => done(false));
  });
}
