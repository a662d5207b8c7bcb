/**
 * Every agent an A2A agent (contract §12), end to end: `@a2a-js/sdk`'s own client against a live
 * acs-server, over JSON-RPC and HTTP+JSON — the card, a blocking send to an echo agent, a stream
 * of a provider agent's task (the OpenAI stand-in), an input-required round trip, get, list,
 * cancel and subscribe — and the refusals: no key, an organization key, a caller without an edge
 * to the agent, another team's key (nothing written). A2A 0.3's JSON-RPC through the SDK's
 * compatibility layer.
 */
import { Role, TaskState, type StreamResponse, type Task } from '@a2a-js/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from '../service/helpers.ts';
import { messagesOf, orgEvents, until } from '../service/turn-helpers.ts';
import { a2aClient, fetchWithKey, partText, sendRequest, startA2aWorld, userMessage, type A2aWorld } from './a2a-helpers.ts';

let w: A2aWorld;
beforeAll(async () => {
  w = await startA2aWorld();
});
afterAll(async () => {
  await w?.close();
});

/** The texts of a task's artifacts, in order. */
function artifactTexts(task: Task): string[] {
  return task.artifacts.flatMap((artifact) => artifact.parts.map(partText).filter((text): text is string => text !== undefined));
}

/** A JSON-RPC call to `url` with `key` (and the `A2A-Version` header unless `version` is null). */
async function rpc(url: string, key: string | undefined, method: string, params: unknown, version: string | null = '1.0') {
  return request(url, 'POST', { jsonrpc: '2.0', id: 1, method, params }, { ...(key ? { 'x-api-key': key } : {}), ...(version ? { 'a2a-version': version } : {}) });
}

/** How many tasks, threads and messages the organization's log has seen created, by type. */
async function writes(): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const event of await orgEvents(w.h, 'task.*,thread.opened,message.created')) counts[event.type] = (counts[event.type] ?? 0) + 1;
  return counts;
}

describe('the agent card', () => {
  it('an agent card names the agent, describes it by the first line of its instructions, and declares both bindings at 1.0 and 0.3, streaming and the x-api-key scheme', async () => {
    const card = await request(w.cardUrl('echo'), 'GET', undefined, { 'x-api-key': w.callerKey, 'a2a-version': '1.0' });
    expect(card.status).toBe(200);
    expect(card.body).toMatchObject({
      name: 'echo',
      description: 'Repeats what it is told.',
      capabilities: { streaming: true, pushNotifications: true },
      securitySchemes: { mcpKey: { apiKeySecurityScheme: { name: 'x-api-key', location: 'header' } } },
      securityRequirements: [{ schemes: { mcpKey: {} } }],
      skills: [expect.objectContaining({ id: 'conversation', name: 'echo' })],
    });
    const bindings = (card.body.supportedInterfaces as Array<{ url: string; protocolBinding: string; protocolVersion: string }>).map((i) => `${i.protocolBinding}@${i.protocolVersion} ${i.url}`);
    expect(bindings.sort()).toEqual([`HTTP+JSON@0.3 ${w.url('echo')}`, `HTTP+JSON@1.0 ${w.url('echo')}`, `JSONRPC@0.3 ${w.url('echo')}`, `JSONRPC@1.0 ${w.url('echo')}`]);
    // The card is for callers with a key: no shared cache keeps it.
    expect(card.headers.get('cache-control')).toBe('no-cache');
  });

  it('an agent card asked for without A2A-Version is A2A 0.3\'s, as the SDK translates it', async () => {
    const card = await request(w.cardUrl('questioner'), 'GET', undefined, { 'x-api-key': w.callerKey });
    expect(card.status).toBe(200);
    expect(card.body).toMatchObject({
      name: 'questioner',
      description: 'QUESTIONER — scripted',
      url: w.url('questioner'),
      preferredTransport: 'JSONRPC',
      protocolVersion: '0.3',
      securitySchemes: { mcpKey: { type: 'apiKey', in: 'header', name: 'x-api-key' } },
    });
    // Its team tools are a skill of their own.
    expect((card.body.skills as Array<{ id: string }>).map((s) => s.id)).toEqual(['conversation', 'team']);
  });
});

