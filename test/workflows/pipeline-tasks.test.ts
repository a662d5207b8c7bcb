/**
 * Task steps (`task: true`, contract §12, issue 38) on the local engine, against a real acs-server
 * on embedded PGlite (pipeline-tasks.long.test.ts runs them on Temporal, on PGlite and PostgreSQL,
 * with a worker SIGKILLed while a task step waits): a step asks
 * through a task on its edge and waits until the task is final; its reply is the text of the
 * task's artifacts, its typed value parsed from them (or from a data part), `steps.ID.task_id`
 * names the task; a task that ends rejected fails the run with `task_failed`; a run cancelled
 * while a task step waits, a task step past its timeout, and a run that fails while a parallel
 * member's task step waits, cancel the step's task (best effort:
 * a cancel that fails is a warning, a task final already is left so); `validate` knows `task_id`
 * on task steps only and refuses `task` with `thread`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createConversationActivities } from '../../activities/conversation-activities.ts';
import { entryLine } from '../../cli/run-tree.ts';
import { LocalRunCancelled, runPipelineLocally } from '../../engine/local-engine.ts';
import { startServer } from '../../service/index.ts';
import type { ProgressEvent, StepProgress } from '../../workflows/pipeline-orchestration.ts';
import { problemLines, yaml } from '../definitions/helpers.ts';
import { failingCancelFetch, taskOrganization, type TaskOrganization } from '../support/task-steps.ts';

let server: Awaited<ReturnType<typeof startServer>>;
beforeAll(async () => {
  server = await startServer({ inMemory: true, port: 0, tickMs: 50, logger: false, rateLimit: false });
});
afterAll(async () => {
  await server?.close();
});

/** A new organization with the definition applied. */
const organization = (name: string) => taskOrganization(server, name);

/** Acts as ext on every task step that starts waiting (by the progress events), once per task. */
function extWorks(org: TaskOrganization, work: (taskId: string, attempt: number) => Promise<void>) {
  const seen = new Set<string>();
  return (event: ProgressEvent) => {
    const { step } = event;
    if (step.status !== 'running' || !step.task_id || !step.wait_mode || seen.has(step.task_id)) return;
    seen.add(step.task_id);
    void work(step.task_id, seen.size).catch((error: unknown) => console.error('ext failed', error));
  };
}

