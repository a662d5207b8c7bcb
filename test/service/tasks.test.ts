/**
 * Tasks (contract §12) against a real acs-server: the routes with an organization key, every
 * transition and refusal (a final task, a participant who is not the requester, another
 * organization's key), the events written with each change, the MCP task tools of an external
 * agent, and the turns of agents that work on their tasks — the echo agent, whose reply completes
 * its task, and a provider agent (the OpenAI stand-in) that asks back, waits for the answer and
 * completes — and a cancel that stops the work: a turn streaming its reply, a turn waiting on its
 * ask, and a turn that had not begun. Runs on PGlite and, in the `postgres` project, on PostgreSQL.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Task, TaskList } from '../../api/tasks.ts';
import { AcsClient } from '../../client/acs-client.ts';
import { AcsApiError } from '../../client/errors.ts';
import type { DomainDeps } from '../../service/domain/caller.ts';
import { createLocalNotifier } from '../../service/domain/notifier.ts';
import { waitForTask, waitForTaskAsParticipant } from '../../service/domain/tasks.ts';
import { createEventHub } from '../../service/events/hub.ts';
import { callTool as callMcpTool, connectMcp, toolError } from '../support/mcp.ts';
import { callTool, type Conversation, type ModelScript, type ScriptReply } from '../support/model-script.ts';
import { scriptedToolCompletions, startOpenAiStub, textOf, toolCallCompletion, type OpenAiStub, type StubRequest } from '../support/openai-stub.ts';
import { request, startHarness, startHarnessWithDb, type Harness, type Reply } from './helpers.ts';
import { readThread, writtenSoFar, type ThreadReader } from './stream-helpers.ts';
import { askAnswer, makeTeam, messagesOf, orgEvents, toolCalls, until, type BuiltTeam, type OrgEvent } from './turn-helpers.ts';

const unknownId = '6f1f3c1e-0000-4000-8000-000000000000';

/** Scripts of the OpenAI stand-in by the agent's instructions (the system prompt's first word). */
const scripts = new Map<string, ModelScript>();
const byInstructions: ModelScript = (c: Conversation): ScriptReply | Promise<ScriptReply> => scripts.get((c.system ?? '').split(/\s/)[0]!)?.(c);

let openai: OpenAiStub;
let h: Harness;
const clients: Client[] = [];

beforeAll(async () => {
  openai = await startOpenAiStub(scriptedToolCompletions(byInstructions));
  h = await startHarness({ inMemory: true, env: { ...process.env, OPENAI_BASE_URL: `${openai.origin}/v1` } });
  for (const provider of ['openai', 'echo']) {
    expect((await h.call('PUT', `/api/v1/organizations/${h.orgId}/api-keys/${provider}`, { api_key: `${provider}-key` })).status).toBe(200);
  }
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  await h?.server.close();
  await openai?.close();
});

