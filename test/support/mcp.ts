/** MCP clients for tests and benchmarks: the official SDK's own Client over Streamable HTTP. */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

/**
 * Connects the SDK's `Client` to the MCP endpoint of the acs-server at `baseUrl` with `mcpKey`
 * in `x-api-key` (initialize included). Output: the connected client; close it when done.
 * Errors: rejects as the SDK does when the endpoint refuses (e.g. a 401 for a bad key).
 */
export async function connectMcp(baseUrl: string, mcpKey: string, path = '/api/v1/mcp'): Promise<Client> {
  const client = new Client({ name: 'teamctl-tests', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${baseUrl}${path}`), { requestInit: { headers: { 'x-api-key': mcpKey } } }));
  return client;
}

/** Calls a tool and returns its `structuredContent`. Errors: throws with the tool error's text when `isError` is set. */
export async function callTool<T = any>(client: Client, name: string, args: Record<string, unknown> = {}): Promise<T> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  if (result.isError) throw new Error(`${name}: tool error: ${textOf(result)}`);
  return result.structuredContent as T;
}

/** Calls a tool that must fail and returns the text of its tool error. Errors: throws when the call succeeded. */
export async function toolError(client: Client, name: string, args: Record<string, unknown> = {}): Promise<string> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  if (!result.isError) throw new Error(`${name}: expected a tool error, got ${JSON.stringify(result.structuredContent)}`);
  return textOf(result);
}

function textOf(result: CallToolResult): string {
  return result.content.map((part) => (part.type === 'text' ? part.text : `[${part.type}]`)).join('\n');
}
