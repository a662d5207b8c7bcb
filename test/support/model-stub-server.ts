/**
 * The HTTP server under the model stand-ins (openai-stub.ts, anthropic-stub.ts): a real server on a
 * free loopback port that records every JSON request to its model route and answers as the test
 * decides — with JSON, or, when the request asks for a stream and the answer is a 200, with the
 * vendor's event stream cut and paced as the test says (model-stream.ts), which a test can hold
 * half-way ({@link ModelStub.hold}). The vendor formats live in the stand-ins; this module knows
 * none of them.
 *
 * A slow stream, and one held half-way (to stop a turn, or kill acs-server, mid-reply):
 *
 * ```ts
 * const slow = await startOpenAiStub(scriptedToolCompletions(() => 'a long reply'), { chunk: { size: 'word', delayMs: 100 } });
 * const stub = await startOpenAiStub(scriptedToolCompletions(() => 'a long reply'));
 * stub.hold(3);                          // every stream sends 3 words, then waits
 * const request = await stub.held();     // a stream is waiting: stop the turn, or kill the server
 * expect(await request.ended).toEqual({ aborted: true });
 * stub.release();                        // streams still open (a retry's) go on to their end
 * ```
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DEFAULT_PACE, preciseNow, type ChunkPace, type SentChunk, type SentFrame, type StreamFrame } from './model-stream.ts';

export type { ChunkPace, ChunkKind, SentChunk, SentFrame, StreamFrame } from './model-stream.ts';

/** One request as a stand-in received it; `B` is the vendor's request body. */
export interface RecordedRequest<B> {
  /** 1-based arrival number. */
  n: number;
  path: string;
  headers: IncomingMessage['headers'];
  body: B;
  /** Arrival time (ms since the epoch). */
  at: number;
  /** Set once the client gave up on the request (closed it before the answer, or a stream, ended). */
  aborted: boolean;
  /** Whether the answer is an event stream (the request asked for one and the answer is a 200). */
  streamed: boolean;
  /** Every frame of a streamed answer, as it was sent, in order; [] for a JSON answer. */
  frames: SentFrame[];
  /** The content chunks of a streamed answer (its text and tool-call arguments), as they were sent, in order; [] for a JSON answer. */
  chunks: SentChunk[];
  /**
   * Resolves once the answer is over: written in full (`aborted: false`), or the connection closed
   * before (`aborted: true`: the client gave up, or the stand-in was closed).
   */
  ended: Promise<{ aborted: boolean }>;
}

/**
 * How a stand-in answers one request: a status, headers and a JSON body, or never (`hang`). When
 * the request asks for a stream, a 200 answer is sent as the vendor's event stream, cut and paced
 * as `chunk` says (over the stand-in's pace); any other status is sent as JSON, as vendors do.
 */
export type StubAnswer = { status: number; headers?: Record<string, string>; body: unknown; chunk?: ChunkPace } | 'hang';

/** Options of a stand-in (openai-stub.ts, anthropic-stub.ts). */
export interface StubOptions {
  /** How streamed answers are cut and paced, unless an answer says otherwise; default word by word, at once. */
  chunk?: ChunkPace;
}

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
  /**
   * Holds streams half-way: from now until {@link release}, every streamed answer, open or to
   * come, sends at most `afterChunks` content chunks (default 0: none), then waits before its next
   * one. The frames before its first content chunk (the vendor's start) are sent.
   */
  hold(afterChunks?: number): void;
  /** Lets the held streams go on, at their pace, and holds no more. */
  release(): void;
  /** Resolves with the request of a stream waiting at the hold (one waiting now, or the next to). */
  held(): Promise<R>;
  /** Drops held (`hang`) requests, open streams and connections, then stops listening. */
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
  /** Whether the request asks for an event stream (the vendor's `stream: true`). */
  wantsStream(body: B): boolean;
  /**
   * The event stream of a 200 answer's JSON body, cut as `pace` says; undefined when the body is
   * not the vendor's response (a test's raw answer), which is then sent as JSON.
   */
  streamOf(body: B, answerBody: unknown, pace: Required<ChunkPace>): StreamFrame[] | undefined;
  /** The stand-in's pace. */
  chunk?: ChunkPace;
}

/** Resolves after `ms`, or as soon as `res` closes. */
function pause(res: ServerResponse, ms: number): Promise<void> {
  if (ms <= 0 || res.closed) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      res.off('close', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    res.on('close', done);
  });
}

/**
 * Starts a stand-in on a free loopback port. Only POSTs to the route with a JSON body are
 * recorded; anything else gets `notFound` or `badRequest` and is not recorded. An `answer` that
 * throws, or a pace that is not one, is a 500 carrying the error's message (so a script's mistake
 * fails the call, visibly).
 */
