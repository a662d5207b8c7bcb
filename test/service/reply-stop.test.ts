/**
 * Stop (contract §13): `POST /threads/{id}/stop` (and the session's twin) ends the reply being
 * written — the provider request is aborted (the stand-in sees its connection close), the text so
 * far is posted as the reply with `stopped: true`, and a turn with tools makes no further tool
 * call; a turn waiting on `ask` ends with its call failed `stopped`; a stop with nothing in
 * progress changes nothing; a stop works on a turn taken up again and a stream that was resumed.
 * The OpenAI-compatible stand-in holds its streams half-way (`hold`) so the stop falls mid-reply.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { QUICK_TOOL, SLOW_TOOL, startCountedEverything } from '../support/mcp-everything.ts';
import { callTool, paced, type Conversation, type ModelScript, type ScriptReply } from '../support/model-script.ts';
import { scriptedToolCompletions, startOpenAiStub, textOf, toolCallCompletion, type OpenAiStub, type StubRequest } from '../support/openai-stub.ts';
import { request, startHarness, type Harness } from './helpers.ts';
import { readThread, streamStart, writtenSoFar, type Item, type ThreadReader } from './stream-helpers.ts';
import { makeTeam, messagesOf, openThread, signIn, toolCalls, until, waitForToolCalls } from './turn-helpers.ts';

const cleanups: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

const scripts = new Map<string, ModelScript>();
const byInstructions: ModelScript = (c: Conversation): ScriptReply | Promise<ScriptReply> => scripts.get((c.system ?? '').split(/\s/)[0]!)?.(c);

let stub: OpenAiStub;
let h: Harness;
const key = () => ({ 'x-api-key': h.apiKey });

beforeAll(async () => {
  stub = await startOpenAiStub(scriptedToolCompletions(byInstructions));
  cleanups.push(() => stub.close());
  h = await startHarness({ inMemory: true, webhooks: { allowPrivate: true }, env: { ...process.env, OPENAI_BASE_URL: `${stub.origin}/v1` } });
  cleanups.push(() => h.server.close());
  expect((await h.call('PUT', `/api/v1/organizations/${h.orgId}/api-keys/openai`, { api_key: 'openai-key' })).status).toBe(200);
});

// A hold left on would hold the next test's streams.
afterEach(() => stub.release());

/** `n` words: `w0 w1 …`. */
const words = (n: number, prefix = 'w') => Array.from({ length: n }, (_, i) => `${prefix}${i}`).join(' ');

/** The requests the stand-in got for the agent whose instructions start with `script`. */
function requestsOf(script: string): StubRequest[] {
  return stub.requests.filter((r) => r.body.messages.some((m) => (m.role === 'system' || m.role === 'developer') && textOf(m.content).startsWith(script)));
}

/** What a held stream sent of its text before the hold. */
const sentText = (held: StubRequest) => held.chunks.filter((c) => c.kind === 'text').map((c) => c.text).join('');

/** Waits until the reader shows `text` written so far by `senderId`. */
function readerShows(reader: ThreadReader, senderId: string, text: string): Promise<Item[]> {
  return reader.until(() => writtenSoFar(reader.items(), senderId) === text, `the deltas to show ${JSON.stringify(text)}`);
}

/** Waits until the reader has the reply of `senderId`. Output: its `message.created` item. */
async function replyOn(reader: ThreadReader, senderId: string): Promise<Item> {
  const items = await reader.until((i) => i.event === 'message.created' && i.data.sender_id === senderId, 'the reply');
  return items.find((i) => i.event === 'message.created' && i.data.sender_id === senderId)!;
}

