/**
 * The soak's HTTP client: one per simulated client, with its own loopback source address (so that
 * the server's per-address limits see a hundred clients, not one), keep-alive sockets, a deadline
 * per request, and failover between the acs-server processes as a load balancer would.
 */
import http from 'node:http';

/** An answer, or the network failure that stood for one. */
export interface SoakReply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: any;
  /** Milliseconds from sending to the whole answer. */
  ms: number;
  /** Set when no answer came: `ECONNREFUSED`, `ECONNRESET`, `timeout`, … */
  failure?: string;
}

/** A client of the fleet: its address, its key, and the server it talks to now. */
export class SoakClient {
  readonly sourceAddress: string;
  readonly apiKey: string | undefined;
  readonly #agent: http.Agent;
  readonly #urls: () => readonly string[];
  #current: number;

  /**
   * `sourceAddress`: the loopback address it connects from (127.x.y.z); `urls`: the processes'
   * base URLs (read on each request: a restarted process keeps its port); `apiKey`: sent as
   * `x-api-key` unless a request gives its own headers.
   */
  constructor(sourceAddress: string, urls: () => readonly string[], apiKey: string | undefined, first = 0, maxSockets = 64) {
    this.sourceAddress = sourceAddress;
    this.apiKey = apiKey;
    this.#agent = new http.Agent({ keepAlive: true, maxSockets, localAddress: sourceAddress } as http.AgentOptions);
    this.#urls = urls;
    this.#current = first;
  }

  /** The base URL requests go to now. */
  get url(): string {
    const urls = this.#urls();
    return urls[this.#current % urls.length]!;
  }

  /** Sends the next requests to the other process (after a connection failure). */
  failover(): void {
    this.#current += 1;
  }

  /**
   * Sends one request under `/api/v1` (or at `path` as given when it starts with `/healthz` or
   * `/admin`). JSON in and out. A network failure resolves with `status` 0 and `failure`; it never
   * rejects. `timeoutMs` bounds the whole exchange (default 40 s: above the longest wait).
   */
  request(method: string, path: string, body?: unknown, headers: Record<string, string> = {}, timeoutMs = 40_000): Promise<SoakReply> {
    const url = new URL(this.url);
    const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
    const started = performance.now();
    return new Promise((resolve) => {
      let settled = false;
      const done = (reply: Omit<SoakReply, 'ms'>) => {
        if (settled) return;
        settled = true;
        resolve({ ...reply, ms: performance.now() - started });
      };
      const req = http.request(
        {
          agent: this.#agent,
          host: url.hostname,
          port: url.port,
          method,
          path: path.startsWith('/healthz') || path.startsWith('/admin') ? path : `/api/v1${path}`,
          headers: {
            ...(this.apiKey ? { 'x-api-key': this.apiKey } : {}),
            ...(payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) }),
            ...headers,
          },
          timeout: timeoutMs,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let parsed: unknown = text;
            try {
              parsed = text === '' ? undefined : JSON.parse(text);
            } catch {
              // not JSON: keep the text
            }
            done({ status: res.statusCode ?? 0, headers: res.headers, body: parsed });
          });
          res.on('error', (error: NodeJS.ErrnoException) => done({ status: 0, headers: {}, body: undefined, failure: error.code ?? error.message }));
        },
      );
      req.on('timeout', () => {
        req.destroy();
        done({ status: 0, headers: {}, body: undefined, failure: 'timeout' });
      });
      req.on('error', (error: NodeJS.ErrnoException) => done({ status: 0, headers: {}, body: undefined, failure: error.code ?? error.message }));
      req.end(payload);
    });
  }

  /** Closes its sockets. */
  close(): void {
    this.#agent.destroy();
  }
}

/** The loopback address of client number `n` (127.10.x.y): one per client, all on `lo`. */
export function loopbackAddress(n: number, network = 10): string {
  return `127.${network}.${Math.floor(n / 250)}.${(n % 250) + 1}`;
}

/** Resolves after `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The seconds a 429 or 503 asked to wait (`Retry-After`), capped, in milliseconds; 1 s when absent. */
export function retryAfterMs(reply: SoakReply, capMs = 10_000): number {
  const seconds = Number(reply.headers['retry-after']);
  return Math.min(capMs, Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : 1000);
}
