/**
 * Pipeline runs on Temporal: start, wait, list, show, cancel. A run is a `pipelineWorkflow`
 * execution; its id (`teamctl-run/<organization>/<pipeline>/<time>-<random>`) is the run id
 * users see, stable across continue-as-new. Scheduled runs have ids under the same prefix
 * (`teamctl-run/<organization>/<schedule>-<time>`), so `runs list` shows them too.
 */
import { randomBytes } from 'node:crypto';
import { WorkflowNotFoundError } from '@temporalio/client';
import type { Client, WorkflowExecutionDescription, WorkflowExecutionInfo } from '@temporalio/client';
import { ToolkitError } from '../errors/catalogue.ts';
import type { PipelineProgress, PipelineResult, PipelineRunInput } from '../workflows/pipeline-orchestration.ts';
import { pipelineWorkflow, progressQuery } from '../workflows/pipeline-workflow.ts';
import { assertWorkerPolls, withTemporalClient } from './temporal-engine.ts';
import type { TemporalTarget } from './temporal-engine.ts';

/** The prefix of the run ids of an organization's pipelines. */
export function runIdPrefix(organization: string): string {
  return `teamctl-run/${organization}/`;
}

/** A fresh run id for a pipeline of an organization: sortable by start time, unique by 48 random bits. */
export function newRunId(organization: string, pipeline: string, now = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
  return `${runIdPrefix(organization)}${pipeline}/${stamp}-${randomBytes(6).toString('hex')}`;
}

/** Temporal's execution status, lower-cased (`running`, `completed`, `failed`, `cancelled`, …). */
function statusOf(info: Pick<WorkflowExecutionInfo, 'status'>): string {
  const name = info.status.name.toLowerCase();
  return name === 'canceled' ? 'cancelled' : name;
}

/** A run in a list. */
export interface RunSummary {
  run_id: string;
  status: string;
  started_at: string;
  closed_at: string | null;
}

/** A run with its steps (when its workflow could be queried) and result (when it completed). */
export interface RunDetails extends RunSummary {
  pipeline: string | null;
  steps: PipelineProgress['steps'] | null;
  output: string | null;
  failure: string | null;
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
      // A chain continued as new lists each of its runs; show its latest only.
      if (info.status.name === 'CONTINUED_AS_NEW') continue;
      runs.push(summary(info));
      if (runs.length >= limit) break;
    }
    return runs;
  });
}

function summary(info: WorkflowExecutionInfo | WorkflowExecutionDescription): RunSummary {
  return { run_id: info.workflowId, status: statusOf(info), started_at: info.startTime.toISOString(), closed_at: info.closeTime?.toISOString() ?? null };
}

/** Asks a run for its progress; undefined when no worker answers within 5 s (a closed run needs one to replay). */
async function progressOf(client: Client, runId: string): Promise<PipelineProgress | undefined> {
  const query = client.workflow.getHandle(runId).query(progressQuery);
  query.catch(() => undefined);
  const timeout = new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 5_000).unref());
  return Promise.race([query.catch(() => undefined), timeout]);
}

/**
 * Shows one run: status and times, each step's state, thread and reply (from the `progress`
 * query), and the output or the failure once it ended. Errors: `run_not_found`,
 * `temporal_unreachable`.
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
    const progress = await progressOf(client, runId);
    let output: string | null = null;
    let failure: string | null = null;
    if (description.status.name === 'COMPLETED') output = (await handle.result()).output;
    else if (description.closeTime) failure = await handle.result().then(
      () => null,
      (error: unknown) => causeMessage(error),
    );
    return { ...summary(description), pipeline: progress?.pipeline ?? null, steps: progress?.steps ?? null, output, failure };
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
