/**
 * `fetch` wrappers for tests of the toolkit against a real server: they count what was sent and
 * simulate a process that dies mid-apply. They wrap the real `fetch`; the server is real.
 */

/** Whether a request changes state on the service. */
export function isMutating(init?: RequestInit): boolean {
  return (init?.method ?? 'GET').toUpperCase() !== 'GET';
}

/** A `fetch` that records the method and path of every request. */
export function recordingFetch(): { fetch: typeof fetch; requests: string[]; mutations: () => string[] } {
  const requests: string[] = [];
  const wrapped: typeof fetch = async (input, init) => {
    requests.push(`${(init?.method ?? 'GET').toUpperCase()} ${new URL(String(input)).pathname}`);
    return fetch(input, init);
  };
  return { fetch: wrapped, requests, mutations: () => requests.filter((r) => !r.startsWith('GET ')) };
}

/**
 * A `fetch` of a process that dies right after its `k`-th mutating request (or, with `method`,
 * its `k`-th request of that method) took effect on the server: that response and every later one
 * are lost, and no further request is sent. `inner` sends the requests (default the real `fetch`;
 * a recording one counts them).
 */
export function dyingFetch(k: number, options: { method?: string; inner?: typeof fetch } = {}): typeof fetch {
  const send = options.inner ?? fetch;
  const counts = (init?: RequestInit) => (options.method ? (init?.method ?? 'GET').toUpperCase() === options.method : isMutating(init));
  let seen = 0;
  let dead = false;
  return async (input, init) => {
    if (dead) throw new TypeError('fetch failed (process killed)');
    const response = await send(input, init);
    if (counts(init) && ++seen >= k) dead = true;
    if (dead) throw new TypeError('fetch failed (process killed)');
    return response;
  };
}
