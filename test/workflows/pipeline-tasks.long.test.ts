/**
 * Task steps (`task: true`, contract §12, issue 38) on a real Temporal server, against a real
 * acs-server on each storage backend (embedded PGlite; PostgreSQL when `ACS_TEST_DATABASE_URL` or
 * scripts/with-postgres.sh gives one): the echo agent answers a task step, its task id and typed
 * value reach the result and `runs show`; a worker SIGKILLed while a task step waits: a new
 * worker carries the wait to its end, and the task was created once; a run cancelled while a task
 * step waits, and a task step past its timeout, cancel the step's task (a local activity in a
 * non-cancellable scope, under the patch `pipeline-cancel-open-tasks`) before the run ends; so do
 * a run that fails while a parallel member's task step waits, and a run cancelled while a task is
 * being created (the creation is awaited; patch `pipeline-cancel-tasks-at-end`); a
 * cancel that keeps failing is given up after 3 attempts and changes nothing of how the run ends.
 */
import { randomUUID } from 'node:crypto';
import { WorkflowFailedError, type Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../cli/program.ts';
import { newRunId, startPipelineRun } from '../../engine/temporal-runs.ts';
import { startServer, type RunningServer } from '../../service/index.ts';
import type { PipelineProgress, PipelineResult, PipelineRunInput } from '../../workflows/pipeline-orchestration.ts';
import { PIPELINE_PATCHES, progressQuery } from '../../workflows/pipeline-workflow.ts';
import { cliIo, entry, eventually } from '../support/decide.ts';
import { createTestDatabase, testDatabaseUrl, type TestDatabase } from '../support/postgres.ts';
import { failingCancelFetch, taskOrganization, type TaskOrganization } from '../support/task-steps.ts';
import { connectTestClient, describeTemporal, spawnWorker, startWorker, testSettings } from '../support/temporal.ts';

const backends = ['pglite', ...(testDatabaseUrl ? ['postgres'] : [])] as const;

describeTemporal('task steps on Temporal', () => {
  let temporal: Client;
  let closeTemporal: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    ({ client: temporal, close: closeTemporal } = await connectTestClient());
  }, 120_000);
  afterAll(async () => {
    await closeTemporal?.();
  });

  for (const backend of backends) {
    describe(`on ${backend}`, () => {
      let server: RunningServer;
      let database: TestDatabase | undefined;
      const stops: Array<() => Promise<void>> = [];

      beforeAll(async () => {
        database = backend === 'postgres' ? await createTestDatabase(testDatabaseUrl!) : undefined;
        server = await startServer({ ...(database ? { databaseUrl: database.url } : { inMemory: true }), port: 0, tickMs: 50, logger: false, rateLimit: false });
      }, 120_000);
      afterAll(async () => {
        for (const stop of stops.reverse()) await stop();
        await server?.close();
        await database?.drop();
      }, 120_000);

      /** The run's input on Temporal (its business key is the workflow id). */
      const temporalInput = (org: TaskOrganization, pipeline: string, inputs: PipelineRunInput['inputs'] = {}): PipelineRunInput => {
        const { runKey: _local, ...input } = org.input(pipeline, inputs);
        return input;
      };
      const result = (runId: string) => temporal.workflow.getHandle<(input: PipelineRunInput) => Promise<PipelineResult>>(runId).result();
      const progressUntil = (runId: string, ready: (p: PipelineProgress) => boolean) =>
        eventually(async () => {
          const progress = await temporal.workflow.getHandle(runId).query(progressQuery).catch(() => undefined);
          return progress && ready(progress) ? progress : undefined;
        }, 120_000);
      /** What the run's history holds: the ids of its patch markers, the activities it scheduled, its local activities' markers. */
      const historyOf = async (runId: string) => {
        const events = (await temporal.workflow.getHandle(runId).fetchHistory()).events ?? [];
        return {
          patches: events.flatMap((e) =>
            e.markerRecordedEventAttributes?.markerName === 'core_patch' ? [(JSON.parse(Buffer.from(e.markerRecordedEventAttributes.details!['patch-data']!.payloads![0]!.data!).toString('utf8')) as { id: string }).id] : [],
          ),
          activities: events.flatMap((e) => (e.activityTaskScheduledEventAttributes ? [e.activityTaskScheduledEventAttributes.activityType!.name!] : [])),
          localActivities: events.filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity').length,
        };
      };

      it(`temporal (${backend}): a task step asks the echo agent through a task; the run completes with its task_id, the echo as reply and the typed value, and runs show names the task`, async () => {
        const org = await taskOrganization(server, `tasks-temporal-echo-${backend}`);
        const taskQueue = `tasks-${randomUUID()}`;
        const worker = await startWorker(taskQueue, { env: org.env });
        stops.push(() => worker.stop());
        const runId = newRunId(`tasks-temporal-echo-${backend}`, 'ask-echo');
        await startPipelineRun(temporalInput(org, 'ask-echo', { topic: 'otters' }), runId, { settings: testSettings(), taskQueue });
        const done = await result(runId);
        const ask = entry(done.steps, 'ask');
        expect(ask).toMatchObject({ status: 'completed', task_state: 'completed', reply: 'echo: Tell me about otters' });
        expect(entry(done.steps, 'typed')).toMatchObject({ status: 'completed', task_state: 'completed', value: { severity: 'high', topic: 'otters' } });
        expect(done.output).toBe(`${ask.task_id}|echo: Tell me about otters|echo: task ${ask.task_id} said high`);
        expect(await org.client.getTask(ask.task_id!)).toMatchObject({ state: 'completed', thread_id: ask.thread_id, title: 'About otters' });
        const out: string[] = [];
        expect(await runCli(['runs', 'show', runId], cliIo(server.url, org.env, out)), out.join('\n')).toBe(0);
        expect(out.join('\n')).toContain(`task ${ask.task_id} (completed)`);
      }, 240_000);

      it(`temporal (${backend}): a worker SIGKILLed while a task step waits; a new worker carries the wait to its end, the task was created once and its data part is the typed value`, async () => {
        const org = await taskOrganization(server, `tasks-temporal-kill-${backend}`);
        const taskQueue = `tasks-kill-${randomUUID()}`;
        const child = await spawnWorker(taskQueue, { ...org.env, ACS_BASE_URL: server.url });
        const runId = newRunId(`tasks-temporal-kill-${backend}`, 'ask-ext');
        await startPipelineRun(temporalInput(org, 'ask-ext'), runId, { settings: testSettings(), taskQueue });
        const waiting = await progressUntil(runId, (p) => entry(p.steps, 'plan').wait_mode === 'poll' && Boolean(entry(p.steps, 'plan').task_id));
        const taskId = entry(waiting.steps, 'plan').task_id!;
        expect(entry(waiting.steps, 'plan')).toMatchObject({ status: 'running', task_state: 'submitted', awaiting: 'ext' });
        expect(await child.kill('SIGKILL')).toBe('SIGKILL');
        // The task is done while no worker runs; the new worker's wait finds it so.
        await org.client.addTaskArtifact(taskId, { parts: [{ text: 'Two weeks.' }, { data: { days: 14 } }] });
        await org.client.setTaskStatus(taskId, { state: 'completed' });
        const worker = await startWorker(taskQueue, { env: org.env });
        stops.push(() => worker.stop());
        const done = await result(runId);
        expect(entry(done.steps, 'plan')).toMatchObject({ status: 'completed', task_id: taskId, task_state: 'completed', reply: 'Two weeks.', value: { days: 14 } });
        expect(done.output).toBe(`14 days, task ${taskId}`);
        const tasks = (await org.client.listTasks(org.teamId)).tasks;
        expect(tasks.map((t) => [t.task_id, t.state])).toEqual([[taskId, 'completed']]);
      }, 300_000);

      it(`temporal (${backend}): a run cancelled while a task step waits ends cancelled, its step cancelled, and the step's task canceled in the service before the run ends`, async () => {
        const org = await taskOrganization(server, `tasks-temporal-cancel-${backend}`);
        const taskQueue = `tasks-cancel-${randomUUID()}`;
        const worker = await startWorker(taskQueue, { env: org.env });
        stops.push(() => worker.stop());
        const runId = newRunId(`tasks-temporal-cancel-${backend}`, 'ask-ext');
        await startPipelineRun(temporalInput(org, 'ask-ext'), runId, { settings: testSettings(), taskQueue });
        const waiting = await progressUntil(runId, (p) => entry(p.steps, 'plan').wait_mode === 'poll' && Boolean(entry(p.steps, 'plan').task_id));
        const taskId = entry(waiting.steps, 'plan').task_id!;
        await temporal.workflow.getHandle(runId).cancel();
        expect(await result(runId).catch((e: unknown) => e)).toBeInstanceOf(WorkflowFailedError);
        expect((await temporal.workflow.getHandle(runId).describe()).status.name).toBe('CANCELLED');
        expect(await org.client.getTask(taskId)).toMatchObject({ state: 'canceled', requester_id: org.ids['dana'], assignee_id: org.ids['ext'] });
        const progress = await temporal.workflow.getHandle(runId).query(progressQuery);
        expect(progress).toMatchObject({ status: 'cancelled' });
        expect(entry(progress.steps, 'plan')).toMatchObject({ status: 'cancelled', task_id: taskId });
        // The creation and the cancel: two local activities, the cancel under its patch.
        expect(await historyOf(runId)).toEqual({ patches: [PIPELINE_PATCHES.waitsInWorkflow, PIPELINE_PATCHES.cancelTasksAtEnd, PIPELINE_PATCHES.cancelOpenTasks], activities: ['resolveTeam', 'awaitTask'], localActivities: 2 });
      }, 240_000);

      it(`temporal (${backend}): a task step past its timeout fails the run with timed_out as before (runs show says so), and its task is canceled in the service`, async () => {
        const org = await taskOrganization(server, `tasks-temporal-timeout-${backend}`);
        const taskQueue = `tasks-timeout-${randomUUID()}`;
        const worker = await startWorker(taskQueue, { env: org.env });
        stops.push(() => worker.stop());
        const runId = newRunId(`tasks-temporal-timeout-${backend}`, 'ask-ext-briefly');
        await startPipelineRun(temporalInput(org, 'ask-ext-briefly'), runId, { settings: testSettings(), taskQueue });
        expect(await result(runId).catch((e: unknown) => e)).toBeInstanceOf(WorkflowFailedError);
        const progress = await temporal.workflow.getHandle(runId).query(progressQuery);
        const plan = entry(progress.steps, 'plan');
        expect(plan).toMatchObject({ status: 'failed', task_state: 'submitted', error: { code: 'timed_out', message: expect.stringMatching(/^task [0-9a-f-]{36} was not done before the deadline \(it is submitted\)$/) } });
        expect((await org.client.getTask(plan.task_id!)).state).toBe('canceled');
        const out: string[] = [];
        expect(await runCli(['runs', 'show', runId], cliIo(server.url, org.env, out))).toBe(0);
        expect(out.join('\n')).toMatch(/timed_out/);
        expect(out.join('\n')).toContain(`task ${plan.task_id} (submitted)`);
        expect(await historyOf(runId)).toEqual({ patches: [PIPELINE_PATCHES.waitsInWorkflow, PIPELINE_PATCHES.cancelTasksAtEnd, PIPELINE_PATCHES.cancelOpenTasks], activities: ['resolveTeam', 'awaitTask'], localActivities: 2 });
      }, 240_000);

      it(`temporal (${backend}): a parallel member past its timeout fails the run while its sibling waits on a task; the sibling's task is canceled in the service too, under the patch pipeline-cancel-tasks-at-end`, async () => {
        const org = await taskOrganization(server, `tasks-temporal-parallel-${backend}`);
        const taskQueue = `tasks-parallel-${randomUUID()}`;
        const worker = await startWorker(taskQueue, { env: org.env });
        stops.push(() => worker.stop());
        const runId = newRunId(`tasks-temporal-parallel-${backend}`, 'ask-ext-in-parallel');
        await startPipelineRun(temporalInput(org, 'ask-ext-in-parallel'), runId, { settings: testSettings(), taskQueue });
        expect(await result(runId).catch((e: unknown) => e)).toBeInstanceOf(WorkflowFailedError);
        const progress = await temporal.workflow.getHandle(runId).query(progressQuery);
        expect(progress).toMatchObject({ status: 'failed' });
        expect(entry(progress.steps, 'brief')).toMatchObject({ status: 'failed', error: { code: 'timed_out' } });
        const plan = entry(progress.steps, 'plan');
        expect(plan).toMatchObject({ status: 'failed', task_id: expect.any(String) });
        // The run ended once both tasks were canceled: no wait for the service to catch up.
        const tasks = (await org.client.listTasks(org.teamId)).tasks;
        expect(tasks.map((t) => [t.task_id === plan.task_id ? 'plan' : t.title, t.state]).sort()).toEqual([
          ['Brief the team at once', 'canceled'],
          ['plan', 'canceled'],
        ]);
        const history = await historyOf(runId);
        expect(history.patches).toEqual([PIPELINE_PATCHES.waitsInWorkflow, PIPELINE_PATCHES.cancelTasksAtEnd, PIPELINE_PATCHES.cancelOpenTasks]);
        // Two creations, two cancels.
        expect(history.localActivities).toBe(4);
      }, 240_000);

      it(`temporal (${backend}): a run cancelled while its task step's task is being created ends cancelled once the creation is done, and the task it made is canceled in the service`, async () => {
        const org = await taskOrganization(server, `tasks-temporal-cancel-creating-${backend}`);
        const taskQueue = `tasks-cancel-creating-${randomUUID()}`;
        const runId = newRunId(`tasks-temporal-cancel-creating-${backend}`, 'ask-ext');
        // The run is cancelled when the creation's request leaves the worker, which reaches the
        // service only after the workflow task's heartbeat (8 s of the default 10 s) has delivered
        // the cancel to the workflow, the create local activity still in flight.
        let creations = 0;
        const slowCreation: typeof fetch = async (input, init) => {
          const url = input instanceof Request ? input.url : String(input);
          const method = input instanceof Request ? input.method : (init?.method ?? 'GET');
          if (method === 'POST' && /\/edges\/[^/]+\/tasks$/.test(new URL(url).pathname)) {
            creations++;
            await temporal.workflow.getHandle(runId).cancel();
            await new Promise((resolve) => setTimeout(resolve, 12_000));
          }
          return fetch(input, init);
        };
        const worker = await startWorker(taskQueue, { env: org.env, fetch: slowCreation });
        stops.push(() => worker.stop());
        await startPipelineRun(temporalInput(org, 'ask-ext'), runId, { settings: testSettings(), taskQueue });
        expect(await result(runId).catch((e: unknown) => e)).toBeInstanceOf(WorkflowFailedError);
        expect((await temporal.workflow.getHandle(runId).describe()).status.name).toBe('CANCELLED');
        expect(creations).toBe(1);
        const tasks = (await org.client.listTasks(org.teamId)).tasks;
        expect(tasks.map((t) => [t.title, t.state])).toEqual([['Plan the release', 'canceled']]);
        const progress = await temporal.workflow.getHandle(runId).query(progressQuery);
        expect(progress).toMatchObject({ status: 'cancelled' });
        expect(entry(progress.steps, 'plan')).toMatchObject({ status: 'cancelled', task_id: tasks[0]!.task_id });
        // The workflow heard the cancel before the creation's result, and never waited on the task.
        const events = (await temporal.workflow.getHandle(runId).fetchHistory()).events ?? [];
        const cancelAt = events.findIndex((e) => e.workflowExecutionCancelRequestedEventAttributes);
        expect(cancelAt).toBeGreaterThan(-1);
        expect(cancelAt).toBeLessThan(events.findIndex((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity'));
        expect(await historyOf(runId)).toEqual({ patches: [PIPELINE_PATCHES.waitsInWorkflow, PIPELINE_PATCHES.cancelTasksAtEnd, PIPELINE_PATCHES.cancelOpenTasks], activities: ['resolveTeam'], localActivities: 2 });
      }, 240_000);

      it(`temporal (${backend}): a cancel of a timed-out step's task that keeps failing is tried 3 times, then the run fails timed_out as it would have, the task left open`, async () => {
        const org = await taskOrganization(server, `tasks-temporal-cancel-fails-${backend}`);
        const taskQueue = `tasks-cancel-fails-${randomUUID()}`;
        // The worker cannot reach the service for the cancel only (a network failure: retryable).
        let cancels = 0;
        const failingCancel = failingCancelFetch(() => cancels++);
        const worker = await startWorker(taskQueue, { env: org.env, fetch: failingCancel });
        stops.push(() => worker.stop());
        const runId = newRunId(`tasks-temporal-cancel-fails-${backend}`, 'ask-ext-briefly');
        await startPipelineRun(temporalInput(org, 'ask-ext-briefly'), runId, { settings: testSettings(), taskQueue });
        expect(await result(runId).catch((e: unknown) => e)).toBeInstanceOf(WorkflowFailedError);
        const plan = entry((await temporal.workflow.getHandle(runId).query(progressQuery)).steps, 'plan');
        expect(plan).toMatchObject({ status: 'failed', error: { code: 'timed_out' } });
        expect((await org.client.getTask(plan.task_id!)).state).toBe('submitted');
        expect(cancels).toBe(3);
      }, 240_000);
    });
  }
});
