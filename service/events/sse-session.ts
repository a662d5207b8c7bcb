/**
 * The skeleton shared by the service's Server-Sent Events streams (an organization's events,
 * events/stream.ts; a thread's items, events/thread-stream.ts): writes that stop once the stream
 * ended, a keep-alive comment, the close of a reader that reads too slowly (it resumes from its
 * last id), live items held back while the stream catches up from storage and sent after, and
 * one end whatever ends it (the client went away, the server stops, a read failed).
 */
import type { ServerResponse } from 'node:http';

/** Longest silence on a stream before a keep-alive comment, in milliseconds (contract §9: at most 15 s). */
export const defaultKeepAliveMs = 15_000;

/** Bytes a slow reader may leave unread before its stream is closed (it resumes with `Last-Event-ID`). */
export const defaultMaxBufferedBytes = 4 * 1024 * 1024;

/** How a session runs. */
export interface SseSessionOptions<T> {
  /** Ends the stream (the server stops). */
  signal: AbortSignal;
  /** Keep-alive period in milliseconds (default {@link defaultKeepAliveMs}). */
  keepAliveMs?: number | undefined;
  /** Bytes left unread past which the stream is closed (default {@link defaultMaxBufferedBytes}). */
  maxBufferedBytes?: number | undefined;
  /**
   * The frame of a live item, or undefined to send nothing (already sent, or filtered out); called
   * in order for every item {@link SseSession.send} or {@link SseSession.deliver} is given, even
   * once the stream ended (its writes are then dropped), so that it may keep its position.
   */
  frame: (item: T) => string | undefined;
}

/** The open stream, as {@link sseSession}'s `start` uses it. */
export interface SseSession<T> {
  /** Whether the stream ended (nothing more is written; `start` should stop reading). */
  readonly ended: boolean;
  /** Writes `text` (whole SSE frames or comments); ends the stream when the reader lags too far behind. */
  write(text: string): void;
  /** Writes an item's frame ({@link SseSessionOptions.frame}). */
  send(item: T): void;
  /** Live items from the hub or a follower: held while `start` runs (the catch-up), sent in order after. */
  deliver(items: readonly T[]): void;
  /** Runs `cleanup` when the session is over (an unsubscribe), before the response ends. */
  defer(cleanup: () => void): void;
}

/**
 * The state of one stream. A class rather than closures: an idle open stream is what a process
 * holds by the thousand, and methods on a prototype cost nothing per stream.
 */
class Session<T> implements SseSession<T> {
  ended = false;
  /** Resolves once the stream ended. */
  readonly finished: Promise<void>;
  /** Ends the stream (idempotent); the listener of the response's `close` and of the signal. */
  readonly end: () => void;
  #catchingUp = true;
  readonly #held: T[] = [];
  #cleanup: (() => void) | undefined;
  readonly #res: ServerResponse;
  readonly #options: SseSessionOptions<T>;

  constructor(res: ServerResponse, options: SseSessionOptions<T>) {
    this.#res = res;
    this.#options = options;
    let finish: () => void = () => {};
    this.finished = new Promise<void>((resolve) => (finish = resolve));
    const keepAlive = setInterval(() => this.write(': keep-alive\n\n'), options.keepAliveMs ?? defaultKeepAliveMs);
    this.end = () => {
      if (this.ended) return;
      this.ended = true;
      clearInterval(keepAlive);
      options.signal.removeEventListener('abort', this.end);
      if (!res.writableEnded) res.end();
      finish();
    };
    res.once('close', this.end);
    options.signal.addEventListener('abort', this.end, { once: true });
    if (options.signal.aborted) this.end();
  }

  write(text: string): void {
    if (this.ended) return;
    this.#res.write(text);
    if (this.#res.writableLength > (this.#options.maxBufferedBytes ?? defaultMaxBufferedBytes)) this.end();
  }

  send(item: T): void {
    const frame = this.#options.frame(item);
    if (frame !== undefined) this.write(frame);
  }

  deliver(items: readonly T[]): void {
    if (this.#catchingUp) this.#held.push(...items);
    else for (const item of items) this.send(item);
  }

  defer(cleanup: () => void): void {
    const before = this.#cleanup;
    this.#cleanup = before === undefined ? cleanup : () => (before(), cleanup());
  }

  /** Sends what was held during the catch-up; from then on live items go out at once. */
  caughtUp(): void {
    this.#catchingUp = false;
    for (const item of this.#held.splice(0)) this.send(item);
  }

  /** Runs the deferred cleanups (once). */
  cleanUp(): void {
    const cleanup = this.#cleanup;
    this.#cleanup = undefined;
    cleanup?.();
  }
}

/**
 * Runs one SSE stream on `res`, whose status and headers the caller wrote (200,
 * `text/event-stream`): `start` subscribes to what is live (handing it to `session.deliver`),
 * writes the opening comment and catches up from storage; then what was delivered meanwhile is
 * sent, and live items go out as they are delivered until the stream ends. Resolves when it ends:
 * the client went away, `signal` aborted, the client read too slowly (more than
 * `maxBufferedBytes` left unread: closed, to be resumed), or `start` failed (the stream is
 * closed; a client resumes from its last id). Never rejects.
 *
 * `start` is a function of its own on purpose: a suspended async function keeps its registers, so
 * a catch-up done inline before the wait for the end would keep its last page alive as long as
 * the stream (bench/streams.ts, "memory per open stream").
 */
export async function sseSession<T>(res: ServerResponse, options: SseSessionOptions<T>, start: (session: SseSession<T>) => Promise<void>): Promise<void> {
  const session = new Session(res, options);
  try {
    await start(session);
    if (session.ended) return;
    session.caughtUp();
    await session.finished;
  } catch {
    session.end();
  } finally {
    session.cleanUp();
    session.end();
  }
}
