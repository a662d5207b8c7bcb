/**
 * A thread's stream (contract §13): a provider agent's reply is seen as it is written — its
 * `message.delta`s in order, all before its `message.created`, joined equal to it — for the
 * OpenAI-compatible and the Anthropic stand-ins streaming slowly and for echo (`ACS_ECHO_STREAM_MS`);
 * deltas are batched; a reader that drops and resumes with `Last-Event-ID` (or `after`) at random
 * points gets every item once; positions as cursors. On PGlite here, on PostgreSQL in the
 * `postgres` project. A turn's steps and tool calls are in the stream between the message it
 * answers and its reply.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scriptedMessages, startAnthropicStub, type AnthropicStub } from '../support/anthropic-stub.ts';
import { callTool, paced, type Conversation, type ModelScript, type ScriptReply } from '../support/model-script.ts';
import { scriptedToolCompletions, startOpenAiStub, toolCallCompletion, type OpenAiStub } from '../support/openai-stub.ts';
import { startHarness, type Harness } from './helpers.ts';
import { createdOf, deltasOf, describe as describeItems, droppingReader, readThread, rebuiltText, seededRandom, streamStart, type Item } from './stream-helpers.ts';
import { makeTeam, messagesOf, openThread, orgEvents, toolCalls } from './turn-helpers.ts';

const cleanups: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

/** Scripts by the agent's instructions (the system prompt's first word). */
const scripts = new Map<string, ModelScript>();
const byInstructions: ModelScript = (c: Conversation): ScriptReply | Promise<ScriptReply> => scripts.get((c.system ?? '').split(/\s/)[0]!)?.(c);

let openai: OpenAiStub;
let anthropic: AnthropicStub;
let h: Harness;
const key = () => ({ 'x-api-key': h.apiKey });

beforeAll(async () => {
  openai = await startOpenAiStub(scriptedToolCompletions(byInstructions));
  cleanups.push(() => openai.close());
  anthropic = await startAnthropicStub(scriptedMessages(byInstructions));
  cleanups.push(() => anthropic.close());
  h = await startHarness({
    inMemory: true,
    env: { ...process.env, OPENAI_BASE_URL: `${openai.origin}/v1`, ANTHROPIC_BASE_URL: anthropic.origin, ACS_ECHO_STREAM_MS: '8' },
  });
  cleanups.push(() => h.server.close());
  for (const provider of ['openai', 'anthropic', 'echo']) {
    expect((await h.call('PUT', `/api/v1/organizations/${h.orgId}/api-keys/${provider}`, { api_key: `${provider}-key` })).status).toBe(200);
  }
});

/** `n` words: `w0 w1 …`, with a line break now and then (a reply's text is more than words). */
function words(n: number, prefix = 'w'): string {
  return Array.from({ length: n }, (_, i) => `${prefix}${i}`).join(' ').replace(/(w\d*7) /g, '$1\n');
}

/** A team of dana and one agent `writer` (no tools: it answers with one streamed reply). */
async function writerTeam(agent: Record<string, unknown>) {
  const team = await makeTeam(h, { humans: ['dana'], agents: [{ name: 'writer', ...agent }], edges: [['dana', 'writer']] });
  return { dana: team.id.dana!, writer: team.id.writer!, edge: team.edgeOf('dana', 'writer') };
}

/**
 * Opens a thread with dana's `first` message, waits for the writer's answer to it, then opens a
 * reader from there (no position: after the last message) and posts `second`. Output: the reader,
 * the thread and the writer's reply to `second` as the reader got it.
 */
async function liveReply(agent: Record<string, unknown>, first: string, second: string) {
  const team = await writerTeam(agent);
  const thread = await openThread(h, team.edge, team.dana, first);
  const before = await readThread(h.server.url, thread, key(), { after: '0' });
  await before.until((i) => i.event === 'message.created' && i.data.sender_id === team.writer, 'the answer to the first message');
  before.close();
  const reader = await readThread(h.server.url, thread, key());
  expect(reader.status).toBe(200);
  expect((await h.call('POST', `/api/v1/threads/${thread}/messages`, { sender_agent_id: team.dana, content: second })).status).toBe(201);
  const items = await reader.until((i) => i.event === 'message.created' && i.data.sender_id === team.writer, 'the reply');
  reader.close();
  const reply = items.find((i) => i.event === 'message.created' && i.data.sender_id === team.writer)!;
  return { team, thread, items, reply };
}

