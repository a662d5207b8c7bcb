/**
 * Pipeline runs on Temporal: start, wait, list, show, cancel. A run is a `pipelineWorkflow`
 * execution; its id (`teamctl-run/<organization>/<pipeline>/<time>-<random>`) is the run id
 * users see, stable across continue-as-new. Scheduled runs have ids under the same prefix
 * (`teamctl-run/<organization>/<schedule>-<time>`), so `runs list` shows them too.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { WorkflowNotFoundError } from '@temporalio/client';
import type { Client, WorkflowExecutionDescription, WorkflowExecutionInfo } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import type { ConverseCursor } from '../activities/conversation-activities.ts';
import { ToolkitError } from '../errors/catalogue.ts';
import type { PipelineProgress, PipelineResult, PipelineRunInput, StepProgress } from '../workflows/pipeline-orchestration.ts';
import { pipelineWorkflow, progressQuery } from '../workflows/pipeline-workflow.ts';
import { RunEngines, runStamp, stepKeys, waitingSteps } from './run-details.ts';
import type { RunDetails, RunSummary, WaitingStep } from './run-details.ts';
import { assertWorkerPolls, withTemporalClient } from './temporal-engine.ts';
import type { TemporalTarget } from './temporal-engine.ts';

export { waitingSteps } from './run-details.ts';
export type { RunDetails, RunSummary, WaitingStep } from './run-details.ts';

/** The prefix of the run ids of an organization's pipelines. */
export function runIdPrefix(organization: string): string {
  return `teamctl-run/${organization}/`;
}

/** A fresh run id for a pipeline of an organization: sortable by start time, unique by 48 random bits. */
export function newRunId(organization: string, pipeline: string, now = new Date()): string {
  return `${runIdPrefix(organization)}${pipeline}/${runStamp(now)}`;
}

/** Temporal's execution status, lower-cased (`running`, `completed`, `failed`, `cancelled`, …). */
function statusOf(info: Pick<WorkflowExecutionInfo, 'status'>): string {
  const name = info.status.name.toLowerCase();
  return name === 'canceled' ? 'cancelled' : name;
}

/**
 * Starts a pipeline run on Temporal under `runId` and returns once it is started. Errors:
 * `temporal_unreachable`, `no_worker` (nothing is started when no worker polls the task queue).
 */
export async function startPipelineRun(input: PipelineRunInput, runId: string, target: TemporalTarget): Promise<void> {
  await withTemporalClient(target.settings, async (client) => {
    await assertWorkerPolls(client, target.settings.namespace, target.taskQueue, target.onWait);
    await client.workflow.start(pipelineWorkflow, { taskQueue: target.taskQueue, workflowId: runId, args: [input] });
  });
}

/**
 * Waits for a run's result (following continue-as-new). Output: {@link PipelineResult}. Errors:
 * `temporal_unreachable`; `WorkflowFailedError` whose cause is the failing step's
 * `ApplicationFailure` (typed by the stable code), or a cancellation.
 */
export async function pipelineRunResult(runId: string, target: TemporalTarget): Promise<PipelineResult> {
  return withTemporalClient(target.settings, (client) => client.workflow.getHandle<typeof pipelineWorkflow>(runId).result());
}

/**
 * Lists pipeline runs, newest first, of one organization or of all (`organization` undefined),
 * at most `limit`. Errors: `temporal_unreachable`.
 */
export async function listPipelineRuns(target: TemporalTarget, organization: string | undefined, limit = 50): Promise<RunSummary[]> {
  return withTemporalClient(target.settings, async (client) => {
    const prefix = organization === undefined ? 'teamctl-run/' : runIdPrefix(organization);
    const runs: RunSummary[] = [];
    // Visibility queries on the dev server's SQLite support STARTS_WITH; the type narrows to runs.
    const query = `WorkflowType = 'pipelineWorkflow' AND WorkflowId STARTS_WITH '${prefix.replace(/'/g, "\\'")}'`;
    for await (const info of client.workflow.list({ query })) {
      // A chain continued as new lists each of its runs; show its latest only. Sub-pipelines show under their parent.
      if (info.status.name === 'CONTINUED_AS_NEW' || info.parentExecution) continue;
      runs.push(summary(info));
      if (runs.length >= limit) break;
    }
    return runs;
  });
}

function summary(info: WorkflowExecutionInfo | WorkflowExecutionDescription): RunSummary {
  return { run_id: info.workflowId, status: statusOf(info), started_at: info.startTime.toISOString(), closed_at: info.closeTime?.toISOString() ?? null, engine: RunEngines.temporal };
}

/** Asks a run for its progress; undefined when no worker answers within 5 s (a closed run needs one to replay). */
async function progressOf(client: Client, runId: string): Promise<PipelineProgress | undefined> {
  const query = client.workflow.getHandle(runId).query(progressQuery);
  query.catch(() => undefined);
  const timeout = new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 5_000).unref());
  return Promise.race([query.catch(() => undefined), timeout]);
}

/**
 * The cursors the `converse` activities of a running workflow heartbeat, by step key: the thread
 * of a step is known from its first heartbeat, right after its message is sent, while the
 * workflow learns it only once the reply came.
 */
