import http from 'node:http';

/** A JSON response as the benchmarks look at it. */
export interface BenchReply {
  status: number;
  body: any;
}

/** A keep-alive HTTP client bound to one server and one org key. */
export interface BenchClient {
  /** Sends `method path` under `/api/v1` with an optional JSON body; resolves with status and parsed body. */
  call(method: string, path: string, body?: unknown): Promise<BenchReply>;
  /** Closes every pooled socket. */
  destroy(): void;
}

/**
 * Creates a client for `baseUrl` that authenticates with `apiKey`. The agent keeps sockets open
 * and has no socket cap, so N concurrent calls use N connections (the held-poll benchmark opens
 * thousands; the process's open-file limit is the bound).
 */
export function createClient(baseUrl: string, apiKey: string): BenchClient {
  const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity, maxFreeSockets: 20_000 });
  const url = new URL(baseUrl);
  return {
    call(method, path, body) {
      return new Promise((resolve, reject) => {
        const payload = body === undefined ? undefined : JSON.stringify(body);
        const req = http.request(
          {
            agent,
            host: url.hostname,
            port: url.port,
            method,
            path: `/api/v1${path}`,
            headers: {
              'x-api-key': apiKey,
              ...(payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }),
            },
          },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (chunk: Buffer) => chunks.push(chunk));
            res.on('end', () => {
              const text = Buffer.concat(chunks).toString('utf8');
              let parsed: unknown = text;
              try {
                parsed = JSON.parse(text);
              } catch {
                // not JSON: keep the text
              }
              resolve({ status: res.statusCode ?? 0, body: parsed });
            });
            res.on('error', reject);
          },
        );
        req.on('error', reject);
        req.end(payload);
      });
    },
    destroy() {
      agent.destroy();
    },
  };
}

/** Throws unless `reply` has status `expected`; benchmarks must not count failures as work. */
export function expectStatus(reply: BenchReply, expected: number, what: string): BenchReply {
  if (reply.status !== expected) throw new Error(`${what}: expected ${expected}, got ${reply.status} ${JSON.stringify(reply.body)}`);
  return reply;
}