describe('task steps (local engine)', () => {
  it('local: a task step asks the echo agent through a task; the run completes with its task_id, the echo as reply and a typed value parsed from the artifact', async () => {
    const org = await organization('tasks-echo');
    const lines: string[] = [];
    const result = await runPipelineLocally(org.input('ask-echo', { topic: 'otters' }), createConversationActivities({ env: org.env }), {
      streamWaits: { env: org.env },
      onProgress: ({ step }) => {
        if (step.status === 'completed') lines.push(entryLine(step));
      },
    });
    const ask = result.steps.find((s) => s.id === 'ask')!;
    const typed = result.steps.find((s) => s.id === 'typed')!;
    expect(ask).toMatchObject({ status: 'completed', task_state: 'completed', reply: 'echo: Tell me about otters', value: 'echo: Tell me about otters' });
    expect(typed).toMatchObject({ status: 'completed', task_state: 'completed', value: { severity: 'high', topic: 'otters' } });
    // The tasks are on the service, completed, in the threads the steps show, asked as dana with the subject as title.
    const task = await org.client.getTask(ask.task_id!);
    expect(task).toMatchObject({ state: 'completed', thread_id: ask.thread_id, requester_id: org.ids['dana'], assignee_id: org.ids['echo'], title: 'About otters' });
    expect(task.artifacts.flatMap((a) => a.parts)).toEqual([{ text: 'echo: Tell me about otters' }]);
    expect((await org.client.getTask(typed.task_id!)).state).toBe('completed');
    expect(typed.task_id).not.toBe(ask.task_id);
    // steps.ID.task_id in a condition and in templates.
    expect(result.output).toBe(`${ask.task_id}|echo: Tell me about otters|echo: task ${ask.task_id} said high`);
    expect(result.steps.find((s) => s.id === 'after')!.task_id).toBeUndefined();
    expect(lines.find((l) => l.startsWith('✓ ask'))).toContain(`task ${ask.task_id} (completed)`);
  }, 60_000);

  it('local: a typed task step takes its value from a data part; an artifact that does not fit is asked again with a new task on the same edge', async () => {
    const org = await organization('tasks-data');
    const asked: string[] = [];
    const work = extWorks(org, async (taskId, attempt) => {
      const task = await org.client.getTask(taskId);
      const first = await org.client.getThread(task.thread_id, { limit: 1 });
      asked.push(first.messages[0]!.content);
      await org.client.addTaskArtifact(taskId, { name: 'plan', parts: attempt === 1 ? [{ data: { days: 0 } }] : [{ text: 'Two weeks.' }, { data: { days: 14 } }] });
      await org.client.setTaskStatus(taskId, { state: 'completed' });
    });
    const result = await runPipelineLocally(org.input('ask-ext'), createConversationActivities({ env: org.env }), { streamWaits: { env: org.env }, onProgress: work });
    const plan = result.steps[0]!;
    expect(plan).toMatchObject({ status: 'completed', reply: 'Two weeks.', value: { days: 14 }, task_state: 'completed' });
    expect(plan.misfits).toEqual([{ reply: '{"days":0}', problems: [expect.stringContaining('/days')] }]);
    expect(result.output).toBe(`14 days, task ${plan.task_id}`);
    expect(asked[0]).toBe('Plan the release as JSON');
    expect(asked[1]).toMatch(/^Your reply does not fit what this step expects:\n- \/days .*\nPlease answer again \(reply 2 of 2\)[\s\S]*\n\nWhat was asked:\nPlan the release as JSON$/);
    const tasks = (await org.client.listTasks(org.teamId)).tasks;
    expect(tasks.map((t) => [t.title, t.state])).toEqual([
      ['Plan the release', 'completed'],
      ['Plan the release', 'completed'],
    ]);
    expect(tasks[0]!.task_id).toBe(plan.task_id);
  }, 60_000);

  it('local: a task that its assignee rejects fails the run with task_failed, naming the task and its reason', async () => {
    const org = await organization('tasks-rejected');
    const work = extWorks(org, async (taskId) => {
      await org.client.setTaskStatus(taskId, { state: 'rejected', message: 'Not my area.' });
    });
    const failed = await runPipelineLocally(org.input('ask-ext'), createConversationActivities({ env: org.env }), { streamWaits: { env: org.env }, onProgress: work }).catch((e: unknown) => e);
    expect(failed).toMatchObject({ type: 'task_failed', message: expect.stringMatching(/^step plan: task [0-9a-f-]{36} ended rejected: Not my area\.$/) });
    const [task] = (await org.client.listTasks(org.teamId)).tasks;
    expect(task!.state).toBe('rejected');
  }, 60_000);

  it('local: a run cancelled while a task step waits ends cancelled, the step cancelled, and the step\'s task canceled in the service', async () => {
    const org = await organization('tasks-cancelled');
    const stop = new AbortController();
    const steps: StepProgress[] = [];
    let cancelling = false;
    const failed = await runPipelineLocally(org.input('ask-ext'), createConversationActivities({ env: org.env }), {
      streamWaits: { env: org.env },
      signal: stop.signal,
      onProgress: ({ step }) => {
        steps.push(step);
        // Once the step waits on its task (the service has the task), the run is cancelled as `runs cancel` does.
        if (step.status === 'running' && step.task_id && step.wait_mode && !cancelling) {
          cancelling = true;
          void org.client.getTask(step.task_id).then(() => stop.abort(new LocalRunCancelled('run cancelled by the test')));
        }
      },
    }).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(LocalRunCancelled);
    const last = steps.at(-1)!;
    expect(last).toMatchObject({ id: 'plan', status: 'cancelled', task_id: expect.any(String) });
    // The run ended once the task was canceled: no wait for the service to catch up.
    const task = await org.client.getTask(last.task_id!);
    expect(task).toMatchObject({ state: 'canceled', requester_id: org.ids['dana'], assignee_id: org.ids['ext'] });
  }, 60_000);

  it('local: a task step past its timeout fails the run with timed_out as before, and its task is canceled in the service', async () => {
    const org = await organization('tasks-timed-out');
    const steps: StepProgress[] = [];
    const failed = await runPipelineLocally(org.input('ask-ext-briefly'), createConversationActivities({ env: org.env }), {
      streamWaits: { env: org.env },
      onProgress: ({ step }) => void steps.push(step),
    }).catch((e: unknown) => e);
    expect(failed).toMatchObject({ type: 'timed_out', message: expect.stringMatching(/^task [0-9a-f-]{36} was not done before the deadline \(it is submitted\)$/) });
    const last = steps.at(-1)!;
    expect(last).toMatchObject({ id: 'plan', status: 'failed', error: { code: 'timed_out' }, task_state: 'submitted' });
    expect((await org.client.getTask(last.task_id!)).state).toBe('canceled');
  }, 60_000);

  it('local: a parallel member past its timeout fails the run while its sibling waits on a task; the sibling\'s task is canceled in the service too', async () => {
    const org = await organization('tasks-parallel-failed');
    const steps: StepProgress[] = [];
    const failed = await runPipelineLocally(org.input('ask-ext-in-parallel'), createConversationActivities({ env: org.env }), {
      streamWaits: { env: org.env },
      onProgress: ({ step }) => void steps.push(step),
    }).catch((e: unknown) => e);
    expect(failed).toMatchObject({ type: 'timed_out' });
    const last = (id: string) => steps.filter((s) => s.id === id).at(-1)!;
    expect(last('brief')).toMatchObject({ status: 'failed', error: { code: 'timed_out' } });
    // The sibling was waiting on its task when the run failed.
    expect(last('plan')).toMatchObject({ status: 'running', wait_mode: 'poll', task_id: expect.any(String) });
    // The run ended once both tasks were canceled: no wait for the service to catch up.
    const tasks = (await org.client.listTasks(org.teamId)).tasks;
    expect(tasks.map((t) => [t.title, t.state]).sort()).toEqual([
      ['Brief the team at once', 'canceled'],
      ['Plan the release', 'canceled'],
    ]);
  }, 60_000);

  it('local: a cancel of a timed-out step\'s task that keeps failing is tried 3 times, reported as a warning naming the task, and the run still fails timed_out', async () => {
    const org = await organization('tasks-cancel-fails');
    // The service cannot be reached for the cancel only (a network failure: retryable).
    let cancels = 0;
    const failingCancel = failingCancelFetch(() => cancels++);
    const warnings: string[] = [];
    const failed = await runPipelineLocally(org.input('ask-ext-briefly'), createConversationActivities({ env: org.env, fetch: failingCancel }), {
      onWarning: (text) => void warnings.push(text),
    }).catch((e: unknown) => e);
    expect(failed).toMatchObject({ type: 'timed_out', message: expect.stringMatching(/^task [0-9a-f-]{36} was not done before the deadline/) });
    const [task] = (await org.client.listTasks(org.teamId)).tasks;
    expect(task!.state).toBe('submitted');
    expect(cancels).toBe(3);
    expect(warnings).toEqual([expect.stringMatching(new RegExp(`^step plan: could not cancel task ${task!.task_id}, which the run no longer waits for \\(network_error: .*\\); it stays open$`))]);
  }, 60_000);

  it('cancelStepTask: cancels an open task as its requester, and leaves a task that is final already as it is (409 task_final answered as not canceled)', async () => {
    const org = await organization('tasks-cancel-activity');
    const acts = createConversationActivities({ env: org.env });
    const connection = org.input('ask-ext').connection;
    const edge = (await org.client.getTeam(org.teamId)).edges.find((e) => e.participants.includes(org.ids['ext']!))!;
    const open = await org.client.createTask(edge.edge_id, { requester_id: org.ids['dana']!, parts: [{ text: 'Left open' }] });
    const done = await org.client.createTask(edge.edge_id, { requester_id: org.ids['dana']!, parts: [{ text: 'Done already' }] });
    await org.client.setTaskStatus(done.task_id, { state: 'completed' });
    expect(await acts.cancelStepTask({ connection, taskId: open.task_id })).toEqual({ taskId: open.task_id, canceled: true });
    expect(await acts.cancelStepTask({ connection, taskId: done.task_id })).toEqual({ taskId: done.task_id, canceled: false });
    expect((await org.client.getTask(open.task_id)).state).toBe('canceled');
    expect((await org.client.getTask(done.task_id)).state).toBe('completed');
  }, 60_000);
});