describe('sending messages', () => {
  for (const binding of ['JSONRPC', 'HTTP+JSON'] as const) {
    it(`SendMessage over ${binding} to an echo agent answers a completed task whose artifact is the echo, with the thread as its history`, async () => {
      const client = await a2aClient(w.cardUrl('echo'), w.callerKey, binding);
      const task = (await client.sendMessage(sendRequest(userMessage(`hello over ${binding}`)))) as Task;
      expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
      expect(artifactTexts(task)).toEqual([`echo: hello over ${binding}`]);
      expect(task.history.map((m) => [m.role, m.parts.map(partText).join('')])).toEqual([
        [1, `hello over ${binding}`],
        [2, `echo: hello over ${binding}`],
      ]);
      // The task is the service's: its thread is the context, caller asked echo on their edge.
      const stored = await w.h.call('GET', `/api/v1/tasks/${task.id}`);
      expect(stored.body).toMatchObject({ task_id: task.id, thread_id: task.contextId, requester_id: w.team.id.caller, assignee_id: w.team.id.echo, state: 'completed', edge_id: w.team.edgeOf('caller', 'echo') });
      expect((await messagesOf(w.h, task.contextId)).map((m) => m.content)).toEqual([`hello over ${binding}`, `echo: hello over ${binding}`]);
    });
  }

  it('SendStreamingMessage to a provider agent streams the task, its work, the reply as it is written (chunks of its artifact), the whole artifact and its completion', async () => {
    const client = await a2aClient(w.cardUrl('writer'), w.callerKey);
    const events: StreamResponse[] = [];
    for await (const event of client.sendMessageStream(sendRequest(userMessage('a haiku')))) events.push(event);
    const kinds = events.map((e) => e.payload?.$case);
    expect(kinds[0]).toBe('task');
    expect(kinds.at(-1)).toBe('statusUpdate');
    const last = events.at(-1)!.payload!;
    expect(last.$case === 'statusUpdate' && last.value.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const updates = events.flatMap((e) => (e.payload?.$case === 'artifactUpdate' ? [e.payload.value] : []));
    const chunks = updates.filter((u) => !u.lastChunk);
    const whole = updates.filter((u) => u.lastChunk);
    // The stand-in writes word by word, slower than the deltas' batching: one chunk per word.
    expect(chunks.length).toBeGreaterThan(1);
    expect(chunks.map((u) => u.append)).toEqual([false, ...chunks.slice(1).map(() => true)]);
    expect(chunks.map((u) => u.artifact!.parts.map(partText).join('')).join('')).toBe('Draft for: a haiku');
    // The whole artifact replaces the chunks: the same artifact, the reply as posted.
    expect(whole.map((u) => [u.artifact!.artifactId, u.append, u.artifact!.parts.map(partText).join('')])).toEqual([[chunks[0]!.artifact!.artifactId, false, 'Draft for: a haiku']]);
    const task = (events[0]!.payload as { value: Task }).value;
    // The first event is the task as submitted, with the caller's message as its history.
    expect(task.status?.state).toBe(TaskState.TASK_STATE_SUBMITTED);
    expect(task.history.map((m) => [m.role, m.parts.map(partText).join('')])).toEqual([[Role.ROLE_USER, 'a haiku']]);
    const stored = await w.h.call('GET', `/api/v1/tasks/${task.id}`);
    expect(stored.body.artifacts.map((a: { artifact_id: string }) => a.artifact_id)).toEqual([chunks[0]!.artifact!.artifactId]);
    // The chunks come after the task is working, the whole artifact before the final status.
    expect(kinds.indexOf('statusUpdate')).toBeLessThan(events.findIndex((e) => e.payload?.$case === 'artifactUpdate'));
    expect(kinds.lastIndexOf('artifactUpdate')).toBe(kinds.length - 2);
  });

  it('SubscribeToTask joined while a reply is written gets the reply from its first word, as chunks of its artifact, then the whole artifact', async () => {
    const client = await a2aClient(w.cardUrl('writer'), w.callerKey);
    const sent = (await client.sendMessage(sendRequest(userMessage('slowly, a sonnet about the sea'), true))) as Task;
    await until(async () => (await w.h.call('GET', `/api/v1/tasks/${sent.id}`)).body.state, (state) => state === 'working', 'the writer to start');
    const updates = [];
    for await (const event of client.resubscribeTask({ tenant: '', id: sent.id })) if (event.payload?.$case === 'artifactUpdate') updates.push(event.payload.value);
    const reply = 'Draft for: slowly, a sonnet about the sea';
    const chunks = updates.filter((u) => !u.lastChunk);
    expect(chunks.map((u) => u.artifact!.parts.map(partText).join('')).join('')).toBe(reply);
    expect(chunks[0]!.append).toBe(false);
    expect(updates.at(-1)).toMatchObject({ lastChunk: true, append: false, artifact: { artifactId: chunks[0]!.artifact!.artifactId } });
  });

  it('a task whose agent asks back is input-required; the caller\'s next message with its taskId answers it and the task completes', async () => {
    const client = await a2aClient(w.cardUrl('questioner'), w.callerKey);
    const asked = (await client.sendMessage(sendRequest(userMessage('paint the fence')))) as Task;
    expect(asked.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(asked.status?.message?.parts.map(partText).join('')).toBe('Which colour?');
    const done = (await client.sendMessage(sendRequest(userMessage('green', asked.id)))) as Task;
    expect(done.id).toBe(asked.id);
    expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(artifactTexts(done)).toEqual(['Painted it green']);
    // One thread holds the whole exchange.
    expect((await messagesOf(w.h, asked.contextId)).map((m) => m.content)).toEqual(['paint the fence', 'Which colour?', 'green', 'Painted it green']);
  });

  it('a message continuing a final task is refused and posts nothing', async () => {
    const client = await a2aClient(w.cardUrl('echo'), w.callerKey);
    const task = (await client.sendMessage(sendRequest(userMessage('once')))) as Task;
    await expect(client.sendMessage(sendRequest(userMessage('twice', task.id)))).rejects.toThrow(/terminal state/);
    expect((await messagesOf(w.h, task.contextId)).map((m) => m.content)).toEqual(['once', 'echo: once']);
  });

  it('a SendMessage with an Idempotency-Key is answered afresh each time: JSON-RPC has its own ids, and no claim is kept', async () => {
    const send = () =>
      request(w.url('echo'), 'POST', { jsonrpc: '2.0', id: 7, method: 'SendMessage', params: { message: { messageId: crypto.randomUUID(), role: 'ROLE_USER', parts: [{ text: 'same key' }] } } }, {
        'x-api-key': w.callerKey,
        'a2a-version': '1.0',
        'idempotency-key': 'a2a-once',
      });
    const first = await send();
    const second = await send();
    expect(first.body.result.task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(second.body.result.task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(second.body.result.task.id).not.toBe(first.body.result.task.id);
    expect(second.headers.get('idempotent-replayed')).toBeNull();
  });

  it('A2A 0.3\'s message/send (no A2A-Version) gets a 0.3 task through the SDK\'s compatibility layer', async () => {
    const sent = await rpc(w.url('echo'), w.callerKey, 'message/send', { message: { kind: 'message', messageId: crypto.randomUUID(), role: 'user', parts: [{ kind: 'text', text: 'old client' }] } }, null);
    expect(sent.status).toBe(200);
    expect(sent.body.result).toMatchObject({ kind: 'task', status: { state: 'completed' }, artifacts: [{ parts: [{ kind: 'text', text: 'echo: old client' }] }] });
  });
});

describe('reading, cancelling and following tasks', () => {
  it('GetTask and ListTasks show the caller\'s tasks at this agent only, newest first', async () => {
    const client = await a2aClient(w.cardUrl('echo'), w.callerKey);
    const first = (await client.sendMessage(sendRequest(userMessage('list me 1')))) as Task;
    const second = (await client.sendMessage(sendRequest(userMessage('list me 2')))) as Task;
    const got = await client.getTask({ tenant: '', id: first.id, historyLength: 1 });
    expect(got.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(got.history.map((m) => m.parts.map(partText).join(''))).toEqual(['echo: list me 1']);
    const listed = await client.listTasks({ tenant: '', contextId: '', status: TaskState.TASK_STATE_COMPLETED, pageSize: 100, pageToken: '', historyLength: undefined, statusTimestampAfter: undefined, includeArtifacts: true });
    const ids = listed.tasks.map((t) => t.id);
    expect(ids.indexOf(second.id)).toBeLessThan(ids.indexOf(first.id));
    expect(ids.indexOf(first.id)).toBeGreaterThanOrEqual(0);
    expect(listed.totalSize).toBe(listed.tasks.length);
    // Only tasks asked of echo: the writer's and questioner's tasks are at their own endpoints.
    for (const task of listed.tasks) expect((await w.h.call('GET', `/api/v1/tasks/${task.id}`)).body.assignee_id).toBe(w.team.id.echo);
    // Paging: one at a time, with the page token.
    const page1 = await client.listTasks({ tenant: '', contextId: '', status: 0, pageSize: 1, pageToken: '', historyLength: undefined, statusTimestampAfter: undefined, includeArtifacts: false });
    expect(page1.tasks.map((t) => t.id)).toEqual([ids[0]]);
    expect(page1.tasks[0]!.artifacts).toEqual([]);
    const page2 = await client.listTasks({ tenant: '', contextId: '', status: 0, pageSize: 1, pageToken: page1.nextPageToken, historyLength: undefined, statusTimestampAfter: undefined, includeArtifacts: false });
    expect(page2.tasks.map((t) => t.id)).toEqual([ids[1]]);
    // A task of another agent is not found at this one.
    const elsewhere = (await (await a2aClient(w.cardUrl('writer'), w.callerKey)).sendMessage(sendRequest(userMessage('elsewhere')))) as Task;
    await expect(client.getTask({ tenant: '', id: elsewhere.id, historyLength: undefined })).rejects.toThrow(/not found/i);
  });

  it('CancelTask cancels a task whose agent waits on a person; a final task is not cancelable', async () => {
    const client = await a2aClient(w.cardUrl('asker'), w.callerKey);
    const task = (await client.sendMessage(sendRequest(userMessage('repaint the barn'), true))) as Task;
    expect([TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING]).toContain(task.status?.state);
    // The agent's turn asks dana and waits: the task is working.
    await until(() => client.getTask({ tenant: '', id: task.id, historyLength: undefined }), (t) => t.status?.state === TaskState.TASK_STATE_WORKING, 'the asker\'s task to be working');
    const canceled = await client.cancelTask({ tenant: '', id: task.id, metadata: undefined });
    expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    expect((await w.h.call('GET', `/api/v1/tasks/${task.id}`)).body.state).toBe('canceled');
    // Canceling again answers the canceled task; a completed task is not cancelable.
    expect((await client.cancelTask({ tenant: '', id: task.id, metadata: undefined })).status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    const echo = await a2aClient(w.cardUrl('echo'), w.callerKey);
    const done = (await echo.sendMessage(sendRequest(userMessage('done already')))) as Task;
    await expect(echo.cancelTask({ tenant: '', id: done.id, metadata: undefined })).rejects.toThrow(/not cancelable/i);
  });

  it('SubscribeToTask follows a task from where it stands to its end', async () => {
    const client = await a2aClient(w.cardUrl('questioner'), w.callerKey);
    const asked = (await client.sendMessage(sendRequest(userMessage('paint the shed')))) as Task;
    expect(asked.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const events: StreamResponse[] = [];
    const following = (async () => {
      for await (const event of client.resubscribeTask({ tenant: '', id: asked.id })) events.push(event);
    })();
    await until(async () => events.length, (n) => n > 0, 'the subscription\'s first event');
    await client.sendMessage(sendRequest(userMessage('blue', asked.id)));
    await following;
    expect(events[0]!.payload).toMatchObject({ $case: 'task', value: { id: asked.id } });
    const last = events.at(-1)!.payload!;
    expect(last.$case === 'statusUpdate' && last.value.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(events.some((e) => e.payload?.$case === 'artifactUpdate' && partText(e.payload.value.artifact!.parts[0]!) === 'Painted it blue')).toBe(true);
    // A final task has nothing to follow.
    await expect(
      (async () => {
        for await (const _ of client.resubscribeTask({ tenant: '', id: asked.id })) void _;
      })(),
    ).rejects.toThrow(/terminal state/);
  });
});

describe('who may call', () => {
  it('a request without a key is 401 and one with an organization key 403, before anything of A2A runs', async () => {
    const none = await rpc(w.url('echo'), undefined, 'SendMessage', {});
    expect(none.status).toBe(401);
    expect(none.body.code).toBe('unauthenticated');
    const card = await request(w.cardUrl('echo'), 'GET', undefined, { 'x-api-key': w.h.apiKey });
    expect(card.status).toBe(403);
    expect(card.body.code).toBe('wrong_key_type');
  });

  it('a caller with no edge to the agent, another team\'s key, or an agent id that does not exist: the error of an unknown task on every method, a 404 card, and nothing written', async () => {
    const before = await writes();
    const missing = `${w.h.server.url}/a2a/v1/agents/${crypto.randomUUID()}`;
    const cases = [
      { url: w.url('stranger'), key: w.callerKey },
      { url: w.url('echo'), key: w.outsiderKey },
      { url: missing, key: w.callerKey },
    ];
    // Per method, what each refusal said (task ids aside).
    const answers = new Map<string, Set<string>>();
    for (const { url, key } of cases) {
      const card = await request(`${url}/.well-known/agent-card.json`, 'GET', undefined, { 'x-api-key': key, 'a2a-version': '1.0' });
      expect(card.status).toBe(404);
      const message = { messageId: crypto.randomUUID(), role: 'ROLE_USER', parts: [{ text: 'let me in' }] };
      for (const [method, params] of [
        ['SendMessage', { message }],
        ['SendStreamingMessage', { message }],
        ['ListTasks', {}],
        ['GetTask', { id: crypto.randomUUID() }],
        ['CancelTask', { id: crypto.randomUUID() }],
      ] as const) {
        const answer = await rpc(url, key, method, params);
        expect(answer.status, `${method} ${url}`).toBe(200);
        expect(answer.body.error?.code, `${method} ${url}: ${JSON.stringify(answer.body)}`).toBe(-32001);
        answers.set(method, (answers.get(method) ?? new Set()).add(String(answer.body.error.message).replace(/[0-9a-f-]{36}/g, 'ID')));
      }
      // HTTP+JSON alike.
      const rest = await request(`${url}/message:send`, 'POST', { message }, { 'x-api-key': key, 'a2a-version': '1.0' });
      expect(rest.status).toBe(404);
      expect(rest.body.error.status).toBe('NOT_FOUND');
      // A2A 0.3 alike.
      const old = await rpc(url, key, 'message/send', { message: { kind: 'message', messageId: crypto.randomUUID(), role: 'user', parts: [{ kind: 'text', text: 'hi' }] } }, null);
      expect(old.body.error?.code).toBe(-32001);
    }
    // A refusal says the same whatever its reason: nothing tells an agent of another team from one that does not exist.
    for (const [method, said] of answers) expect([...said], method).toHaveLength(1);
    expect(await writes()).toEqual(before);
  });

});

describe('held waits', () => {
  let small: A2aWorld;
  beforeAll(async () => {
    small = await startA2aWorld({ heldWaits: { perKey: 1 } });
  });
  afterAll(async () => {
    await small?.close();
  });

  it('a stream holds a place among the held waits of its key while it lasts: past the bound another is 429, and the place comes back when it ends', async () => {
    const client = await a2aClient(small.cardUrl('questioner'), small.callerKey);
    const asked = (await client.sendMessage(sendRequest(userMessage('paint the gate')))) as Task;
    const subscribe = (signal?: AbortSignal) =>
      fetchWithKey(small.callerKey)(small.url('questioner'), {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'a2a-version': '1.0' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SubscribeToTask', params: { id: asked.id } }),
        ...(signal ? { signal } : {}),
      });
    const controller = new AbortController();
    const first = await subscribe(controller.signal);
    expect(first.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const refused = await subscribe();
    expect(refused.status).toBe(429);
    expect(((await refused.json()) as { code: string }).code).toBe('too_many_waits');
    controller.abort();
    const again = await until(() => subscribe(), (r) => r.status === 200, 'a stream to be accepted once the first ended');
    await again.body?.cancel();
  });
});