/** The assertions of §13 on one reply as a reader got it: deltas 0, 1, … in order, all before the reply, joined equal to it. */
function expectStreamedReply(items: readonly Item[], reply: Item, text: string): Item[] {
  const deltas = deltasOf(items, reply.data.message_id);
  expect(reply.data.content).toBe(text);
  expect(deltas.map((d) => d.data.index), describeItems(items)).toEqual(deltas.map((_, i) => i));
  expect(deltas.map((d) => d.data.sender_id)).toEqual(deltas.map(() => reply.data.sender_id));
  const replyAt = items.findIndex((i) => i.id === reply.id);
  expect(items.findLastIndex((i) => i.event === 'message.delta')).toBeLessThan(replyAt);
  expect(deltas.map((d) => d.data.text).join('')).toBe(text);
  // Ids are per thread and increasing: each item's position is after the one before.
  const positions = items.map((i) => i.id.split('.').map(Number) as [number, number?]);
  for (let i = 1; i < positions.length; i += 1) {
    const [a, ak = 0] = positions[i - 1]!;
    const [b, bk = 0] = positions[i]!;
    expect(b > a || (b === a && bk > ak), `${items[i - 1]!.id} then ${items[i]!.id}`).toBe(true);
  }
  return deltas;
}

describe('thread stream: a reply as it is written', () => {
  it('thread stream: a reply of an OpenAI-compatible agent streaming slowly comes as message.deltas 0, 1, … in order, all before its message.created, and joined they are the reply', async () => {
    const text = words(40);
    scripts.set('slow-openai', (c) => (c.lastUserText === 'go' ? paced(text, { size: 'word', delayMs: 10 }) : 'ready'));
    const { items, reply } = await liveReply({ provider: 'openai', model: 'gpt-stub', instructions: 'slow-openai' }, 'hello', 'go');
    // The reader opened after the first exchange: dana's second message is its first item.
    expect(items[0]).toMatchObject({ event: 'message.created', data: { content: 'go' } });
    const deltas = expectStreamedReply(items, reply, text);
    // Written as it came, not at the end: several deltas (the stand-in took ~400 ms for 40 words).
    expect(deltas.length).toBeGreaterThan(1);
  });

  it('thread stream: a reply of an Anthropic agent streaming slowly comes as ordered deltas before its message.created, joined equal to it', async () => {
    const text = words(40, 'a');
    scripts.set('slow-anthropic', (c) => (c.lastUserText === 'go' ? paced(text, { size: 'word', delayMs: 10 }) : 'ready'));
    const { reply, items } = await liveReply({ provider: 'anthropic', model: 'claude-stub', instructions: 'slow-anthropic' }, 'hello', 'go');
    expect(expectStreamedReply(items, reply, text).length).toBeGreaterThan(1);
  });

  it('thread stream: an echo agent streams its reply word by word at ACS_ECHO_STREAM_MS, as ordered deltas joined equal to it', async () => {
    const said = words(40, 'e');
    const { reply, items } = await liveReply({ provider: 'echo' }, 'hello', said);
    expect(expectStreamedReply(items, reply, `echo: ${said}`).length).toBeGreaterThan(1);
  });

  it('thread stream: 200 tiny chunks sent at once are batched into far fewer deltas, joined still equal to the reply', async () => {
    const text = 'abcdefghij'.repeat(20);
    scripts.set('burst', (c) => (c.lastUserText === 'go' ? paced(text, { size: 1, delayMs: 0 }) : 'ready'));
    const { reply, items } = await liveReply({ provider: 'openai', model: 'gpt-stub', instructions: 'burst' }, 'hello', 'go');
    const sent = openai.requests.at(-1)!;
    expect(sent.chunks).toHaveLength(200);
    const deltas = expectStreamedReply(items, reply, text);
    expect(deltas.length).toBeLessThan(20);
  });
  it('thread stream: a reader that connects without a position while a reply is being written gets it from its first delta', async () => {
    const text = words(30, 'm');
    scripts.set('midway', () => paced(text, { size: 'word', delayMs: 0 }));
    const team = await writerTeam({ provider: 'openai', model: 'gpt-stub', instructions: 'midway' });
    openai.hold(5);
    try {
      const thread = await openThread(h, team.edge, team.dana, 'go');
      const held = await openai.held();
      const half = held.chunks.map((c) => c.text).join('');
      // Connected after the first deltas were written: it starts after the last message, before them.
      const reader = await readThread(h.server.url, thread, key());
      const items = await reader.until(() => reader.items().map((i) => i.data.text ?? '').join('') === half, 'the held half');
      expect(items.map((i) => [i.event, i.data.index])).toEqual(items.map((_, n) => ['message.delta', n]));
      openai.release();
      const reply = (await reader.until((i) => i.event === 'message.created', 'the reply')).find((i) => i.event === 'message.created')!;
      reader.close();
      expectStreamedReply(reader.items(), reply, text);
    } finally {
      openai.release();
    }
  });

  it('thread stream: a reply longer than a message may be is streamed as far as it is posted: the deltas joined are the posted text', async () => {
    const text = 'abcdefghij'.repeat(3300);
    scripts.set('long', (c) => (c.lastUserText === 'go' ? paced(text, { size: 1000, delayMs: 0 }) : 'ready'));
    const { reply, items } = await liveReply({ provider: 'openai', model: 'gpt-stub', instructions: 'long' }, 'hello', 'go');
    expect(reply.data.content).toHaveLength(32_768);
    expectStreamedReply(items, reply, text.slice(0, 32_768));
  });

  it('thread stream: deltas are not events of the organization\'s log: only the reply\'s message.created is', async () => {
    const types = new Set((await orgEvents(h)).map((e) => e.type));
    expect(types.has('message.created')).toBe(true);
    for (const live of ['message.delta', 'turn.step', 'turn.restarted']) expect(types.has(live), live).toBe(false);
  });
});

