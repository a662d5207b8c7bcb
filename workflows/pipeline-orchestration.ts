/**
 * The interpreter of pipeline runs, shared by both engines: the Temporal workflow
 * (`pipeline-workflow.ts`) and the local engine (`engine/local-engine.ts`) run this same code over
 * the same activities.
 *
 * Deterministic by construction: the clock comes from the caller (`hooks.now`, Temporal's
 * replay-safe `Date.now` in a workflow), templates render with a pure function, expressions are
 * CEL evaluated by a pure library (`definitions/expressions.ts`), typed replies are checked by
 * ajv (`definitions/reply-schema.ts`), both inside the workflow; the only effects are the
 * activities, the timers (`hooks.sleep`) and the sub-pipelines (`hooks.runChild`, a child
 * workflow on Temporal). A run carries the pipeline definition it started with (and the
 * sub-pipelines it may run), so editing the file never changes a running pipeline.
 *
 * What runs: entries in file order; the members of a `parallel` entry at once, each seeing only
 * the entries before the group; `when` skips an entry; a `loop` runs its body until `until`
 * holds (at most `maxIterations` times, else `loop_exhausted`); a `map` runs its body once per
 * item, `maxConcurrency` at a time; `run` starts a sub-pipeline; `sleep` waits. `onError:
 * continue` marks a failed entry and goes on. Every entry's state lives in a tree
 * ({@link PipelineState}) that the `progress` query and the result show, and that a run carries
 * through continue-as-new: completed entries are not run again, a loop resumes at its iteration,
 * a map at its items.
 *
 * Sending and awaiting are one seam: {@link exchange} hands an engine the message to send and,
 * apart, what to wait for, and hears back when the message went out and how the step waits. The
 * Temporal workflow either does both in one `converse` activity (a long poll: `poll`) or sends in a
 * short local activity and waits in the workflow itself (`push`); the local engine waits on the
 * run's event stream (`stream`).
 *
 * Idempotency keys: a step's key is its id at the top level (as before loops existed), and
 * `LOOP@K/ID`, `MAP[I]/ID` inside bodies (nested: `outer@0/inner[3]/ID`); a re-ask adds `#N`. With
 * the run's business key they make each message's `Idempotency-Key`, so no retry, replay or
 * continue-as-new sends a message twice.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { Connection } from '../activities/connection.ts';
import type { ConverseInput, ConverseResult, ConverseTarget, ResolvedTeam, TaskStepInput, TaskStepResult } from '../activities/conversation-activities.ts';
import { DEFAULT_STEP_TIMEOUT, parseDuration } from '../definitions/durations.ts';
import { evaluateCondition, evaluateList, scanExpression } from '../definitions/expressions.ts';
import type { JsonValue } from '../definitions/expressions.ts';
import { coerceInput } from '../definitions/pipeline-inputs.ts';
import { edgeKey, entryId, entryKind, entryOptions, flatSteps, isLoop, isMap, isParallelGroup, isRun, isSleep, peerOf, threadEnds } from '../definitions/pipeline-graph.ts';
import type { EntryKind } from '../definitions/pipeline-graph.ts';
import { DEFAULT_RECONCILE_EVERY, MAX_MAP_ITEMS } from '../definitions/pipeline-limits.ts';
import type { WaitMode } from '../definitions/pipeline-limits.ts';
import type { InputValue, LoopEntry, MapEntry, PipelineDefinition, PipelineEntry, PipelineStep, RunEntry, SleepEntry } from '../definitions/pipeline-schema.ts';
import { checkReply, reaskMessage } from '../definitions/reply-schema.ts';
import { renderTemplate } from '../definitions/template.ts';

/** How a step waits for its reply, as `runs show` says: see `WaitModes` (definitions/pipeline-limits.ts). */
export const WaitKinds = {
  /** In the workflow, woken by the webhook (`teamctl worker --events-listen`), reading the thread every `reconcileEvery`. */
  push: 'push',
  /** An activity long-polls the thread (holding a worker's activity slot). */
  poll: 'poll',
  /** The local engine: on the run's one event stream. */
  stream: 'stream',
} as const;
export type WaitKind = (typeof WaitKinds)[keyof typeof WaitKinds];

/** What an engine tells the orchestration while a step's exchange runs, and how long between reconcile reads. */
export interface ExchangeOptions {
  /** The message went out: the step's thread is known (shown before the reply comes). */
  sent?(threadId: string): void;
  /** The step waits for its reply in this way. */
  waiting?(kind: WaitKind): void;
  /** Push waits: milliseconds between reads of the thread (the step's `reconcileEvery`). */
  reconcileEveryMs?: number;
  /** A task step: its task was created (shown, with its state, before it ends). */
  taskCreated?(task: TaskStepResult): void;
}

/** The activities a pipeline runs, as the orchestration sees them. */
export interface PipelineActivities {
  /** Reads the team's participant and edge ids by name. Errors: `not_applied` when the team is missing. */
  resolveTeam(input: { connection: Connection; organization: string; team: string }): Promise<ResolvedTeam>;
  /** Sends a step's message (idempotently) and waits for the reply when asked (`options`: see {@link ExchangeOptions}). */
  converse(input: ConverseInput, options?: ExchangeOptions): Promise<ConverseResult>;
  /**
   * A task step (`task: true`): creates its task (idempotently) and, when `input.deadline` is
   * given, waits until the task is final. Output: the task as the step needs it. Errors:
   * `timed_out` at the deadline, the service's. Absent: the engine cannot run task steps (such a
   * step fails with `not_applied`).
   */
  task?(input: TaskStepInput, options?: ExchangeOptions): Promise<TaskStepResult>;
}

