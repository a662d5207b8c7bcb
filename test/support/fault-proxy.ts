/**
 * A loopback HTTP proxy in front of a real acs-server, for faults a healthy server does not
 * make on its own: refusals with `Retry-After` (429, 503) before the request reaches the
 * server, answers lost after it took effect, and latency. It records what it forwarded, so a
 * test can count creates and check that a refused request came back no earlier than it was told.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the proxy does to the `n`-th request (1-based, counted over every request it receives). */
export type Fault = 'pass' | 'refuse-429' | 'refuse-503' | 'lose-answer';

/** Options of {@link startFaultProxy}. */
export interface FaultProxyOptions {
  /** Base URL of the real server. */
  target: string;
  /** Chooses the fault of each request; default: none. */
  fault?: (n: number, method: string, path: string) => Fault;
  /** Seconds sent in `Retry-After` with a refusal (default 1). */
  retryAfterSeconds?: number;
  /** Milliseconds added before each forwarded request (default 0). */
  delayMs?: number;
  /**
   * Awaited once the server has answered a request and before the answer is relayed: a test kills
   * its client there, so the work is done on the server and the client never hears of it.
   */
  onAnswer?: (status: number, method: string, path: string) => void | Promise<void>;
}

/** A refusal and, once it came, the same request again. */
export interface Refusal {
  request: string;
  status: number;
  at: number;
  retryAfterMs: number;
  /** When the same method, path and body came back (ms since the epoch). */
  retriedAt?: number;
}

/** A running proxy. */
export interface FaultProxy {
  url: string;
  refusals: Refusal[];
  /** Answers of the server that the proxy forwarded, as `STATUS METHOD PATH`, lost ones included. */
  forwarded: string[];
  /** Creates the server made (2xx answers to POST). */
  created(): number;
  /** Answers of the server with this status (its own 429s, say). */
  serverAnswers(status: number): number;
  close(): Promise<void>;
}

/** Starts the proxy on a free loopback port. */
export async function startFaultProxy(options: FaultProxyOptions): Promise<FaultProxy> {
  const refusals: Refusal[] = [];
  const forwarded: string[] = [];
  const retryAfterMs = (options.retryAfterSeconds ?? 1) * 1000;
  let n = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        const body = Buffer.concat(chunks);
        const method = req.method ?? 'GET';
        const path = req.url ?? '/';
        const request = `${method} ${path} ${body.toString('utf8')}`;
        const now = Date.now();
        const earlier = refusals.find((r) => r.request === request && r.retriedAt === undefined);
        if (earlier) earlier.retriedAt = now;
        const fault = options.fault?.(++n, method, path) ?? 'pass';
        if (fault === 'refuse-429' || fault === 'refuse-503') {
          const status = fault === 'refuse-429' ? 429 : 503;
          refusals.push({ request, status, at: now, retryAfterMs });
          res.writeHead(status, { 'content-type': 'application/problem+json', 'retry-after': String(retryAfterMs / 1000) });
          res.end(JSON.stringify({ type: 'about:blank', title: 'Injected', status, code: status === 429 ? 'rate_limited' : 'unavailable', detail: 'injected by the test proxy' }));
          return;
        }
        if (options.delayMs) await new Promise((resolve) => setTimeout(resolve, options.delayMs));
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string' && k !== 'host' && k !== 'content-length') headers[k] = v;
        let answer: Response;
        try {
          answer = await fetch(new URL(path, options.target), { method, headers, ...(body.length > 0 ? { body } : {}) });
        } catch {
          res.destroy();
          return;
        }
        const text = Buffer.from(await answer.arrayBuffer());
        forwarded.push(`${answer.status} ${method} ${path.split('?')[0]}`);
        await options.onAnswer?.(answer.status, method, path);
        if (fault === 'lose-answer') {
          // The server did the work; the client never hears of it.
          res.destroy();
          return;
        }
        const out: Record<string, string> = {};
        answer.headers.forEach((v, k) => {
          if (k !== 'content-length' && k !== 'transfer-encoding' && k !== 'connection' && k !== 'keep-alive') out[k] = v;
        });
        res.writeHead(answer.status, out);
        res.end(text);
      })();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    refusals,
    forwarded,
    created: () => forwarded.filter((f) => /^2\d\d POST /.test(f)).length,
    serverAnswers: (status) => forwarded.filter((f) => f.startsWith(`${status} `)).length,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
