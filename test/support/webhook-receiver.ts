import http from 'node:http';

/** One request a receiver got. */
export interface Received {
  at: number;
  headers: http.IncomingHttpHeaders;
  body: string;
  event: any;
}

/** What the receiver answers a request with: a status and headers. */
export type Answer = { status: number; headers?: Record<string, string> };

/** A loopback webhook receiver for tests and benchmarks. */
export interface Receiver {
  url: string;
  port: number;
  received: Received[];
  /** Sets how the next requests are answered (default 200). */
  answer(respond: (request: Received, index: number) => Answer): void;
  /** Resolves once `count` requests matching `predicate` (default: any) came; rejects after `timeoutMs` (default 30 s). */
  waitFor(count: number, predicate?: (request: Received) => boolean, timeoutMs?: number): Promise<Received[]>;
  close(): Promise<void>;
}

/** Starts a receiver on a free loopback port that records every request and answers as told. */
export async function startReceiver(path = '/hook'): Promise<Receiver> {
  const received: Received[] = [];
  let respond: (request: Received, index: number) => Answer = () => ({ status: 200 });
  const waiters = new Set<() => void>();
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      let event: unknown;
      try {
        event = JSON.parse(body);
      } catch {
        event = undefined;
      }
      const entry: Received = { at: Date.now(), headers: req.headers, body, event };
      received.push(entry);
      const answer = respond(entry, received.length - 1);
      res.writeHead(answer.status, answer.headers ?? {});
      res.end();
      for (const waiter of waiters) waiter();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}${path}`,
    port,
    received,
    answer(next) {
      respond = next;
    },
    waitFor(count, predicate = () => true, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const matching = received.filter(predicate);
          if (matching.length < count) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve(matching);
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`receiver: ${received.filter(predicate).length} of ${count} requests within ${timeoutMs} ms`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
