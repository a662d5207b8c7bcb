/**
 * A pipeline run as `teamctl runs list | show` and `teamctl run` describe it, whichever engine
 * runs it: its summary, its tree, and the steps waiting for a person with the command that
 * answers them. Free of Temporal's client, so a local run and `runs show` of a local run load
 * none of it (engine/temporal-runs.ts re-exports these for the Temporal side).
 */
import { randomBytes } from 'node:crypto';
import type { EntryLocation, PipelineProgress, StepProgress } from '../workflows/pipeline-orchestration.ts';

/** The engines a run may be on, as `runs list --json` names them. */
export const RunEngines = { local: 'local', temporal: 'temporal' } as const;
export type RunEngine = (typeof RunEngines)[keyof typeof RunEngines];

/** A run in a list. */
export interface RunSummary {
  run_id: string;
  status: string;
  started_at: string;
  closed_at: string | null;
  /** Where it runs: `local` (a `teamctl run` process of this machine) or `temporal`. */
  engine?: RunEngine;
}

/** A step that waits for a person: where they answer, and the command that answers. */
export interface WaitingStep {
  /** The step's id, with the loops, map items and sub-pipelines around it (`rounds@1/verdict`, `notify/tell`). */
  step: string;
  thread_id: string;
  from: string;
  to: string;
  /** `teamctl thread send THREAD --from NAME --content "…"` (a task step: `teamctl tasks show TASK`, the task its assignee completes). */
  answer_with: string;
  /** How the step waits: `push` (in the workflow, woken by the webhook), `poll` (an activity long-polls), `stream` (a local run, on its event stream); absent for runs that do not say. */
  wait_mode?: string;
}

/** A run with its steps (when they could be read) and result (when it completed). */
export interface RunDetails extends RunSummary {
  pipeline: string | null;
  /** The run's tree: entries, loop iterations, map items, sub-pipelines' steps. */
  steps: PipelineProgress['steps'] | null;
  /** Steps waiting for a human of the team, with how the human answers. */
  waiting: WaitingStep[];
  output: string | null;
  failure: string | null;
}

/** The prefix of the ids of local runs: `local/<organization>/<pipeline>/<time>-<random>`. */
export const LOCAL_RUN_PREFIX = 'local/';

/** Whether a run id names a run of the local engine (a `teamctl run` process), not a Temporal workflow. */
export function isLocalRunId(runId: string): boolean {
  return runId.startsWith(LOCAL_RUN_PREFIX);
}

/** `20261127T100000Z-3f9a1c0d2e4b`: a run id's tail, sortable by start time, unique by 48 random bits. */
export function runStamp(now = new Date()): string {
  return `${now.toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z')}-${randomBytes(6).toString('hex')}`;
}

/** A fresh id for a local run of a pipeline of an organization (`local/acme/triage/20261127T100000Z-3f9a1c0d2e4b`). */
export function newLocalRunId(organization: string, pipeline: string, now = new Date()): string {
  return `${LOCAL_RUN_PREFIX}${organization}/${pipeline}/${runStamp(now)}`;
}

/**
 * The key of a step of the tree: its id under the loops, map items and sub-pipelines around it
 * (`rounds@1/verdict`, `per-item[2]/handle`, `notify/tell`), as idempotency keys name steps.
 */
export function stepKeys(steps: readonly StepProgress[], prefix = ''): Array<{ key: string; step: StepProgress }> {
  return steps.flatMap((step) => [
    { key: `${prefix}${step.id}`, step },
    ...(step.iterations ?? []).flatMap((it) => stepKeys(it.steps, `${prefix}${step.id}@${it.index}/`)),
    ...(step.items ?? []).flatMap((item) => stepKeys(item.steps, `${prefix}${step.id}[${item.index}]/`)),
    ...(step.kind === 'run' ? stepKeys(step.steps ?? [], `${prefix}${step.id}/`) : []),
  ]);
}

/** The key {@link stepKeys} gives the entry `id` at `location` (where a progress event says it is). */
export function stepKeyAt(location: EntryLocation, id: string): string {
  const prefix = location.map((part) => ('loop' in part ? `${part.loop}@${part.iteration}/` : 'map' in part ? `${part.map}[${part.index}]/` : `${part.run}/`)).join('');
  return `${prefix}${id}`;
}

/** A value as one shell word (single-quoted when it needs to be). */
export function shellWord(text: string): string {
  return /^[A-Za-z0-9_./:@=+-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}

/**
 * The step `step` (its key `key`) as a wait for a person, with the command that answers it, when
 * it is one: running, its message sent (its thread known), awaiting someone who is one of
 * `humans` (undefined: the run does not say, then every awaited participant counts).
 */
export function waitingStep(key: string, step: StepProgress, humans: readonly string[] | undefined): WaitingStep | undefined {
  if (step.status !== 'running' || !step.awaiting || !step.thread_id || !step.from) return undefined;
  if (humans && !humans.includes(step.awaiting)) return undefined;
  return {
    step: key,
    thread_id: step.thread_id,
    from: step.from,
    to: step.awaiting,
    // A task step's task is completed by its assignee (its artifacts, then its state), not by a message.
    answer_with: step.task_id ? `teamctl tasks show ${step.task_id}` : `teamctl thread send ${step.thread_id} --from ${shellWord(step.awaiting)} --content '…'`,
    ...(step.wait_mode ? { wait_mode: step.wait_mode } : {}),
  };
}

/**
 * The steps of a tree that wait for a human (`humans`: the team's human names; undefined when
 * the run does not say, then every awaited participant counts), with the command that answers.
 */
export function waitingSteps(steps: readonly StepProgress[], humans: readonly string[] | undefined): WaitingStep[] {
  return stepKeys(steps).flatMap(({ key, step }) => waitingStep(key, step, humans) ?? []);
}

/** How a person answers a waiting step, as one line: `dana answers step ask (thread T, from triager): teamctl thread send T --from dana --content '…'`. */
export function waitingLine(waiting: WaitingStep): string {
  return `${waiting.to} answers step ${waiting.step} (thread ${waiting.thread_id}, from ${waiting.from}): ${waiting.answer_with}`;
}
