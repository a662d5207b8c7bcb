/**
 * Fair sharing of one process's request handling among its clients (issue 21), after Kubernetes'
 * API Priority and Fairness: at most `concurrency` requests are in progress at once; past that,
 * each client (its bucket: organization key, agent, or address; http/client-bucket.ts) waits in a
 * queue of its own, and the queues are served in turn, one request each.
 *
 * Why: on a few cores, a client that sends a hundred requests at once (or spends its whole
 * rate-limit budget in the first seconds of each window) filled the server, and every other
 * tenant's requests queued behind its hundred: the soak's unrelated GET took 150–700 ms for
 * seconds after each window began. With turns, that GET waits at most one request of each other
 * waiting client for its place, and then shares the server with `concurrency` requests at most.
 * While nobody waits, nothing is held back: one client alone may use every place.
 *
 * A request about to hold a wait (long poll, MCP wait, event stream) gives its place back
 * (domain/request-turn.ts), so waits never take places. `/healthz` and `/readyz` take none either.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ServiceError } from '../../errors/catalogue.ts';
import { requestTurn, type RequestTurn } from '../domain/request-turn.ts';
import type { ClientResolver } from './client-bucket.ts';

/** The bounds of fair sharing; counts of requests. */
export interface FairShareOptions {
  /** Requests in progress at once in the process (default 16). */
  concurrency: number;
  /** Requests of one client waiting for a place at once; one more is 429 `too_many_requests_queued` (default 256). */
  queuePerClient: number;
}

/**
 * Defaults of {@link FairShareOptions}: 16 places keep a PostgreSQL pool of 10 connections and two
 * cores busy (more only lengthens every request's wait inside the process); 256 queued requests
 * of one client is more than one address may hold connections for (128 by default).
 */
export const defaultFairShare: FairShareOptions = { concurrency: 16, queuePerClient: 256 };

/** Seconds a client refused for queuing too much is told to wait (`Retry-After`). */
export const queuedRetryAfterSeconds = 1;

/** The places of one process and the queues of the clients waiting for one. */
export interface FairQueue {
  /**
   * A place for a request of `client`: at once when one is free and nobody waits, otherwise when
   * the client's turn comes (queues are served in turn, each in arrival order).
   * Output: the place (its `release` is idempotent; releasing gives the place to the next turn).
   * Errors: `too_many_requests_queued` (429) when `client` already has `queuePerClient` requests
   * waiting (nothing is queued then); `unavailable` (503) when `signal` aborts while it waits (the
   * request went away; it leaves the queue).
   */
  enter(client: string, signal?: AbortSignal): RequestTurn | Promise<RequestTurn>;
  /** A place for `client` when one is free and nobody waits (as {@link enter} gives it at once), else undefined: nothing is queued. */
  tryEnter(client: string): RequestTurn | undefined;
  /** Requests in progress and waiting now, and how many clients wait. */
  stats(): { inProgress: number; queued: number; clientsWaiting: number };
  readonly options: FairShareOptions;
}

interface Waiter {
  resolve(turn: RequestTurn): void;
}