describe('stop: a plain reply', () => {
  it('stop: a plain reply stopped mid-stream is posted with the text so far and stopped: true, the provider request is aborted, and stopping is 1', async () => {
    const text = words(30);
    scripts.set('plain', () => paced(text, { size: 'word', delayMs: 0 }));
    const team = await makeTeam(h, { humans: ['dana'], agents: [{ name: 'writer', provider: 'openai', model: 'gpt-stub', instructions: 'plain' }], edges: [['dana', 'writer']] });
    stub.hold(5);
    const thread = await openThread(h, team.edgeOf('dana', 'writer'), team.id.dana!, 'write');
    const reader = await readThread(h.server.url, thread, key(), { after: '0' });
    const held = await stub.held();
    const sofar = sentText(held);
    expect(sofar).toBe('w0 w1 w2 w3 w4 ');
    await readerShows(reader, team.id.writer!, sofar);

    const stop = await h.call('POST', `/api/v1/threads/${thread}/stop`);
    expect(stop.status).toBe(202);
    expect(stop.body).toEqual({ thread_id: thread, stopping: 1 });
    expect(await held.ended).toEqual({ aborted: true });
    const reply = await replyOn(reader, team.id.writer!);
    reader.close();

    expect(reply.data).toMatchObject({ content: sofar, stopped: true });
    expect(text.startsWith(reply.data.content)).toBe(true);
    expect(writtenSoFar(reader.items(), team.id.writer!)).toBe(reply.data.content);
    // As the thread keeps it, and answered once: the stopped text is the reply, not retried.
    const stored = (await h.call('GET', `/api/v1/threads/${thread}`)).body.messages;
    expect(stored.map((m: any) => [m.sender_id, m.content, m.stopped])).toEqual([
      [team.id.dana, 'write', false],
      [team.id.writer, sofar, true],
    ]);
    expect(requestsOf('plain')).toHaveLength(1);
  });

  it('stop: a stop with nothing in progress answers stopping 0 and changes nothing', async () => {
    scripts.set('idle', () => 'done');
    const team = await makeTeam(h, { humans: ['dana', 'erin'], agents: [{ name: 'writer', provider: 'openai', model: 'gpt-stub', instructions: 'idle' }], edges: [['dana', 'writer'], ['dana', 'erin']] });
    const thread = await openThread(h, team.edgeOf('dana', 'writer'), team.id.dana!, 'hello');
    await until(() => messagesOf(h, thread), (m) => m.length === 2, 'the reply');
    const humans = await openThread(h, team.edgeOf('dana', 'erin'), team.id.dana!, 'hi erin');
    for (const id of [thread, humans]) {
      const before = await messagesOf(h, id);
      const stop = await h.call('POST', `/api/v1/threads/${id}/stop`);
      expect([stop.status, stop.body]).toEqual([202, { thread_id: id, stopping: 0 }]);
      // The next message is answered as ever: nothing was left asking it to stop.
      expect(await messagesOf(h, id)).toEqual(before);
    }
    await h.call('POST', `/api/v1/threads/${thread}/messages`, { sender_agent_id: team.id.dana, content: 'again' });
    const after = await until(() => messagesOf(h, thread), (m) => m.length === 4, 'the second reply');
    expect(after.at(-1)).toMatchObject({ content: 'done', stopped: false });
  });

  it('stop: a thread the key does not reach is 404', async () => {
    const other = await h.server.provisionOrganization('elsewhere');
    const team = await makeTeam(h, { humans: ['dana', 'erin'], agents: [], edges: [['dana', 'erin']] });
    const thread = await openThread(h, team.edgeOf('dana', 'erin'), team.id.dana!, 'hi');
    for (const id of [thread, '6f1f3c1e-0000-4000-8000-000000000000']) {
      const stop = await request(`${h.server.url}/api/v1/threads/${id}/stop`, 'POST', undefined, { 'x-api-key': other.api_key });
      expect([stop.status, stop.body.code]).toEqual([404, 'not_found']);
    }
  });
});