/** The most characters of a message (contract §4): a re-asked task's text is cut to it. */
const MAX_MESSAGE_CHARACTERS = 32_768;

/** States of an entry (a step, a loop, a map item…). */
export const StepStatuses = {
  pending: 'pending',
  running: 'running',
  completed: 'completed',
  failed: 'failed',
  skipped: 'skipped',
  cancelled: 'cancelled',
} as const;
export type StepStatus = (typeof StepStatuses)[keyof typeof StepStatuses];

/** States of a run. */
export const RunStatuses = { running: 'running', completed: 'completed', failed: 'failed', cancelled: 'cancelled' } as const;
export type RunStatus = (typeof RunStatuses)[keyof typeof RunStatuses];

/** Codes of the failures the interpreter raises itself (the rest come from activities). */
export const PipelineErrorCodes = {
  /** A typed reply did not fit its schema after `attempts` replies. */
  reply_invalid: 'reply_invalid',
  /** A loop ran `maxIterations` times without `until` holding. */
  loop_exhausted: 'loop_exhausted',
  /** An expression failed, or gave a value of the wrong type (a `when` that is not a bool, `items` that are not a list, over 1,000 items). */
  expression_failed: 'expression_failed',
  /** An input given to a sub-pipeline is not of the input's type once rendered. */
  invalid_input: 'invalid_input',
  /** A task step's task ended failed, canceled or rejected. */
  task_failed: 'task_failed',
} as const;

/** Why an entry failed: the stable code (`reply_invalid`, `timed_out`, …) and the message. */
export interface EntryError {
  code: string;
  message: string;
}

/** A reply that did not fit a typed step's schema, and what was wrong with it. */
export interface MisfitReply {
  reply: string;
  problems: string[];
}

/**
 * One entry's state, as the run keeps it (and carries through continue-as-new). A state carried
 * from before entries had kinds has steps only: `kind` absent means a step.
 */
export interface NodeState {
  id: string;
  kind?: EntryKind;
  status: StepStatus;
  thread_id: string | null;
  /** The reply's text (a step), the output (a sub-pipeline); null otherwise. */
  reply: string | null;
  /** The parsed value of a typed reply, the reply's text for an untyped one, a sub-pipeline's output. */
  value?: JsonValue;
  error?: EntryError | null;
  /** A step's idempotency key within the run. */
  key?: string;
  /** A step's sender and the other end of its thread (participant names). */
  from?: string;
  to?: string;
  /** While a step waits: whom it waits for. */
  awaiting?: string | null;
  /** While a step waits: how (push, poll, stream). */
  wait_mode?: WaitKind | null;
  /** A task step: its task (null before it was created) and the task's state as last seen. */
  task_id?: string | null;
  task_state?: string | null;
  /** Replies that did not fit a typed step's schema (each answered with a re-ask). */
  misfits?: MisfitReply[];
  /** A loop's iterations, in order. */
  iterations?: ScopeState[];
  /** A map's items, once `items` was evaluated. */
  items?: ItemState[] | null;
  /** A sub-pipeline's run id (a child workflow's id on Temporal) and pipeline. */
  run_id?: string | null;
  pipeline?: string;
  /** When a sleep ends (ms since the epoch). */
  until?: number | null;
}

/** The entries of one scope: the pipeline's top level, a loop iteration, a map item. */
export interface ScopeState {
  /** Entry states by id (members of parallel groups included). */
  steps: Record<string, NodeState>;
  /** A loop iteration: whether its body has finished (then `until` was evaluated). */
  done?: boolean;
}

/** One item of a map. */
export interface ItemState extends ScopeState {
  item: JsonValue;
  status: StepStatus;
  /** The threads the item's steps opened, by step id (continued by loops inside the item). */
  threads: Record<string, string>;
}

/** What a run has done so far: carried through continue-as-new. */
export interface PipelineState {
  team?: ResolvedTeam;
  /** The top-level entries by id (for runs recorded before loops existed: only steps). */
  steps: Record<string, NodeState>;
  /** Threads opened by steps of top-level loops, by step id (continued in later iterations). */
  threads?: Record<string, string>;
}

/** Input of a run (a workflow input: references to secrets only, never values). */
export interface PipelineRunInput {
  connection: Connection;
  /** Name of the organization that holds the team. */
  organization: string;
  /** The pipeline as it was when the run started. */
  pipeline: PipelineDefinition;
  /** The pipelines its `run` entries may start (directly or not), by name, as they were when the run started. */
  pipelines?: Record<string, PipelineDefinition>;
  /** Inputs given to the run; defaults of the others are filled in by the run. */
  inputs: Record<string, InputValue>;
  /** Business key of the run for idempotency keys; default the workflow id. */
  runKey?: string;
  /** State carried from the previous run of a continued-as-new chain. */
  carried?: PipelineState;
  /** Continue as new once the history holds this many events (default 10,000). */
  historyEventLimit?: number;
  /**
   * How waiting steps learn of replies on Temporal (`teamctl run --wait-mode`; default the
   * pipeline's `waitMode`, else auto). Passed on to sub-pipelines.
   */
  waitMode?: WaitMode;
}

