/**
 * The outbound side of A2A (contract §12, "A2A participants"): `@a2a-js/sdk`'s client for a
 * remote A2A agent of a team — its Agent Card read and checked (api/remote-a2a.ts
 * `checkAgentCard`), its JSON-RPC or HTTP+JSON binding (A2A 1.0, and 0.3 through the SDK's
 * compatibility layer), every request made through a fetch that
 *
 * - checks the URL against the rules of remote MCP servers' (§11, §9: service/outbound/url-guard.ts)
 *   at each request, the card's own interface URLs included, and connects only to the address
 *   checked (a guarded lookup), following no redirect;
 * - adds the agent's headers (secrets, opened by the caller for the request);
 * - turns an answer that says "not now" (408, 429, 5xx) into {@link RemoteUnavailable}.
 *
 * Errors are sorted into two kinds (`isTransient`): the remote is down, slow or cut off (retried
 * with backoff; the task stays `working`), or it answered what A2A does not allow (the task
 * fails with the reason). No error text holds a header value (`redactHeaders`).
 */
import { fetch as undiciFetch, Agent as Dispatcher } from 'undici';
import type { AgentCard } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory, RestTransportFactory, type Client } from '@a2a-js/sdk/client';
import { checkAgentCard, remoteCardUrl, type RemoteCardSummary } from '../../api/remote-a2a.ts';
import { ServiceError } from '../../errors/catalogue.ts';
import { assertDeliverableUrl, guardedLookup, type UrlPolicy } from '../outbound/url-guard.ts';
import { redactHeaders } from '../tools/remote-mcp.ts';

/** The remote agent cannot be reached now (a network error, a timeout, 408, 429 or 5xx): retried later. */
export class RemoteUnavailable extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RemoteUnavailable';
  }
}

/** The remote agent answered what A2A does not allow (not JSON, not A2A, a task of another id, a card that does not parse). */
export class RemoteNonsense extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RemoteNonsense';
  }
}

/** Error codes of the network and of undici that mean "try again later". */
const transientCode = /^(ECONNREFUSED|ECONNRESET|ECONNABORTED|EPIPE|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|EAI_AGAIN|UND_ERR_(SOCKET|CONNECT_TIMEOUT|HEADERS_TIMEOUT|BODY_TIMEOUT|CLOSED))/;

/**
 * Whether `error` means the remote is down, slow or cut off rather than wrong: a
 * {@link RemoteUnavailable}, an abort or timeout, or a network error (by its code or undici's
 * words for a cut connection), anywhere in its `cause` chain.
 */
export function isTransient(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e !== undefined && e !== null && depth < 6; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof RemoteUnavailable) return true;
    const { name, code, message } = e as { name?: string; code?: string; message?: string };
    if (name === 'AbortError' || name === 'TimeoutError') return true;
    if (typeof code === 'string' && transientCode.test(code)) return true;
    if (typeof message === 'string' && /^(fetch failed|terminated|other side closed)$/.test(message)) return true;
  }
  return false;
}

/** A remote agent as a request to it needs it: where, and its headers (opened secrets). */
export interface RemoteAgent {
  url: string;
  headers: Record<string, string>;
}

/** `error`'s message (with its cause's), without any header value of `remote`, at most 1,000 characters. */
export function remoteErrorText(error: unknown, remote: Pick<RemoteAgent, 'headers'>): string {
  const own = error instanceof Error ? error.message : String(error);
  const cause = error instanceof Error && error.cause instanceof Error && !own.includes(error.cause.message) ? ` (${error.cause.message})` : '';
  return redactHeaders(`${own}${cause}`, remote).slice(0, 1000);
}

const dispatchers = new Map<string, Dispatcher>();

/** One connection pool per URL policy; its lookup refuses non-public addresses unless the policy allows them. */
function dispatcherFor(policy: UrlPolicy): Dispatcher {
  const key = policy.allowPrivate ? 'private' : 'public';
  let pool = dispatchers.get(key);
  if (!pool) {
    pool = policy.allowPrivate ? new Dispatcher() : new Dispatcher({ connect: { lookup: guardedLookup(policy) as never } });
    dispatchers.set(key, pool);
  }
  return pool;
}

/**
 * A `fetch` for requests to `remote`: each URL checked (`webhook_url_refused` otherwise), the
 * agent's headers added (a request's own headers but those), no redirect followed, and 408, 429
 * and 5xx answers thrown as {@link RemoteUnavailable}. `signal` ends every request made with it.
 */
