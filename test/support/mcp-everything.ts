/**
 * A real, unmodified MCP server for tests: `@modelcontextprotocol/server-everything` (the MCP
 * project's reference server, pinned in devDependencies), started as a child process over
 * Streamable HTTP on a free port, and a counting proxy in front of it that forwards everything
 * (SSE streams unbuffered) and counts JSON-RPC `tools/call` requests by tool name — the count
 * lives in the test process, so it survives a restart of acs-server ("called exactly once") — and
 * keeps every request's headers (what a client sent, e.g. its `Authorization`).
 *
 * Tools of server-everything 2026.8.31 a test can rely on (all listed by `tools/list` to any client):
 * - **A quick tool call: `echo`** `{message: string}` → text `Echo: <message>` (also `get-sum`
 *   `{a: number, b: number}` → text `The sum of a and b is a+b.`).
 * - **A tool call that takes several seconds: `trigger-long-running-operation`** `{duration:
 *   seconds (default 10), steps (default 5)}` → after `duration` seconds, text `Long running
 *   operation completed. Duration: D seconds, Steps: S.`; it sleeps `duration / steps` seconds
 *   per step and sends `notifications/progress` after each step when the call has a
 *   `_meta.progressToken`.
 * - Avoid `get-env` in anything that checks secrets: it returns the server's environment (here
 *   only `PORT` and `PATH`: the child gets no other variable of the test's). Tools that call back
 *   into the client (`trigger-sampling-request`, `trigger-elicitation-request`, `get-roots-list`)
 *   are listed only to clients that declare those capabilities.
 *
 * The server listens on every interface (it takes only `PORT`; no host setting), serves `/mcp`,
 * keeps one session per `initialize` (`mcp-session-id`), and answers POSTs as SSE streams.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, request as httpRequest, type ClientRequest, type IncomingHttpHeaders } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';

const root = join(import.meta.dirname, '../..');
const packageDir = dirname(createRequire(import.meta.url).resolve('@modelcontextprotocol/server-everything/package.json'));

/** The installed server-everything's version (package.json pins it exactly). */
export const EVERYTHING_VERSION: string = (JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8')) as { version: string }).version;

/** The tool for "a quick tool call": `{message}` → text `Echo: <message>`. */
export const QUICK_TOOL = 'echo';

/** The tool for "a tool call that takes several seconds": `{duration (seconds), steps?}`. */
export const SLOW_TOOL = 'trigger-long-running-operation';

/** A running server-everything child. */
export interface EverythingServer {
  /** Its MCP endpoint, `http://127.0.0.1:PORT/mcp`. */
  url: string;
  child: ChildProcess;
  /** The last 20,000 characters it wrote (stdout and stderr: one line per request it received). */
  output(): string;
  /** Stops it (SIGTERM, then SIGKILL after 5 s) and resolves once it has exited. */
  close(): Promise<void>;
}

/** A port nothing listens on now, on every interface (as the server binds). */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve, reject) => probe.once('error', reject).listen(0, resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

/** Starts one child on `port`; resolves once it answers HTTP, with null when it exited first (its port taken, say). */
async function startOn(port: number, timeoutMs: number): Promise<{ server: EverythingServer | null; output: string }> {
  const child = spawn(join(root, 'node_modules/.bin/node'), [join(packageDir, 'dist/index.js'), 'streamableHttp'], {
    cwd: packageDir,
    // Only what it needs: its `get-env` tool would show a model everything else.
    env: { PORT: String(port), PATH: process.env.PATH ?? '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const keep = (chunk: Buffer) => (out = (out + chunk.toString('utf8')).slice(-20_000));
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  let exited = false;
  const exit = new Promise<void>((resolve) => child.once('exit', () => ((exited = true), resolve())));
  // A test process that ends without close() takes the child with it.
  const reap = () => child.kill('SIGKILL');
  process.once('exit', reap);
  const url = `http://127.0.0.1:${port}/mcp`;
  const close = async () => {
    process.removeListener('exit', reap);
    if (exited) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exit;
    clearTimeout(timer);
  };
  const deadline = Date.now() + timeoutMs;
  while (!exited) {
    try {
      // Any HTTP answer will do (a GET without a session is its 400): it is listening and routing.
      await fetch(url, { signal: AbortSignal.timeout(1000) });
      return { server: { url, child, output: () => out, close }, output: out };
    } catch {
      if (Date.now() > deadline) {
        await close();
        throw new Error(`server-everything did not answer on port ${port} within ${timeoutMs} ms: ${out}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  process.removeListener('exit', reap);
  return { server: null, output: out };
}

/**
 * Starts server-everything, unmodified, as `node dist/index.js streamableHttp` with `PORT` set
 * to a free port, and resolves once it answers HTTP (about 0.5 s). A port taken between the
 * probe and the child's listen is retried on another (three tries). Errors: rejects with the
 * child's output when it exits every time or does not answer within `timeoutMs` (default 20 s).
 */
export async function startEverythingServer(options: { timeoutMs?: number } = {}): Promise<EverythingServer> {
  let output = '';
  for (let attempt = 0; attempt < 3; attempt++) {
    const started = await startOn(await freePort(), options.timeoutMs ?? 20_000);
    if (started.server) return started.server;
    output = started.output;
    if (!/already in use/.test(output)) break;
  }
  throw new Error(`server-everything exited before it answered: ${output}`);
}

/** A `tools/call` the proxy forwarded. */
export interface CountedToolCall {
  tool: string;
  arguments: unknown;
  /** The request's `mcp-session-id` (one per client connection). */
  sessionId: string | undefined;
  /** Arrival time (ms since the epoch). */
  at: number;
}

/** A request the proxy forwarded (any method): its JSON-RPC methods and its headers as received. */
export interface ProxiedRequest {
  /** The HTTP method. */
  method: string;
  /** The JSON-RPC methods its body holds (`initialize`, `tools/list`, `tools/call`…); [] for none. */
  rpc: string[];
  /** Its headers as they reached the proxy (lower-case names), e.g. to see a client's `authorization`. */
  headers: IncomingHttpHeaders;
  /** Arrival time (ms since the epoch). */
  at: number;
}

/** A running counting proxy. */
export interface CountingProxy {
  /** The proxy's URL for the upstream's path: `http://127.0.0.1:PROXY_PORT/mcp` for an upstream at `…/mcp`. */
  url: string;
  /** Every `tools/call` request received, in arrival order (counted when it arrives, before it is forwarded). */
  toolCalls: CountedToolCall[];
  /** Every request received, in arrival order, with its headers (a test may empty it). */
  requests: ProxiedRequest[];
  /** How many `tools/call` requests named `tool`. */
  callsOf(tool: string): number;
  /** Every tool named in `tools/call` requests with its count, e.g. `{echo: 1}`. */
  counts(): Record<string, number>;
  /** Ends open streams (upstream and downstream) and stops listening; the upstream keeps running. */
  close(): Promise<void>;
}

// Hop-by-hop headers (RFC 9110 §7.6.1) are the proxy's own on each side.
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'trailer']);

function endToEnd(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !HOP_BY_HOP.has(name) && name !== 'host'));
}

/** The JSON-RPC messages of a body (one message or a batch); [] for anything else. */
function rpcMessagesIn(body: Buffer): unknown[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    return [];
  }
  return Array.isArray(parsed) ? parsed : [parsed];
}

/** The JSON-RPC methods of a body's messages (requests and notifications). */
function rpcMethodsIn(body: Buffer): string[] {
  return rpcMessagesIn(body).flatMap((m) => (typeof m === 'object' && m !== null && typeof (m as { method?: unknown }).method === 'string' ? [(m as { method: string }).method] : []));
}

/** The `tools/call` requests of a JSON-RPC body (one message or a batch); [] for anything else. */
function toolCallsIn(body: Buffer): Array<{ tool: string; arguments: unknown }> {
  const messages = rpcMessagesIn(body);
  return messages
    .filter((m): m is { method: string; params?: { name?: unknown; arguments?: unknown } } => typeof m === 'object' && m !== null && (m as { method?: unknown }).method === 'tools/call')
    .map((m) => ({ tool: typeof m.params?.name === 'string' ? m.params.name : '', arguments: m.params?.arguments }));
}

/**
 * Starts a reverse proxy on a free loopback port in front of the MCP endpoint `upstreamUrl`:
 * every request (any method and path) is forwarded to the upstream's origin with its headers
 * (hop-by-hop ones aside), and the answer comes back as it is written — status, headers and body
 * streamed chunk by chunk, so SSE events pass at once. A client that goes away takes its
 * upstream request with it. An upstream that cannot be reached is a 502.
 */
export async function startCountingProxy(upstreamUrl: string): Promise<CountingProxy> {
  const upstream = new URL(upstreamUrl);
  const toolCalls: CountedToolCall[] = [];
  const requests: ProxiedRequest[] = [];
  const inFlight = new Set<ClientRequest>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const sessionId = req.headers['mcp-session-id'];
      requests.push({ method: req.method ?? '', rpc: rpcMethodsIn(body), headers: { ...req.headers }, at: Date.now() });
      for (const call of toolCallsIn(body)) toolCalls.push({ ...call, sessionId: typeof sessionId === 'string' ? sessionId : undefined, at: Date.now() });
      const forward = httpRequest(
        { protocol: upstream.protocol, hostname: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: { ...endToEnd(req.headers), host: upstream.host } },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, endToEnd(answer.headers));
          res.flushHeaders();
          answer.pipe(res);
          answer.on('error', () => res.destroy());
        },
      );
      inFlight.add(forward);
      forward.on('close', () => inFlight.delete(forward));
      forward.on('error', () => {
        if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' }).end('upstream unreachable');
        else res.destroy();
      });
      // The client went away (closed its SSE stream, say): so does the upstream request.
      res.on('close', () => {
        if (!res.writableFinished) forward.destroy();
      });
      forward.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${upstream.pathname}${upstream.search}`,
    toolCalls,
    requests,
    callsOf: (tool) => toolCalls.filter((c) => c.tool === tool).length,
    counts: () => {
      const counts: Record<string, number> = {};
      for (const call of toolCalls) counts[call.tool] = (counts[call.tool] ?? 0) + 1;
      return counts;
    },
    async close() {
      for (const forward of inFlight) forward.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** server-everything behind a counting proxy: give the service `url` (the proxy's). */
export interface CountedEverything {
  /** The proxy's MCP endpoint. */
  url: string;
  server: EverythingServer;
  proxy: CountingProxy;
  /** Closes the proxy, then the server. */
  close(): Promise<void>;
}

/** Starts server-everything and a counting proxy in front of it. Errors: as {@link startEverythingServer}. */
export async function startCountedEverything(options: { timeoutMs?: number } = {}): Promise<CountedEverything> {
  const server = await startEverythingServer(options);
  const proxy = await startCountingProxy(server.url);
  return {
    url: proxy.url,
    server,
    proxy,
    async close() {
      await proxy.close();
      await server.close();
    },
  };
}
