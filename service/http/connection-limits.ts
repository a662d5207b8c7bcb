/**
 * What one client can hold of the server's connections (issue 21, defect 3): how long it may take
 * to send a request, how long a connection may sit silent, and how many connections one address
 * may have open at once. Without them, a client that opens connections and sends a byte every few
 * seconds holds them forever (Fastify's own timeouts are 0: none).
 */
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { ErrorCatalogue, type ErrorCode } from '../../errors/catalogue.ts';

/** The limits, in milliseconds and connections; 0 turns one off. */
export interface ConnectionLimits {
  /** Longest time to receive a request's headers, from its first byte (or the connection's start). */
  headersTimeoutMs: number;
  /** Longest time to receive a whole request, headers and body; answering it is not counted (long polls hold longer). */
  requestTimeoutMs: number;
  /** Longest time a connection may carry no byte either way; must exceed the longest wait a request may hold (30 s). */
  idleTimeoutMs: number;
  /** Most connections open at once from one client address. */
  maxConnectionsPerClient: number;
}

/**
 * The defaults: 10 s for headers, 30 s for a whole request (an 8 MiB attachment needs about
 * 2.2 Mbit/s), 120 s of silence (a long poll holds 30 s, an event stream writes every 15 s), 128
 * connections per address (behind a reverse proxy every client shares the proxy's address: raise
 * it or turn it off there).
 */
export const defaultConnectionLimits: ConnectionLimits = { headersTimeoutMs: 10_000, requestTimeoutMs: 30_000, idleTimeoutMs: 120_000, maxConnectionsPerClient: 128 };

/**
 * Node's request and header timeouts are checked on a timer (default every 30 s, so a 10 s
 * limit could hold 40 s); checking every second costs a walk over open connections.
 */
const connectionsCheckingIntervalMs = 1000;

/**
 * The Fastify server options for `limits`: `requestTimeout` and `connectionTimeout` (Fastify's
 * names for Node's `server.requestTimeout` and `server.setTimeout`) and the `http` options
 * Node's server reads at creation (`headersTimeout`, the checking interval). Node refuses a
 * headers timeout longer than the request timeout, so that one is capped by it.
 */
export function connectionServerOptions(limits: ConnectionLimits): { requestTimeout: number; connectionTimeout: number; http: { headersTimeout: number; requestTimeout: number; connectionsCheckingInterval: number } } {
  const headersTimeout = limits.requestTimeoutMs > 0 ? Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs) : limits.headersTimeoutMs;
  return {
    requestTimeout: limits.requestTimeoutMs,
    connectionTimeout: limits.idleTimeoutMs,
    http: { headersTimeout, requestTimeout: limits.requestTimeoutMs, connectionsCheckingInterval: connectionsCheckingIntervalMs },
  };
}

/**
 * A whole HTTP/1.1 response with a problem+json body, for a socket no route answers (contract §2),
 * with `headers` (names as sent) besides its own. Output: the bytes to write, as a string.
 */
function rawProblem(code: ErrorCode, detail: string, headers: Record<string, string> = {}): string {
  const { status, title } = ErrorCatalogue[code];
  const body = JSON.stringify({ type: `urn:acs:error:${code}`, title, status, detail, code });
  const extra = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join('');
  return `HTTP/1.1 ${status} ${title}\r\nContent-Type: application/problem+json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n${extra}\r\n${body}`;
}

/** Headers every response carries, whoever writes it (security-headers.ts `everyResponseHeaders`: HSTS with an https public URL); read per response. */
export type EveryResponseHeaders = () => Record<string, string>;

/**
 * Fastify's `clientErrorHandler` for a server whose every response carries `everyResponse()`:
 * errors Node raises before a request reaches Fastify, answered as problem+json before the
 * connection closes — a request not received in time 408 `request_timeout`, headers over Node's
 * size limit 431 `headers_too_large`, anything the HTTP parser cannot read 400 `invalid_request`.
 * A reset connection gets nothing. Output: the handler.
 */
export function clientErrorHandler(everyResponse: EveryResponseHeaders = () => ({})): (error: Error & { code?: string }, socket: Socket) => void {
  return (error, socket) => {
    if (error.code === 'ECONNRESET' || socket.destroyed) return;
    const headers = everyResponse();
    let answer: string;
    if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') answer = rawProblem('request_timeout', 'the request was not received in time (headers and body have a time limit)', headers);
    else if (error.code === 'HPE_HEADER_OVERFLOW') answer = rawProblem('headers_too_large', 'the request headers exceed the size limit (16 KiB)', headers);
    else answer = rawProblem('invalid_request', 'the request is not valid HTTP/1.1', headers);
    if (socket.writable) socket.end(answer);
    socket.destroy();
  };
}

