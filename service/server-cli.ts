/**
 * The `acs-server` program: the self-hostable Agent Collaboration Service's command line
 * (docs/cli.md, "acs-server"; docs/operating-acs-server.md).
 *
 * `acs-server start [--host] [--port] [--data-dir] [--in-memory] [--database-url] [--tick-ms]
 * [--dev-credentials FILE] [--rate-limit N] [--max-held-waits N] [--max-held-waits-per-org N] [--max-held-waits-per-key N]
 * [--event-retention D] [--webhook-allow-private] [--webhook-retry-schedule D,D,…] [--public-url URL]
 * [--oidc-issuer URL --oidc-client-id ID] [--headers-timeout S] [--request-timeout S] [--idle-timeout S]
 * [--max-connections-per-client N] [--log-format] [--log-level] [--quiet] [--log-file] [--pglite-compiler] [--metrics-listen HOST:PORT]` serves the API and the console
 * until SIGINT/SIGTERM; `acs-server wait [--dev-credentials FILE] [--url URL] [--pid PID] [--timeout S]`
 * waits until a server is ready (service/wait-ready.ts).
 * `acs-server admin access-requests list|approve|reject` and `acs-server admin keys issue` are the
 * operator actions, run against the server's database (`--data-dir`, default `.acs-data`, or
 * `--database-url` / `DATABASE_URL`); they print JSON on stdout, or an error as JSON on stderr and
 * exit 1. Nothing here calls process.exit: `bin/acs-server.ts` does, with the code
 * {@link runAcsServer} returns.
 */
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import ms from 'ms';
import type { AdminStorage } from './admin/admin-actions.ts';
import { VERSION } from '../api/version.ts';
import { defaultConnectionLimits } from './http/connection-limits.ts';
import { parseListenAddress } from '../telemetry/listen-address.ts';
import type { ServerOptions } from './index.ts';
import { keepWasmAtBaseline, PgliteCompilers, usePgliteCompiler, type PgliteCompiler } from './storage/wasm-tiering.ts';
import { defaultLogFile, defaultLogFormat, inBackgroundOfTerminal, LOG_FILE_NAME, loggerOptions, LogFormats, LogLevels, type LogFormat, type LogLevel, type LogSettings } from './logging.ts';

// What a command runs is imported when it runs: `acs-server --version` and `--help` load neither
// the service (Fastify, PGlite, the API's schemas) nor the operator actions.
const adminActions = () => import('./admin/admin-actions.ts');

function integer(min: number, max: number) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min || n > max) throw new InvalidArgumentError(`must be an integer from ${min} to ${max}`);
    return n;
  };
}

/** A duration such as `500ms`, `5s`, `10m`, `2h`, `7d` (the `ms` package's notation), in milliseconds, at least `min`. */
function duration(min: number) {
  return (value: string): number => {
    const parsed = ms(value.trim() as ms.StringValue);
    if (typeof parsed !== 'number' || !Number.isFinite(parsed) || parsed < min) {
      throw new InvalidArgumentError(`must be a duration of at least ${ms(min, { long: true })}, such as 5s, 10m, 2h or 7d`);
    }
    return parsed;
  };
}

/** `--metrics-listen HOST:PORT` (`[::1]:9464` for IPv6; port 0 picks a free one). Errors: a usage error naming the flag. */
function metricsAddress(value: string): { host: string; port: number } {
  try {
    return parseListenAddress('--metrics-listen', value);
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message.replace(/^--metrics-listen: /, ''));
  }
}

/** `--webhook-retry-schedule`: comma-separated durations (`1s,2s,5s`), each at least 10 ms; 1–20 of them. */
export function parseRetrySchedule(value: string): number[] {
  const parts = value.split(',').map((part) => part.trim());
  if (parts.length === 0 || parts.length > 20 || parts.some((part) => part === '')) {
    throw new InvalidArgumentError('must be 1 to 20 durations separated by commas, such as 1s,5s,30s');
  }
  return parts.map(duration(10));
}

/**
 * Starts the service and serves until SIGINT or SIGTERM, then closes it. Resolves with the exit
 * code: 0 once closed, 1 when closing failed. Errors: rejects when the service cannot start.
 */