function heartbeatThreads(description: WorkflowExecutionDescription): Map<string, string> {
  const threads = new Map<string, string>();
  for (const activity of description.raw.pendingActivities ?? []) {
    if (activity.activityType?.name !== 'converse') continue;
    const payload = activity.heartbeatDetails?.payloads?.[0];
    if (!payload) continue;
    try {
      const cursor = defaultPayloadConverter.fromPayload<ConverseCursor>(payload);
      // A re-ask's key is the step's key and `#N`.
      if (cursor?.stepId && cursor.threadId) threads.set(cursor.stepId.replace(/#\d+$/, ''), cursor.threadId);
    } catch {
      // Not a cursor this version writes: the thread stays unknown until the step ends.
    }
  }
  return threads;
}

/**
 * A run's tree as its workflow answers the `progress` query, completed with what only the server
 * knows: the thread of a waiting step (from its activity's heartbeat) and the steps of its
 * sub-pipelines (their own workflows, queried in turn, `depth` levels at most).
 */
async function runTree(client: Client, runId: string, description: WorkflowExecutionDescription, depth = 3): Promise<PipelineProgress | undefined> {
  const progress = await progressOf(client, runId);
  if (!progress) return undefined;
  const threads = description.closeTime ? new Map<string, string>() : heartbeatThreads(description);
  for (const { key, step } of stepKeys(progress.steps)) {
    if (step.thread_id === null && step.status === 'running') step.thread_id = threads.get(key) ?? null;
    if (step.kind === 'run' && step.run_id && depth > 0) {
      const child = await client.workflow.getHandle(step.run_id).describe().catch(() => undefined);
      if (child) step.steps = (await runTree(client, step.run_id, child, depth - 1))?.steps ?? [];
    }
  }
  return progress;
}

/**
 * Shows one run: status and times, its tree (each entry's state, thread, participants, reply and
 * value; loop iterations, map items, sub-pipelines' steps; the thread of a waiting step as soon
 * as its message is sent), the steps waiting for a person with how they answer, and the output or
 * the failure once it ended. Errors: `run_not_found`, `temporal_unreachable`.
 */
export async function describePipelineRun(runId: string, target: TemporalTarget): Promise<RunDetails> {
  return withTemporalClient(target.settings, async (client) => {
    const handle = client.workflow.getHandle<typeof pipelineWorkflow>(runId);
    let description: WorkflowExecutionDescription;
    try {
      description = await handle.describe();
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) throw new ToolkitError('run_not_found', `no pipeline run ${runId}`);
      throw error;
    }
    if (description.type !== 'pipelineWorkflow') throw new ToolkitError('run_not_found', `${runId} is a ${description.type} workflow, not a pipeline run`);
    const progress = await runTree(client, runId, description);
    let output: string | null = null;
    let failure: string | null = null;
    if (description.status.name === 'COMPLETED') output = (await handle.result()).output;
    else if (description.closeTime) failure = await handle.result().then(
      () => null,
      (error: unknown) => causeMessage(error),
    );
    const steps = progress?.steps ?? null;
    return { ...summary(description), pipeline: progress?.pipeline ?? null, steps, waiting: steps ? waitingSteps(steps, progress?.humans) : [], output, failure };
  });
}

/**
 * Waits up to `timeoutMs` for a run to wait for a person (a step awaiting a human of the team,
 * its message sent). Output: those steps with how to answer; empty when the run did not come to
 * one in time (or ended). Errors: `temporal_unreachable`.
 */
export async function waitingForPeople(runId: string, target: TemporalTarget, timeoutMs = 10_000): Promise<WaitingStep[]> {
  return withTemporalClient(target.settings, async (client) => {
    const handle = client.workflow.getHandle<typeof pipelineWorkflow>(runId);
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const description = await handle.describe().catch(() => undefined);
      if (description?.closeTime) return [];
      const tree = description && (await runTree(client, runId, description, 0));
      const waiting = tree ? waitingSteps(tree.steps, tree.humans) : [];
      if (waiting.length > 0 || Date.now() >= deadline) return waiting;
      await delay(500);
    }
  });
}

/**
 * Follows a run until it ends: every `everyMs` (default 1 s) its tree (as {@link describePipelineRun}
 * draws it) goes to `onTree` with the team's human names (once the run read its team), and once
 * more at the end. Output: the run's result. Errors: as {@link pipelineRunResult}.
 */
export async function followPipelineRun(
  runId: string,
  target: TemporalTarget,
  onTree: (steps: StepProgress[], humans: readonly string[] | undefined) => void,
  everyMs = 1_000,
): Promise<PipelineResult> {
  return withTemporalClient(target.settings, async (client) => {
    const handle = client.workflow.getHandle<typeof pipelineWorkflow>(runId);
    let ended = false;
    const result = handle.result().finally(() => (ended = true));
    result.catch(() => undefined);
    while (!ended) {
      await Promise.race([result.catch(() => undefined), delay(everyMs)]);
      if (ended) break;
      const description = await handle.describe().catch(() => undefined);
      const tree = description && (await runTree(client, runId, description, 1));
      if (tree) onTree(tree.steps, tree.humans);
    }
    const done = await result;
    onTree(done.steps, undefined);
    return done;
  });
}

/** The innermost message of a workflow failure (the step's own error), with its type. */
export function causeMessage(error: unknown): string {
  let current = error as { message?: string; cause?: unknown; type?: string } | undefined;
  while (current?.cause) current = current.cause as typeof current;
  return `${current?.type ? `${current.type}: ` : ''}${current?.message ?? String(error)}`;
}

/**
 * Requests cancellation of a run: its waiting step stops, nothing more is sent. Errors:
 * `run_not_found`, `temporal_unreachable`.
 */
export async function cancelPipelineRun(runId: string, target: TemporalTarget): Promise<void> {
  await withTemporalClient(target.settings, async (client) => {
    try {
      const handle = client.workflow.getHandle(runId);
      const description = await handle.describe();
      if (description.type !== 'pipelineWorkflow') throw new ToolkitError('run_not_found', `${runId} is a ${description.type} workflow, not a pipeline run`);
      await handle.cancel();
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) throw new ToolkitError('run_not_found', `no pipeline run ${runId}`);
      throw error;
    }
  });
}