/**
 * How long {@link limitConnectionsPerClient} holds a refusal under `limits`: 1 s, but under half
 * the headers timeout, so that the refusal is answered before the server's own timeout would
 * answer the silent connection 408 instead. Output: milliseconds.
 */
export function refusalHoldMs(limits: ConnectionLimits): number {
  const headers = connectionServerOptions(limits).http.headersTimeout;
  return headers > 0 ? Math.min(1_000, Math.floor(headers / 2)) : 1_000;
}

/** Settings of {@link limitConnectionsPerClient}. */
export interface ConnectionCapOptions {
  /** How long a refusal is held before it is answered, in milliseconds (default 1,000; {@link refusalHoldMs}). */
  holdMs?: number;
  /** Headers the refusal carries besides its own (HSTS with an https public URL); read per refusal. */
  everyResponse?: EveryResponseHeaders;
}

/** What {@link limitConnectionsPerClient} installed. */
export interface ConnectionCap {
  /** Answers every refusal still held at once (the server is closing: its close would wait for them). */
  answerHeld(): void;
}

/**
 * Caps the connections one client address may hold open on `server` at `max` (0: no cap;
 * contract §14). A connection over the cap is answered one 429 `rate_limited` (problem+json,
 * `Retry-After: 1`, and `options.everyResponse()`: HSTS) and closed, and no request of it runs:
 * it is decided at the `connection` event, before the HTTP server sees the socket — the
 * `connection` event of a refused socket is not passed on, so Node's HTTP parser is never
 * attached to it, and whatever the client sent is never parsed (at most 16 KiB of it sits in the
 * socket's buffer until it is destroyed with it). The answer is held `holdMs` (default 1 s) first,
 * for up to `max` such connections of an address at a time (past those, it is sent at once): a
 * client that reconnects as soon as it is refused would otherwise make the server accept, answer
 * and close connections as fast as it can open them. Output: the handle that answers held
 * refusals when the server closes. Raises nothing.
 */
export function limitConnectionsPerClient(server: Server, max: number, options: ConnectionCapOptions = {}): ConnectionCap {
  const pending = new Set<() => void>();
  const answerHeld = () => {
    for (const refuse of [...pending]) refuse();
  };
  if (max <= 0) return { answerHeld };
  const holdMs = options.holdMs ?? 1_000;
  const everyResponse = options.everyResponse ?? (() => ({}));
  const open = new Map<string, number>();
  const held = new Map<string, number>();
  const count = (map: Map<string, number>, address: string, by: number) => {
    const value = (map.get(address) ?? 0) + by;
    if (value <= 0) map.delete(address);
    else map.set(address, value);
  };

  /**
   * Refuses `socket` of `address` (over the cap): one 429, then closed; nothing of it is parsed.
   * The socket still reads into its own buffer (up to 16 KiB, then it stops): a small request sent
   * at once is then off the wire when it closes, which sends FIN rather than a reset that could
   * destroy the answer before the client reads it.
   */
  const refuse = (socket: Socket, address: string) => {
    // The HTTP server's own error handler is never attached: a reset must not become an uncaught 'error'.
    socket.on('error', () => {});
    let answered = false;
    const answer = () => {
      if (answered) return;
      answered = true;
      pending.delete(answer);
      if (socket.destroyed) return;
      socket.end(rawProblem('rate_limited', `more than ${max} connections open at once from this address; close some or reuse them`, { 'Retry-After': '1', ...everyResponse() }));
      // Closed once the answer is written (the HTTP server's sockets are half-open: end() alone would leave it open).
      socket.destroySoon();
    };
    if (holdMs <= 0 || (held.get(address) ?? 0) >= max) return answer();
    count(held, address, 1);
    pending.add(answer);
    const timer = setTimeout(answer, holdMs);
    socket.once('close', () => {
      clearTimeout(timer);
      pending.delete(answer);
      count(held, address, -1);
    });
  };

  // Decided before any 'connection' listener runs (Node's HTTP server attaches its parser in
  // one, and a parser attached reads and runs requests whatever is done to the socket after):
  // a refused connection's event is not emitted at all.
  const emit = server.emit;
  server.emit = function (this: Server, event: string | symbol, ...args: unknown[]): boolean {
    if (event === 'connection') {
      const socket = args[0] as Socket;
      const address = socket.remoteAddress ?? 'unknown';
      if ((open.get(address) ?? 0) >= max) {
        refuse(socket, address);
        return true;
      }
      count(open, address, 1);
      socket.once('close', () => count(open, address, -1));
    }
    return Reflect.apply(emit, this, [event, ...args]) as boolean;
  } as Server['emit'];
  return { answerHeld };
}
