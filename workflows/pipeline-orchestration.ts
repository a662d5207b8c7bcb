/**
 * The orchestration of a pipeline run, shared by both engines: the Temporal workflow
 * (`pipeline-workflow.ts`) and the local engine run this same code over the same activities.
 *
 * Deterministic by construction: the clock comes from the caller (`hooks.now`, Temporal's
 * replay-safe `Date.now` in a workflow), templates render with a pure function, and the only
 * effects are the activities. Steps run in file order; the members of a `parallel` entry run at
 * once and each sees only the steps before the group. A run carries the pipeline definition it
 * started with, so editing the file never changes a running pipeline.
 */
import type { Connection } from '../activities/connection.ts';
import type { ConverseInput, ConverseResult, ConverseTarget, ResolvedTeam } from '../activities/conversation-activities.ts';
import { DEFAULT_STEP_TIMEOUT, parseDuration } from '../definitions/durations.ts';
import { edgeKey, flatSteps, isParallelGroup, peerOf, threadEnds } from '../definitions/pipeline-graph.ts';
import type { InputValue, PipelineDefinition, PipelineStep } from '../definitions/pipeline-schema.ts';
import { renderTemplate } from '../definitions/template.ts';

/** The activities a pipeline runs, as the orchestration sees them. */
export interface PipelineActivities {
  /** Reads the team's participant and edge ids by name. Errors: `not_found` when the team is missing. */
  resolveTeam(input: { connection: Connection; organization: string; team: string }): Promise<ResolvedTeam>;
  /** Sends a step's message (idempotently) and waits for the reply when asked. */
  converse(input: ConverseInput): Promise<ConverseResult>;
}

/** States of a step. */
export const StepStatuses = { pending: 'pending', running: 'running', completed: 'completed', failed: 'failed', cancelled: 'cancelled' } as const;
export type StepStatus = (typeof StepStatuses)[keyof typeof StepStatuses];

/** States of a run. */
export const RunStatuses = { running: 'running', completed: 'completed', failed: 'failed', cancelled: 'cancelled' } as const;
export type RunStatus = (typeof RunStatuses)[keyof typeof RunStatuses];

/** One step's state, as the `progress` query and the result show it. */
export interface StepProgress {
  id: string;
  status: StepStatus;
  thread_id: string | null;
  /** The content of the reply the step waited for; null before it came or when none is awaited. */
  reply: string | null;
}

/** What a run has done so far: carried through continue-as-new. */
export interface PipelineState {
  team?: ResolvedTeam;
  steps: Record<string, StepProgress>;
}

/** Input of a run (a workflow input: references to secrets only, never values). */
export interface PipelineRunInput {
  connection: Connection;
  /** Name of the organization that holds the team. */
  organization: string;
  /** The pipeline as it was when the run started. */
  pipeline: PipelineDefinition;
  /** Inputs given to the run; defaults of the others are filled in by the run. */
  inputs: Record<string, InputValue>;
  /** Business key of the run for idempotency keys; default the workflow id. */
  runKey?: string;
  /** State carried from the previous run of a continued-as-new chain. */
  carried?: PipelineState;
  /** Continue as new once the history holds this many events (default 10,000). */
  historyEventLimit?: number;
}

/** The `progress` query's answer and the shape behind `teamctl runs show`. */
export interface PipelineProgress {
  pipeline: string;
  status: RunStatus;
  steps: StepProgress[];
}

/** The result of a completed run (`teamctl run --json` prints it with the run id). */
export interface PipelineResult {
  status: 'completed';
  output: string | null;
  steps: Array<{ id: string; thread_id: string | null; reply: string | null }>;
}

/** How an engine runs the orchestration. */
export interface PipelineHooks {
  /** The clock (ms since the epoch); in a workflow, the replay-safe one. */
  now(): number;
  /** The run's business key. */
  runKey: string;
  /** Asked after each entry of `steps`: true stops the run there (continue-as-new follows). */
  shouldPause?(): boolean;
  /** Called whenever a step changes state. */
  onProgress?(step: StepProgress): void;
  /** Whether an error is the run's cancellation (its steps are then cancelled, not failed). */
  isCancellation?(error: unknown): boolean;
}

/** The inputs of a run with the pipeline's defaults filled in. */
export function runInputs(pipeline: PipelineDefinition, given: Record<string, InputValue>): Record<string, InputValue> {
  const inputs: Record<string, InputValue> = {};
  for (const [name, input] of Object.entries(pipeline.inputs)) {
    const value = Object.hasOwn(given, name) ? given[name] : input.default;
    if (value !== undefined) inputs[name] = value;
  }
  return inputs;
}

