/**
 * The official A2A Python SDK (PyPI's `a2a-sdk`, installed pinned into .tools/ by
 * scripts/a2a-python.sh) against a live acs-server (contract §12): test/a2a/python_client_check.py
 * reads an agent's card, sends to an echo agent, streams a provider agent's task (the OpenAI
 * stand-in), lists and gets tasks, cancels a task whose agent waits on a person, and calls where it
 * may not; this test checks what it reports, and that the refused calls wrote nothing.
 *
 * Without python3 the suite is skipped with a title that says so, except in CI (`CI` set), where
 * it must run, so it fails instead.
 */
import { resolve } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { orgEvents } from '../service/turn-helpers.ts';
import { startA2aWorld, type A2aWorld } from './a2a-helpers.ts';
import { describeWithPython, installPythonSdk, runPython } from './python-sdk.ts';

const program = resolve(import.meta.dirname, 'python_client_check.py');

/** What python_client_check.py reports (see its docstring). */
interface Report {
  card: { name: string; description: string; interfaces: string[]; streaming: boolean; schemes: Record<string, string> };
  echo: { id: string; context_id: string; state: string; artifacts: string[]; history: string[][] };
  stream: string[][];
  list: { ids: string[]; states: string[]; total: number };
  get: Report['echo'];
  cancel: { id: string; seen: string[]; after: string };
  no_edge: Record<'card' | 'send' | 'list', { error?: string; message?: string; answered?: string }>;
  other_team: Record<'card' | 'send' | 'get' | 'cancel', { error?: string; message?: string; answered?: string }>;
}

describeWithPython('the A2A Python SDK as a client', () => {
  let w: A2aWorld;
  let report: Report;

  beforeAll(async () => {
    // The first run installs a2a-sdk from PyPI; later runs reuse it.
    await installPythonSdk();
    w = await startA2aWorld();
    const config = { echo: w.url('echo'), writer: w.url('writer'), asker: w.url('asker'), stranger: w.url('stranger'), caller_key: w.callerKey, outsider_key: w.outsiderKey };
    report = JSON.parse(await runPython(program, [JSON.stringify(config)])) as Report;
  }, 420_000);

  afterAll(async () => {
    await w?.close();
  });

  it('the Python SDK reads an agent\'s card: its name, the first line of its instructions, four interfaces, streaming and the x-api-key scheme', () => {
    expect(report.card).toEqual({
      name: 'echo',
      description: 'Repeats what it is told.',
      interfaces: ['HTTP+JSON@0.3', 'HTTP+JSON@1.0', 'JSONRPC@0.3', 'JSONRPC@1.0'],
      streaming: true,
      schemes: { mcpKey: 'x-api-key' },
    });
  });

  it('the Python SDK sends to an echo agent and gets a completed task with the echo as its artifact', async () => {
    expect(report.echo).toMatchObject({ state: 'TASK_STATE_COMPLETED', artifacts: ['echo: hello from python'], history: [['ROLE_USER', 'hello from python'], ['ROLE_AGENT', 'echo: hello from python']] });
    const stored = await w.h.call('GET', `/api/v1/tasks/${report.echo.id}`);
    expect(stored.body).toMatchObject({ thread_id: report.echo.context_id, requester_id: w.team.id.caller, assignee_id: w.team.id.echo, state: 'completed' });
  });

  it('the Python SDK streams a provider agent\'s task to its completion: the task, working, the reply as it is written, the whole reply as its artifact, completed', () => {
    const stream = report.stream;
    expect(stream.slice(0, 2)).toEqual([
      ['task', 'TASK_STATE_SUBMITTED'],
      ['status', 'TASK_STATE_WORKING'],
    ]);
    expect(stream.at(-1)).toEqual(['status', 'TASK_STATE_COMPLETED']);
    const whole = stream.at(-2)!;
    expect(whole).toEqual(['artifact', 'whole', whole[2], 'Draft for: a limerick']);
    // Chunks of that same artifact, as the stand-in wrote the words: the first opens it, the rest append.
    const chunks = stream.slice(2, -2);
    expect(chunks.length).toBeGreaterThan(1);
    expect(chunks.map(([kind, how, id]) => [kind, how, id])).toEqual(chunks.map((_, i) => ['artifact', i === 0 ? 'open' : 'append', whole[2]]));
    expect(chunks.map((chunk) => chunk[3]).join('')).toBe('Draft for: a limerick');
  });

  it('the Python SDK lists the caller\'s tasks at the echo agent and gets one with its history', () => {
    expect(report.list).toEqual({ ids: [report.echo.id], states: ['TASK_STATE_COMPLETED'], total: 1 });
    expect(report.get).toEqual(report.echo);
  });

  it('the Python SDK cancels a task whose agent waits on a person', async () => {
    expect(report.cancel.seen.at(-1)).toBe('TASK_STATE_WORKING');
    expect(report.cancel.after).toBe('TASK_STATE_CANCELED');
    expect((await w.h.call('GET', `/api/v1/tasks/${report.cancel.id}`)).body.state).toBe('canceled');
  });

  it('the Python SDK is refused an agent it shares no edge with, and with another team\'s key: a 404 card, the unknown task\'s error, nothing written', async () => {
    for (const refusal of [report.no_edge.card, report.other_team.card]) {
      expect(refusal.error).toBe('AgentCardResolutionError');
      expect(refusal.message).toContain('HTTP 404');
    }
    for (const refusal of [report.no_edge.send, report.no_edge.list, report.other_team.send, report.other_team.get, report.other_team.cancel]) {
      expect(refusal).toMatchObject({ error: 'TaskNotFoundError' });
    }
    // Three tasks, asked where the caller may ask; no task, thread or message with the stranger
    // or the outsider, which is what the refused calls would have written.
    const written = await orgEvents(w.h, 'task.created,thread.opened,message.created');
    expect(written.filter((e) => e.type === 'task.created').map((e) => e.data.assignee_id).sort()).toEqual([w.team.id.asker, w.team.id.echo, w.team.id.writer].sort());
    const refusedParties = [w.team.id.stranger, w.outsiderId];
    const touching = written.filter((e) => refusedParties.some((id) => JSON.stringify(e.data).includes(id!)));
    expect(touching).toEqual([]);
  });
});
