import type { FileLimits } from './a2a/remote-files.ts';
import { hostname } from 'node:os';
import { trace, type TracerProvider } from '@opentelemetry/api';
import { installContextPropagation, otlpTracing } from '../telemetry/otlp.ts';
import { startAgentLoop } from './agent-loop/agent-loop.ts';
import { createRemoteCanceller, type RemoteCanceller } from './a2a/remote-cancel.ts';
import { defaultProviders } from './agent-loop/providers/registry.ts';
import type { ReplyProvider } from './agent-loop/providers/types.ts';
import { ensureDevCredentials, writeDevCredentials, type DevCredentials } from './dev-credentials.ts';
import type { DomainDeps } from './domain/caller.ts';
import { createLocalNotifier, type Notifier } from './domain/notifier.ts';
import { createEventHub } from './events/hub.ts';
import { createHeldWaits, defaultHeldWaitLimits, type HeldWaitLimits } from './events/held-waits.ts';
import { createFairQueue, defaultFairShare, type FairQueue, type FairShareOptions } from './http/fair-share.ts';
import { createWakeOneQueues } from './events/wake-one.ts';
import { defaultRetentionMs, startPruner } from './events/retention.ts';
import { defaultWebhookSettings, type WebhookSettings } from './events/webhooks/webhooks.ts';
import { startWebhookWorker, type WebhookWorker } from './events/webhooks/worker.ts';
import { markingCommits } from './domain/idempotency.ts';
import { provisionOrganization } from './domain/organizations.ts';
import { createSecretBox, resolveEncryptionKey } from './domain/secret-box.ts';
import { buildApp } from './http/app.ts';
import type { ConsoleAssets } from './http/console-assets.ts';
import { createOidcClient } from './sessions/oidc.ts';
import { hostPolicy, type HostPolicy } from './http/allowed-hosts.ts';
import { defaultConnectionLimits, type ConnectionLimits } from './http/connection-limits.ts';
import { rateLimitFromEnv, type RateLimitOptions } from './http/rate-limit.ts';
import type { Db } from './storage/db.ts';
import { openDb } from './storage/open-db.ts';
import { createMemoryRateLimitStore, createPostgresRateLimitStore } from './storage/rate-limit-store.ts';
import { registerInstance, type ServerInstance } from './storage/server-instance.ts';
import { createPgNotifier } from './storage/pg-notifier.ts';
import type { ServiceMetrics } from './metrics/hooks.ts';
import type { MetricsListener } from '../telemetry/prometheus.ts';

export type { DevCredentials } from './dev-credentials.ts';
export type { ProviderReply, ReplyProvider, ReplyRequest } from './agent-loop/providers/types.ts';
export { ProviderFailure } from './agent-loop/providers/types.ts';

