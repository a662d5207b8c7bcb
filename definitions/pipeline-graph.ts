/**
 * Pure facts about a pipeline's entries, shared by `validate` and the pipeline workflow: what kind
 * each entry is, its id, its body, every conversation step (nested ones included), the two ends
 * of each step's thread, the pipelines a pipeline runs (durations are in `durations.ts`). Free of
 * Zod and I/O so that the workflow, which runs in Temporal's deterministic sandbox, can import it.
 */
import type {
  LoopEntry,
  MapEntry,
  OnErrorMode,
  ParallelGroup,
  PipelineDefinition,
  PipelineEntry,
  PipelineStep,
  RunEntry,
  SleepEntry,
} from './pipeline-schema.ts';

/** The kinds of entries of `steps`. */
export const EntryKinds = { step: 'step', parallel: 'parallel', loop: 'loop', map: 'map', run: 'run', sleep: 'sleep' } as const;
export type EntryKind = (typeof EntryKinds)[keyof typeof EntryKinds];

/** Whether an entry of `steps` is a parallel group. */
export function isParallelGroup(entry: PipelineEntry): entry is ParallelGroup {
  return 'parallel' in entry;
}

/** Whether an entry is a loop. */
export function isLoop(entry: PipelineEntry): entry is LoopEntry {
  return 'loop' in entry;
}

/** Whether an entry is a map. */
export function isMap(entry: PipelineEntry): entry is MapEntry {
  return 'map' in entry;
}

/** Whether an entry is a sub-pipeline run. */
export function isRun(entry: PipelineEntry): entry is RunEntry {
  return 'run' in entry;
}

/** Whether an entry is a sleep. */
export function isSleep(entry: PipelineEntry): entry is SleepEntry {
  return 'sleep' in entry;
}

/** Whether an entry is a conversation step. */
export function isStep(entry: PipelineEntry): entry is PipelineStep {
  return !isParallelGroup(entry) && !isLoop(entry) && !isMap(entry) && !isRun(entry) && !isSleep(entry);
}

/** The kind of an entry. */
export function entryKind(entry: PipelineEntry): EntryKind {
  if (isParallelGroup(entry)) return EntryKinds.parallel;
  if (isLoop(entry)) return EntryKinds.loop;
  if (isMap(entry)) return EntryKinds.map;
  if (isRun(entry)) return EntryKinds.run;
  if (isSleep(entry)) return EntryKinds.sleep;
  return EntryKinds.step;
}

/** The id of an entry (undefined for a parallel group, whose members have ids of their own). */
export function entryId(entry: PipelineEntry): string | undefined {
  if (isParallelGroup(entry)) return undefined;
  if (isLoop(entry)) return entry.loop.id;
  if (isMap(entry)) return entry.map.id;
  if (isRun(entry)) return entry.run.id;
  if (isSleep(entry)) return entry.sleep.id;
  return entry.id;
}

/** An entry's condition and failure mode (`onError` absent means fail). */
export function entryOptions(entry: PipelineEntry): { when: string | undefined; onError: OnErrorMode } {
  return { when: entry.when, onError: entry.onError ?? 'fail' };
}

/** The body of a loop or a map; undefined for other entries. */
export function bodyOf(entry: PipelineEntry): PipelineEntry[] | undefined {
  if (isLoop(entry)) return entry.loop.steps;
  if (isMap(entry)) return entry.map.steps;
  return undefined;
}

/**
 * Every entry of a list and of the bodies within it, depth first in file order, each with the
 * chain of loops and maps that hold it (outermost first). Parallel groups are listed, and so are
 * their members.
 */
export function walkEntries(entries: readonly PipelineEntry[], enclosing: ReadonlyArray<LoopEntry | MapEntry> = []): Array<{ entry: PipelineEntry; enclosing: ReadonlyArray<LoopEntry | MapEntry> }> {
  const out: Array<{ entry: PipelineEntry; enclosing: ReadonlyArray<LoopEntry | MapEntry> }> = [];
  for (const entry of entries) {
    out.push({ entry, enclosing });
    if (isParallelGroup(entry)) for (const member of entry.parallel) out.push({ entry: member, enclosing });
    const body = bodyOf(entry);
    if (body) out.push(...walkEntries(body, [...enclosing, entry as LoopEntry | MapEntry]));
  }
  return out;
}

/** Every conversation step of a pipeline in file order: members of parallel groups and steps of bodies included. */
export function flatSteps(pipeline: Pick<PipelineDefinition, 'steps'>): PipelineStep[] {
  return walkEntries(pipeline.steps)
    .map((w) => w.entry)
    .filter(isStep);
}

/**
 * The two participant names of each step's thread, following `thread:` back to the step that
 * opened it. Steps whose chain is broken (an unknown step, a cycle) are left out.
 */
export function threadEnds(steps: PipelineStep[]): Map<string, readonly [string, string]> {
  const byId = new Map(steps.map((s) => [s.id, s]));
  const ends = new Map<string, readonly [string, string]>();
  const resolve = (step: PipelineStep, seen: Set<string>): readonly [string, string] | undefined => {
    const known = ends.get(step.id);
    if (known) return known;
    if (step.to !== undefined) return [step.from, step.to];
    const parent = step.thread === undefined ? undefined : byId.get(step.thread);
    if (!parent || seen.has(parent.id)) return undefined;
    seen.add(step.id);
    return resolve(parent, seen);
  };
  for (const step of steps) {
    const found = resolve(step, new Set());
    if (found) ends.set(step.id, found);
  }
  return ends;
}

/** The peer of `from` in a thread between `ends`, or undefined when `from` is not one of them. */
export function peerOf(ends: readonly [string, string], from: string): string | undefined {
  if (ends[0] === from) return ends[1];
  if (ends[1] === from) return ends[0];
  return undefined;
}

/** The key of the edge between two participant names, whichever order they come in. */
export function edgeKey(a: string, b: string): string {
  return JSON.stringify([a, b].sort());
}

/** The names of the pipelines that `run` entries of a pipeline name, directly. */
export function runTargets(pipeline: Pick<PipelineDefinition, 'steps'>): string[] {
  return [...new Set(walkEntries(pipeline.steps).flatMap((w) => (isRun(w.entry) ? [w.entry.run.pipeline] : [])))];
}

/**
 * The pipelines `name` runs, directly or through others (itself excluded unless a cycle comes
 * back to it), by name, from `pipelines`; unknown names are left out. A run carries them, so that
 * its sub-pipelines are the ones of the file it started from.
 */
export function reachablePipelines(pipelines: readonly PipelineDefinition[], name: string): Record<string, PipelineDefinition> {
  const byName = new Map(pipelines.map((p) => [p.name, p]));
  const out: Record<string, PipelineDefinition> = {};
  const queue = [...runTargets(byName.get(name) ?? { steps: [] })];
  while (queue.length > 0) {
    const next = queue.shift()!;
    const pipeline = byName.get(next);
    if (!pipeline || Object.hasOwn(out, next)) continue;
    out[next] = pipeline;
    queue.push(...runTargets(pipeline));
  }
  return out;
}