async function serveUntilSignal(options: ServerOptions, quiet: boolean, logFile: string | undefined): Promise<number> {
  const { startServer } = await import('./index.ts');
  let server: Awaited<ReturnType<typeof startServer>>;
  try {
    server = await startServer(options);
  } catch (error) {
    throw (await listenFailure(error, options)) ?? error;
  }
  // One line: where it listens, where people sign in, where its log goes when not here.
  const consoleUrl = `${options.publicUrl?.replace(/\/+$/, '') ?? server.url}/`;
  if (!quiet) process.stdout.write(`acs-server listening on ${server.url} (console: ${consoleUrl}${server.metricsUrl ? `; metrics: ${server.metricsUrl}` : ''}${logFile ? `; log: ${logFile}` : ''})\n`);
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    // The handlers stay after the first signal, so a second one while closing is ignored instead
    // of killing the process halfway through the close.
    for (const name of ['SIGINT', 'SIGTERM'] as const) process.on(name, () => resolve(name));
  });
  if (!quiet) process.stderr.write(`acs-server stopping (${signal})\n`);
  try {
    await server.close();
    return 0;
  } catch (error) {
    process.stderr.write(`acs-server: error while stopping: ${(error as Error).message}\n`);
    return 1;
  }
}

/** An error of `acs-server` with what to do about it: printed as `acs-server: MESSAGE` and a `hint: HINT` line. */
export class HintedError extends Error {
  readonly hint: string;
  constructor(message: string, hint: string) {
    super(message);
    this.hint = hint;
  }
}

/**
 * Who holds `host:port`, for the message of a port in use: the acs-server named by the
 * `--dev-credentials` file when that file is for this address and its writer still runs (`the
 * acs-server of pid N`), else any acs-server answering `/readyz` there, else another program.
 */
async function holderOf(host: string, port: number, devCredentialsFile: string | undefined): Promise<string> {
  const connectHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  const base = `http://${connectHost.includes(':') ? `[${connectHost}]` : connectHost}:${port}`;
  if (devCredentialsFile) {
    try {
      const { readFile } = await import('node:fs/promises');
      const { hostname } = await import('node:os');
      const { processRuns } = await import('./processes.ts');
      const file = JSON.parse(await readFile(devCredentialsFile, 'utf8')) as { base_url?: unknown; pid?: unknown; host?: unknown };
      const samePort = typeof file.base_url === 'string' && new URL(file.base_url).port === String(port);
      if (samePort && typeof file.pid === 'number' && file.host === hostname() && (await processRuns(file.pid))) {
        return `the acs-server of pid ${file.pid} (it wrote ${devCredentialsFile}), started earlier and still running`;
      }
    } catch {
      // No file, or not one of ours: ask the address instead.
    }
  }
  try {
    const answer = await fetch(`${base}/readyz`, { signal: AbortSignal.timeout(2_000) });
    const body = (await answer.json().catch(() => undefined)) as { status?: unknown; code?: unknown } | undefined;
    if (body?.status === 'ready' || body?.code === 'unavailable') return 'an acs-server (one started earlier and still running?)';
  } catch {
    // Nothing that speaks HTTP: another program.
  }
  return 'another program';
}

/**
 * The message of a listener that could not start (the API's `--host`/`--port`, or
 * `--metrics-listen`), with a hint, instead of Node's `listen EADDRINUSE: address already in use
 * …`. Output: a {@link HintedError}, or undefined for any other error (reported as it is).
 */
