/**
 * The console's only way to the service: `fetch` of the session-authenticated routes (contract
 * §10) with the session cookie (same origin) and, on every request that changes something, the
 * session's CSRF token. The organization API key never reaches the browser.
 */
import type { Me, MeEdge, MeThread, MeThreadPage, ToolCall, ToolCallList } from './types.ts';

/** A refused request: the problem document's code (contract §2) and its detail. */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  constructor(status: number, code: string, detail: string) {
    super(detail);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
  }
}

let csrfToken: string | undefined;
const sessionEndedListeners = new Set<() => void>();

/** Remembers the CSRF token of the session (from `GET /api/v1/me` or the operator's session). */
export function setCsrfToken(token: string | undefined): void {
  csrfToken = token;
}

/** Calls `listener` whenever the service says the session is gone (401): signed out elsewhere, expired, revoked. */
export function onSessionEnded(listener: () => void): () => void {
  sessionEndedListeners.add(listener);
  return () => sessionEndedListeners.delete(listener);
}

/**
 * One request. `body` is sent as JSON. Output: the parsed JSON answer.
 * Errors: {@link ApiError} with the problem's code; a 401 also tells the session listeners.
 */
export async function call<T>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<T> {
  const sent: Record<string, string> = { accept: 'application/json', ...headers };
  if (body !== undefined) sent['content-type'] = 'application/json';
  if (method !== 'GET' && csrfToken) sent['x-csrf-token'] = csrfToken;
  let response: Response;
  try {
    response = await fetch(path, { method, headers: sent, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'same-origin', cache: 'no-store' });
  } catch {
    throw new ApiError(0, 'network_error', 'The service cannot be reached. Check your connection; the console tries again.');
  }
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  if (!response.ok) {
    const problem = (parsed ?? {}) as { code?: string; detail?: string };
    if (response.status === 401) for (const listener of sessionEndedListeners) listener();
    throw new ApiError(response.status, problem.code ?? 'http_error', problem.detail ?? `${response.status} ${response.statusText}`);
  }
  return parsed as T;
}

const me = '/api/v1/me';

/** The routes the console uses, typed. */
export const api = {
  signInOptions: () => call<{ oidc: { issuer: string; start_url: string } | null; operators: boolean }>('GET', '/api/v1/sign-in/options'),
  me: () => call<Me>('GET', me),
  signOut: () => call<{ signed_out: true }>('POST', `${me}/sign-out`),
  threads: () => call<{ threads: MeThread[] }>('GET', `${me}/threads`),
  thread: (id: string, after?: string) => call<MeThreadPage>('GET', `${me}/threads/${encodeURIComponent(id)}?limit=200${after ? `&after=${encodeURIComponent(after)}` : ''}`),
  /** One page (500) of the tool calls of the agents' turns on one of the person's threads, oldest first, after the tool call `after`. */
  toolCalls: (id: string, after?: string) =>
    call<ToolCallList>('GET', `${me}/threads/${encodeURIComponent(id)}/tool-calls?limit=500${after ? `&after=${encodeURIComponent(after)}` : ''}`),
  markRead: (id: string, messageId?: string) => call<{ unread_count: number }>('POST', `${me}/threads/${encodeURIComponent(id)}/read`, messageId ? { message_id: messageId } : {}),
  reply: (id: string, content: string) => call<{ message_id: string }>('POST', `${me}/threads/${encodeURIComponent(id)}/messages`, { content }),
  /** Stops the reply being written in one of the person's threads (contract §13): the text so far is posted, marked stopped. */
  stop: (id: string) => call<import('./types.ts').StopResult>('POST', `${me}/threads/${encodeURIComponent(id)}/stop`, {}),
  edges: () => call<{ edges: MeEdge[] }>('GET', `${me}/edges`),
  openThread: (edgeId: string, subject: string, content: string) =>
    call<MeThread>('POST', `${me}/edges/${encodeURIComponent(edgeId)}/threads`, { ...(subject ? { subject } : {}), content }),
  team: (id: string) => call<import('./types.ts').TeamGraph>('GET', `${me}/teams/${encodeURIComponent(id)}`),
  agentKeys: (agentId: string) => call<{ mcp_keys: import('./types.ts').McpKey[] }>('GET', `${me}/agents/${encodeURIComponent(agentId)}/mcp-keys`),
  createAgentKey: (agentId: string) => call<import('./types.ts').CreatedMcpKey>('POST', `${me}/agents/${encodeURIComponent(agentId)}/mcp-keys`, {}),
  revokeAgentKey: (agentId: string, keyId: string) => call('DELETE', `${me}/agents/${encodeURIComponent(agentId)}/mcp-keys/${encodeURIComponent(keyId)}`),
  operatorSignIn: (token: string) => call<{ csrf_token: string }>('POST', '/admin/v1/sign-in', {}, { authorization: `Bearer ${token}` }),
  operatorSession: () => call<{ csrf_token: string }>('GET', '/admin/v1/session'),
  operatorSignOut: () => call('POST', '/admin/v1/sign-out'),
  accessRequests: (status: string) => call<{ access_requests: import('./types.ts').AccessRequest[] }>('GET', `/admin/v1/access-requests?status=${encodeURIComponent(status)}`),
  approve: (id: string) => call<{ api_key: string; organization: { org_id: string; org_name: string } }>('POST', `/admin/v1/access-requests/${encodeURIComponent(id)}/approve`),
  reject: (id: string, reason?: string) => call('POST', `/admin/v1/access-requests/${encodeURIComponent(id)}/reject`, reason ? { reason } : {}),
};

/**
 * Every tool call of the thread's turns after the tool call `after` (absent: from the first),
 * oldest first, page after page. Errors: {@link ApiError} (`not_found`, `invalid_cursor`).
 */
export async function allToolCalls(threadId: string, after?: string): Promise<ToolCall[]> {
  const all: ToolCall[] = [];
  let cursor = after;
  for (;;) {
    const page = await api.toolCalls(threadId, cursor);
    all.push(...page.tool_calls);
    if (page.tool_calls.length < 500 || page.next_after === null) return all;
    cursor = page.next_after;
  }
}
