/**
 * What the A2A tests share (contract §12): a live acs-server with the OpenAI stand-in scripting its
 * provider agents, one team whose agents an external agent (`caller`, with an MCP key) calls over
 * A2A — an echo agent, a provider agent that replies, one that asks the caller back, one that asks
 * a person and waits — an agent of the same team on no edge with the caller, and an agent of
 * another team with a key of its own; and clients of `@a2a-js/sdk` that send a key.
 */
import { Role, type Message, type SendMessageRequest } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory, RestTransportFactory, type Client } from '@a2a-js/sdk/client';
import { expect } from 'vitest';
import { agentA2aUrl, agentCardUrl } from '../../api/a2a.ts';
import { callTool, paced, type Conversation, type ScriptReply } from '../support/model-script.ts';
import { scriptedToolCompletions, startOpenAiStub, type OpenAiStub } from '../support/openai-stub.ts';
import type { ServerOptions } from '../../service/index.ts';
import { startHarness, type Harness } from '../service/helpers.ts';
import { askAnswer, makeTeam, type BuiltTeam } from '../service/turn-helpers.ts';

/** The stand-in's moves, by the first word of an agent's instructions. */
function script(c: Conversation): ScriptReply {
  const key = (c.system ?? '').split(/\s/)[0];
  // Word by word, slower than the service's 50 ms batching of deltas: a stream shows each word.
  // A request that starts with "slowly" is written at 400 ms a word, for a stream joined mid-reply.
  if (key === 'WRITER') return paced(`Draft for: ${c.lastUserText}`, { size: 'word', delayMs: (c.lastUserText ?? '').startsWith('slowly') ? 400 : 80 });
  if (key === 'QUESTIONER') {
    const answer = askAnswer(c.resultOf('ask'));
    return answer ? `Painted it ${answer.content}` : callTool('ask', { peer: 'caller', content: 'Which colour?' });
  }
  if (key === 'ASKER') {
    const answer = askAnswer(c.resultOf('ask'));
    return answer ? `Dana said ${answer.content}` : callTool('ask', { peer: 'dana', content: `May I do this: ${c.lastUserText}?` });
  }
  return undefined;
}

/** The live server and the team the A2A tests call. */
export interface A2aWorld {
  h: Harness;
  openai: OpenAiStub;
  team: BuiltTeam;
  /** The MCP key of `caller` (external, on an edge with echo, writer, questioner and asker). */
  callerKey: string;
  /** The MCP key of `outsider`, an agent of another team of the same organization. */
  outsiderKey: string;
  /** The id of `outsider`. */
  outsiderId: string;
  /** The A2A URL of an agent of the team, by name. */
  url(name: string): string;
  /** The card URL of an agent of the team, by name. */
  cardUrl(name: string): string;
  close(): Promise<void>;
}

/** Starts the server (with `options`) and the stand-in and builds the team (each request expected to succeed). */
export async function startA2aWorld(options: Omit<ServerOptions, 'env'> = {}): Promise<A2aWorld> {
  const openai = await startOpenAiStub(scriptedToolCompletions(script));
  const h = await startHarness({ inMemory: true, ...options, env: { ...process.env, OPENAI_BASE_URL: `${openai.origin}/v1` } });
  for (const provider of ['openai', 'echo']) {
    expect((await h.call('PUT', `/api/v1/organizations/${h.orgId}/api-keys/${provider}`, { api_key: `${provider}-key` })).status).toBe(200);
  }
  const provider = (name: string, key: string, tools = false) => ({ name, provider: 'openai', model: 'gpt-stub', instructions: `${key} — scripted\nsecond line`, ...(tools ? { tools: { team: true } } : {}) });
  const team = await makeTeam(h, {
    humans: ['dana'],
    agents: [
      { name: 'caller' },
      { name: 'echo', provider: 'echo', instructions: 'Repeats what it is told.\nNothing more.' },
      provider('writer', 'WRITER'),
      provider('questioner', 'QUESTIONER', true),
      provider('asker', 'ASKER', true),
      { name: 'stranger', provider: 'echo' },
    ],
    edges: [
      ['caller', 'echo'],
      ['caller', 'writer'],
      ['caller', 'questioner'],
      ['caller', 'asker'],
      ['asker', 'dana'],
      ['stranger', 'echo'],
    ],
  });
  const key = async (agentId: string) => {
    const created = await h.call('POST', `/api/v1/agents/${agentId}/mcp-keys`, {});
    expect(created.status).toBe(201);
    return created.body.mcp_key as string;
  };
  const other = await makeTeam(h, { agents: [{ name: 'outsider' }, { name: 'peer', provider: 'echo' }], edges: [['outsider', 'peer']] });
  return {
    h,
    openai,
    team,
    callerKey: await key(team.id.caller!),
    outsiderKey: await key(other.id.outsider!),
    outsiderId: other.id.outsider!,
    url: (name) => agentA2aUrl(h.server.url, team.id[name]!),
    cardUrl: (name) => agentCardUrl(h.server.url, team.id[name]!),
    async close() {
      await h.server.close();
      await openai.close();
    },
  };
}

/** `fetch` that sends `key` as `x-api-key` on every request. */
export function fetchWithKey(key: string): typeof fetch {
  return (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set('x-api-key', key);
    return fetch(input, { ...init, headers });
  };
}

/** A client of `@a2a-js/sdk` for the agent whose card is at `cardUrl`, over one binding, sending `key`. */
export async function a2aClient(cardUrl: string, key: string, binding: 'JSONRPC' | 'HTTP+JSON' = 'JSONRPC'): Promise<Client> {
  const fetchImpl = fetchWithKey(key);
  const transport = binding === 'JSONRPC' ? new JsonRpcTransportFactory({ fetchImpl }) : new RestTransportFactory({ fetchImpl });
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
      transports: [transport],
      preferredTransports: [binding],
    }),
  );
  return factory.createFromUrl(cardUrl, '');
}

/** A user message of text parts (and a task to continue, when given), as the SDK's types spell it. */
export function userMessage(text: string, taskId = ''): Message {
  return {
    messageId: crypto.randomUUID(),
    contextId: '',
    taskId,
    role: Role.ROLE_USER,
    parts: [{ content: { $case: 'text', value: text }, mediaType: 'text/plain', filename: '', metadata: undefined }],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

/** A SendMessageRequest of `message`; `returnImmediately` for a send that does not wait. */
export function sendRequest(message: Message, returnImmediately = false): SendMessageRequest {
  return {
    tenant: '',
    message,
    configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, historyLength: undefined, returnImmediately },
    metadata: undefined,
  };
}

/** The text of an A2A part, or undefined for another kind. */
export function partText(part: { content?: { $case: string; value: unknown } | undefined }): string | undefined {
  return part.content?.$case === 'text' ? (part.content.value as string) : undefined;
}