describe('thread stream: resumption', () => {
  let thread: string;
  let reference: Item[];
  let dropped: { items: Item[]; resumedFrom: string[] };
  let replies: Item[];
  const seed = Number(process.env.STREAM_SEED ?? Date.now() % 1_000_000);

  beforeAll(async () => {
    const texts = [words(50, 'x'), words(50, 'y'), words(50, 'z')];
    scripts.set('resumable', (c) => {
      const n = ['one', 'two', 'three'].indexOf(c.lastUserText ?? '');
      return n < 0 ? 'ready' : paced(texts[n]!, { size: 'word', delayMs: 12 });
    });
    const team = await writerTeam({ provider: 'openai', model: 'gpt-stub', instructions: 'resumable' });
    thread = await openThread(h, team.edge, team.dana, 'hello');
    const first = await readThread(h.server.url, thread, key(), { after: '0' });
    await first.until((i) => i.event === 'message.created' && i.data.sender_id === team.writer, 'the first answer');
    first.close();
    const from = String((await messagesOf(h, thread)).length);
    // A reader that never drops, and one that drops at 20 random points, both from the same position.
    const steady = await readThread(h.server.url, thread, key(), { lastEventId: from });
    const random = seededRandom(seed);
    const isLastReply = (items: readonly Item[]) => items.filter((i) => i.event === 'message.created' && i.data.sender_id === team.writer).length === 3;
    const dropping = droppingReader({
      from,
      drops: 20,
      random,
      minMs: 10,
      maxMs: 90,
      // Mostly as an EventSource resumes (the header), now and then with `after`.
      open: (lastId, attempt) => readThread(h.server.url, thread, key(), attempt % 4 === 3 ? { after: lastId } : { lastEventId: lastId }),
      // The drops begin with the first reply's first delta: they fall while the replies stream.
      begin: (i) => i.event === 'message.delta',
      done: isLastReply,
    });
    // Three replies in a row: each message is answered in turn, so the drops cross message boundaries.
    for (const content of ['one', 'two', 'three']) {
      expect((await h.call('POST', `/api/v1/threads/${thread}/messages`, { sender_agent_id: team.dana, content })).status).toBe(201);
    }
    reference = await steady.until(() => isLastReply(steady.items()), 'the third reply');
    steady.close();
    dropped = await dropping;
    replies = reference.filter((i) => i.event === 'message.created' && i.data.sender_id === team.writer);
    expect(replies.map((r) => r.data.content)).toEqual(texts);
  });

  it(`thread stream: a reader that drops and resumes with Last-Event-ID at 20 random points gets every item once, as a reader that never dropped (seed in STREAM_SEED)`, () => {
    expect(dropped.resumedFrom).toHaveLength(21);
    const ids = dropped.items.map((i) => i.id);
    expect(new Set(ids).size, `seed ${seed}: repeated items`).toBe(ids.length);
    expect(dropped.items, `seed ${seed}`).toEqual(reference);
    // Each reply rebuilt from the resumed stream is the reply.
    for (const reply of replies) expect(rebuiltText(dropped.items, reply.data.message_id)).toBe(reply.data.content);
    // The drops fell inside replies (at a delta), not only between them.
    expect(dropped.resumedFrom.filter((id) => id.includes('.')).length, `seed ${seed}: ${dropped.resumedFrom.join(' ')}`).toBeGreaterThan(0);
  });

  it('thread stream: a resume after a reply\'s message.created gets the messages that follow, not that reply\'s deltas', async () => {
    for (const reply of replies) {
      const at = reference.indexOf(reply);
      const expected = reference.slice(at + 1);
      const reader = await readThread(h.server.url, thread, key(), { lastEventId: reply.id });
      const items = expected.length === 0 ? [] : await reader.count(expected.length);
      reader.close();
      expect(items).toEqual(expected);
      expect(deltasOf(items, reply.data.message_id)).toEqual([]);
    }
  });

  it('thread stream: a resume from a delta\'s position gets the rest of that reply\'s deltas and what follows, once', async () => {
    const reply = replies[1]!;
    const deltas = deltasOf(reference, reply.data.message_id);
    const middle = deltas[Math.floor(deltas.length / 2)]!;
    const expected = reference.slice(reference.indexOf(middle) + 1);
    const reader = await readThread(h.server.url, thread, key(), { after: middle.id });
    const items = await reader.count(expected.length);
    reader.close();
    expect(items.slice(0, expected.length)).toEqual(expected);
  });

  it('thread stream: after=0 replays the whole thread, messages and the deltas kept', async () => {
    const reader = await readThread(h.server.url, thread, key(), { after: '0' });
    const items = await reader.until((i) => i.id === reference.at(-1)!.id, 'the last item');
    reader.close();
    expect(items[0]).toMatchObject({ id: '1', event: 'message.created', data: { content: 'hello' } });
    expect(items.slice(items.findIndex((i) => i.id === reference[0]!.id))).toEqual(reference);
    for (const reply of replies) expect(createdOf(items, reply.data.message_id)).toEqual(reply);
  });

  it('thread stream: an after past the thread\'s last message is 400 invalid_cursor, by the query or the header', async () => {
    const count = (await messagesOf(h, thread)).length;
    const url = `${h.server.url}/api/v1/threads/${thread}/stream`;
    for (const answer of [await streamStart(`${url}?after=${count + 1}`, key()), await streamStart(url, { ...key(), 'last-event-id': `${count + 1}.1` })]) {
      expect(answer.status).toBe(400);
      expect(answer.body.code).toBe('invalid_cursor');
    }
    // The last message itself is a position: the stream starts after it.
    const reader = await readThread(h.server.url, thread, key(), { after: String(count) });
    expect(reader.status).toBe(200);
    reader.close();
  });

  it('thread stream: a malformed position is refused with 400: invalid_cursor in Last-Event-ID, invalid_request in after', async () => {
    const url = `${h.server.url}/api/v1/threads/${thread}/stream`;
    for (const bad of ['abc', '1.2.3', '-1', '1.', '.3', '99999999999']) {
      const header = await streamStart(url, { ...key(), 'last-event-id': bad });
      expect([header.status, header.body.code], `Last-Event-ID ${bad}`).toEqual([400, 'invalid_cursor']);
      const query = await streamStart(`${url}?after=${encodeURIComponent(bad)}`, key());
      expect([query.status, query.body.code], `after=${bad}`).toEqual([400, 'invalid_request']);
    }
  });

  it('thread stream: a resume after the thread\'s last message waits there and gets the next message', async () => {
    const next = await readThread(h.server.url, thread, key(), { lastEventId: replies.at(-1)!.id });
    const dana = reference.find((i) => i.event === 'message.created' && i.data.content === 'one')!.data.sender_id;
    const posted = await h.call('POST', `/api/v1/threads/${thread}/messages`, { sender_agent_id: dana, content: 'thanks' });
    const after = await next.until((i) => i.event === 'message.created' && i.data.message_id === posted.body.message_id, 'the next message');
    next.close();
    expect(after[0]).toMatchObject({ event: 'message.created', data: { message_id: posted.body.message_id } });
  });

  it('thread stream: a thread the key does not reach is 404, as one that does not exist', async () => {
    const other = await h.server.provisionOrganization('other');
    for (const id of [thread, '6f1f3c1e-0000-4000-8000-000000000000', 'not-a-uuid']) {
      const answer = await streamStart(`${h.server.url}/api/v1/threads/${id}/stream`, { 'x-api-key': other.api_key });
      expect([answer.status, answer.body.code], id).toEqual([404, 'not_found']);
    }
  });
});