describe('stop: a turn with tools', () => {
  it('stop: a turn stopped while its model streams posts the text so far and makes no further tool call', async () => {
    // Step 1 calls whoami; step 2 writes a line and then calls list_edges — unless it is stopped.
    scripts.set('tooled', (c) => {
      if (!c.resultOf('whoami')) return callTool('whoami', {});
      const step = toolCallCompletion(c.model, [callTool('list_edges', {})]);
      if (step === 'hang') return undefined;
      (step.body as any).choices[0].message.content = `${words(20, 'n')} `;
      return { answer: step };
    });
    const team = await makeTeam(h, { humans: ['dana'], agents: [{ name: 'lead', provider: 'openai', model: 'gpt-stub', instructions: 'tooled', tools: { team: true } }], edges: [['dana', 'lead']] });
    // Step 1's arguments (`{}`) are one chunk: only step 2's text is held.
    stub.hold(4);
    const thread = await openThread(h, team.edgeOf('dana', 'lead'), team.id.dana!, 'who are you?');
    const reader = await readThread(h.server.url, thread, key(), { after: '0' });
    const held = await stub.held();
    expect(requestsOf('tooled')).toHaveLength(2);
    const sofar = sentText(held);
    expect(sofar).toBe('n0 n1 n2 n3 ');
    await readerShows(reader, team.id.lead!, sofar);

    const stop = await h.call('POST', `/api/v1/threads/${thread}/stop`);
    expect(stop.body).toEqual({ thread_id: thread, stopping: 1 });
    expect(await held.ended).toEqual({ aborted: true });
    // Were the call not aborted, the rest of step 2 — its list_edges call — would now come.
    stub.release();
    const reply = await replyOn(reader, team.id.lead!);
    reader.close();
    expect(reply.data).toMatchObject({ content: sofar, stopped: true });
    const calls = await toolCalls(h, thread);
    expect(calls.map((c) => [c.tool, c.status])).toEqual([['whoami', 'completed']]);
    expect(requestsOf('tooled')).toHaveLength(2);
  });

  it('stop: a turn stopped while a tool call runs lets that call finish, then makes no further model call or tool call', async () => {
    const mcp = await startCountedEverything();
    cleanups.push(() => mcp.close());
    // Step 1: a call that takes a second; step 2 would call the quick tool — if the turn went on.
    scripts.set('slow-tool', (c) => {
      if (!c.resultOf(`everything__${SLOW_TOOL}`)) return callTool(`everything__${SLOW_TOOL}`, { duration: 1, steps: 1 });
      if (!c.resultOf(`everything__${QUICK_TOOL}`)) return callTool(`everything__${QUICK_TOOL}`, { message: 'next' });
      return 'done';
    });
    const team = await makeTeam(h, {
      humans: ['dana'],
      agents: [{ name: 'lead', provider: 'openai', model: 'gpt-stub', instructions: 'slow-tool', tools: { team: false, mcp: [{ name: 'everything', url: mcp.url, allow: [QUICK_TOOL, SLOW_TOOL] }] } }],
      edges: [['dana', 'lead']],
    });
    const thread = await openThread(h, team.edgeOf('dana', 'lead'), team.id.dana!, 'go');
    const reader = await readThread(h.server.url, thread, key(), { after: '0' });
    await until(async () => mcp.proxy.callsOf(SLOW_TOOL), (n) => n === 1, 'the slow call to reach the MCP server');
    const stop = await h.call('POST', `/api/v1/threads/${thread}/stop`);
    expect(stop.body).toEqual({ thread_id: thread, stopping: 1 });
    const reply = await replyOn(reader, team.id.lead!);
    reader.close();
    expect(reply.data).toMatchObject({ content: '(stopped before any reply was written)', stopped: true });
    // The running call finished; nothing after it was made: no second model call, no quick tool.
    const calls = await toolCalls(h, thread);
    expect(calls.map((c) => [c.tool, c.status])).toEqual([[SLOW_TOOL, 'completed']]);
    // The stream shows the step, the call started and finished, between the message and the reply.
    expect(reader.items().map((i) => [i.event, i.data.tool_call_id ?? i.data.tool_call_ids?.[0] ?? null, i.data.status ?? null])).toEqual([
      ['message.created', null, null],
      ['turn.step', calls[0]!.tool_call_id, null],
      ['tool_call.started', calls[0]!.tool_call_id, 'running'],
      ['tool_call.finished', calls[0]!.tool_call_id, 'completed'],
      ['message.created', null, null],
    ]);
    expect(mcp.proxy.callsOf(QUICK_TOOL)).toBe(0);
    expect(requestsOf('slow-tool')).toHaveLength(1);
  });

  it('stop: a turn suspended on ask is stopped: its ask call fails `stopped` and the reply is posted stopped', async () => {
    scripts.set('asker', (c) => (c.resultOf('ask') ? 'answered' : callTool('ask', { peer: 'bob', content: 'may I go on?' })));
    const team = await makeTeam(h, {
      humans: ['dana', 'bob'],
      agents: [{ name: 'lead', provider: 'openai', model: 'gpt-stub', instructions: 'asker', tools: { team: true } }],
      edges: [['dana', 'lead'], ['lead', 'bob']],
    });
    const thread = await openThread(h, team.edgeOf('dana', 'lead'), team.id.dana!, 'go');
    const [ask] = await waitForToolCalls(h, thread, (calls) => calls.some((c) => c.tool === 'ask' && c.status === 'running'));
    const reader = await readThread(h.server.url, thread, key(), { after: '0' });

    const stop = await h.call('POST', `/api/v1/threads/${thread}/stop`);
    expect(stop.body).toEqual({ thread_id: thread, stopping: 1 });
    const reply = await replyOn(reader, team.id.lead!);
    expect(reply.data).toMatchObject({ content: '(stopped before any reply was written)', stopped: true });
    const calls = await toolCalls(h, thread);
    expect(calls.map((c) => [c.tool_call_id, c.tool, c.status])).toEqual([[ask!.tool_call_id, 'ask', 'failed']]);
    expect(calls[0]!.error).toMatch(/^stopped: /);
    // The stream told of it: the call's tool_call.finished, before the reply.
    const items = reader.items();
    reader.close();
    const finished = items.findIndex((i) => i.event === 'tool_call.finished' && i.data.tool_call_id === ask!.tool_call_id);
    expect(finished).toBeGreaterThan(-1);
    expect(items[finished]!.data).toMatchObject({ status: 'failed' });
    expect(finished).toBeLessThan(items.findIndex((i) => i.id === reply.id));
    // bob's answer, coming late, wakes nothing: the turn is over.
    expect(requestsOf('asker')).toHaveLength(1);
  });

  it('stop: a stop works on a turn taken up again and a stream that was resumed', async () => {
    const text = words(30, 'r');
    scripts.set('resumer', (c) => (c.resultOf('ask') ? paced(text, { size: 'word', delayMs: 0 }) : callTool('ask', { peer: 'bob', content: 'may I go on?' })));
    const team = await makeTeam(h, {
      humans: ['dana', 'bob'],
      agents: [{ name: 'lead', provider: 'openai', model: 'gpt-stub', instructions: 'resumer', tools: { team: true } }],
      edges: [['dana', 'lead'], ['lead', 'bob']],
    });
    const thread = await openThread(h, team.edgeOf('dana', 'lead'), team.id.dana!, 'go');
    const first = await readThread(h.server.url, thread, key(), { after: '0' });
    const [ask] = await waitForToolCalls(h, thread, (calls) => calls.some((c) => c.tool === 'ask' && c.status === 'running'));
    const seen = await first.until((i) => i.event === 'tool_call.started' && i.data.tool_call_id === ask!.tool_call_id, 'the ask to start');
    // The reader drops while the turn waits; bob answers; the turn is taken up again and streams.
    first.close();
    stub.hold(4);
    const answered = await h.call('POST', `/api/v1/threads/${ask!.waiting_on!.thread_id}/messages`, { sender_agent_id: team.id.bob, content: 'yes' });
    expect(answered.status).toBe(201);
    const held = await stub.held();
    const resumed = await readThread(h.server.url, thread, key(), { lastEventId: seen.at(-1)!.id });
    const sofar = sentText(held);
    expect(sofar).toBe('r0 r1 r2 r3 ');
    await readerShows(resumed, team.id.lead!, sofar);

    const stop = await h.call('POST', `/api/v1/threads/${thread}/stop`);
    expect(stop.body).toEqual({ thread_id: thread, stopping: 1 });
    expect(await held.ended).toEqual({ aborted: true });
    const reply = await replyOn(resumed, team.id.lead!);
    resumed.close();
    expect(reply.data).toMatchObject({ content: sofar, stopped: true });
    expect((await toolCalls(h, thread)).map((c) => [c.tool, c.status])).toEqual([['ask', 'completed']]);
    // The resumed stream went on from where the first one ended: nothing of it twice.
    const ids = [...seen, ...resumed.items()].map((i) => i.id);
    expect(new Set(ids).size).toBe(ids.length);
  });
});

