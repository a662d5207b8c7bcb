/**
 * The pure parts of the A2A server (contract §12): an agent's card built from its definition
 * (card.ts), the task ↔ A2A mapping of incoming parts (task-mapping.ts), and which A2A requests
 * hold their connection (routes.ts).
 */
import { describe, expect, it } from 'vitest';
import type { Agent } from '../../api/schemas.ts';
import { HeldWaitKinds } from '../../service/events/held-waits.ts';
import { agentSkills, buildAgentCard, firstLine } from '../../service/a2a/card.ts';
import { heldKind } from '../../service/a2a/routes.ts';
import { fromA2aParts, IncomingPartsError, partsAsContent, withAttachments } from '../../service/a2a/task-mapping.ts';

const base: Agent = {
  agent_id: '11111111-1111-4111-8111-111111111111',
  team_id: '22222222-2222-4222-8222-222222222222',
  name: 'triager',
  provider: 'openai',
  model: 'gpt-x',
  description: 'Sorts the incoming tickets.',
  instructions: '\n  You triage support tickets.  \nBe brief.',
  status: 'active',
  max_tokens_per_day: null,
  max_steps: 10,
  deletion_protection: false,
  tools: null,
  created_at: '2026-12-06T00:00:00.000Z',
} as Agent;

describe('the agent card', () => {
  it('a card is described by the first line of the instructions, else the description, else the name', () => {
    expect(buildAgentCard(base, 'https://acs.example.com/').description).toBe('You triage support tickets.');
    expect(buildAgentCard({ ...base, instructions: '' }, 'https://acs.example.com').description).toBe('Sorts the incoming tickets.');
    expect(buildAgentCard({ ...base, instructions: ' ', description: '' }, 'https://acs.example.com').description).toBe('Agent triager');
    expect(firstLine('x'.repeat(400))).toHaveLength(300);
  });

  it('a card points both bindings at the agent\'s URL under the public URL, at 1.0 and 0.3', () => {
    const card = buildAgentCard(base, 'https://acs.example.com/');
    const url = 'https://acs.example.com/a2a/v1/agents/11111111-1111-4111-8111-111111111111';
    expect(card.supportedInterfaces.map((i) => [i.protocolBinding, i.protocolVersion, i.url])).toEqual([
      ['JSONRPC', '1.0', url],
      ['HTTP+JSON', '1.0', url],
      ['JSONRPC', '0.3', url],
      ['HTTP+JSON', '0.3', url],
    ]);
  });

  it('an agent\'s skills come from its definition: its conversation, its team tools, each remote MCP server with its allowed tools, never a server\'s URL or headers', () => {
    const agent = {
      ...base,
      tools: {
        team: true,
        ask_timeout_seconds: 60,
        tool_timeout_seconds: 60,
        approval: null,
        mcp: [
          { name: 'tracker', url: 'https://tracker.internal.example/mcp', allow: ['create_issue', 'search'], header_fingerprints: { authorization: 'hmac-sha256:s:d' } },
          { name: 'wiki', url: 'https://wiki.internal.example/mcp', allow: null, header_fingerprints: {} },
        ],
      },
    } as Agent;
    const skills = agentSkills(agent);
    expect(skills.map((s) => [s.id, s.tags])).toEqual([
      ['conversation', ['openai', 'gpt-x']],
      ['team', ['team', 'ask']],
      ['mcp:tracker', ['mcp', 'create_issue', 'search']],
      ['mcp:wiki', ['mcp']],
    ]);
    const text = JSON.stringify(buildAgentCard(agent, 'https://acs.example.com'));
    expect(text).not.toContain('internal.example');
    expect(text).not.toContain('hmac-sha256');
  });

  it('an external agent\'s conversation skill says a task waits until it answers over MCP', () => {
    expect(agentSkills({ ...base, provider: null, model: null })[0]).toMatchObject({ tags: ['external'], description: expect.stringContaining('external agent') });
  });
});

describe('incoming parts', () => {
  const text = (value: string) => ({ content: { $case: 'text' as const, value }, mediaType: '', filename: '', metadata: undefined });

  it('text, data and file bytes become the service\'s parts; the file\'s attachment id is filled in once stored', () => {
    const incoming = fromA2aParts([
      text('look at this'),
      { content: { $case: 'data', value: { ticket: 7 } }, mediaType: '', filename: '', metadata: undefined },
      { content: { $case: 'raw', value: Buffer.from('hello') }, mediaType: 'text/plain', filename: 'note.txt', metadata: undefined },
    ]);
    expect(incoming.files).toEqual([{ index: 2, name: 'note.txt', mediaType: 'text/plain', data: Buffer.from('hello') }]);
    const parts = withAttachments(incoming, ['33333333-3333-4333-8333-333333333333']);
    expect(parts).toEqual([{ text: 'look at this' }, { data: { ticket: 7 } }, { file: { name: 'note.txt', media_type: 'text/plain', attachment_id: '33333333-3333-4333-8333-333333333333' } }]);
    expect(partsAsContent(parts)).toEqual({ content: 'look at this\n\n```json\n{\n  "ticket": 7\n}\n```', attachments: ['33333333-3333-4333-8333-333333333333'] });
  });

  it('a file by URL, an empty text and no parts at all are refused, each named', () => {
    const refusal = (parts: Parameters<typeof fromA2aParts>[0]) => {
      try {
        fromA2aParts(parts);
      } catch (error) {
        if (error instanceof IncomingPartsError) return error.problems;
        throw error;
      }
      throw new Error('not refused');
    };
    expect(refusal([text('ok'), { content: { $case: 'url', value: 'https://example.com/x' }, mediaType: '', filename: '', metadata: undefined }])).toEqual([
      'parts[1]: a file by URL is not fetched by the service; send its bytes (raw) instead',
    ]);
    expect(refusal([text('')])[0]).toMatch(/^parts\[0\]\.text: /);
    expect(refusal([])[0]).toMatch(/^parts: /);
    expect(refusal(Array.from({ length: 21 }, () => text('x')))[0]).toMatch(/^parts: /);
  });
});

describe('held A2A requests', () => {
  it('streams hold an event stream, sends that wait hold a task wait, everything else holds nothing', () => {
    const rpc = (method: string, params: unknown = {}) => ({ jsonrpc: '2.0', id: 1, method, params });
    expect(heldKind('POST', undefined, rpc('SendStreamingMessage'))).toBe(HeldWaitKinds.event_stream);
    expect(heldKind('POST', '', rpc('tasks/resubscribe'))).toBe(HeldWaitKinds.event_stream);
    expect(heldKind('POST', undefined, rpc('SendMessage'))).toBe(HeldWaitKinds.thread_poll);
    expect(heldKind('POST', undefined, rpc('SendMessage', { configuration: { returnImmediately: true } }))).toBeUndefined();
    expect(heldKind('POST', undefined, rpc('message/send', { configuration: { blocking: false } }))).toBeUndefined();
    expect(heldKind('POST', undefined, rpc('GetTask'))).toBeUndefined();
    expect(heldKind('POST', 'message:stream', {})).toBe(HeldWaitKinds.event_stream);
    expect(heldKind('POST', 'v1/tasks/abc:subscribe', {})).toBe(HeldWaitKinds.event_stream);
    expect(heldKind('POST', 'message:send', { configuration: { returnImmediately: true } })).toBeUndefined();
    expect(heldKind('POST', 'tenant-a/message:send', {})).toBe(HeldWaitKinds.thread_poll);
    expect(heldKind('GET', 'tasks/abc', undefined)).toBeUndefined();
  });
});