/** A fresh state: every step pending. */
export function initialState(pipeline: PipelineDefinition): PipelineState {
  return { steps: Object.fromEntries(flatSteps(pipeline).map((s) => [s.id, { id: s.id, status: StepStatuses.pending, thread_id: null, reply: null }])) };
}

/** The steps of a state in the pipeline's order. */
export function stepList(pipeline: PipelineDefinition, state: PipelineState): StepProgress[] {
  return flatSteps(pipeline).map((s) => state.steps[s.id] ?? { id: s.id, status: StepStatuses.pending, thread_id: null, reply: null });
}

/** Marks the steps that are still running with `status` (a failed or cancelled run). */
export function settleRunning(state: PipelineState, status: StepStatus): void {
  for (const step of Object.values(state.steps)) if (step.status === StepStatuses.running) step.status = status;
}

/** What {@link orchestratePipeline} ends with: done, or paused for continue-as-new. */
export type PipelineOutcome = { complete: true; result: PipelineResult } | { complete: false; state: PipelineState };

/**
 * Runs a pipeline from `state` (every step pending for a new run; a carried state after
 * continue-as-new, whose completed steps are not run again). Mutates `state` as steps advance so
 * a query can read it. Output: {@link PipelineOutcome}. Raises the first failing activity's
 * error (an `ApplicationFailure` typed by the stable code: `timed_out`, `keys_refused`,
 * `not_found`, …) or the cancellation.
 */
export async function orchestratePipeline(input: PipelineRunInput, acts: PipelineActivities, state: PipelineState, hooks: PipelineHooks): Promise<PipelineOutcome> {
  const { pipeline, connection } = input;
  const inputs = runInputs(pipeline, input.inputs);
  const ends = threadEnds(flatSteps(pipeline));
  state.team ??= await acts.resolveTeam({ connection, organization: input.organization, team: pipeline.team });
  const team = state.team;

  const view = () => ({
    inputs,
    steps: Object.fromEntries(Object.values(state.steps).filter((s) => s.status === StepStatuses.completed).map((s) => [s.id, { reply: s.reply, thread_id: s.thread_id }])),
  });
  const idOf = (name: string): string => {
    const id = team.participants[name];
    if (!id) throw new Error(`team ${pipeline.team} has no participant named ${name} (it changed after the run started)`);
    return id;
  };
  const update = (progress: StepProgress, change: Partial<StepProgress>) => {
    Object.assign(progress, change);
    hooks.onProgress?.({ ...progress });
  };

  const runStep = async (step: PipelineStep, seen: ReturnType<typeof view>): Promise<void> => {
    const progress = state.steps[step.id]!;
    if (progress.status === StepStatuses.completed) return;
    let target: ConverseTarget;
    let peer: string;
    if (step.to !== undefined) {
      const edgeId = team.edges[edgeKey(step.from, step.to)];
      if (!edgeId) throw new Error(`no edge joins ${step.from} and ${step.to} in team ${pipeline.team} (it changed after the run started)`);
      target = { edgeId, ...(step.subject !== undefined ? { subject: renderTemplate(step.subject, seen) } : {}) };
      peer = step.to;
    } else {
      target = { threadId: state.steps[step.thread!]!.thread_id! };
      peer = peerOf(ends.get(step.id)!, step.from)!;
    }
    update(progress, { status: StepStatuses.running });
    try {
      const result = await acts.converse({
        connection,
        runKey: hooks.runKey,
        stepId: step.id,
        target,
        senderId: idOf(step.from),
        content: renderTemplate(step.content, seen),
        ...(step.awaitReply ? { awaitFromId: idOf(peer), deadline: hooks.now() + parseDuration(step.timeout ?? DEFAULT_STEP_TIMEOUT)! } : {}),
      });
      update(progress, { status: StepStatuses.completed, thread_id: result.threadId, reply: result.reply?.content ?? null });
    } catch (error) {
      if (progress.status === StepStatuses.running) update(progress, { status: hooks.isCancellation?.(error) ? StepStatuses.cancelled : StepStatuses.failed });
      throw error;
    }
  };

  for (const entry of pipeline.steps) {
    const members = isParallelGroup(entry) ? entry.parallel : [entry];
    if (members.every((s) => state.steps[s.id]?.status === StepStatuses.completed)) continue;
    // Every member renders against the steps before the group, never a sibling's reply.
    const seen = view();
    await Promise.all(members.map((s) => runStep(s, seen)));
    if (hooks.shouldPause?.()) return { complete: false, state };
  }
  const steps = stepList(pipeline, state).map(({ id, thread_id, reply }) => ({ id, thread_id, reply }));
  return { complete: true, result: { status: 'completed', output: pipeline.output === undefined ? null : renderTemplate(pipeline.output, view()), steps } };
}