/** REST with the harness's organization key. */
const api = (method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Reply> => h.call(method, `/api/v1${path}`, body, headers);

/** A team of dana (human), bot (an external agent: nothing answers for it) and carl, with edges dana–bot and dana–carl. */
function externalTeam(): Promise<BuiltTeam> {
  return makeTeam(h, {
    humans: ['dana'],
    agents: [{ name: 'bot' }, { name: 'carl' }],
    edges: [
      ['dana', 'bot'],
      ['dana', 'carl'],
    ],
  });
}

/** dana asks bot for a task over REST; expects 201. Output: the Task. */
async function danaAsksBot(team: BuiltTeam, text = 'Summarise the report'): Promise<Task> {
  const created = await api('POST', `/edges/${team.edgeOf('dana', 'bot')}/tasks`, { requester_id: team.id.dana, parts: [{ text }] });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return Task.parse(created.body);
}

/** What the organization's log holds now, to compare before and after a refused request. */
async function counts(taskId: string) {
  const task = (await api('GET', `/tasks/${taskId}`)).body;
  return { events: (await orgEvents(h)).length, messages: (await messagesOf(h, task.thread_id)).length, task };
}

/** dana asks `assignee` of `team` for a task over REST; expects 201. Output: the Task. */
async function danaAsks(team: BuiltTeam, assignee: string, text: string): Promise<Task> {
  const created = await api('POST', `/edges/${team.edgeOf('dana', assignee)}/tasks`, { requester_id: team.id.dana, parts: [{ text }] });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return Task.parse(created.body);
}

/** The requests the OpenAI stand-in got for the agent whose instructions start with `script`. */
function requestsOf(script: string): StubRequest[] {
  return openai.requests.filter((r) => r.body.messages.some((m) => (m.role === 'system' || m.role === 'developer') && textOf(m.content).startsWith(script)));
}

/** The task's events in the log, oldest first. */
async function taskEvents(taskId: string): Promise<OrgEvent[]> {
  return (await orgEvents(h, 'task.*')).filter((e) => e.data.task_id === taskId);
}

async function mcpClient(agentId: string): Promise<Client> {
  const key = await api('POST', `/agents/${agentId}/mcp-keys`);
  expect(key.status).toBe(201);
  const client = await connectMcp(h.server.url, key.body.mcp_key);
  clients.push(client);
  return client;
}

describe('tasks: routes', () => {
  it('createTask: POST /edges/{edge_id}/tasks answers 201 with a submitted task whose thread opens with the requester\'s parts as its first message', async () => {
    const team = await externalTeam();
    const file = await api('POST', '/attachments', { filename: 'report.txt', content_type: 'text/plain', data_base64: Buffer.from('pages').toString('base64') });
    expect(file.status).toBe(201);
    const created = await api('POST', `/edges/${team.edgeOf('dana', 'bot')}/tasks`, {
      requester_id: team.id.dana,
      parts: [{ text: 'Summarise the report\nin three lines' }, { data: { pages: 3, tags: ['q3'] } }, { file: { name: 'report.txt', attachment_id: file.body.attachment_id } }],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const task = Task.parse(created.body);
    expect(task).toMatchObject({
      org_id: h.orgId,
      team_id: team.teamId,
      edge_id: team.edgeOf('dana', 'bot'),
      requester_id: team.id.dana,
      assignee_id: team.id.bot,
      title: 'Summarise the report',
      state: 'submitted',
      status_message: null,
      artifacts: [],
    });
    const page = (await api('GET', `/threads/${task.thread_id}`)).body;
    expect(page).toMatchObject({ subject: 'Summarise the report', edge_id: task.edge_id, message_count: 1, awaiting_reply_from: team.id.bot });
    expect(page.messages[0]).toMatchObject({
      sender_id: team.id.dana,
      content: 'Summarise the report\nin three lines\n\n```json\n{\n  "pages": 3,\n  "tags": [\n    "q3"\n  ]\n}\n```',
      attachments: [file.body.attachment_id],
      expects_reply: true,
    });
    const read = await api('GET', `/tasks/${task.task_id}`);
    expect(read.status).toBe(200);
    expect(read.body).toEqual(created.body);
    // On /v1 too, and a title given is kept.
    const titled = await h.call('POST', `/v1/edges/${team.edgeOf('dana', 'carl')}/tasks`, { requester_id: team.id.carl, title: 'Plan', parts: [{ text: 'x' }] });
    expect(titled.status).toBe(201);
    expect(titled.body).toMatchObject({ title: 'Plan', requester_id: team.id.carl, assignee_id: team.id.dana });
  });

  it('createTask: a requester who is not on the edge is 403 not_a_participant, and nothing is written', async () => {
    const team = await externalTeam();
    const before = (await orgEvents(h)).length;
    const refused = await api('POST', `/edges/${team.edgeOf('dana', 'bot')}/tasks`, { requester_id: team.id.carl, parts: [{ text: 'do it' }] });
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ code: 'not_a_participant', errors: [{ path: 'requester_id' }] });
    expect((await api('GET', `/edges/${team.edgeOf('dana', 'bot')}/threads`)).body.threads).toEqual([]);
    expect((await api('GET', `/teams/${team.teamId}/tasks`)).body.tasks).toEqual([]);
    expect((await orgEvents(h)).length).toBe(before);
  });

  it('createTask: bad bodies are 400 naming each problem; a file of another organization is 422 unknown_reference at its part, and nothing is written', async () => {
    const team = await externalTeam();
    const edge = team.edgeOf('dana', 'bot');
    const cases: Array<[unknown, string]> = [
      [{ requester_id: team.id.dana, parts: [] }, 'parts'],
      [{ requester_id: team.id.dana }, 'parts'],
      [{ requester_id: team.id.dana, parts: [{ text: '' }] }, 'parts.0'],
      [{ requester_id: team.id.dana, parts: [{ text: 'a', data: 1 }] }, 'parts.0'],
      [{ requester_id: team.id.dana, parts: [{ text: 'a' }], extra: true }, 'extra'],
      [{ requester_id: team.id.dana, parts: Array.from({ length: 21 }, () => ({ text: 'a' })) }, 'parts'],
      [{ requester_id: team.id.dana, parts: [{ text: 'a'.repeat(20_000) }, { text: 'b'.repeat(20_000) }] }, 'parts'],
    ];
    for (const [body, path] of cases) {
      const refused = await api('POST', `/edges/${edge}/tasks`, body);
      expect(refused.status, JSON.stringify(body).slice(0, 200)).toBe(400);
      expect(refused.body.code).toBe('invalid_request');
      expect(refused.body.errors.map((e: { path: string }) => e.path), JSON.stringify(refused.body.errors)).toContain(path);
    }
    const other = await h.server.provisionOrganization('tasks-other-files');
    const foreign = await request(`${h.server.url}/api/v1/attachments`, 'POST', { filename: 'x.txt', content_type: 'text/plain', data_base64: 'eA==' }, { 'x-api-key': other.api_key });
    const unknown = await api('POST', `/edges/${edge}/tasks`, { requester_id: team.id.dana, parts: [{ text: 'see' }, { file: { attachment_id: foreign.body.attachment_id } }] });
    expect(unknown.status).toBe(422);
    expect(unknown.body).toMatchObject({ code: 'unknown_reference', errors: [{ path: 'parts.1.file.attachment_id' }] });
    expect((await api('GET', `/edges/${edge}/threads`)).body.threads).toEqual([]);
  });

  it('tasks: another organization\'s key gets 404 on every task route, and changes nothing', async () => {
    const team = await externalTeam();
    const task = await danaAsksBot(team);
    const other = await h.server.provisionOrganization('tasks-other');
    const as = (method: string, path: string, body?: unknown) => request(`${h.server.url}/api/v1${path}`, method, body, { 'x-api-key': other.api_key });
    const before = await counts(task.task_id);
    const replies = [
      await as('POST', `/edges/${task.edge_id}/tasks`, { requester_id: team.id.dana, parts: [{ text: 'x' }] }),
      await as('GET', `/tasks/${task.task_id}`),
      await as('GET', `/teams/${team.teamId}/tasks`),
      await as('POST', `/tasks/${task.task_id}/cancel`),
      await as('POST', `/tasks/${task.task_id}/status`, { state: 'working', message: 'hello' }),
      await as('POST', `/tasks/${task.task_id}/artifacts`, { parts: [{ text: 'x' }] }),
    ];
    for (const reply of replies) expect([reply.status, reply.body.code]).toEqual([404, 'not_found']);
    expect(await counts(task.task_id)).toEqual(before);
    // An id that is no UUID, and one that names no task, read the same.
    expect((await api('GET', '/tasks/not-a-task')).status).toBe(404);
    expect((await api('GET', `/tasks/${unknownId}`)).status).toBe(404);
  });

  it('listTeamTasks: newest first, filtered by state and assignee, paged with after and next_after; an after of no task of the team is 400 invalid_cursor', async () => {
    const team = await externalTeam();
    const first = await danaAsksBot(team, 'one');
    const second = await danaAsksBot(team, 'two');
    const third = await api('POST', `/edges/${team.edgeOf('dana', 'carl')}/tasks`, { requester_id: team.id.dana, parts: [{ text: 'three' }] });
    expect((await api('POST', `/tasks/${second.task_id}/status`, { state: 'working' })).status).toBe(200);

    const all = TaskList.parse((await api('GET', `/teams/${team.teamId}/tasks`)).body);
    expect(all.tasks.map((t) => t.title)).toEqual(['three', 'two', 'one']);
    expect(all.next_after).toBe(first.task_id);
    const working = (await api('GET', `/teams/${team.teamId}/tasks?state=working`)).body;
    expect(working.tasks.map((t: Task) => t.task_id)).toEqual([second.task_id]);
    const carls = (await api('GET', `/teams/${team.teamId}/tasks?assignee_id=${team.id.carl}`)).body;
    expect(carls.tasks.map((t: Task) => t.task_id)).toEqual([third.body.task_id]);

    const pageOne = (await api('GET', `/teams/${team.teamId}/tasks?limit=2`)).body;
    expect(pageOne.tasks.map((t: Task) => t.title)).toEqual(['three', 'two']);
    const pageTwo = (await api('GET', `/teams/${team.teamId}/tasks?limit=2&after=${pageOne.next_after}`)).body;
    expect(pageTwo.tasks.map((t: Task) => t.title)).toEqual(['one']);
    const end = (await api('GET', `/teams/${team.teamId}/tasks?limit=2&after=${pageTwo.next_after}`)).body;
    expect(end).toEqual({ tasks: [], next_after: null });

    const elsewhere = await danaAsksBot(await externalTeam());
    const cursor = await api('GET', `/teams/${team.teamId}/tasks?after=${elsewhere.task_id}`);
    expect([cursor.status, cursor.body.code]).toEqual([400, 'invalid_cursor']);
    const bad = await api('GET', `/teams/${team.teamId}/tasks?state=done&limit=0&sort=asc`);
    expect(bad.status).toBe(400);
    expect((await api('GET', `/teams/${unknownId}/tasks`)).status).toBe(404);
  });

  it('setTaskStatus: the assignee moves a task working, input-required with its question as status message, working again, then completed with a reason kept', async () => {
    const team = await externalTeam();
    const task = await danaAsksBot(team);
    const working = await api('POST', `/tasks/${task.task_id}/status`, { state: 'working' });
    expect(working.status).toBe(200);
    expect(working.body).toMatchObject({ state: 'working', status_message: null });

    const asked = await api('POST', `/tasks/${task.task_id}/status`, { state: 'input-required', message: 'Which quarter?' });
    expect(asked.status).toBe(200);
    expect(asked.body).toMatchObject({ state: 'input-required', status_message: { sender_id: team.id.bot, content: 'Which quarter?', thread_id: task.thread_id } });
    const messages = await messagesOf(h, task.thread_id);
    expect(messages.map((m) => [m.sender_id, m.content])).toEqual([
      [team.id.dana, 'Summarise the report'],
      [team.id.bot, 'Which quarter?'],
    ]);
    expect(asked.body.status_message.message_id).toBe(messages[1]!.message_id);
    // The same state again replaces the status message.
    const again = await api('POST', `/tasks/${task.task_id}/status`, { state: 'input-required', message: 'Q3 or Q4?' });
    expect(again.body.status_message.content).toBe('Q3 or Q4?');

    expect((await api('POST', `/tasks/${task.task_id}/status`, { state: 'working' })).body).toMatchObject({ state: 'working', status_message: null });
    const done = await api('POST', `/tasks/${task.task_id}/status`, { state: 'completed', message: 'Done: see the artifact.' });
    expect(done.body).toMatchObject({ state: 'completed', status_message: { content: 'Done: see the artifact.' } });
    expect(Date.parse(done.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(task.updated_at));

    const events = await taskEvents(task.task_id);
    expect(events.map((e) => [e.type, e.data.state])).toEqual([
      ['task.created', 'submitted'],
      ['task.updated', 'working'],
      ['task.updated', 'input-required'],
      ['task.updated', 'input-required'],
      ['task.updated', 'working'],
      ['task.updated', 'completed'],
    ]);
    expect(events.at(-1)!.data).toEqual(done.body);
    expect(events.every((e) => e.team_id === team.teamId)).toBe(true);
  });

  it('setTaskStatus: submitted, an unknown state or an empty message is 400 naming the field, and nothing is written', async () => {
    const task = await danaAsksBot(await externalTeam());
    const before = await counts(task.task_id);
    for (const [body, path] of [
      [{ state: 'submitted' }, 'state'],
      [{ state: 'done' }, 'state'],
      [{ state: 'working', message: '  ' }, 'message'],
      [{}, 'state'],
    ] as const) {
      const refused = await api('POST', `/tasks/${task.task_id}/status`, body);
      expect(refused.status).toBe(400);
      expect(refused.body.errors.map((e: { path: string }) => e.path)).toContain(path);
    }
    expect(await counts(task.task_id)).toEqual(before);
  });

  it('tasks: every final state refuses every change with 409 task_final, and nothing is written', async () => {
    const team = await externalTeam();
    for (const final of ['completed', 'failed', 'rejected', 'canceled'] as const) {
      const task = await danaAsksBot(team, `to be ${final}`);
      const ended = final === 'canceled' ? await api('POST', `/tasks/${task.task_id}/cancel`) : await api('POST', `/tasks/${task.task_id}/status`, { state: final });
      expect(ended.status).toBe(200);
      expect(ended.body.state).toBe(final);
      const before = await counts(task.task_id);
      const refusals = [
        await api('POST', `/tasks/${task.task_id}/cancel`),
        await api('POST', `/tasks/${task.task_id}/status`, { state: 'working', message: 'back to it' }),
        await api('POST', `/tasks/${task.task_id}/status`, { state: final }),
        await api('POST', `/tasks/${task.task_id}/artifacts`, { parts: [{ text: 'late' }] }),
      ];
      for (const refused of refusals) {
        expect(refused.status, `${final}: ${JSON.stringify(refused.body)}`).toBe(409);
        expect(refused.body).toMatchObject({ code: 'task_final', state: final });
      }
      expect(await counts(task.task_id), final).toEqual(before);
    }
  });

  it('cancelTask: the requester cancels a task in any state that is not final; the status message goes', async () => {
    const team = await externalTeam();
    const task = await danaAsksBot(team);
    await api('POST', `/tasks/${task.task_id}/status`, { state: 'input-required', message: 'Which one?' });
    const canceled = await api('POST', `/tasks/${task.task_id}/cancel`);
    expect(canceled.status).toBe(200);
    expect(canceled.body).toMatchObject({ task_id: task.task_id, state: 'canceled', status_message: null });
    expect((await taskEvents(task.task_id)).at(-1)).toMatchObject({ type: 'task.updated', data: { state: 'canceled' } });
  });

  it('addTaskArtifact: 201 with the new artifact last, its parts as given; the state does not change', async () => {
    const team = await externalTeam();
    const task = await danaAsksBot(team);
    await api('POST', `/tasks/${task.task_id}/status`, { state: 'working' });
    const first = await api('POST', `/tasks/${task.task_id}/artifacts`, { name: 'summary', parts: [{ text: 'Three lines.' }] });
    expect(first.status).toBe(201);
    const second = await api('POST', `/tasks/${task.task_id}/artifacts`, { parts: [{ data: { score: 0.9, ok: true } }] });
    expect(second.status).toBe(201);
    expect(second.body.state).toBe('working');
    expect(second.body.artifacts.map((a: { name: string | null; parts: unknown }) => [a.name, a.parts])).toEqual([
      ['summary', [{ text: 'Three lines.' }]],
      [null, [{ data: { score: 0.9, ok: true } }]],
    ]);
    expect((await api('GET', `/tasks/${task.task_id}`)).body).toEqual(second.body);
    expect((await taskEvents(task.task_id)).at(-1)!.data).toEqual(second.body);
    const foreign = await api('POST', `/tasks/${task.task_id}/artifacts`, { parts: [{ file: { attachment_id: unknownId } }] });
    expect(foreign.status).toBe(422);
    expect(foreign.body.errors[0].path).toBe('parts.0.file.attachment_id');
  });

  it('tasks: task.created comes after the thread.opened and message.created of its thread, and carries the Task as created', async () => {
    const team = await externalTeam();
    const task = await danaAsksBot(team);
    const events = (await orgEvents(h)).filter((e) => e.data.thread_id === task.thread_id);
    expect(events.map((e) => e.type)).toEqual(['thread.opened', 'message.created', 'task.created']);
    expect(events[2]!.data).toEqual(task);
  });

  it('tasks: deleting the edge deletes its tasks with their threads', async () => {
    const team = await externalTeam();
    const task = await danaAsksBot(team);
    expect((await api('DELETE', `/edges/${task.edge_id}`)).status).toBe(200);
    expect((await api('GET', `/tasks/${task.task_id}`)).status).toBe(404);
    expect((await api('GET', `/threads/${task.thread_id}`)).status).toBe(404);
    expect((await api('GET', `/teams/${team.teamId}/tasks`)).body.tasks).toEqual([]);
  });

  it('tasks: a POST repeated with its Idempotency-Key creates one task and answers the same', async () => {
    const team = await externalTeam();
    const body = { requester_id: team.id.dana, parts: [{ text: 'once' }] };
    const headers = { 'idempotency-key': `task-${Math.random()}` };
    const first = await api('POST', `/edges/${team.edgeOf('dana', 'bot')}/tasks`, body, headers);
    const second = await api('POST', `/edges/${team.edgeOf('dana', 'bot')}/tasks`, body, headers);
    expect(first.status).toBe(201);
    expect(second.status).toBe(201);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(second.body).toEqual(first.body);
    expect((await api('GET', `/teams/${team.teamId}/tasks`)).body.tasks).toHaveLength(1);
    const cancelKey = { 'idempotency-key': `cancel-${Math.random()}` };
    expect((await api('POST', `/tasks/${first.body.task_id}/cancel`, undefined, cancelKey)).status).toBe(200);
    // Replayed: the stored answer, not a 409 of a second cancel.
    const replayed = await api('POST', `/tasks/${first.body.task_id}/cancel`, undefined, cancelKey);
    expect([replayed.status, replayed.headers.get('idempotent-replayed')]).toEqual([200, 'true']);
  });
});

describe('tasks: agents that work on them', () => {
  it('echo agent: its turn moves its task to working, and its reply completes the task with the echo as an artifact, in the reply\'s transaction', async () => {
    const team = await makeTeam(h, { humans: ['dana'], agents: [{ name: 'echo', provider: 'echo' }], edges: [['dana', 'echo']] });
    const created = await api('POST', `/edges/${team.edgeOf('dana', 'echo')}/tasks`, { requester_id: team.id.dana, parts: [{ text: 'ping' }] });
    expect(created.status).toBe(201);
    const done = await until(
      async () => (await api('GET', `/tasks/${created.body.task_id}`)).body,
      (task) => task.state === 'completed',
      'the echo agent to complete its task',
    );
    const messages = await messagesOf(h, done.thread_id);
    expect(messages.map((m) => [m.sender_id, m.content])).toEqual([
      [team.id.dana, 'ping'],
      [team.id.echo, 'echo: ping'],
    ]);
    expect(done).toMatchObject({ status_message: { message_id: messages[1]!.message_id, content: 'echo: ping' }, artifacts: [{ name: null, parts: [{ text: 'echo: ping' }] }] });
    const events = (await orgEvents(h)).filter((e) => e.data.thread_id === done.thread_id && e.type !== 'thread.opened');
    expect(events.map((e) => [e.type, e.data.state ?? e.data.content])).toEqual([
      ['message.created', 'ping'],
      ['task.created', 'submitted'],
      ['task.updated', 'working'],
      ['message.created', 'echo: ping'],
      ['task.updated', 'completed'],
    ]);
  });

  it('a provider agent asks back: the task is input-required with the question as status message, working again when the answer comes, then completed with the reply', async () => {
    scripts.set('askback-writer', (c) => {
      const answer = askAnswer(c.resultOf('ask'));
      return answer ? `Report for ${answer.content}` : callTool('ask', { peer: 'dana', content: 'Which quarter?' });
    });
    const team = await makeTeam(h, {
      humans: ['dana'],
      agents: [{ name: 'writer', provider: 'openai', model: 'gpt-stub', instructions: 'askback-writer — scripted', tools: { team: true } }],
      edges: [['dana', 'writer']],
    });
    const created = await api('POST', `/edges/${team.edgeOf('dana', 'writer')}/tasks`, { requester_id: team.id.dana, parts: [{ text: 'Write the report' }] });
    expect(created.status).toBe(201);
    const taskId: string = created.body.task_id;
    const asking = await until(async () => (await api('GET', `/tasks/${taskId}`)).body, (t) => t.state === 'input-required', 'the writer to ask back');
    // The question went into the task's own thread, to its requester.
    expect(asking.status_message).toMatchObject({ sender_id: team.id.writer, content: 'Which quarter?', thread_id: asking.thread_id, expects_reply: true });
    expect((await api('GET', `/edges/${team.edgeOf('dana', 'writer')}/threads`)).body.threads).toHaveLength(1);

    expect((await api('POST', `/threads/${asking.thread_id}/messages`, { sender_agent_id: team.id.dana, content: 'Q3' })).status).toBe(201);
    const done = await until(async () => (await api('GET', `/tasks/${taskId}`)).body, (t) => t.state === 'completed', 'the writer to complete');
    expect(done.artifacts).toEqual([expect.objectContaining({ parts: [{ text: 'Report for Q3' }] })]);
    expect(done.status_message).toMatchObject({ sender_id: team.id.writer, content: 'Report for Q3' });
    expect((await taskEvents(taskId)).map((e) => e.data.state)).toEqual(['submitted', 'working', 'input-required', 'working', 'completed']);
    // Dana's answer was the ask's, not a message for another turn: the writer replied once.
    const messages = await messagesOf(h, done.thread_id);
    expect(messages.map((m) => m.content)).toEqual(['Write the report', 'Which quarter?', 'Q3', 'Report for Q3']);
  });

  it('cancel: a provider agent\'s turn streaming on its task is stopped — the model call is aborted, the tool call it was writing is not made, the text so far is posted stopped, and the task stays canceled without an artifact', async () => {
    // Step 1 calls whoami; step 2 streams a line and then calls list_edges — unless it is stopped.
    scripts.set('cancel-streamer', (c) => {
      if (!c.resultOf('whoami')) return callTool('whoami', {});
      const step = toolCallCompletion(c.model, [callTool('list_edges', {})]);
      if (step === 'hang') return undefined;
      (step.body as { choices: Array<{ message: { content: string } }> }).choices[0]!.message.content = 'n0 n1 n2 n3 n4 n5 n6 n7 ';
      return { answer: step };
    });
    const team = await makeTeam(h, {
      humans: ['dana'],
      agents: [{ name: 'streamer', provider: 'openai', model: 'gpt-stub', instructions: 'cancel-streamer — scripted', tools: { team: true } }],
      edges: [['dana', 'streamer']],
    });
    // Step 1's arguments are one chunk: only step 2's text is held, four words in.
    openai.hold(4);
    let task: Task;
    let reader: ThreadReader | undefined;
    try {
      task = await danaAsks(team, 'streamer', 'Write it slowly');
      reader = await readThread(h.server.url, task.thread_id, { 'x-api-key': h.apiKey }, { after: '0' });
      const held = await openai.held();
      expect(requestsOf('cancel-streamer')).toHaveLength(2);
      // The text so far has reached the service (its readers see it) before the cancel.
      await reader.until(() => writtenSoFar(reader!.items(), team.id.streamer!) === 'n0 n1 n2 n3 ', 'the deltas of the text so far');
      const canceled = await api('POST', `/tasks/${task.task_id}/cancel`);
      expect(canceled.body).toMatchObject({ state: 'canceled', status_message: null });
      expect(await held.ended).toEqual({ aborted: true });
    } finally {
      // Were the call not aborted, the rest of step 2 — its list_edges call — would now come.
      openai.release();
    }
    // The reply closes what the readers saw: its text is the deltas', posted stopped.
    const created = await reader!.until((i) => i.event === 'message.created' && i.data.sender_id === team.id.streamer, 'the stopped reply');
    reader!.close();
    expect(created.at(-1)!.data).toMatchObject({ content: 'n0 n1 n2 n3 ', stopped: true });
    const messages = await messagesOf(h, task.thread_id);
    expect(messages.map((m) => [m.sender_id, m.content, (m as { stopped?: boolean }).stopped])).toEqual([
      [team.id.dana, 'Write it slowly', false],
      [team.id.streamer, 'n0 n1 n2 n3 ', true],
    ]);
    expect((await toolCalls(h, task.thread_id)).map((c) => [c.tool, c.status])).toEqual([['whoami', 'completed']]);
    expect(requestsOf('cancel-streamer')).toHaveLength(2);
    // The stopped reply did not complete the task: canceled, no artifact, the cancel its last change.
    expect((await api('GET', `/tasks/${task.task_id}`)).body).toMatchObject({ state: 'canceled', artifacts: [], status_message: null });
    expect((await taskEvents(task.task_id)).map((e) => e.data.state)).toEqual(['submitted', 'working', 'canceled']);
  });

  it('cancel: a provider agent\'s turn suspended on its ask back ends at once — the ask fails stopped, the reply is posted stopped, no further model call is made, and the task stays canceled', async () => {
    scripts.set('cancel-asker', (c) => (c.resultOf('ask') ? 'Report for Q3' : callTool('ask', { peer: 'dana', content: 'Which quarter?' })));
    const team = await makeTeam(h, {
      humans: ['dana'],
      agents: [{ name: 'asker', provider: 'openai', model: 'gpt-stub', instructions: 'cancel-asker — scripted', tools: { team: true } }],
      edges: [['dana', 'asker']],
    });
    const task = await danaAsks(team, 'asker', 'Write the report');
    await until(async () => (await api('GET', `/tasks/${task.task_id}`)).body, (t) => t.state === 'input-required', 'the asker to ask back');
    expect((await api('POST', `/tasks/${task.task_id}/cancel`)).body.state).toBe('canceled');

    const messages = await until(() => messagesOf(h, task.thread_id), (ms) => ms.length === 3, 'the stopped reply');
    expect(messages.map((m) => [m.sender_id, m.content, (m as { stopped?: boolean }).stopped])).toEqual([
      [team.id.dana, 'Write the report', false],
      [team.id.asker, 'Which quarter?', false],
      [team.id.asker, '(stopped before any reply was written)', true],
    ]);
    const calls = await toolCalls(h, task.thread_id);
    expect(calls.map((c) => [c.tool, c.status])).toEqual([['ask', 'failed']]);
    expect(calls[0]!.error).toMatch(/^stopped: /);
    expect(requestsOf('cancel-asker')).toHaveLength(1);
    expect((await api('GET', `/tasks/${task.task_id}`)).body).toMatchObject({ state: 'canceled', artifacts: [] });
    expect((await taskEvents(task.task_id)).map((e) => e.data.state)).toEqual(['submitted', 'working', 'input-required', 'canceled']);
  });

  it('cancel: a task canceled before its assignee\'s turn began gets none — no model call, no turn, no reply — even once the agent can work', async () => {
    // Its own server, whose storage the test reads: the agent loop's work row says when it is done.
    const w = await startHarnessWithDb('tasks-cancel-early', { options: { env: { ...process.env, OPENAI_BASE_URL: `${openai.origin}/v1` } } });
    try {
      expect((await w.call('PUT', `/api/v1/organizations/${w.orgId}/api-keys/openai`, { api_key: 'openai-key' })).status).toBe(200);
      scripts.set('cancel-early', () => 'too late');
      const team = await makeTeam(w, {
        humans: ['dana'],
        agents: [{ name: 'early', provider: 'openai', model: 'gpt-stub', instructions: 'cancel-early — scripted', tools: { team: true }, status: 'paused' }],
        edges: [['dana', 'early']],
      });
      const created = await w.call('POST', `/api/v1/edges/${team.edgeOf('dana', 'early')}/tasks`, { requester_id: team.id.dana, parts: [{ text: 'Not yet' }] });
      expect(created.status).toBe(201);
      expect((await w.call('POST', `/api/v1/tasks/${created.body.task_id}/cancel`)).body.state).toBe('canceled');
      expect((await w.call('PATCH', `/api/v1/agents/${team.id.early}`, { status: 'active' })).status).toBe(200);
      // Woken by the PATCH, the row is claimed and given back with every message handled.
      await until(
        () => w.db.query<{ handled_seq: number; latest_seq: number; lease_token: string | null }>(`SELECT handled_seq, latest_seq, lease_token FROM agent_work WHERE agent_id = $1`, [team.id.early]),
        (rows) => rows.length === 1 && rows[0]!.handled_seq >= rows[0]!.latest_seq && rows[0]!.lease_token === null,
        'the agent loop to pass the canceled task by',
      );
      expect(requestsOf('cancel-early')).toEqual([]);
      expect(await w.db.query(`SELECT id FROM agent_turns WHERE agent_id = $1`, [team.id.early])).toEqual([]);
      expect((await messagesOf(w, created.body.thread_id)).map((m) => m.content)).toEqual(['Not yet']);
      expect((await w.call('GET', `/api/v1/tasks/${created.body.task_id}`)).body).toMatchObject({ state: 'canceled', artifacts: [] });
    } finally {
      await w.server.close();
    }
  });
});

describe('tasks: MCP tools', () => {
  it('MCP: an external assignee lists, reads, moves and completes its task with list_tasks, get_task, update_task and add_artifact', async () => {
    const team = await externalTeam();
    const task = await danaAsksBot(team);
    const bot = await mcpClient(team.id.bot!);
    const names = (await bot.listTools()).tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['list_tasks', 'get_task', 'update_task', 'add_artifact']));

    const listed = await callMcpTool(bot, 'list_tasks', { role: 'assignee' });
    expect(listed.tasks.map((t: Task) => t.task_id)).toEqual([task.task_id]);
    expect((await callMcpTool(bot, 'list_tasks', { role: 'requester' })).tasks).toEqual([]);
    expect(await callMcpTool(bot, 'get_task', { task_id: task.task_id })).toEqual(task);

    const working = await callMcpTool(bot, 'update_task', { task_id: task.task_id, state: 'working', message: 'On it.' });
    expect(working).toMatchObject({ state: 'working', status_message: { sender_id: team.id.bot, content: 'On it.' } });
    const withArtifact = await callMcpTool(bot, 'add_artifact', { task_id: task.task_id, name: 'summary', parts: [{ text: 'Three lines.' }, { data: { lines: 3 } }] });
    expect(withArtifact.artifacts).toEqual([expect.objectContaining({ name: 'summary', parts: [{ text: 'Three lines.' }, { data: { lines: 3 } }] })]);
    const done = await callMcpTool(bot, 'update_task', { task_id: task.task_id, state: 'completed' });
    expect(done.state).toBe('completed');
    expect((await api('GET', `/tasks/${task.task_id}`)).body).toEqual(done);
    expect(await toolError(bot, 'update_task', { task_id: task.task_id, state: 'working' })).toMatch(/^task_final: /);
    expect(await toolError(bot, 'add_artifact', { task_id: task.task_id, parts: [{ text: 'late' }] })).toMatch(/^task_final: /);
    expect((await callMcpTool(bot, 'list_tasks', { state: 'completed' })).tasks.map((t: Task) => t.task_id)).toEqual([task.task_id]);
  });

  it('MCP: a task the agent is on neither end of is not_found, worded as an unknown id, and nothing is written', async () => {
    const team = await externalTeam();
    const carls = await api('POST', `/edges/${team.edgeOf('dana', 'carl')}/tasks`, { requester_id: team.id.dana, parts: [{ text: 'for carl' }] });
    const bot = await mcpClient(team.id.bot!);
    const before = await counts(carls.body.task_id);
    const unknown = await toolError(bot, 'get_task', { task_id: unknownId });
    expect(unknown).toMatch(/^not_found: /);
    for (const [tool, args] of [
      ['get_task', {}],
      ['update_task', { state: 'completed', message: 'mine now' }],
      ['add_artifact', { parts: [{ text: 'x' }] }],
    ] as const) {
      expect(await toolError(bot, tool, { task_id: carls.body.task_id, ...args }), tool).toBe(unknown);
    }
    expect((await callMcpTool(bot, 'list_tasks', {})).tasks).toEqual([]);
    expect(await counts(carls.body.task_id)).toEqual(before);
  });

  it('MCP: the requester may only cancel its task with update_task, and may not add artifacts', async () => {
    const team = await externalTeam();
    const bot = await mcpClient(team.id.bot!);
    // bot asks dana (over REST in bot's name: the organization key acts as the requester).
    const created = await api('POST', `/edges/${team.edgeOf('dana', 'bot')}/tasks`, { requester_id: team.id.bot, parts: [{ text: 'approve the budget' }] });
    expect(created.status).toBe(201);
    const before = await counts(created.body.task_id);
    expect(await toolError(bot, 'update_task', { task_id: created.body.task_id, state: 'completed' })).toMatch(/^forbidden: /);
    expect(await toolError(bot, 'add_artifact', { task_id: created.body.task_id, parts: [{ text: 'x' }] })).toMatch(/^forbidden: /);
    expect(await counts(created.body.task_id)).toEqual(before);
    const canceled = await callMcpTool(bot, 'update_task', { task_id: created.body.task_id, state: 'canceled', message: 'No longer needed.' });
    expect(canceled).toMatchObject({ state: 'canceled', status_message: { sender_id: team.id.bot, content: 'No longer needed.' } });
    expect((await callMcpTool(bot, 'list_tasks', { role: 'requester', peer_id: team.id.dana })).tasks.map((t: Task) => t.task_id)).toEqual([created.body.task_id]);
  });
});

