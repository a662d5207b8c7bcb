/**
 * Where an agent answers as an A2A agent (contract §12), and what an A2A client needs to call it:
 * the URLs both the service (service/a2a/) and `teamctl a2a card` (cli/commands/a2a.ts) use, and
 * the client snippets the command prints. No I/O, no Node API.
 */

/** The path under the server's public URL where every agent answers: `/a2a/v1/agents/{agent_id}` (contract §12). */
export const a2aAgentsPath = '/a2a/v1/agents';

/** The path of an agent's card, relative to its A2A URL (A2A v1.0 §8.2, the well-known URI). */
export const agentCardPath = '.well-known/agent-card.json';

/** The environment variable the snippets read the caller's MCP key from (never a literal in them). */
export const A2A_KEY_VARIABLE = 'ACS_MCP_KEY';

/** The A2A URL of an agent: `{baseUrl}/a2a/v1/agents/{agent_id}`, without a trailing slash. */
export function agentA2aUrl(baseUrl: string, agentId: string): string {
  return `${baseUrl.replace(/\/+$/, '')}${a2aAgentsPath}/${agentId}`;
}

/** The URL of an agent's card: its A2A URL plus `/.well-known/agent-card.json`. */
export function agentCardUrl(baseUrl: string, agentId: string): string {
  return `${agentA2aUrl(baseUrl, agentId)}/${agentCardPath}`;
}

/** The client snippets `teamctl a2a card` prints. */
export const A2aSnippetLanguages = { python: 'python', js: 'js' } as const;
export type A2aSnippetLanguage = keyof typeof A2aSnippetLanguages;

/**
 * A short program that reads the agent's card and sends it one message with the official A2A SDK
 * of `language`, authenticating with the MCP key of a calling agent read from {@link
 * A2A_KEY_VARIABLE} (`x-api-key`, the scheme the card declares), and prints the task it gets:
 *
 * - `python`: PyPI's `a2a-sdk` 1.x (`pip install a2a-sdk httpx`): an httpx client carrying the
 *   header, `A2ACardResolver`, `ClientFactory`, a blocking `send_message`.
 * - `js`: npm's `@a2a-js/sdk` 1.x, as an ES module for Node (`node call.mjs`): `ClientFactory`
 *   with a card resolver and a JSON-RPC transport whose `fetchImpl` adds the header.
 *
 * Output: the program's text (it holds no secret).
 */
export function renderA2aSnippet(language: A2aSnippetLanguage, agentUrl: string): string {
  const cardUrl = `${agentUrl}/${agentCardPath}`;
  if (language === 'python') {
    return `# pip install 'a2a-sdk>=1.0,<2' httpx
import asyncio, os
import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.helpers import new_text_message
from a2a.types import Role, SendMessageRequest

AGENT_URL = ${JSON.stringify(agentUrl)}

async def main():
    # The MCP key of an agent on an edge with this one.
    headers = {"x-api-key": os.environ[${JSON.stringify(A2A_KEY_VARIABLE)}]}
    async with httpx.AsyncClient(headers=headers, timeout=120) as http:
        card = await A2ACardResolver(http, AGENT_URL).get_agent_card()
        client = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(card)
        request = SendMessageRequest(message=new_text_message("Hello", role=Role.ROLE_USER))
        async for event in client.send_message(request):
            print(event)

asyncio.run(main())
`;
  }
  return `// npm install @a2a-js/sdk   (then: node call.mjs)
import { Role } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory } from '@a2a-js/sdk/client';

const cardUrl = ${JSON.stringify(cardUrl)};
// The MCP key of an agent on an edge with this one.
const withKey = (input, init) => {
  const headers = new Headers(init?.headers);
  headers.set('x-api-key', process.env.${A2A_KEY_VARIABLE});
  return fetch(input, { ...init, headers });
};
const factory = new ClientFactory(
  ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    cardResolver: new DefaultAgentCardResolver({ fetchImpl: withKey }),
    transports: [new JsonRpcTransportFactory({ fetchImpl: withKey })],
  }),
);
const client = await factory.createFromUrl(cardUrl, '');
const task = await client.sendMessage({
  tenant: '',
  message: {
    messageId: crypto.randomUUID(), contextId: '', taskId: '', role: Role.ROLE_USER,
    parts: [{ content: { $case: 'text', value: 'Hello' }, mediaType: 'text/plain', filename: '', metadata: undefined }],
    metadata: undefined, extensions: [], referenceTaskIds: [],
  },
  configuration: undefined,
  metadata: undefined,
});
console.log(JSON.stringify(task, null, 2));
`;
}