/** One entry as the `progress` query, the result and `teamctl runs show --json` show it: a tree. */
export interface StepProgress {
  id: string;
  kind: EntryKind;
  status: StepStatus;
  thread_id: string | null;
  reply: string | null;
  value: JsonValue;
  error: EntryError | null;
  /** A step: its sender, the other end, whom it waits for while it waits (and how), the replies that did not fit. */
  from?: string;
  to?: string;
  awaiting?: string | null;
  wait_mode?: WaitKind;
  misfits?: MisfitReply[];
  /** A task step: its task (null before it was created) and the task's state (A2A's spelling) as last seen. */
  task_id?: string | null;
  task_state?: string | null;
  /** A loop: its iterations. */
  iterations?: Array<{ index: number; steps: StepProgress[] }>;
  /** A map: its items (null before `items` was evaluated). */
  items?: Array<{ index: number; item: JsonValue; status: StepStatus; steps: StepProgress[] }> | null;
  /** A sub-pipeline: its run id and pipeline; its own steps (filled in by `runs show`, not by the run). */
  run_id?: string | null;
  pipeline?: string;
  steps?: StepProgress[];
  /** A sleep: when it ends (ISO 8601). */
  until?: string | null;
}

/** The `progress` query's answer and the shape behind `teamctl runs show`. */
export interface PipelineProgress {
  pipeline: string;
  status: RunStatus;
  steps: StepProgress[];
  /** The team's human names, once the team was read (runs recorded before it was read: absent). */
  humans?: string[];
}

/** The result of a completed run (`teamctl run --json` prints it with the run id). */
export interface PipelineResult {
  status: 'completed';
  output: string | null;
  steps: StepProgress[];
}

/** Where an entry is in the tree: the loops and map items around it, outermost first. */
export type EntryLocation = Array<{ loop: string; iteration: number } | { map: string; index: number; item: JsonValue } | { run: string }>;

/** A change of one entry's state, as `onProgress` reports it. */
export interface ProgressEvent {
  location: EntryLocation;
  step: StepProgress;
}

/** A sub-pipeline to run to its end. */
export interface ChildRun {
  /** Its run id: the parent's business key, `/`, the entry's key (a child workflow id on Temporal). */
  runId: string;
  input: PipelineRunInput;
}