describe('tasks: the client and the domain\'s waits', () => {
  it('client: createTask, getTask, listTasks, setTaskStatus, addTaskArtifact and cancelTask speak the routes, and a final task\'s refusal is an AcsApiError task_final', async () => {
    const team = await externalTeam();
    const client = new AcsClient({ baseUrl: h.server.url, apiKey: h.apiKey });
    const task = await client.createTask(team.edgeOf('dana', 'bot'), { requester_id: team.id.dana!, title: 'Client', parts: [{ text: 'via the client' }] });
    expect(task).toMatchObject({ title: 'Client', state: 'submitted', assignee_id: team.id.bot });
    expect(await client.getTask(task.task_id)).toEqual(task);
    expect((await client.listTasks(team.teamId, { assignee_id: team.id.bot! })).tasks.map((t) => t.task_id)).toEqual([task.task_id]);
    expect((await client.setTaskStatus(task.task_id, { state: 'working', message: 'started' })).status_message?.content).toBe('started');
    expect((await client.addTaskArtifact(task.task_id, { parts: [{ text: 'result' }] })).artifacts.map((a) => a.parts)).toEqual([[{ text: 'result' }]]);
    expect((await client.cancelTask(task.task_id)).state).toBe('canceled');
    const refused = await client.cancelTask(task.task_id).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(AcsApiError);
    expect(refused).toMatchObject({ status: 409, code: 'task_final' });
    expect((await client.listTasks(team.teamId, { state: 'completed' })).tasks).toEqual([]);
  });

  it('waitForTask: answers with the task once it reaches the state awaited, woken by its task.updated events; a participant not on it is not_found', async () => {
    const w = await startHarnessWithDb('tasks-wait');
    // A reader of the log of its own, as the A2A server's process is: it learns of the changes through the events.
    const hub = createEventHub({ db: w.db, notifier: createLocalNotifier(), pollMs: 50 });
    try {
      const deps = { db: w.db, events: hub } as unknown as DomainDeps;
      const team = await makeTeam(w, { humans: ['dana'], agents: [{ name: 'bot' }, { name: 'carl' }], edges: [['dana', 'bot']] });
      const created = await w.call('POST', `/api/v1/edges/${team.edgeOf('dana', 'bot')}/tasks`, { requester_id: team.id.dana, parts: [{ text: 'wait for me' }] });
      const taskId: string = created.body.task_id;
      const caller = { orgId: w.orgId, keyId: 'test' };
      // Nothing changes: the wait runs out with the task as it is.
      expect(await waitForTask(deps, caller, taskId, (t) => t.state === 'completed', { timeoutMs: 50 })).toMatchObject({ state: 'submitted' });

      let settled = false;
      const waiting = waitForTaskAsParticipant(deps, { agentId: team.id.bot!, orgId: w.orgId }, taskId, (t) => t.state === 'completed', { timeoutMs: 30_000 }).finally(() => {
        settled = true;
      });
      await w.call('POST', `/api/v1/tasks/${taskId}/status`, { state: 'working' });
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(settled).toBe(false);
      await w.call('POST', `/api/v1/tasks/${taskId}/status`, { state: 'completed', message: 'done' });
      expect(await waiting).toMatchObject({ task_id: taskId, state: 'completed', status_message: { content: 'done' } });

      const outsider = await waitForTaskAsParticipant(deps, { agentId: team.id.carl!, orgId: w.orgId }, taskId, () => true, { timeoutMs: 0 }).catch((error: unknown) => error);
      expect(outsider).toMatchObject({ code: 'not_found' });
    } finally {
      await hub.close();
      await w.server.close();
    }
  });
});