export async function startModelStub<B>(route: ModelRoute<B>): Promise<ModelStub<RecordedRequest<B>>> {
  const requests: Array<RecordedRequest<B>> = [];
  const waiters: Array<{ n: number; resolve: (r: RecordedRequest<B>) => void }> = [];
  const hung = new Set<ServerResponse>();
  let open = 0;
  let maxOpen = 0;
  /** The hold: how many content chunks a stream may send while it is on; undefined when off. */
  let holdAfter: number | undefined;
  /** Streams waiting at the hold, each with what lets it go on. */
  const atHold = new Map<RecordedRequest<B>, () => void>();
  const heldWaiters: Array<(r: RecordedRequest<B>) => void> = [];

  const send = (res: ServerResponse, reply: Exclude<StubAnswer, 'hang'>) =>
    res.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers }).end(JSON.stringify(reply.body));

  /** Waits while the hold keeps a stream that has sent `sent` content chunks; returns at once when the connection closes. */
  async function passHold(request: RecordedRequest<B>, res: ServerResponse, sent: number): Promise<void> {
    while (holdAfter !== undefined && sent >= holdAfter && !res.closed) {
      await new Promise<void>((resolve) => {
        const go = () => {
          res.off('close', go);
          atHold.delete(request);
          resolve();
        };
        atHold.set(request, go);
        res.on('close', go);
        heldWaiters.splice(0).forEach((waiter) => waiter(request));
      });
    }
  }

  /** Writes `frames` as server-sent events, pacing and holding the content chunks, recording each frame. */
  async function stream(request: RecordedRequest<B>, res: ServerResponse, reply: Exclude<StubAnswer, 'hang'>, frames: StreamFrame[], pace: Required<ChunkPace>): Promise<void> {
    request.streamed = true;
    res.writeHead(200, { ...reply.headers, 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    res.flushHeaders();
    let sent = 0;
    for (const frame of frames) {
      if (frame.content) {
        if (sent > 0) await pause(res, pace.delayMs);
        await passHold(request, res, sent);
      }
      if (res.closed) return;
      res.write(`${frame.event === undefined ? '' : `event: ${frame.event}\n`}data: ${frame.data}\n\n`);
      const at = preciseNow();
      request.frames.push({ at, event: frame.event, data: frame.data });
      if (frame.content) {
        request.chunks.push({ at, kind: frame.content.kind, text: frame.content.text });
        sent += 1;
      }
    }
    res.end();
  }

  const server = createServer({ noDelay: true }, (req, res) => {
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
      let ended!: (outcome: { aborted: boolean }) => void;
      const request: RecordedRequest<B> = {
        n: requests.length + 1,
        path: req.url,
        headers: req.headers,
        body,
        at: Date.now(),
        aborted: false,
        streamed: false,
        frames: [],
        chunks: [],
        ended: new Promise((resolve) => (ended = resolve)),
      };
      requests.push(request);
      open += 1;
      maxOpen = Math.max(maxOpen, open);
      res.on('close', () => {
        open -= 1;
        if (!res.writableEnded) request.aborted = true;
        hung.delete(res);
        ended({ aborted: request.aborted });
      });
      for (const waiter of waiters.filter((w) => w.n <= requests.length)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(requests[waiter.n - 1]!);
      }
      const failed = (error: unknown): Exclude<StubAnswer, 'hang'> => ({ status: 500, body: { error: { message: `the stand-in's answer failed: ${error instanceof Error ? error.message : String(error)}` } } });
      let answer: StubAnswer;
      try {
        answer = await route.answer(request);
      } catch (error) {
        answer = failed(error);
      }
      if (answer === 'hang') {
        hung.add(res);
        return;
      }
      let reply = answer;
      if (res.closed) return;
      if (reply.status === 200 && route.wantsStream(body)) {
        let frames: StreamFrame[] | undefined;
        const pace = { ...DEFAULT_PACE, ...route.chunk, ...reply.chunk };
        try {
          frames = route.streamOf(body, reply.body, pace);
        } catch (error) {
          reply = failed(error);
        }
        if (frames) {
          // A write that fails (the socket gone) ends the stream as a client's close would.
          stream(request, res, reply, frames, pace).catch(() => res.destroy());
          return;
        }
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
    hold(afterChunks = 0) {
      if (!Number.isInteger(afterChunks) || afterChunks < 0) throw new Error(`hold: afterChunks is a whole number ≥ 0, not ${afterChunks}`);
      holdAfter = afterChunks;
    },
    release() {
      holdAfter = undefined;
      for (const go of [...atHold.values()]) go();
    },
    held() {
      const waiting = atHold.keys().next();
      if (!waiting.done) return Promise.resolve(waiting.value);
      return new Promise((resolve) => heldWaiters.push(resolve));
    },
    async close() {
      for (const res of hung) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