/** Creates the fair queue of one process with `options` (default {@link defaultFairShare}). */
export function createFairQueue(options: FairShareOptions = defaultFairShare): FairQueue {
  let inProgress = 0;
  let queued = 0;
  // Clients with requests waiting, in the order their turns come: a Map keeps insertion order, and
  // a client served moves to the end when it still has requests waiting.
  const waiting = new Map<string, Waiter[]>();

  const place = (): RequestTurn => {
    let released = false;
    return {
      release() {
        if (released) return;
        released = true;
        inProgress -= 1;
        dispatch();
      },
    };
  };

  function dispatch(): void {
    while (inProgress < options.concurrency) {
      const next = waiting.entries().next();
      if (next.done) return;
      const [client, queue] = next.value;
      const waiter = queue.shift()!;
      waiting.delete(client);
      if (queue.length > 0) waiting.set(client, queue);
      queued -= 1;
      inProgress += 1;
      waiter.resolve(place());
    }
  }

  const tryEnter = (): RequestTurn | undefined => {
    if (inProgress >= options.concurrency || waiting.size > 0) return undefined;
    inProgress += 1;
    return place();
  };

  return {
    options,
    tryEnter,
    enter(client, signal) {
      const now = tryEnter();
      if (now) return now;
      const queue = waiting.get(client) ?? [];
      if (queue.length >= options.queuePerClient) {
        throw new ServiceError(
          'too_many_requests_queued',
          `this client already has ${queue.length} requests waiting for their turn (at most ${options.queuePerClient}); send fewer at once`,
        );
      }
      return new Promise<RequestTurn>((resolve, reject) => {
        const waiter: Waiter = {
          resolve(turn) {
            signal?.removeEventListener('abort', leave);
            resolve(turn);
          },
        };
        const leave = () => {
          const mine = waiting.get(client);
          const at = mine?.indexOf(waiter) ?? -1;
          if (at < 0) return;
          mine!.splice(at, 1);
          if (mine!.length === 0) waiting.delete(client);
          queued -= 1;
          reject(new ServiceError('unavailable', 'the client went away while its request waited for its turn'));
        };
        queue.push(waiter);
        if (queue.length === 1) waiting.set(client, queue);
        queued += 1;
        signal?.addEventListener('abort', leave, { once: true });
      });
    },
    stats: () => ({ inProgress, queued, clientsWaiting: waiting.size }),
  };
}

/** Paths that never wait for a place: a health check must say how the process is, not queue. */
const exempt = new Set(['/healthz', '/readyz']);

/**
 * Installs fair sharing on `app`: a `preValidation` hook that takes a place of `queue` for the
 * request's client (`clientOf`) and gives it back when the response ends or the connection
 * closes, and each route's handler run with its place as the current {@link requestTurn}. The
 * place is taken once the request has arrived whole (its body read): a client that trickles a body
 * byte by byte holds a connection (bounded by the request timeout), never a place. Requests the
 * rate limit refused never take one. Call it before any other `preValidation` hook and route.
 * Errors (answered by the app's error handler, with `Retry-After`): `too_many_requests_queued` (429).
 */
export function installFairShare(app: FastifyInstance, clientOf: ClientResolver, queue: FairQueue): void {
  const turns = new WeakMap<FastifyRequest, RequestTurn>();
  app.addHook('onRoute', (route) => {
    const handler = route.handler;
    route.handler = function (this: FastifyInstance, request: FastifyRequest, reply: FastifyReply) {
      const turn = turns.get(request);
      return turn ? requestTurn.run(turn, () => handler.call(this, request, reply)) : handler.call(this, request, reply);
    };
  });
  // A callback hook, and a place taken without a promise when one is free: this runs for every
  // request, and an async hook's promises cost an append ~4% of its rate.
  app.addHook('preValidation', (request, reply, done) => {
    // A connection that closed before this hook ran (a client that gave up while the request was
    // read or rate-limited) will emit no 'close' to give a place back: it takes none.
    if (exempt.has(request.routeOptions.url ?? '') || reply.raw.destroyed || request.raw.socket?.destroyed !== false) return done();
    let turn: RequestTurn | undefined;
    let closed = false;
    let gone: AbortController | undefined;
    reply.raw.once('close', () => {
      closed = true;
      gone?.abort();
      turn?.release();
    });
    const hold = (place: RequestTurn) => {
      // The connection closed while the place was being handed over.
      if (closed) return place.release();
      turn = place;
      turns.set(request, place);
    };
    const admit = (client: string) => {
      if (closed) return done();
      const now = queue.tryEnter(client);
      if (now) {
        hold(now);
        return done();
      }
      gone = new AbortController();
      let waiting: RequestTurn | Promise<RequestTurn>;
      try {
        waiting = queue.enter(client, gone.signal);
      } catch (error) {
        return done(error as Error);
      }
      Promise.resolve(waiting).then((place) => {
        // Admitted: the close need not abort anything (an abort builds a DOMException, with a
        // stack trace, for every queued request; ~3% of the server's CPU at 32 clients).
        gone = undefined;
        hold(place);
        done();
      }, done);
    };
    const known = clientOf.known(request);
    if (known !== undefined) admit(known);
    else clientOf(request).then(admit, done);
  });
}