/** Options of {@link startServer} (contract §6). */
export interface ServerOptions {
  /** Interface to listen on; default 127.0.0.1. */
  host?: string;
  /** TCP port; 0 picks a free one. Default 8080. */
  port?: number;
  /** Embedded database in memory, nothing on disk (wins over `dataDir`). */
  inMemory?: boolean;
  /** Directory of the embedded database and the encryption key file. */
  dataDir?: string;
  /** PostgreSQL URL; wins over the embedded database. */
  databaseUrl?: string;
  /**
   * Storage the caller opened and migrated (benchmarks seed it with SQL first); wins over the
   * options above except that `databaseUrl` still selects the LISTEN/NOTIFY notifier. Closed by
   * `close()`.
   */
  db?: Db;
  /** Agent loop period in milliseconds; default 1000. */
  tickMs?: number;
  /** Ping-pong guard of the agent loop (see `AgentLoopOptions.autoReplyLimit`); default 10. */
  autoReplyLimit?: number;
  /** When set, provision the `dev` organization and write `{base_url, api_key, org_id}` here. */
  devCredentialsFile?: string;
  /** `false` (default) for silence, `true` for JSON logs, or pino options. */
  logger?: boolean | Record<string, unknown>;
  /**
   * Providers by name; default: every provider of contract §8, configured from `env`
   * (`OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL`) and limited by its `ACS_AGENT_PROVIDERS`.
   */
  providers?: ReadonlyMap<string, ReplyProvider>;
  /**
   * Where the agent loop's spans go (contract §11: `invoke_agent` per turn, `execute_tool` per
   * tool call, OpenTelemetry's GenAI names). Default: the OTLP exporter the standard `OTEL_*`
   * variables of `env` ask for (telemetry/otlp.ts), else the global tracer provider (a no-op
   * unless an SDK was preloaded).
   */
  tracerProvider?: TracerProvider;
  /** Provider calls in flight at once in this process; default `ACS_AGENT_CONCURRENCY` of `env`, else 8. */
  agentConcurrency?: number;
  /** Longest provider call in milliseconds; default `ACS_PROVIDER_TIMEOUT` (seconds) of `env`, else 120 s. */
  providerTimeoutMs?: number;
  /** Bounds on remote A2A agents' files (a2a/remote-files.ts `FileLimits`); default `defaultFileLimits`. Tests make them small. */
  remoteFileLimits?: FileLimits;
  /**
   * Environment to read `ACS_ENCRYPTION_KEY`, `ACS_ADMIN_TOKEN`, `ACS_RATE_LIMIT` and the agent
   * loop's settings from; default `process.env`. Provider keys are never read from it.
   */
  env?: NodeJS.ProcessEnv;
  /**
   * Bearer token of the `/admin/v1` operator routes (contract §6); default: `ACS_ADMIN_TOKEN` of
   * `env`. Unset or empty: the admin routes do not exist (404).
   */
  adminToken?: string;
  /**
   * Per-API-key rate limit (contract §2): `{ max, windowMs }`, or `false` for none. Default:
   * `ACS_RATE_LIMIT` of `env` (requests a minute), else 1,200 a minute.
   */
  rateLimit?: RateLimitOptions | false;
  /**
   * Request, header and idle timeouts (milliseconds) and the cap on connections one client
   * address may hold (0 turns one off); each unset one keeps its default
   * (`defaultConnectionLimits`: 10 s, 30 s, 120 s, 128).
   */
  connectionLimits?: Partial<ConnectionLimits>;
  /**
   * The console's absolute base URL as people reach it (contract §10), e.g.
   * `https://acs.example.com`: sign-in links, OpenID Connect redirects and the cookie's `Secure`
   * attribute (set when https) derive from it, and the MCP endpoint accepts its host in `Host` and
   * its origin in `Origin` besides the listen address's. Default: the address the server listens on.
   */
  publicUrl?: string;
  /**
   * Sign-in through an OpenID Connect provider (contract §10): its issuer URL and this server's
   * client id; the client secret is `ACS_OIDC_CLIENT_SECRET` of `env` unless given here.
   */
  oidc?: { issuer: string; clientId: string; clientSecret?: string };
  /** Load (in a clone: build) the console's files at start instead of at the first visit (acs-server start does). */
  prepareConsole?: boolean;
  /**
   * Bounds of held waits (long polls, MCP waits, event and thread streams, the console's streams;
   * issue 21, contract §14): per process, per organization (its keys', its agents' MCP keys' and
   * the sessions' waits about it, counted in this process) and per key or session. Default:
   * `ACS_MAX_HELD_WAITS`, `ACS_MAX_HELD_WAITS_PER_ORG` and `ACS_MAX_HELD_WAITS_PER_KEY` of `env`,
   * else 10,000, 2,000 and 1,000.
   */
  heldWaits?: Partial<HeldWaitLimits>;
  /**
   * Fair sharing of request handling among clients (issue 21; http/fair-share.ts): requests in
   * progress at once (0 turns it off) and requests of one client queued for a place. Default:
   * `ACS_MAX_REQUESTS_IN_PROGRESS` and `ACS_MAX_QUEUED_PER_CLIENT` of `env`, else 16 and 256. A
   * queue made by `createFairQueue` is used as it is (tests take places of it themselves).
   */
  fairShare?: Partial<FairShareOptions> | FairQueue;
  /**
   * How webhooks are delivered (contract §9): `allowPrivate` (`--webhook-allow-private`: http and
   * non-public addresses too, for development and tests), `retrySchedule` (milliseconds,
   * `--webhook-retry-schedule`), and for tests `resolve` (a stand-in resolver), `timeoutMs`,
   * `concurrency`, `pollMs`. Default: contract §9's (events/webhooks/webhooks.ts).
   */
  webhooks?: Partial<WebhookSettings>;
  /** How long events and finished deliveries are kept, in milliseconds (`--event-retention`); default 7 days (contract §9's floor). */
  eventRetentionMs?: number;
  /** Keep-alive period of event streams in milliseconds; default 15,000 (contract §9). */
  streamKeepAliveMs?: number;
  /**
   * How long a writer puts off numbering its events when none of this process's waiters follows
   * the organization, in milliseconds (events/hub.ts `coalesceMs`); default 25. 0 numbers every
   * change at once (tests that watch the notifications themselves).
   */
  eventCoalesceMs?: number;
  /**
   * Serve Prometheus metrics at `http://HOST:PORT/metrics` on a listener of their own
   * (`--metrics-listen`; port 0 picks a free one), never on the API's port (issue 42;
   * docs/operating-acs-server.md, "Metrics"). Default: no metrics, nothing counted.
   */
  metricsListen?: { host: string; port: number };
}