describe('task steps (validate)', () => {
  const TEAM = ['apiVersion: teamctl/v1', 'organization: { name: acme }', 'teams:', '  - name: desk', '    agents: [{ name: a }]', '    humans: [{ name: dana }]', '    edges: [[dana, a]]', 'pipelines:', '  - name: p', '    team: desk', '    steps:'];

  it('validate: steps.ID.task_id is a string on a task step, an unknown field on any other step, and a task step cannot continue a thread', () => {
    expect(
      problemLines(
        yaml(
          ...TEAM,
          '      - { id: t, from: dana, to: a, task: true, content: x }',
          '      - { id: m, from: dana, to: a, content: "{{ steps.t.task_id }} {{ steps.m2.task_id }}" }',
          '      - { id: m2, from: dana, to: a, content: x, when: "steps.t.task_id == 1" }',
          '      - { id: c, thread: t, from: dana, task: true, content: x }',
        ),
      ),
    ).toEqual([
      'x.yaml:13:69: pipelines[0].steps[1].content: {{ steps.m2.task_id }}: step "m2" is not a step before this one',
      'x.yaml:14:73: pipelines[0].steps[2].when: cannot compare a string with an int (steps.t.task_id == 1)',
      'x.yaml:15:41: pipelines[0].steps[3].task: a task step asks on an edge (its task opens a thread of its own): give `to`, not `thread`',
    ]);
    expect(problemLines(yaml(...TEAM, '      - { id: m, from: dana, to: a, content: x }', '      - { id: n, from: dana, to: a, content: "{{ steps.m.task_id }}" }'))).toEqual([
      expect.stringMatching(/^x\.yaml:13:.*unknown field "task_id" of a step; use reply, value, status, error or thread_id/),
    ]);
  });
});