/** How an engine runs the orchestration. */
export interface PipelineHooks {
  /** The clock (ms since the epoch); in a workflow, the replay-safe one. */
  now(): number;
  /** The run's business key. */
  runKey: string;
  /** Asked after each entry (and between iterations and map items): true stops the run there (continue-as-new follows). */
  shouldPause?(): boolean;
  /** Called whenever an entry changes state. */
  onProgress?(event: ProgressEvent): void;
  /** Whether an error is the run's cancellation (its entries are then cancelled, not failed). */
  isCancellation?(error: unknown): boolean;
  /** Waits `ms` milliseconds (a durable timer in a workflow). */
  sleep(ms: number): Promise<void>;
  /** Runs a sub-pipeline to its end (a child workflow on Temporal). Output: its result. Errors: its failure. */
  runChild(child: ChildRun): Promise<PipelineResult>;
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

/** A pending entry's state. */
function pendingNode(entry: PipelineEntry | PipelineStep): NodeState {
  const kind = entryKind(entry);
  // A task step has its task_id (null until created), so that expressions may read it when skipped.
  const task = kind === 'step' && (entry as PipelineStep).task ? { task_id: null } : {};
  return { id: entryId(entry)!, ...(kind === 'step' ? {} : { kind }), status: StepStatuses.pending, thread_id: null, reply: null, ...task };
}

/** The states of a list of entries, all pending (members of parallel groups included). */
function pendingScope(entries: readonly PipelineEntry[]): Record<string, NodeState> {
  const steps: Record<string, NodeState> = {};
  for (const entry of entries) {
    for (const member of isParallelGroup(entry) ? entry.parallel : [entry]) steps[entryId(member)!] = pendingNode(member);
  }
  return steps;
}

/** A fresh state: every top-level entry pending. */
export function initialState(pipeline: PipelineDefinition): PipelineState {
  return { steps: pendingScope(pipeline.steps) };
}

/** The entries of a list in order, members of parallel groups in place of their group. */
function membersOf(entries: readonly PipelineEntry[]): PipelineEntry[] {
  return entries.flatMap((entry) => (isParallelGroup(entry) ? entry.parallel : [entry]));
}

/** One entry's state as the tree shows it. */
function progressOf(entry: PipelineEntry, node: NodeState | undefined): StepProgress {
  const state = node ?? pendingNode(entry);
  const kind = state.kind ?? 'step';
  const out: StepProgress = {
    id: state.id,
    kind,
    status: state.status,
    thread_id: state.thread_id,
    reply: state.reply,
    value: state.value !== undefined ? state.value : kind === 'step' ? state.reply : null,
    error: state.error ?? null,
  };
  if (kind === 'step') {
    if (state.from !== undefined) out.from = state.from;
    if (state.to !== undefined) out.to = state.to;
    if (state.awaiting) out.awaiting = state.awaiting;
    if (state.awaiting && state.wait_mode) out.wait_mode = state.wait_mode;
    if (state.misfits?.length) out.misfits = state.misfits;
    if (state.task_id !== undefined) {
      out.task_id = state.task_id;
      out.task_state = state.task_state ?? null;
    }
  } else if (isLoop(entry)) {
    out.iterations = (state.iterations ?? []).map((iteration, index) => ({ index, steps: scopeProgress(entry.loop.steps, iteration.steps) }));
  } else if (isMap(entry)) {
    out.items = state.items === undefined || state.items === null ? null : state.items.map((item, index) => ({ index, item: item.item, status: item.status, steps: scopeProgress(entry.map.steps, item.steps) }));
  } else if (isRun(entry)) {
    out.run_id = state.run_id ?? null;
    out.pipeline = entry.run.pipeline;
  } else if (isSleep(entry)) {
    out.until = state.until === undefined || state.until === null ? null : new Date(state.until).toISOString();
  }
  return out;
}

/** The entries of a scope in the pipeline's order, as the tree shows them. */
function scopeProgress(entries: readonly PipelineEntry[], steps: Record<string, NodeState>): StepProgress[] {
  return membersOf(entries).map((entry) => progressOf(entry, steps[entryId(entry)!]));
}

/** The run's entries in the pipeline's order, as a tree (the `progress` query, the result). */
export function stepList(pipeline: PipelineDefinition, state: PipelineState): StepProgress[] {
  return scopeProgress(pipeline.steps, state.steps);
}

/** Marks the entries that are still running with `status` (a failed or cancelled run), nested ones too. */
export function settleRunning(state: Pick<PipelineState, 'steps'>, status: StepStatus): void {
  const settle = (steps: Record<string, NodeState>) => {
    for (const node of Object.values(steps)) {
      if (node.status === StepStatuses.running) {
        node.status = status;
        node.awaiting = null;
        node.wait_mode = null;
      }
      for (const iteration of node.iterations ?? []) settle(iteration.steps);
      for (const item of node.items ?? []) {
        if (item.status === StepStatuses.running) item.status = status;
        settle(item.steps);
      }
    }
  };
  settle(state.steps);
}

/** What {@link orchestratePipeline} ends with: done, or paused for continue-as-new. */
export type PipelineOutcome = { complete: true; result: PipelineResult } | { complete: false; state: PipelineState };

/** Whether a list of entries ran to its end or stopped for continue-as-new. */
type Flow = 'done' | 'paused';

/** A failure the interpreter raises: typed by the stable code, never retried. */
function failure(code: string, message: string): ApplicationFailure {
  return ApplicationFailure.create({ type: code, message, nonRetryable: true });
}

/**
 * The stable code and message of an error: an `ApplicationFailure`'s type, the cause of an
 * activity's or a child workflow's failure, a toolkit error's code; `internal` otherwise.
 */
export function errorOf(error: unknown): EntryError {
  let current = error as { message?: string; type?: string; code?: string; cause?: unknown } | undefined;
  for (let depth = 0; depth < 10 && current; depth++) {
    if (typeof current.type === 'string' && current.type !== '') return { code: current.type, message: current.message ?? '' };
    if (typeof current.code === 'string' && current.code !== '' && !current.cause) return { code: current.code, message: current.message ?? '' };
    if (!current.cause) break;
    current = current.cause as typeof current;
  }
  return { code: 'internal', message: current?.message ?? String(error) };
}

/** The thread a failure of a step's activity names (a `timed_out` wait says where its message went), if any. */
function threadOfFailure(error: unknown): string | undefined {
  let current = error as { details?: unknown; cause?: unknown } | undefined;
  for (let depth = 0; depth < 10 && current; depth++) {
    const [first] = Array.isArray(current.details) ? current.details : [];
    if (first && typeof first === 'object' && typeof (first as { threadId?: unknown }).threadId === 'string') return (first as { threadId: string }).threadId;
    current = current.cause as typeof current;
  }
  return undefined;
}

/** Where entries run: their scope's states, the scopes around it, the variables of expressions. */
interface Frame {
  /** The states of this scope's entries. */
  steps: Record<string, NodeState>;
  /** The scopes around it, outermost first (this one last). */
  chain: Array<Record<string, NodeState>>;
  /** The prefix of the idempotency keys of this scope's steps (`''` at the top level). */
  keyPrefix: string;
  location: EntryLocation;
  /** The innermost loop's iteration, when in a loop. */
  iteration?: number;
  /** Items of the maps around, by their `as` names. */
  items: Record<string, JsonValue>;
  /** Threads opened by steps in loops, by step id: continued in the next iterations. */
  threads: Record<string, string>;
}

/** An entry's fields as expressions and templates see them (`steps.ID`). */
function nodeView(node: NodeState): Record<string, unknown> {
  const status = node.status;
  const error = node.error ?? null;
  switch (node.kind ?? 'step') {
    case 'loop':
      return { status, error, iterations: node.iterations?.length ?? 0 };
    case 'map':
      return {
        status,
        error,
        get results() {
          return (node.items ?? []).map((item) => scopeView([item.steps]));
        },
      };
    case 'run':
      return { status, error, value: node.value ?? null, reply: node.reply, run_id: node.run_id ?? null };
    case 'sleep':
      return { status, error };
    default:
      return {
        reply: node.reply,
        value: node.value !== undefined ? node.value : node.reply,
        status,
        error,
        thread_id: node.thread_id,
        ...(node.task_id !== undefined ? { task_id: node.task_id } : {}),
      };
  }
}

/**
 * `steps` as a scope chain sees it: every entry of the scopes, and of the iterations of their
 * loops (the latest iteration that ran an entry wins; a pending entry does not hide one that
 * ran). Steps inside a map are not in it: `steps.MAP.results` holds them.
 */
function scopeView(chain: ReadonlyArray<Record<string, NodeState>>): Record<string, unknown> {
  const nodes = new Map<string, NodeState>();
  const add = (steps: Record<string, NodeState>) => {
    for (const node of Object.values(steps)) {
      if (node.status !== StepStatuses.pending || !nodes.has(node.id)) nodes.set(node.id, node);
      for (const iteration of node.iterations ?? []) add(iteration.steps);
    }
  };
  for (const steps of chain) add(steps);
  const view: Record<string, unknown> = {};
  // Lazily: a map's results are only built when something reads them.
  for (const [id, node] of nodes) Object.defineProperty(view, id, { enumerable: true, get: () => nodeView(node) });
  return view;
}

/** The ids of `steps` an expression reads (undefined: all of them), cached by expression text. */
const stepsRead = new Map<string, Set<string> | undefined>();
function stepsReadBy(expression: string): Set<string> | undefined {
  if (stepsRead.has(expression)) return stepsRead.get(expression);
  const scan = scanExpression(expression);
  let ids: Set<string> | undefined = new Set();
  if (scan.ok) {
    for (const reference of scan.references) {
      if (reference.root !== 'steps') continue;
      const [first] = reference.segments;
      if (first === undefined) ids = undefined;
      else ids?.add(first.name);
    }
  } else ids = undefined;
  if (stepsRead.size > 500) stepsRead.delete(stepsRead.keys().next().value!);
  stepsRead.set(expression, ids);
  return ids;
}

/**
 * Runs a pipeline from `state` (every entry pending for a new run; a carried state after
 * continue-as-new, whose finished entries are not run again). Mutates `state` as entries advance
 * so a query can read it. Output: {@link PipelineOutcome}. Raises the first failure of an entry
 * without `onError: continue`: an activity's (an `ApplicationFailure` typed by the stable code:
 * `timed_out`, `keys_refused`, `not_applied`, …), the interpreter's own (`reply_invalid`,
 * `loop_exhausted`, `expression_failed`, `invalid_input`), a sub-pipeline's; or the cancellation.
 */
export async function orchestratePipeline(input: PipelineRunInput, acts: PipelineActivities, state: PipelineState, hooks: PipelineHooks): Promise<PipelineOutcome> {
  const { pipeline, connection } = input;
  const inputs = runInputs(pipeline, input.inputs);
  const ends = threadEnds(flatSteps(pipeline));
  state.team ??= await acts.resolveTeam({ connection, organization: input.organization, team: pipeline.team });
  const team = state.team;
  state.threads ??= {};

  const idOf = (name: string): string => {
    const id = team.participants[name];
    if (!id) throw failure('not_applied', `team ${pipeline.team} has no participant named ${name} (it changed after the run started)`);
    return id;
  };

  /** Reports an entry's new state. */
  const changed = (entry: PipelineEntry, node: NodeState, frame: Frame) => {
    hooks.onProgress?.({ location: frame.location, step: progressOf(entry, node) });
  };
  const update = (entry: PipelineEntry, node: NodeState, frame: Frame, change: Partial<NodeState>) => {
    Object.assign(node, change);
    changed(entry, node, frame);
  };

  /** The variables of templates (`steps` lazily). */
  const templateView = (frame: Frame): Record<string, unknown> => ({
    inputs,
    steps: scopeView(frame.chain),
    ...(frame.iteration !== undefined ? { iteration: frame.iteration } : {}),
    ...frame.items,
  });

  /** The variables of an expression: `steps` holds only the entries it reads. */
  const expressionVariables = (expression: string, frame: Frame): Record<string, unknown> => {
    const all = scopeView(frame.chain);
    const read = stepsReadBy(expression);
    const steps = read === undefined ? { ...all } : Object.fromEntries([...read].filter((id) => Object.hasOwn(all, id)).map((id) => [id, all[id]]));
    return { inputs, steps, ...(frame.iteration !== undefined ? { iteration: frame.iteration } : {}), ...frame.items };
  };
  const condition = (expression: string, frame: Frame): boolean => {
    try {
      return evaluateCondition(expression, expressionVariables(expression, frame));
    } catch (error) {
      throw failure(PipelineErrorCodes.expression_failed, (error as Error).message);
    }
  };

  /**
   * Sends `message` and, when `wait` is given, waits for the reply, as the engine does it (see the
   * module comment for the seam this is): `options` hears when the message went out and how the
   * step waits.
   */
  const exchange = (
    message: Omit<ConverseInput, 'connection' | 'runKey' | 'awaitFromId' | 'deadline'>,
    wait: { fromId: string; deadline: number } | undefined,
    options: ExchangeOptions,
  ): Promise<ConverseResult> => acts.converse({ connection, runKey: hooks.runKey, ...message, ...(wait ? { awaitFromId: wait.fromId, deadline: wait.deadline } : {}) }, options);

  /**
   * Runs a task step (`task: true`, contract §12): creates its task on the edge between `from`
   * (requester) and `to` (assignee) and waits until the task is final. Completed: the reply is the
   * text of its artifacts (or its first data part as JSON), checked against a typed reply's schema
   * as a message's reply is (its first data part first); a misfit is asked again with a new task
   * on the same edge (a final task changes no more) whose text says what is wrong and what was
   * asked. Failed, canceled or rejected: `task_failed`.
   */
  const runTaskStep = async (step: PipelineStep, node: NodeState, frame: Frame, seen: Record<string, unknown>): Promise<void> => {
    const key = `${frame.keyPrefix}${step.id}`;
    const peer = step.to!;
    const edgeId = team.edges[edgeKey(step.from, peer)];
    if (!edgeId) throw failure('not_applied', `no edge joins ${step.from} and ${peer} in team ${pipeline.team} (it changed after the run started)`);
    if (!acts.task) throw failure('not_applied', `step ${step.id} asks through a task, which this engine cannot do`);
    const ask = acts.task;
    const requesterId = idOf(step.from);
    idOf(peer); // the assignee must still be in the team
    update(step, node, frame, { status: StepStatuses.running, key, from: step.from, to: peer, task_id: node.task_id ?? null, ...(step.awaitReply ? { awaiting: peer } : {}) });
    const options: ExchangeOptions = {
      taskCreated: (task) => {
        if (node.task_id !== task.taskId || node.task_state !== task.state) update(step, node, frame, { task_id: task.taskId, task_state: task.state, thread_id: task.threadId });
      },
      waiting: (kind) => update(step, node, frame, { wait_mode: kind }),
    };
    const title = step.subject === undefined ? undefined : renderTemplate(step.subject, seen);
    const content = renderTemplate(step.content, seen);
    const askTask = (stepId: string, text: string) =>
      ask(
        {
          connection,
          runKey: hooks.runKey,
          stepId,
          edgeId,
          requesterId,
          content: text,
          ...(title ? { title } : {}),
          ...(step.awaitReply ? { deadline: hooks.now() + parseDuration(step.timeout ?? DEFAULT_STEP_TIMEOUT)! } : {}),
        },
        options,
      );
    let result = await askTask(key, content);
    const misfits: MisfitReply[] = [];
    for (let attempt = 1; ; attempt++) {
      update(step, node, frame, { task_id: result.taskId, task_state: result.state, thread_id: result.threadId });
      if (!step.awaitReply) {
        update(step, node, frame, { status: StepStatuses.completed, awaiting: null, wait_mode: null });
        return;
      }
      if (result.state !== 'completed') {
        throw failure(PipelineErrorCodes.task_failed, `step ${step.id}: task ${result.taskId} ended ${result.state}${result.message ? `: ${result.message}` : ''}`);
      }
      const text = result.text ?? (result.data !== undefined ? JSON.stringify(result.data) : null);
      if (!step.reply) {
        update(step, node, frame, { status: StepStatuses.completed, reply: text, awaiting: null, wait_mode: null });
        return;
      }
      const { schema, attempts } = step.reply;
      const candidate = result.data !== undefined ? JSON.stringify(result.data) : (result.text ?? '');
      const check = checkReply(candidate, schema);
      if (check.ok) {
        update(step, node, frame, { status: StepStatuses.completed, reply: text, value: check.value, awaiting: null, wait_mode: null });
        return;
      }
      misfits.push({ reply: candidate, problems: check.problems });
      update(step, node, frame, { misfits: [...misfits] });
      if (attempt >= attempts) {
        throw failure(PipelineErrorCodes.reply_invalid, `step ${step.id}: ${attempts === 1 ? 'the artifact of its task does not fit' : `none of the artifacts of its ${attempts} tasks fits`} its schema; the last one: ${check.problems.join('; ')}`);
      }
      const again = `${reaskMessage(check.problems, schema, attempt + 1, attempts)}\n\nWhat was asked:\n${content}`;
      result = await askTask(`${key}#${attempt + 1}`, again.length > MAX_MESSAGE_CHARACTERS ? again.slice(0, MAX_MESSAGE_CHARACTERS) : again);
    }
  };

  /** Runs one conversation step: its message, its wait, and the re-asks of a typed reply. */
  const runStep = async (step: PipelineStep, node: NodeState, frame: Frame, seen: Record<string, unknown>): Promise<void> => {
    if (step.task) return runTaskStep(step, node, frame, seen);
    const key = `${frame.keyPrefix}${step.id}`;
    let target: ConverseTarget;
    let peer: string;
    if (step.to !== undefined) {
      peer = step.to;
      const continued = frame.keyPrefix === '' ? undefined : frame.threads[step.id];
      if (continued !== undefined) target = { threadId: continued };
      else {
        const edgeId = team.edges[edgeKey(step.from, step.to)];
        if (!edgeId) throw failure('not_applied', `no edge joins ${step.from} and ${step.to} in team ${pipeline.team} (it changed after the run started)`);
        target = { edgeId, ...(step.subject !== undefined ? { subject: renderTemplate(step.subject, seen) } : {}) };
      }
    } else {
      const parent = (seen['steps'] as Record<string, { thread_id?: string | null } | undefined>)[step.thread!];
      if (!parent?.thread_id) throw failure('not_applied', `step ${step.thread} has no thread for step ${step.id} to continue`);
      target = { threadId: parent.thread_id };
      peer = peerOf(ends.get(step.id)!, step.from)!;
    }
    const senderId = idOf(step.from);
    const deadline = () => hooks.now() + parseDuration(step.timeout ?? DEFAULT_STEP_TIMEOUT)!;
    const fromId = step.awaitReply ? idOf(peer) : undefined;
    update(step, node, frame, { status: StepStatuses.running, key, from: step.from, to: peer, ...(step.awaitReply ? { awaiting: peer } : {}) });
    const options: ExchangeOptions = {
      sent: (threadId) => {
        if (node.thread_id !== threadId) update(step, node, frame, { thread_id: threadId });
      },
      waiting: (kind) => update(step, node, frame, { wait_mode: kind }),
      reconcileEveryMs: parseDuration(step.reconcileEvery ?? pipeline.reconcileEvery ?? DEFAULT_RECONCILE_EVERY)!,
    };
    let result = await exchange({ stepId: key, target, senderId, content: renderTemplate(step.content, seen) }, fromId ? { fromId, deadline: deadline() } : undefined, options);
    if (frame.keyPrefix !== '' && step.to !== undefined) frame.threads[step.id] ??= result.threadId;
    if (!step.reply || !result.reply) {
      update(step, node, frame, { status: StepStatuses.completed, thread_id: result.threadId, reply: result.reply?.content ?? null, awaiting: null, wait_mode: null });
      return;
    }
    const { schema, attempts } = step.reply;
    const misfits: MisfitReply[] = [];
    for (let attempt = 1; ; attempt++) {
      const text = result.reply!.content;
      const check = checkReply(text, schema);
      if (check.ok) {
        update(step, node, frame, { status: StepStatuses.completed, thread_id: result.threadId, reply: text, value: check.value, awaiting: null, wait_mode: null });
        return;
      }
      misfits.push({ reply: text, problems: check.problems });
      update(step, node, frame, { thread_id: result.threadId, misfits: [...misfits] });
      if (attempt >= attempts) {
        throw failure(PipelineErrorCodes.reply_invalid, `step ${step.id}: ${attempts === 1 ? 'the reply does not fit' : `none of the ${attempts} replies fits`} its schema; the last one: ${check.problems.join('; ')}`);
      }
      result = await exchange(
        { stepId: `${key}#${attempt + 1}`, target: { threadId: result.threadId }, senderId, content: reaskMessage(check.problems, schema, attempt + 1, attempts) },
        { fromId: fromId!, deadline: deadline() },
        options,
      );
    }
  };

  /** Runs a loop from where its state is. */
  const runLoop = async (entry: LoopEntry, node: NodeState, frame: Frame): Promise<Flow> => {
    const { loop } = entry;
    node.iterations ??= [];
    update(entry, node, frame, { status: StepStatuses.running });
    for (;;) {
      let current = node.iterations.at(-1);
      if (!current || current.done) {
        if (node.iterations.length >= loop.maxIterations) {
          if (loop.until === undefined) break;
          throw failure(PipelineErrorCodes.loop_exhausted, `loop ${loop.id}: ${JSON.stringify(loop.until)} did not hold after ${loop.maxIterations} iteration${loop.maxIterations === 1 ? '' : 's'}`);
        }
        if (node.iterations.length > 0 && hooks.shouldPause?.()) return 'paused';
        current = { steps: pendingScope(loop.steps) };
        node.iterations.push(current);
        changed(entry, node, frame);
      }
      const index = node.iterations.length - 1;
      const inner: Frame = {
        ...frame,
        steps: current.steps,
        chain: [...frame.chain, current.steps],
        keyPrefix: `${frame.keyPrefix}${loop.id}@${index}/`,
        location: [...frame.location, { loop: loop.id, iteration: index }],
        iteration: index,
        // Top-level loops keep their threads in the run's state; loops in a map item, in the item.
        threads: frame.keyPrefix === '' ? state.threads! : frame.threads,
      };
      if ((await runList(loop.steps, inner)) === 'paused') return 'paused';
      current.done = true;
      if (loop.until !== undefined && condition(loop.until, inner)) break;
    }
    update(entry, node, frame, { status: StepStatuses.completed });
    return 'done';
  };

  /** Runs a map from where its state is: items not finished, `maxConcurrency` at a time. */
  const runMap = async (entry: MapEntry, node: NodeState, frame: Frame): Promise<Flow> => {
    const { map } = entry;
    if (!node.items) {
      let list: JsonValue[];
      try {
        list = evaluateList(map.items, expressionVariables(map.items, frame));
      } catch (error) {
        throw failure(PipelineErrorCodes.expression_failed, (error as Error).message);
      }
      if (list.length > MAX_MAP_ITEMS) {
        throw failure(PipelineErrorCodes.expression_failed, `map ${map.id}: ${JSON.stringify(map.items)} gave ${list.length.toLocaleString('en-US')} items; a map takes at most ${MAX_MAP_ITEMS.toLocaleString('en-US')}`);
      }
      node.items = list.map((item) => ({ item, status: StepStatuses.pending, steps: pendingScope(map.steps), threads: {} }));
    }
    update(entry, node, frame, { status: StepStatuses.running });
    const items = node.items;
    let next = 0;
    let startedAny = false;
    let paused = false;
    let failed: { error: unknown } | undefined;
    const runItem = async (index: number): Promise<void> => {
      const item = items[index]!;
      const inner: Frame = {
        steps: item.steps,
        chain: [...frame.chain, item.steps],
        keyPrefix: `${frame.keyPrefix}${map.id}[${index}]/`,
        location: [...frame.location, { map: map.id, index, item: item.item }],
        items: { ...frame.items, [map.as]: item.item },
        threads: item.threads,
      };
      // The map's own state is read by queries; only its entries' changes are reported (a
      // report of the map is its whole tree, which a thousand items would make quadratic).
      item.status = StepStatuses.running;
      try {
        if ((await runList(map.steps, inner)) === 'paused') {
          paused = true;
          return;
        }
        item.status = StepStatuses.completed;
      } catch (error) {
        item.status = hooks.isCancellation?.(error) ? StepStatuses.cancelled : StepStatuses.failed;
        failed ??= { error };
      }
    };
    const lane = async (): Promise<void> => {
      while (!paused && !failed) {
        while (next < items.length && (items[next]!.status === StepStatuses.completed || items[next]!.status === StepStatuses.failed)) next++;
        if (next >= items.length) return;
        // Before each item but the first of this run: continue-as-new waits for the items in flight.
        if (startedAny && hooks.shouldPause?.()) {
          paused = true;
          return;
        }
        startedAny = true;
        await runItem(next++);
      }
    };
    const lanes = Math.max(1, Math.min(map.maxConcurrency, items.length));
    await Promise.all(Array.from({ length: lanes }, () => lane()));
    if (failed) throw failed.error;
    if (paused) return 'paused';
    update(entry, node, frame, { status: StepStatuses.completed });
    return 'done';
  };

  /** Runs a sub-pipeline to its end. */
  const runChild = async (entry: RunEntry, node: NodeState, frame: Frame): Promise<void> => {
    const { run } = entry;
    const child = input.pipelines?.[run.pipeline];
    if (!child) throw failure('not_applied', `the run carries no pipeline named ${run.pipeline} (it was started without it)`);
    const seen = templateView(frame);
    const given: Record<string, InputValue> = {};
    for (const [name, value] of Object.entries(run.inputs)) {
      if (typeof value !== 'string') {
        given[name] = value;
        continue;
      }
      const text = renderTemplate(value, seen);
      const type = child.inputs[name]?.type ?? 'string';
      const typed = coerceInput(text, type);
      if (typed === undefined) throw failure(PipelineErrorCodes.invalid_input, `${run.id}: input ${name} of pipeline ${run.pipeline} must be a ${type}, got ${JSON.stringify(text.length > 60 ? `${text.slice(0, 60)}…` : text)}`);
      given[name] = typed;
    }
    const runId = `${hooks.runKey}/${frame.keyPrefix}${run.id}`;
    update(entry, node, frame, { status: StepStatuses.running, run_id: runId, pipeline: run.pipeline });
    const { pipelines } = input;
    const result = await hooks.runChild({
      runId,
      input: {
        connection,
        organization: input.organization,
        pipeline: child,
        ...(pipelines ? { pipelines } : {}),
        inputs: given,
        ...(input.historyEventLimit ? { historyEventLimit: input.historyEventLimit } : {}),
        ...(input.waitMode ? { waitMode: input.waitMode } : {}),
      },
    });
    update(entry, node, frame, { status: StepStatuses.completed, reply: result.output, value: result.output });
  };

  /** Pauses the run. */
  const runSleep = async (entry: SleepEntry, node: NodeState, frame: Frame): Promise<void> => {
    const ms = parseDuration(entry.sleep.for)!;
    update(entry, node, frame, { status: StepStatuses.running, until: hooks.now() + ms });
    await hooks.sleep(ms);
    update(entry, node, frame, { status: StepStatuses.completed });
  };

  /**
   * Runs one entry (a group's member too) unless it has finished already: its condition, its
   * kind's work, its failure as `onError` says. `seen` is the view a group's members share.
   */
  const runEntry = async (entry: PipelineEntry, frame: Frame, seen?: Record<string, unknown>): Promise<Flow> => {
    const id = entryId(entry)!;
    const node = (frame.steps[id] ??= pendingNode(entry));
    if (node.status !== StepStatuses.pending && node.status !== StepStatuses.running) return 'done';
    const { when, onError } = entryOptions(entry);
    try {
      if (node.status === StepStatuses.pending && when !== undefined && !condition(when, frame)) {
        update(entry, node, frame, { status: StepStatuses.skipped });
        return 'done';
      }
      if (isLoop(entry)) return await runLoop(entry, node, frame);
      if (isMap(entry)) return await runMap(entry, node, frame);
      if (isRun(entry)) await runChild(entry, node, frame);
      else if (isSleep(entry)) await runSleep(entry, node, frame);
      else await runStep(entry as PipelineStep, node, frame, seen ?? templateView(frame));
      return 'done';
    } catch (error) {
      const cancelled = hooks.isCancellation?.(error) ?? false;
      if (node.status === StepStatuses.running || node.status === StepStatuses.pending || (cancelled && node.status !== StepStatuses.completed)) {
        const thread = node.thread_id ?? threadOfFailure(error) ?? null;
        update(entry, node, frame, { status: cancelled ? StepStatuses.cancelled : StepStatuses.failed, awaiting: null, wait_mode: null, thread_id: thread, ...(cancelled ? {} : { error: errorOf(error) }) });
      }
      if (cancelled || onError !== 'continue') throw error;
      return 'done';
    }
  };

  /**
   * Runs a list of entries in order from where their states are. After each entry that ran,
   * `shouldPause` may stop the list (the entries before it stay done).
   */
  const runList = async (entries: readonly PipelineEntry[], frame: Frame): Promise<Flow> => {
    for (const entry of entries) {
      if (isParallelGroup(entry)) {
        const members = entry.parallel;
        const states = members.map((m) => (frame.steps[m.id] ??= pendingNode(m)));
        if (states.every((s) => s.status !== StepStatuses.pending && s.status !== StepStatuses.running)) continue;
        const { when, onError } = entryOptions(entry);
        try {
          if (when !== undefined && states.every((s) => s.status === StepStatuses.pending) && !condition(when, frame)) {
            members.forEach((m, i) => update(m, states[i]!, frame, { status: StepStatuses.skipped }));
          } else {
            // Every member renders against the entries before the group, never a sibling's reply.
            const seen = templateView(frame);
            const running = members.map((m) => runEntry(m, frame, seen));
            if (onError === 'continue') {
              // The group goes on only once every member has ended, whatever one of them did.
              const settled = await Promise.allSettled(running);
              const rejected = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
              if (rejected) throw rejected.reason;
            } else {
              // As before `onError` existed: the first failure fails the run at once.
              await Promise.all(running);
            }
          }
        } catch (error) {
          if (hooks.isCancellation?.(error) || onError !== 'continue') throw error;
          const info = errorOf(error);
          members.forEach((m, i) => {
            if (states[i]!.status === StepStatuses.pending) update(m, states[i]!, frame, { status: StepStatuses.failed, error: info });
          });
        }
      } else {
        const node = frame.steps[entryId(entry)!];
        if (node && node.status !== StepStatuses.pending && node.status !== StepStatuses.running) continue;
        if ((await runEntry(entry, frame)) === 'paused') return 'paused';
      }
      if (hooks.shouldPause?.()) return 'paused';
    }
    return 'done';
  };

  const top: Frame = { steps: state.steps, chain: [state.steps], keyPrefix: '', location: [], items: {}, threads: state.threads };
  if ((await runList(pipeline.steps, top)) === 'paused') return { complete: false, state };
  const output = pipeline.output === undefined ? null : renderTemplate(pipeline.output, templateView(top));
  return { complete: true, result: { status: 'completed', output, steps: stepList(pipeline, state) } };
}
