import { createParser, type EventSourceMessage } from 'eventsource-parser';

/** An open Server-Sent Events stream as tests read it. */
export interface OpenStream {
  status: number;
  headers: Headers;
  /** Every event received so far, in order. */
  events: EventSourceMessage[];
  /** Every comment line received so far (without the colon). */
  comments: string[];
  /** Resolves once `count` events were received (all of them); rejects after `timeoutMs` (default 20 s). */
  waitForEvents(count: number, timeoutMs?: number): Promise<EventSourceMessage[]>;
  /** Resolves once `count` comments were received; rejects after `timeoutMs`. */
  waitForComments(count: number, timeoutMs?: number): Promise<string[]>;
  /** Resolves when the server ended the stream. */
  ended: Promise<void>;
  close(): void;
}

/** Opens `url` with `headers` and parses its body as an event stream, in the background. */
export async function openStream(url: string, headers: Record<string, string>): Promise<OpenStream> {
  const controller = new AbortController();
  const response = await fetch(url, { headers, signal: controller.signal });
  const events: EventSourceMessage[] = [];
  const comments: string[] = [];
  const waiters = new Set<() => void>();
  const changed = () => {
    for (const waiter of waiters) waiter();
  };
  const parser = createParser({
    onEvent: (event) => {
      events.push(event);
      changed();
    },
    onComment: (comment) => {
      comments.push(comment.trim());
      changed();
    },
  });
  let done!: () => void;
  const ended = new Promise<void>((resolve) => (done = resolve));
  void (async () => {
    try {
      const decoder = new TextDecoder();
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) parser.feed(decoder.decode(chunk, { stream: true }));
    } catch {
      // closed by us or by the server
    } finally {
      done();
      changed();
    }
  })();
  const waitFor = <T>(ready: () => T | undefined, what: string, timeoutMs: number) =>
    new Promise<T>((resolve, reject) => {
      const check = () => {
        const value = ready();
        if (value === undefined) return;
        waiters.delete(check);
        clearTimeout(timer);
        resolve(value);
      };
      const timer = setTimeout(() => {
        waiters.delete(check);
        reject(new Error(`stream: ${what} did not come within ${timeoutMs} ms (events: ${events.map((e) => e.id).join(',')}; comments: ${comments.length})`));
      }, timeoutMs);
      waiters.add(check);
      check();
    });
  return {
    status: response.status,
    headers: response.headers,
    events,
    comments,
    waitForEvents: (count, timeoutMs = 20_000) => waitFor(() => (events.length >= count ? events.slice() : undefined), `${count} events`, timeoutMs),
    waitForComments: (count, timeoutMs = 20_000) => waitFor(() => (comments.length >= count ? comments.slice() : undefined), `${count} comments`, timeoutMs),
    ended,
    close: () => controller.abort(),
  };
}