async function listenFailure(error: unknown, options: ServerOptions): Promise<HintedError | undefined> {
  const { code, port, address } = error as NodeJS.ErrnoException & { port?: number; address?: string };
  if (code !== 'EADDRINUSE' && code !== 'EACCES' && code !== 'EADDRNOTAVAIL') return undefined;
  const metrics = options.metricsListen !== undefined && options.metricsListen.port !== 0 && port === options.metricsListen.port && port !== options.port;
  const host = address ?? (metrics ? options.metricsListen!.host : (options.host ?? '127.0.0.1'));
  const where = `${host.includes(':') ? `[${host}]` : host}:${port ?? (metrics ? options.metricsListen!.port : options.port)}`;
  const flag = metrics ? '--metrics-listen' : '--port';
  const free = metrics ? '--metrics-listen HOST:0 picks a free one (the address is printed)' : '--port 0 picks a free one (the address is printed, and written to --dev-credentials FILE)';
  if (code === 'EACCES') return new HintedError(`cannot listen on ${where} (${flag}): permission denied`, `ports below 1024 need privileges: choose a port above 1023, or ${free}`);
  if (code === 'EADDRNOTAVAIL') return new HintedError(`cannot listen on ${where}: ${host} is not an address of this machine`, `listen on one of its addresses: 127.0.0.1 (this machine only) or 0.0.0.0 (every interface)`);
  const holder = metrics ? 'another program' : await holderOf(host, port ?? options.port ?? 8080, options.devCredentialsFile);
  const pid = /pid (\d+)/.exec(holder)?.[1];
  return new HintedError(
    `cannot listen on ${where}${metrics ? ' (--metrics-listen)' : ''}: the port is in use by ${holder}`,
    `stop ${pid ? `it (kill ${pid})` : 'what holds it'}, or choose another port: ${free}`,
  );
}

/** Storage flags shared by every admin command. */
interface StorageFlags {
  dataDir: string;
  databaseUrl?: string;
}

function withStorageFlags(command: Command): Command {
  return command
    .option('--data-dir <dir>', 'directory of the embedded database (stop the server first: one process per data dir)', '.acs-data')
    .option('--database-url <url>', 'PostgreSQL URL (default: $DATABASE_URL)');
}

function storageOf(flags: StorageFlags): AdminStorage {
  return { dataDir: flags.dataDir, databaseUrl: flags.databaseUrl ?? (process.env.DATABASE_URL || undefined) };
}

/** Runs one admin action: its result as JSON on stdout and 0, or its error as JSON on stderr and 1. */
async function runAdmin(action: () => Promise<unknown>): Promise<number> {
  // A few statements and gone: optimising the embedded database's code would only cost memory.
  keepWasmAtBaseline();
  try {
    process.stdout.write(JSON.stringify(await action(), null, 2) + '\n');
    return 0;
  } catch (error) {
    process.stderr.write(JSON.stringify((await adminActions()).adminErrorOutput(error)) + '\n');
    return 1;
  }
}

/**
 * Runs `acs-server` with `argv` (without the node and script paths) and returns the exit code:
 * 0 success (for `start`: stopped cleanly by a signal), 1 any error, usage errors included
 * (commander prints those; it must not exit the process itself).
 */
export async function runAcsServer(argv: string[]): Promise<number> {
  let exitCode = 0;
  const program = buildAcsServerProgram(async (action) => {
    exitCode = await action();
  });
  try {
    await program.parseAsync(argv, { from: 'user' });
  } catch (error) {
    // --help "fails" with exit code 0; usage errors were already printed by commander.
    if (error instanceof CommanderError) return error.exitCode;
    process.stderr.write(`acs-server: ${(error as Error).message}\n${error instanceof HintedError ? `hint: ${error.hint}\n` : ''}`);
    return 1;
  }
  return exitCode;
}

/**
 * The `acs-server` program: commands `start`, `wait`, `admin access-requests list|approve|reject`
 * and `admin keys issue`, their flags and defaults. Each command's body runs through `run`, which
 * records its exit code. Builds only; parses and runs nothing, so the command tree can be walked
 * without starting anything (the CLI reference's completeness test, test/docs/cli-reference.test.ts).
 */