describe('thread stream: a turn\'s steps and tool calls', () => {
  it('thread stream: a turn\'s turn.step and tool_call.started/finished come between the message and the reply, and the reply rebuilt from its deltas after the step is the reply', async () => {
    // Step 1 writes a line and calls whoami; step 2 writes the reply.
    scripts.set('stepper', (c) => {
      const who = c.resultOf('whoami');
      if (who) return paced(`I am ${(who.json as { agent: { name: string } }).agent.name}, and ${words(20, 's')}`, { size: 'word', delayMs: 5 });
      const step = toolCallCompletion(c.model, [callTool('whoami', {})]);
      if (step === 'hang') return undefined;
      (step.body as any).choices[0].message.content = 'Let me look myself up first. ';
      return { answer: { ...step, chunk: { size: 'word', delayMs: 5 } } };
    });
    const team = await makeTeam(h, {
      humans: ['dana'],
      agents: [{ name: 'lead', provider: 'openai', model: 'gpt-stub', instructions: 'stepper', tools: { team: true } }],
      edges: [['dana', 'lead']],
    });
    const thread = await openThread(h, team.edgeOf('dana', 'lead'), team.id.dana!, 'who are you?');
    const reader = await readThread(h.server.url, thread, key(), { after: '0' });
    const items = await reader.until((i) => i.event === 'message.created' && i.data.sender_id === team.id.lead, 'the reply');
    reader.close();
    const [call] = await toolCalls(h, thread);
    expect(call).toMatchObject({ tool: 'whoami', status: 'completed' });
    const reply = items.find((i) => i.event === 'message.created' && i.data.sender_id === team.id.lead)!;
    expect(reply.data.content).toBe(`I am lead, and ${words(20, 's')}`);

    // In stream order: the message, step 1's text, then the step and its call (a call that only
    // reads may be made before the step is recorded, its start and end at once), the reply's text, the reply.
    const kinds = items.map((i) => i.event).filter((e, i, all) => e !== all[i - 1]);
    const between = kinds.slice(2, -2);
    expect([...kinds.slice(0, 2), ...kinds.slice(-2)], describeItems(items)).toEqual(['message.created', 'message.delta', 'message.delta', 'message.created']);
    expect([...between].sort(), describeItems(items)).toEqual(kinds.includes('tool_call.started') ? ['tool_call.finished', 'tool_call.started', 'turn.step'] : ['tool_call.finished', 'turn.step']);
    const step = items.find((i) => i.event === 'turn.step')!;
    expect(step.data).toEqual({ thread_id: thread, message_id: reply.data.message_id, sender_id: team.id.lead, step: 1, tool_call_ids: [call!.tool_call_id] });
    const finished = items.find((i) => i.event === 'tool_call.finished')!;
    expect(finished.data).toMatchObject({ tool_call_id: call!.tool_call_id, tool: 'whoami', thread_id: thread, status: 'completed' });
    const started = items.find((i) => i.event === 'tool_call.started');
    if (started) {
      expect(started.data).toMatchObject({ tool_call_id: call!.tool_call_id, status: 'running' });
      expect(items.indexOf(started)).toBeLessThan(items.indexOf(finished));
    }
    // Step 1's text was not the reply: a reader that starts afresh at turn.step rebuilds the reply.
    const deltas = deltasOf(items, reply.data.message_id);
    expect(deltas.map((d) => d.data.index)).toEqual(deltas.map((_, i) => i));
    const stepAt = items.indexOf(step);
    expect(deltas.filter((d) => items.indexOf(d) < stepAt).map((d) => d.data.text).join('')).toBe('Let me look myself up first. ');
    expect(rebuiltText(items, reply.data.message_id)).toBe(reply.data.content);
  });

  it('thread stream: a turn that reaches max_steps streams the note its reply ends with: the deltas after the last step joined are the reply', async () => {
    scripts.set('endless', (c) => {
      const step = toolCallCompletion(c.model, [callTool('whoami', {})]);
      if (step === 'hang') return undefined;
      (step.body as any).choices[0].message.content = `step ${c.toolResults.length + 1} `;
      return { answer: step };
    });
    const team = await makeTeam(h, {
      humans: ['dana'],
      agents: [{ name: 'lead', provider: 'openai', model: 'gpt-stub', instructions: 'endless', tools: { team: true }, max_steps: 2 }],
      edges: [['dana', 'lead']],
    });
    const thread = await openThread(h, team.edgeOf('dana', 'lead'), team.id.dana!, 'go on and on');
    const reader = await readThread(h.server.url, thread, key(), { after: '0' });
    const items = await reader.until((i) => i.event === 'message.created' && i.data.sender_id === team.id.lead, 'the reply');
    reader.close();
    const reply = items.find((i) => i.event === 'message.created' && i.data.sender_id === team.id.lead)!;
    expect(reply.data.content).toMatch(/^step 2\s*\(This turn reached its limit of 2 steps \(max_steps\)/);
    expect(rebuiltText(items, reply.data.message_id)).toBe(reply.data.content);
  });
});