describe('stop: with a session', () => {
  it('stop: the session\'s stop route stops a reply in the person\'s thread (with the CSRF token) and refuses another person\'s thread with 404', async () => {
    const text = words(30, 's');
    scripts.set('session', () => paced(text, { size: 'word', delayMs: 0 }));
    const team = await makeTeam(h, {
      humans: ['dana', 'bob'],
      agents: [{ name: 'writer', provider: 'openai', model: 'gpt-stub', instructions: 'session' }],
      edges: [['dana', 'writer'], ['bob', 'writer']],
    });
    const dana = await signIn(h, team.id.dana!);
    stub.hold(3);
    const thread = await openThread(h, team.edgeOf('dana', 'writer'), team.id.dana!, 'write');
    // The person reads the thread's stream with the session, as the console does.
    const reader = await readThread(h.server.url, thread, { cookie: dana.cookie }, { after: '0' }, true);
    expect(reader.status).toBe(200);
    const held = await stub.held();
    await readerShows(reader, team.id.writer!, sentText(held));

    const bobs = await openThread(h, team.edgeOf('bob', 'writer'), team.id.bob!, 'hello');
    for (const path of [`/api/v1/me/threads/${bobs}/stop`, `/api/v1/me/threads/${bobs}/stream`]) {
      const answer = path.endsWith('stop') ? await dana.call('POST', path) : await streamStart(`${h.server.url}${path}`, { cookie: dana.cookie });
      expect([answer.status, answer.body.code], path).toEqual([404, 'not_found']);
    }
    const withoutCsrf = await request(`${h.server.url}/api/v1/me/threads/${thread}/stop`, 'POST', undefined, { cookie: dana.cookie });
    expect([withoutCsrf.status, withoutCsrf.body.code]).toEqual([403, 'csrf_failed']);

    const stop = await dana.call('POST', `/api/v1/me/threads/${thread}/stop`);
    expect([stop.status, stop.body]).toEqual([202, { thread_id: thread, stopping: 1 }]);
    expect(await held.ended).toEqual({ aborted: true });
    const reply = await replyOn(reader, team.id.writer!);
    reader.close();
    expect(reply.data).toMatchObject({ content: sentText(held), stopped: true });
    // bob's reply was held too (one hold for every stream): it goes on once released, unstopped.
    stub.release();
    const bobReply = await until(() => messagesOf(h, bobs), (m) => m.length === 2, 'the reply in bob\'s thread');
    expect(bobReply[1]).toMatchObject({ content: text, stopped: false });
  });
});