export function buildAcsServerProgram(run: (action: () => Promise<number>) => Promise<void>): Command {
  const program = new Command('acs-server')
    .description('Agent Collaboration Service, self-hosted')
    .version(VERSION, '-V, --version', 'print the version of acs-server')
    .exitOverride();

  program
    .command('start')
    .description('start the service and serve until SIGINT or SIGTERM')
    .option('--host <host>', 'interface to listen on', '127.0.0.1')
    .option('--port <port>', 'TCP port; 0 picks a free one', integer(0, 65535), 8080)
    .option('--data-dir <dir>', 'directory of the embedded database', '.acs-data')
    .option('--in-memory', 'embedded database in memory, nothing on disk', false)
    .option('--database-url <url>', 'PostgreSQL URL (default: $DATABASE_URL)')
    .option('--tick-ms <ms>', 'agent loop period in milliseconds', integer(1, 3_600_000), 1000)
    .option('--dev-credentials <file>', 'provision the "dev" organization and write {base_url, api_key, org_id} to FILE once listening (acs-server wait waits for it)')
    .option('--rate-limit <n>', 'requests a minute per API key (default: $ACS_RATE_LIMIT, else 1200)', integer(1, 10_000_000))
    .option('--public-url <url>', 'the console\'s address as people reach it, e.g. https://acs.example.com: sign-in links and OpenID redirects use it, cookies are Secure when it is https, and the MCP endpoint accepts its Host and Origin (default: the address the server listens on)')
    .option('--oidc-issuer <url>', 'sign people in to the console through this OpenID Connect provider (with --oidc-client-id and $ACS_OIDC_CLIENT_SECRET)')
    .option('--oidc-client-id <id>', 'this server\'s client id at the OpenID Connect provider')
    .option('--max-held-waits <n>', 'requests held waiting at once in this process: long polls, MCP waits, event streams (default: $ACS_MAX_HELD_WAITS, else 10000)', integer(1, 1_000_000))
    .option('--max-held-waits-per-org <n>', 'requests held waiting at once per organization in this process: its keys\', its agents\' and the console sessions\' together (default: $ACS_MAX_HELD_WAITS_PER_ORG, else 2000)', integer(1, 1_000_000))
    .option('--max-held-waits-per-key <n>', 'requests held waiting at once per API key (default: $ACS_MAX_HELD_WAITS_PER_KEY, else 1000)', integer(1, 1_000_000))
    .option('--max-requests-in-progress <n>', 'requests handled at once in this process; past it each client waits in a queue of its own and the queues take turns (default: $ACS_MAX_REQUESTS_IN_PROGRESS, else 16); 0: no fair sharing', integer(0, 1_000_000))
    .option('--max-queued-per-client <n>', 'requests of one client waiting for their turn at once; past it 429 too_many_requests_queued (default: $ACS_MAX_QUEUED_PER_CLIENT, else 256)', integer(1, 1_000_000))
    .option('--event-retention <duration>', 'how long events and finished webhook deliveries are kept (the API promises 7d; shorter only for tests)', duration(1_000), 7 * 24 * 3600e3)
    .option('--webhook-allow-private', 'let webhooks use http and reach loopback, private and link-local addresses (development and tests only)', false)
    .option('--webhook-retry-schedule <delays>', 'delays before each retry of a failed webhook delivery, comma-separated (default 5s,5m,30m,2h,5h,10h,10h)', parseRetrySchedule)
    .option('--headers-timeout <seconds>', 'longest time to receive a request\'s headers; 0: no limit', integer(0, 3600), defaultConnectionLimits.headersTimeoutMs / 1000)
    .option('--request-timeout <seconds>', 'longest time to receive a whole request, headers and body (not to answer it); 0: no limit', integer(0, 3600), defaultConnectionLimits.requestTimeoutMs / 1000)
    .option('--idle-timeout <seconds>', 'a connection carrying no byte either way this long is closed (above 30: long polls wait that long); 0: never', integer(0, 86_400), defaultConnectionLimits.idleTimeoutMs / 1000)
    .option('--max-connections-per-client <n>', 'connections one client address may hold open at once (behind a reverse proxy all share its address); 0: no cap', integer(0, 1_000_000), defaultConnectionLimits.maxConnectionsPerClient)
    .addOption(new Option('--log-format <format>', 'log lines: pretty (for a person) or json (one object a line); default: pretty on a terminal, json to a file or a pipe').choices(Object.values(LogFormats)))
    .addOption(new Option('--log-level <level>', 'least severe level logged (info: one line per request)').choices(LogLevels).default('info'))
    .option('--quiet', 'log warnings and errors only, and no "listening" line', false)
    .option('--log-file <file>', `append the log to FILE; - for stdout (default: stdout, or ${LOG_FILE_NAME} beside the data when started in the background of a terminal)`)
    .addOption(
      new Option('--pglite-compiler <compiler>', 'how V8 compiles the embedded database: mixed optimises all but its five largest functions (bulk SQL at full speed, starts under 300 MB), baseline optimises nothing, optimizing everything (a ~800 MB peak) (default: $ACS_PGLITE_COMPILER, else mixed)')
        .choices(Object.values(PgliteCompilers))
        .env('ACS_PGLITE_COMPILER')
        .default(PgliteCompilers.mixed),
    )
    .option('--metrics-listen <host:port>', 'serve Prometheus metrics at http://HOST:PORT/metrics, on a listener of its own (never the API\'s port); off by default', metricsAddress)
    .action(
      (flags: {
        host: string;
        port: number;
        dataDir: string;
        inMemory: boolean;
        databaseUrl?: string;
        tickMs: number;
        devCredentials?: string;
        rateLimit?: number;
        publicUrl?: string;
        headersTimeout: number;
        requestTimeout: number;
        idleTimeout: number;
        maxConnectionsPerClient: number;
        oidcIssuer?: string;
        oidcClientId?: string;
        maxHeldWaits?: number;
        maxHeldWaitsPerOrg?: number;
        maxHeldWaitsPerKey?: number;
        maxRequestsInProgress?: number;
        maxQueuedPerClient?: number;
        eventRetention: number;
        webhookAllowPrivate: boolean;
        webhookRetrySchedule?: number[];
        logFormat?: LogFormat;
        logLevel: LogLevel;
        quiet: boolean;
        logFile?: string;
        pgliteCompiler: PgliteCompiler;
        metricsListen?: { host: string; port: number };
      }) => {
        const databaseUrl = flags.databaseUrl ?? (process.env.DATABASE_URL || undefined);
        /** Before the embedded database compiles its WebAssembly; nothing else here uses any. */
        const prepareCompiler = async () => {
          if (databaseUrl) return;
          const inEffect = await usePgliteCompiler(flags.pgliteCompiler);
          if (inEffect !== flags.pgliteCompiler && !flags.quiet) {
            process.stderr.write(`acs-server: the embedded database's split modules could not be made (binaryen is a development dependency); --pglite-compiler ${inEffect} instead\n`);
          }
        };
        const terminal = Boolean(process.stdout.isTTY);
        // In the background of a terminal (`acs-server start … &`) the log would run through
        // whatever the person does next in it: it goes to a file, and the terminal keeps one line.
        const logFile =
          flags.logFile === '-'
            ? undefined
            : (flags.logFile ?? (inBackgroundOfTerminal(terminal) ? defaultLogFile({ dataDir: flags.dataDir, inMemory: flags.inMemory, databaseUrl }) : undefined));
        const log: LogSettings = {
          format: flags.logFormat ?? defaultLogFormat(terminal && !logFile),
          // --quiet lowers the level to warnings unless --log-level asked for even less.
          level: flags.quiet && LogLevels.indexOf(flags.logLevel) < LogLevels.indexOf('warn') ? 'warn' : flags.logLevel,
          color: terminal && !process.env.NO_COLOR,
          ...(logFile ? { file: logFile } : {}),
        };
        if ((flags.oidcIssuer === undefined) !== (flags.oidcClientId === undefined)) {
          throw new InvalidArgumentError('--oidc-issuer and --oidc-client-id go together');
        }
        return run(async () => {
          await prepareCompiler();
          return serveUntilSignal(
            {
              host: flags.host,
              port: flags.port,
              inMemory: flags.inMemory,
              dataDir: flags.dataDir,
              ...(databaseUrl ? { databaseUrl } : {}),
              tickMs: flags.tickMs,
              ...(flags.devCredentials ? { devCredentialsFile: flags.devCredentials } : {}),
              ...(flags.rateLimit !== undefined ? { rateLimit: { max: flags.rateLimit, windowMs: 60_000 } } : {}),
              ...(flags.publicUrl !== undefined ? { publicUrl: flags.publicUrl } : {}),
              ...(flags.oidcIssuer !== undefined && flags.oidcClientId !== undefined ? { oidc: { issuer: flags.oidcIssuer, clientId: flags.oidcClientId } } : {}),
              prepareConsole: true,
              heldWaits: {
                ...(flags.maxHeldWaits !== undefined ? { perProcess: flags.maxHeldWaits } : {}),
                ...(flags.maxHeldWaitsPerOrg !== undefined ? { perOrg: flags.maxHeldWaitsPerOrg } : {}),
                ...(flags.maxHeldWaitsPerKey !== undefined ? { perKey: flags.maxHeldWaitsPerKey } : {}),
              },
              fairShare: {
                ...(flags.maxRequestsInProgress !== undefined ? { concurrency: flags.maxRequestsInProgress } : {}),
                ...(flags.maxQueuedPerClient !== undefined ? { queuePerClient: flags.maxQueuedPerClient } : {}),
              },
              eventRetentionMs: flags.eventRetention,
              webhooks: {
                allowPrivate: flags.webhookAllowPrivate,
                ...(flags.webhookRetrySchedule ? { retrySchedule: flags.webhookRetrySchedule } : {}),
              },
              connectionLimits: {
                headersTimeoutMs: flags.headersTimeout * 1000,
                requestTimeoutMs: flags.requestTimeout * 1000,
                idleTimeoutMs: flags.idleTimeout * 1000,
                maxConnectionsPerClient: flags.maxConnectionsPerClient,
              },
              logger: await loggerOptions(log),
              ...(flags.metricsListen ? { metricsListen: flags.metricsListen } : {}),
            },
            flags.quiet,
            logFile,
          );
        });
      },
    );

  program
    .command('wait')
    .description('wait until a server is ready: it answers /readyz and, with --dev-credentials, accepts the key written to FILE (for scripts that start a server in the background)')
    .option('--dev-credentials <file>', 'the file acs-server start --dev-credentials writes; its base_url and api_key are checked')
    .option('--url <url>', 'the server\'s base URL (default: base_url of the credentials file)')
    .option('--pid <pid>', 'the process of the server start to wait for ($! after acs-server start … &, through npx too): only a FILE it (or a process it started) wrote is taken, and the wait fails at once when it has exited', integer(1, 2 ** 31 - 1))
    .option('--timeout <seconds>', 'give up after this many seconds', integer(1, 86_400), 60)
    .action((flags: { devCredentials?: string; url?: string; pid?: number; timeout: number }) =>
      run(async () => {
        const { waitUntilReady } = await import('./wait-ready.ts');
        const ready = await waitUntilReady({ credentialsFile: flags.devCredentials, url: flags.url, pid: flags.pid, timeoutMs: flags.timeout * 1000 });
        process.stderr.write(`acs-server at ${ready.url} is ready${flags.devCredentials ? ` and accepts the key in ${flags.devCredentials}` : ''}\n`);
        return 0;
      }),
    );

  const admin = program.command('admin').description('operator actions against the server\'s database: access requests, organization keys');
  const accessRequests = admin.command('access-requests').description('review access requests');

  withStorageFlags(accessRequests.command('list').description('list access requests, oldest first'))
    .option('--status <status>', 'only requests with this status: pending, approved or rejected')
    .action((flags: StorageFlags & { status?: string }) => run(() => runAdmin(async () => (await adminActions()).adminListAccessRequests(storageOf(flags), flags.status))));

  withStorageFlags(accessRequests.command('approve').description('create the requested organization; prints its first key once'))
    .argument('<request_id>', 'the access request')
    .action((requestId: string, flags: StorageFlags) => run(() => runAdmin(async () => (await adminActions()).adminApproveAccessRequest(storageOf(flags), requestId))));

  withStorageFlags(accessRequests.command('reject').description('reject an access request'))
    .argument('<request_id>', 'the access request')
    .option('--reason <reason>', 'why (1-2000 characters)')
    .action((requestId: string, flags: StorageFlags & { reason?: string }) =>
      run(() => runAdmin(async () => (await adminActions()).adminRejectAccessRequest(storageOf(flags), requestId, flags.reason))),
    );

  withStorageFlags(admin.command('keys').description('organization keys').command('issue').description('issue a key for an existing organization; prints it once'))
    .requiredOption('--org <org_id>', 'the organization')
    .option('--name <name>', 'a name for the key')
    .action((flags: StorageFlags & { org: string; name?: string }) => run(() => runAdmin(async () => (await adminActions()).adminIssueKey(storageOf(flags), flags.org, flags.name))));

  return program;
}
