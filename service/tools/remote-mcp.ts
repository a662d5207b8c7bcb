/**
 * Remote MCP servers an agent may call (contract §11), through the official MCP SDK's client over
 * Streamable HTTP — no hand-written JSON-RPC. Every connection follows the rules of webhook URLs
 * (contract §9): the URL is checked before connecting, and the connection itself resolves names
 * through a lookup that refuses non-public addresses (DNS rebinding reaches nothing inside), with
 * redirects only within the origin. The server's header values (secrets) go on the requests only;
 * no error or log line carries them.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Agent, fetch as undiciFetch } from 'undici';
import { maxToolResultBytes } from '../../api/agent-tools.ts';
import { assertDeliverableUrl, guardedLookup, type UrlPolicy } from '../outbound/url-guard.ts';

/** A remote server as a turn uses it: its name among the agent's servers, URL, header values and allowed tools. */
export interface RemoteServerConfig {
  name: string;
  url: string;
  headers: Record<string, string>;
  /** The tools the agent may call; null: every tool the server lists. */
  allow: readonly string[] | null;
}

/** A tool a remote server lists (and the agent may call). */
export interface RemoteTool {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

/** A connected remote server. */
export interface RemoteServer {
  name: string;
  tools: RemoteTool[];
  /**
   * Calls one of its tools with `args`, aborted after `timeoutMs` or by `signal`. Output: the
   * result as MCP gives it (`content`, and `structuredContent` when the server sends one).
   * Errors: {@link RemoteToolError} (`tool_failed`: the server answered with `isError`, or failed;
   * `tool_timeout`).
   */
  call(tool: string, args: Record<string, unknown>, timeoutMs: number, signal: AbortSignal): Promise<Record<string, unknown>>;
  close(): Promise<void>;
}

/** A remote tool that failed: `code` is `tool_failed` or `tool_timeout`; the message never holds a header value. */
export class RemoteToolError extends Error {
  readonly code: 'tool_failed' | 'tool_timeout';
  constructor(code: 'tool_failed' | 'tool_timeout', message: string) {
    super(message);
    this.name = 'RemoteToolError';
    this.code = code;
  }
}

/** `text` with every header value of `config` replaced, so an error that echoes a request says nothing secret. */
export function redactHeaders(text: string, config: Pick<RemoteServerConfig, 'headers'>): string {
  let out = text;
  for (const value of Object.values(config.headers)) {
    if (value.length >= 4) out = out.split(value).join('[redacted]');
    // A bearer token also appears without its scheme.
    const token = /^\s*\S+\s+(\S{4,})\s*$/.exec(value)?.[1];
    if (token) out = out.split(token).join('[redacted]');
  }
  return out;
}

const dispatchers = new Map<string, Agent>();

/** One connection pool per URL policy: its lookup refuses non-public addresses unless the policy allows them. */
function dispatcherFor(policy: UrlPolicy): Agent {
  const key = policy.allowPrivate ? 'private' : 'public';
  let agent = dispatchers.get(key);
  if (!agent) {
    agent = policy.allowPrivate ? new Agent() : new Agent({ connect: { lookup: guardedLookup(policy) as never } });
    dispatchers.set(key, agent);
  }
  return agent;
}

/** The text of a tool result's content, for an error's message. */
function contentText(content: unknown): string {
  if (!Array.isArray(content)) return '';
  return content
    .map((part: { type?: string; text?: string }) => (part?.type === 'text' && typeof part.text === 'string' ? part.text : ''))
    .join(' ')
    .trim();
}

/**
 * Connects to a remote MCP server and lists its tools (those `allow` names, or all), within
 * `timeoutMs`. Input: the server, the URL policy of the deployment, and `signal`. Output: a
 * {@link RemoteServer}, to be closed by the caller. Errors: `webhook_url_refused` (a `ServiceError`:
 * the URL is not allowed), {@link RemoteToolError} `tool_failed` (the server cannot be reached or
 * does not speak MCP; the message names the server and why, never a header value).
 */
export async function connectRemoteServer(config: RemoteServerConfig, policy: UrlPolicy, timeoutMs: number, signal: AbortSignal): Promise<RemoteServer> {
  await assertDeliverableUrl(config.url, policy, { path: `tools.mcp.${config.name}.url`, what: 'remote MCP servers' });
  const dispatcher = dispatcherFor(policy);
  const transport = new StreamableHTTPClientTransport(new URL(config.url), {
    requestInit: { headers: config.headers, redirect: 'error' },
    fetch: (url, init) => undiciFetch(url as string, { ...(init as object), dispatcher } as never) as unknown as Promise<Response>,
  });
  const client = new Client({ name: 'acs-server', version: '1.0.0' }, { capabilities: {} });
  const fail = (what: string, error: unknown) =>
    new RemoteToolError('tool_failed', redactHeaders(`${config.name}: ${what}: ${error instanceof Error ? error.message : String(error)}`, config).slice(0, 1000));
  try {
    await client.connect(transport, { signal, timeout: timeoutMs });
  } catch (error) {
    await client.close().catch(() => {});
    throw fail('could not connect', error);
  }
  let listed: RemoteTool[];
  try {
    const tools: RemoteTool[] = [];
    let cursor: string | undefined;
    // Servers page their tools; a bounded number of pages keeps a hostile one from holding the turn.
    for (let page = 0; page < 20; page += 1) {
      const result = await client.listTools(cursor ? { cursor } : {}, { signal, timeout: timeoutMs });
      for (const t of result.tools) tools.push({ name: t.name, description: t.description ?? t.title ?? '', inputSchema: t.inputSchema as Record<string, unknown> });
      cursor = result.nextCursor;
      if (!cursor) break;
    }
    listed = config.allow === null ? tools : tools.filter((t) => config.allow!.includes(t.name));
  } catch (error) {
    await client.close().catch(() => {});
    throw fail('could not list its tools', error);
  }
  return {
    name: config.name,
    tools: listed,
    async call(tool, args, callTimeoutMs, callSignal) {
      let result;
      try {
        result = await client.callTool({ name: tool, arguments: args }, undefined, { signal: callSignal, timeout: callTimeoutMs });
      } catch (error) {
        const timedOut = (error as { code?: unknown }).code === -32001 || /timed? ?out/i.test(String((error as Error).message));
        if (timedOut) throw new RemoteToolError('tool_timeout', `${config.name}.${tool} took longer than ${Math.round(callTimeoutMs / 1000)} s`);
        throw fail(`${tool} failed`, error);
      }
      if (result.isError) throw new RemoteToolError('tool_failed', redactHeaders(`${config.name}.${tool}: ${contentText(result.content) || 'the tool reported an error'}`, config).slice(0, 2000));
      const { content, structuredContent } = result as { content?: unknown; structuredContent?: unknown };
      return { content: content ?? [], ...(structuredContent !== undefined ? { structuredContent } : {}) };
    },
    async close() {
      await client.close().catch(() => {});
    },
  };
}

/**
 * A result as a tool call record keeps it (contract §11): as it is up to 64 KiB of JSON, else
 * `{truncated: true, bytes, text}` with its JSON's first 64 KiB as text, so the record and what
 * the model is given say it was cut.
 */
export function boundedResult(value: unknown): unknown {
  const json = JSON.stringify(value ?? null);
  const bytes = Buffer.byteLength(json, 'utf8');
  if (bytes <= maxToolResultBytes) return value ?? null;
  const text = Buffer.from(json, 'utf8').subarray(0, maxToolResultBytes).toString('utf8').replace(/\uFFFD$/, '');
  return { truncated: true, bytes, text };
}
