/**
 * The HTTP server under the model stand-ins (openai-stub.ts, anthropic-stub.ts): a real server on a
 * free loopback port that records every JSON request to its model route and answers as the test
 * decides. The vendor formats live in the stand-ins; this module knows none of them.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request as a stand-in received it; `B` is the vendor's request body. */
export interface RecordedRequest<B> {
  /** 1-based arrival number. */
  n: number;
  path: string;
  headers: IncomingMessage['headers'];
  body: B;
  /** Arrival time (ms since the epoch). */
  at: number;
  /** Set once the client gave up on the request (closed it before an answer was sent). */
  aborted: boolean;
}

/** How a stand-in answers one request: a status, headers and a JSON body, or never (`hang`). */
export type StubAnswer = { status: number; headers?: Record<string, string>; body: unknown } | 'hang';

/** A running stand-in. */
export interface ModelStub<R> {
  /** `http://127.0.0.1:PORT`. */
  origin: string;
  /** Every request to the model route, in arrival order (a test may empty it). */
  requests: R[];
  /** The most requests that were open (received, not yet answered or closed) at once. */
  maxInFlight(): number;
  /** Resolves with the request once the stand-in has received `n` requests. */
  received(n: number): Promise<R>;
  /** Drops held (`hang`) requests and open connections, then stops listening. */
  close(): Promise<void>;
}

/** What {@link startModelStub} needs to know of the vendor. */
export interface ModelRoute<B> {
  /** Whether a POST to this path (query included) is the model route. */
  accepts(path: string): boolean;
  /** The answer to a request off the route (wrong method or path), as the vendor words a 404. */
  notFound: StubAnswer;
  /** The answer to a body that is not JSON, as the vendor words a 400. */
  badRequest: StubAnswer;
  /** The answer to a recorded request. */
  answer(request: RecordedRequest<B>): StubAnswer | Promise<StubAnswer>;
}

/**
 * Starts a stand-in on a free loopback port. Only POSTs to the route with a JSON body are
 * recorded; anything else gets `notFound` or `badRequest` and is not recorded. An `answer` that
 * throws is a 500 carrying the error's message (so a script's mistake fails the call, visibly).
 */
export async function startModelStub<B>(route: ModelRoute<B>): Promise<ModelStub<RecordedRequest<B>>> {
  const requests: Array<RecordedRequest<B>> = [];
  const waiters: Array<{ n: number; resolve: (r: RecordedRequest<B>) => void }> = [];
  const held = new Set<ServerResponse>();
  let open = 0;
  let maxOpen = 0;
  const send = (res: ServerResponse, reply: Exclude<StubAnswer, 'hang'>) =>
    res.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers }).end(JSON.stringify(reply.body));
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', async () => {
      if (req.method !== 'POST' || !req.url || !route.accepts(req.url)) {
        if (route.notFound !== 'hang') send(res, route.notFound);
        return;
      }
      let body: B;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as B;
      } catch {
        if (route.badRequest !== 'hang') send(res, route.badRequest);
        return;
      }
      const request: RecordedRequest<B> = { n: requests.length + 1, path: req.url, headers: req.headers, body, at: Date.now(), aborted: false };
      requests.push(request);
      open += 1;
      maxOpen = Math.max(maxOpen, open);
      res.on('close', () => {
        open -= 1;
        if (!res.writableEnded) request.aborted = true;
        held.delete(res);
      });
      for (const waiter of waiters.filter((w) => w.n <= requests.length)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(requests[waiter.n - 1]!);
      }
      let reply: StubAnswer;
      try {
        reply = await route.answer(request);
      } catch (error) {
        reply = { status: 500, body: { error: { message: `the stand-in's answer failed: ${error instanceof Error ? error.message : String(error)}` } } };
      }
      if (reply === 'hang') {
        held.add(res);
        return;
      }
      send(res, reply);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    requests,
    maxInFlight: () => maxOpen,
    received(n) {
      if (requests.length >= n) return Promise.resolve(requests[n - 1]!);
      return new Promise((resolve) => waiters.push({ n, resolve }));
    },
    async close() {
      for (const res of held) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