/** A running acs-server. */
export interface RunningServer {
  /** Base URL, e.g. `http://127.0.0.1:54321` (routes are under `/api/v1`). */
  url: string;
  /** Present when `devCredentialsFile` was given: what was written to it. */
  devCredentials?: DevCredentials;
  /** Present with `metricsListen`: where the metrics are served, e.g. `http://127.0.0.1:9464/metrics`. */
  metricsUrl?: string;
  /**
   * Creates a top-level organization with one key, without HTTP (operators, tests).
   * Output: its id and the key secret (shown only here).
   */
  provisionOrganization(name: string): Promise<{ org_id: string; api_key: string }>;
  /**
   * Stops: held long polls answer with an empty page, requests in flight finish, the agent loop
   * finishes its tick, then storage closes. Safe to call more than once.
   */
  close(): Promise<void>;
}

/**
 * `--public-url` checked and without a trailing slash: an absolute http(s) URL with no query or
 * fragment. Errors: throws naming the flag.
 */
export function normalizePublicUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new Error(`--public-url: not an absolute URL: ${value}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`--public-url: must be http or https, got ${value}`);
  if (url.search || url.hash || url.username || url.password) throw new Error(`--public-url: must have no query, fragment or credentials: ${value}`);
  // The console and its sign-in routes are served at the root of the origin.
  if (url.pathname !== '/') throw new Error(`--public-url: must have no path (the console is served at /): ${value}`);
  return url.href.replace(/\/+$/, '');
}

/**
 * A positive integer setting of the environment (or 0 too, with `zero`), or `fallback` when unset.
 * Errors: throws naming the variable.
 */
function positiveIntegerFromEnv(env: NodeJS.ProcessEnv, name: string, fallback: number, { zero = false } = {}): number {
  const value = env[name];
  if (value === undefined || value.trim() === '') return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < (zero ? 0 : 1)) throw new Error(`${name}: must be a ${zero ? 'non-negative' : 'positive'} integer, got "${value}"`);
  return n;
}

/**
 * The fair queue of `settings`, each bound not given read from `env` (`ACS_MAX_REQUESTS_IN_PROGRESS`,
 * `ACS_MAX_QUEUED_PER_CLIENT`), else its default. Output: `false` when requests in progress are
 * unbounded (0). Errors: throws naming a malformed variable.
 */
function fairQueueOf(settings: Partial<FairShareOptions>, env: NodeJS.ProcessEnv): FairQueue | false {
  const concurrency = settings.concurrency ?? positiveIntegerFromEnv(env, 'ACS_MAX_REQUESTS_IN_PROGRESS', defaultFairShare.concurrency, { zero: true });
  if (concurrency <= 0) return false;
  return createFairQueue({ concurrency, queuePerClient: settings.queuePerClient ?? positiveIntegerFromEnv(env, 'ACS_MAX_QUEUED_PER_CLIENT', defaultFairShare.queuePerClient) });
}

/**
 * Starts acs-server (contract §6): opens and migrates storage, serves HTTP, runs the agent loop.
 * Errors: rejects when storage cannot be opened, `ACS_ENCRYPTION_KEY` or a setting of the agent
 * loop (`ACS_AGENT_CONCURRENCY`, `ACS_PROVIDER_TIMEOUT`, `ACS_AGENT_PROVIDERS`) is malformed, the
 * public URL or the OpenID Connect settings are (`publicUrl`, `oidc`, `ACS_OIDC_CLIENT_SECRET`), or
 * the port is taken; nothing is left running then.
 */
export async function startServer(options: ServerOptions = {}): Promise<RunningServer> {
  const inMemory = options.inMemory === true || (options.dataDir === undefined && options.databaseUrl === undefined);
  const dataDir = inMemory && !options.databaseUrl ? undefined : options.dataDir;
  const db = options.db ?? (await openDb({ databaseUrl: options.databaseUrl, dataDir, inMemory }));
  // PostgreSQL may be shared by several processes: long polls then wait on LISTEN/NOTIFY.
  let notifier: Notifier;
  try {
    notifier = options.databaseUrl ? await createPgNotifier(options.databaseUrl) : createLocalNotifier();
  } catch (error) {
    await db.close().catch(() => {});
    throw error;
  }
  const shutdown = new AbortController();
  let app: Awaited<ReturnType<typeof buildApp>> | undefined;
  let hub: ReturnType<typeof createEventHub> | undefined;
  let instance: ServerInstance | undefined;
  let worker: WebhookWorker | undefined;
  let pruner: ReturnType<typeof startPruner> | undefined;
  let tracing: ReturnType<typeof otlpTracing>;
  let metricsListener: MetricsListener | undefined;
  try {
    const env = options.env ?? process.env;
    // Loaded only when asked for: a server without metrics loads no prom-client and counts nothing.
    const metrics: ServiceMetrics | undefined = options.metricsListen
      ? (await import('./metrics/service-metrics.ts')).createServiceMetrics({ db, poolStats: db.poolStats?.bind(db), log: (message, error) => app?.log.error({ err: error }, message) })
      : undefined;
    const secrets = createSecretBox(await resolveEncryptionKey(env, dataDir));
    const events = createEventHub({
      db,
      notifier,
      ...(options.eventCoalesceMs === undefined ? {} : { coalesceMs: options.eventCoalesceMs }),
      log: (message, error) => app?.log.error({ err: error }, message),
    });
    hub = events;
    metrics?.countNumbered(events);
    // The embedded database has one process (its data dir is locked): earlier instances are gone.
    instance = await registerInstance(db, { sole: !options.databaseUrl });
    // Writes of a request holding an Idempotency-Key claim mark it committed in their transaction.
    const webhookSettings: WebhookSettings = { ...defaultWebhookSettings, ...options.webhooks };
    let remoteCancels: RemoteCanceller | undefined;
    const deps: DomainDeps = {
      db: markingCommits(db),
      events,
      inboxes: createWakeOneQueues(events),
      secrets,
      instanceId: instance.id,
      // Agents' remote MCP servers follow the rules of webhook URLs (contract §11).
      urls: { allowPrivate: webhookSettings.allowPrivate, resolve: webhookSettings.resolve },
      metrics,
      // A remote A2A assignee is asked to cancel its task too (a2a/remote-cancel.ts; made once the app logs).
      onTaskCanceled: (task) => remoteCancels?.taskCanceled(task),
    };
    const heldWaits = createHeldWaits({
      perProcess: options.heldWaits?.perProcess ?? positiveIntegerFromEnv(env, 'ACS_MAX_HELD_WAITS', defaultHeldWaitLimits.perProcess),
      perOrg: options.heldWaits?.perOrg ?? positiveIntegerFromEnv(env, 'ACS_MAX_HELD_WAITS_PER_ORG', defaultHeldWaitLimits.perOrg),
      perKey: options.heldWaits?.perKey ?? positiveIntegerFromEnv(env, 'ACS_MAX_HELD_WAITS_PER_KEY', defaultHeldWaitLimits.perKey),
    }, metrics?.heldWaits);
    const fairQueue = options.fairShare && 'enter' in options.fairShare ? options.fairShare : fairQueueOf(options.fairShare ?? {}, env);
    const adminToken = options.adminToken ?? env.ACS_ADMIN_TOKEN;
    const rateLimit = options.rateLimit ?? rateLimitFromEnv(env);
    // Processes sharing a PostgreSQL database share their rate-limit counters there (one limit
    // for the deployment); the embedded database has one process, which counts in memory.
    const rateLimitStore = options.databaseUrl ? createPostgresRateLimitStore(db) : createMemoryRateLimitStore();
    const connectionLimits = { ...defaultConnectionLimits, ...options.connectionLimits };
    const settings = webhookSettings;
    // The worker logs through the app's logger, which exists only once the app is built.
    const logError = (message: string, error?: unknown) => app?.log.error({ err: error }, message);
    // A2A push notifications carry file parts' URLs: the public URL, known once the server listens.
    worker = startWebhookWorker(deps, settings, logError, { publicUrl: () => publicUrl ?? listenUrl });
    pruner = startPruner(db, options.eventRetentionMs ?? defaultRetentionMs, logError);
    const publicUrl = options.publicUrl === undefined ? undefined : normalizePublicUrl(options.publicUrl);
    let listenUrl = '';
    // Known once the server listens (port 0 picks one).
    let policy: HostPolicy | undefined;
    const oidc = options.oidc ? createOidcClient({ ...options.oidc, clientSecret: options.oidc.clientSecret ?? env.ACS_OIDC_CLIENT_SECRET ?? '' }) : undefined;
    let consoleAssets: ConsoleAssets | undefined;
    app = await buildApp({
      deps,
      shutdown: shutdown.signal,
      logger: options.logger ?? false,
      adminToken,
      rateLimit,
      rateLimitStore,
      connectionLimits,
      hostPolicy: () => policy,
      publicUrl: () => publicUrl ?? listenUrl,
      oidc,
      onConsole: (assets) => (consoleAssets = assets),
      heldWaits,
      fairQueue,
      webhooks: worker,
      streamKeepAliveMs: options.streamKeepAliveMs,
      metrics,
    });
    if (options.databaseUrl && !env.ACS_ENCRYPTION_KEY && dataDir === undefined) {
      // resolveEncryptionKey made a key for this process alone: what it seals outlives it in the database.
      app.log.warn(
        'no encryption key given (ACS_ENCRYPTION_KEY or a data dir): this process encrypts provider keys with a random key of its own, which other processes and its own restarts cannot decrypt',
      );
    }
    const devOrg = options.devCredentialsFile ? await ensureDevCredentials(db, options.devCredentialsFile) : undefined;
    await app.listen({ host: options.host ?? '127.0.0.1', port: options.port ?? 8080 });
    const address = app.server.address();
    const port = typeof address === 'object' && address !== null ? address.port : options.port;
    const host = options.host ?? '127.0.0.1';
    const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
    listenUrl = url;
    if (metrics && options.metricsListen) {
      const { startMetricsListener } = await import('../telemetry/prometheus.ts');
      metricsListener = await startMetricsListener({ ...options.metricsListen, expose: metrics.expose });
    }
    // A console that cannot be built or read is logged and answers 503; the API serves on.
    if (options.prepareConsole) await consoleAssets?.prepare().catch((error: unknown) => app?.log.error({ err: error }, 'the console could not be loaded'));
    policy = hostPolicy(host, port ?? 0, publicUrl);
    let devCredentials: DevCredentials | undefined;
    if (devOrg && options.devCredentialsFile) {
      devCredentials = { base_url: url, ...devOrg, pid: process.pid, host: hostname() };
      await writeDevCredentials(options.devCredentialsFile, devCredentials);
    }
    // Spans of turns: the caller's provider, else OTLP when the environment asks for it (telemetry/otlp.ts).
    tracing = options.tracerProvider ? undefined : otlpTracing(env, 'acs-server');
    if (options.tracerProvider) installContextPropagation();
    const tracerProvider = options.tracerProvider ?? tracing?.provider ?? trace.getTracerProvider();
    const callTimeoutMs = options.providerTimeoutMs ?? positiveIntegerFromEnv(env, 'ACS_PROVIDER_TIMEOUT', 120) * 1000;
    const loop = startAgentLoop({
      deps,
      tracer: tracerProvider.getTracer('acs-server'),
      tickMs: options.tickMs ?? 1000,
      providers: options.providers ?? defaultProviders(env),
      autoReplyLimit: options.autoReplyLimit,
      concurrency: options.agentConcurrency ?? positiveIntegerFromEnv(env, 'ACS_AGENT_CONCURRENCY', 8),
      callTimeoutMs,
      remoteFileLimits: options.remoteFileLimits,
      signal: shutdown.signal,
      log: app.log,
    });
    // Retried as the loop retries a remote agent's other calls (agent-loop.ts: its backoff).
    const tickMs = options.tickMs ?? 1000;
    remoteCancels = createRemoteCanceller({ deps, log: app.log, stopping: shutdown.signal, callTimeoutMs, backoffMs: (failures) => Math.min(300_000, tickMs * 2 ** failures), leasePollMs: tickMs });
    const running = app;
    let closing: Promise<void> | undefined;
    return {
      url,
      ...(devCredentials ? { devCredentials } : {}),
      ...(metricsListener ? { metricsUrl: metricsListener.url } : {}),
      provisionOrganization: (name) => provisionOrganization(db, name),
      close() {
        closing ??= (async () => {
          shutdown.abort();
          await running.close();
          await metricsListener?.close();
          await loop.stop();
          await remoteCancels?.close();
          // A collector that is unreachable must not turn a clean stop into a failure.
          await tracing?.provider.shutdown().catch(() => undefined);
          pruner?.close();
          await worker?.close();
          await hub?.close();
          await instance?.close();
          await notifier.close();
          await db.close();
        })();
        return closing;
      },
    };
  } catch (error) {
    shutdown.abort();
    await app?.close().catch(() => {});
    await metricsListener?.close();
    pruner?.close();
    await worker?.close().catch(() => {});
    await hub?.close().catch(() => {});
    await instance?.close().catch(() => {});
    await notifier.close().catch(() => {});
    await db.close().catch(() => {});
    throw error;
  }
}
