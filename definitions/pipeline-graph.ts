/**
 * Pure facts about a pipeline's steps, shared by `validate` and the pipeline workflow: the steps
 * in order, the two ends of each step's thread (durations are in `durations.ts`). Free of Zod and
 * I/O so that the workflow, which runs in Temporal's deterministic sandbox, can import it.
 */
import type { ParallelGroup, PipelineDefinition, PipelineEntry, PipelineStep } from './pipeline-schema.ts';

/** Whether an entry of `steps` is a parallel group. */
export function isParallelGroup(entry: PipelineEntry): entry is ParallelGroup {
  return 'parallel' in entry;
}

/** Every step of a pipeline in order, the members of parallel groups included. */
export function flatSteps(pipeline: Pick<PipelineDefinition, 'steps'>): PipelineStep[] {
  return pipeline.steps.flatMap((entry) => (isParallelGroup(entry) ? entry.parallel : [entry]));
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