export function remoteFetch(remote: RemoteAgent, policy: UrlPolicy, signal?: AbortSignal): typeof fetch {
  return (async (input: string | URL | Request, init?: RequestInit) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.toString() : input.url;
    await assertDeliverableUrl(url, policy, { path: 'a2a.url', what: 'remote A2A agents' });
    const headers = new Headers(init?.headers);
    for (const [name, value] of Object.entries(remote.headers)) headers.set(name, value);
    const signals = [signal, init?.signal ?? undefined].filter((s): s is AbortSignal => s !== undefined);
    let response: Response;
    try {
      response = (await undiciFetch(url, {
        ...(init as object),
        headers,
        redirect: 'error',
        signal: signals.length > 0 ? AbortSignal.any(signals) : undefined,
        dispatcher: dispatcherFor(policy),
      } as never)) as unknown as Response;
    } catch (error) {
      if (isTransient(error)) throw error;
      // A redirect refused, a URL that cannot be fetched: the remote's address is wrong.
      throw new RemoteNonsense(`${url}: ${remoteErrorText(error, remote)}`);
    }
    if (response.status === 408 || response.status === 429 || response.status >= 500) {
      await response.body?.cancel().catch(() => {});
      throw new RemoteUnavailable(`${url} answered ${response.status} ${response.statusText}`.trim());
    }
    return response;
  }) as typeof fetch;
}

/** A remote agent's card: as the SDK reads it (for its client) and as checked (for what is shown). */
export interface RemoteCard {
  card: AgentCard;
  summary: RemoteCardSummary;
}

/**
 * Reads and checks the Agent Card of `remote` (contract §12: at `{url}/.well-known/agent-card.json`,
 * or `url` when it ends in `.json`). Output: {@link RemoteCard}. Errors: {@link RemoteUnavailable}
 * and network errors (the remote is down: {@link isTransient}), {@link RemoteNonsense} naming the
 * card's URL (an answer other than 200, not JSON, or not an Agent Card), `webhook_url_refused`
 * (`ServiceError`: the URL is not allowed).
 */
export async function fetchRemoteCard(remote: RemoteAgent, policy: UrlPolicy, signal?: AbortSignal): Promise<RemoteCard> {
  const cardUrl = remoteCardUrl(remote.url);
  const fetchImpl = remoteFetch(remote, policy, signal);
  const response = await fetchImpl(cardUrl, { headers: { accept: 'application/json', 'a2a-version': '1.0' } });
  if (!response.ok) {
    await response.body?.cancel().catch(() => {});
    throw new RemoteNonsense(`the Agent Card at ${cardUrl} cannot be read: the remote answered ${response.status}`);
  }
  const text = await response.text();
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new RemoteNonsense(`the Agent Card at ${cardUrl} does not parse: it is not JSON`);
  }
  const checked = checkAgentCard(raw);
  if (!checked.ok) throw new RemoteNonsense(`the Agent Card at ${cardUrl} does not parse: ${redactHeaders(checked.problem, remote).slice(0, 500)}`);
  const resolver = new DefaultAgentCardResolver({ fetchImpl, legacyCompat: { enabled: true } });
  try {
    return { card: resolver.normalizeAgentCard(raw), summary: checked.card };
  } catch (error) {
    throw new RemoteNonsense(`the Agent Card at ${cardUrl} does not parse: ${remoteErrorText(error, remote)}`);
  }
}

/**
 * `@a2a-js/sdk`'s client for the agent whose card is `card`, over its JSON-RPC or HTTP+JSON
 * interface (the card's order; A2A 0.3 interfaces through the SDK's compatibility layer), every
 * request through {@link remoteFetch}. Errors: {@link RemoteNonsense} (the card offers no binding
 * the client speaks).
 */
export async function remoteClient(card: AgentCard, remote: RemoteAgent, policy: UrlPolicy, signal?: AbortSignal): Promise<Client> {
  const fetchImpl = remoteFetch(remote, policy, signal);
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl, legacyCompat: { enabled: true } }), new RestTransportFactory({ fetchImpl, legacyCompat: { enabled: true } })],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl, legacyCompat: { enabled: true } }),
    }),
  );
  try {
    return await factory.createFromAgentCard(card);
  } catch (error) {
    throw new RemoteNonsense(`the Agent Card of ${remote.url} offers no interface acs-server speaks (JSON-RPC, HTTP+JSON): ${remoteErrorText(error, remote)}`);
  }
}

/** Whether `error` is the URL guard's refusal (`webhook_url_refused`): the remote's address is not allowed. */
export function isUrlRefusal(error: unknown): error is ServiceError {
  return error instanceof ServiceError && error.code === 'webhook_url_refused';
}
