/**
 * A pipeline run as a person reads it: the tree of `teamctl runs show` (loop iterations, map
 * items, sub-pipelines' steps, skipped and failed entries, replies that were asked again), and the
 * one line per finished entry that `teamctl run` prints as the run goes.
 */
import type { EntryLocation, StepProgress } from '../workflows/pipeline-orchestration.ts';

/** The mark of a state: ✓ completed, … running, · pending, ↷ skipped, ✗ failed, ⊘ cancelled. */
const MARKS: Record<string, string> = { completed: '✓', running: '…', pending: '·', skipped: '↷', failed: '✗', cancelled: '⊘' };

/** Most characters of a reply or value shown on a line. */
const MAX_SHOWN = 200;

/** Text on one line, cut to {@link MAX_SHOWN} characters. */
function oneLine(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > MAX_SHOWN ? `${flat.slice(0, MAX_SHOWN)}…` : flat;
}

/** Whether the states that end an entry (it will not change again). */
export function isFinished(status: string): boolean {
  return status === 'completed' || status === 'failed' || status === 'skipped' || status === 'cancelled';
}

/**
 * One entry as a line: mark, id, state when not completed, what it is (a loop's iterations, a
 * map's items, a sub-pipeline's run), its thread, its task and the task's state (a task step),
 * its participants, its reply (and value when a
 * typed reply parsed to something else than the text), the re-asks, the error.
 */
export function entryLine(step: StepProgress): string {
  const parts = [`${MARKS[step.status] ?? '?'} ${step.id}${step.status === 'completed' ? '' : ` (${step.status})`}`];
  const kind = step.kind ?? 'step';
  if (kind === 'loop') parts.push(`loop, ${step.iterations?.length ?? 0} iteration${step.iterations?.length === 1 ? '' : 's'}`);
  else if (kind === 'map') parts.push(step.items ? `map, ${step.items.length} item${step.items.length === 1 ? '' : 's'}` : 'map');
  else if (kind === 'run') parts.push(`run ${step.pipeline ?? ''}${step.run_id ? ` as ${step.run_id}` : ''}`.trim());
  else if (kind === 'sleep') parts.push(step.until ? `sleep until ${step.until}` : 'sleep');
  if (step.thread_id) parts.push(`thread ${step.thread_id}`);
  if (step.task_id) parts.push(`task ${step.task_id}${step.task_state ? ` (${step.task_state})` : ''}`);
  if (step.status === 'running' && step.awaiting && step.from) parts.push(`${step.from} → ${step.awaiting}, awaiting ${step.awaiting}${step.wait_mode ? ` (waits by ${step.wait_mode})` : ''}`);
  if (step.reply !== null && kind === 'step') parts.push(`reply: ${oneLine(step.reply)}`);
  if (kind === 'run' && step.status === 'completed' && step.value !== null) parts.push(`output: ${oneLine(String(step.value))}`);
  if (step.misfits?.length) parts.push(`asked again ${step.misfits.length}×`);
  if (step.error) parts.push(`${step.error.code}: ${oneLine(step.error.message)}`);
  return parts.join('  ');
}

/**
 * The tree of a run's entries, one line each, indented by two spaces per level: a loop's
 * iterations and a map's items under it, each with its entries; the replies that did not fit a
 * typed reply under their step; a sub-pipeline's steps under it (when `runs show` read them).
 */
export function renderTree(steps: readonly StepProgress[], indent = ''): string[] {
  const lines: string[] = [];
  for (const step of steps) {
    lines.push(`${indent}${entryLine(step)}`);
    const inner = `${indent}    `;
    for (const [i, misfit] of (step.misfits ?? []).entries()) {
      lines.push(`${inner}✗ reply ${i + 1} did not fit: ${oneLine(misfit.reply)}`, ...misfit.problems.map((p) => `${inner}    ${p}`));
    }
    for (const iteration of step.iterations ?? []) {
      lines.push(`${inner}iteration ${iteration.index}`, ...renderTree(iteration.steps, `${inner}  `));
    }
    for (const item of step.items ?? []) {
      lines.push(`${inner}${MARKS[item.status] ?? '?'} item ${item.index}: ${oneLine(JSON.stringify(item.item))}`, ...renderTree(item.steps, `${inner}  `));
    }
    if (step.steps) lines.push(...renderTree(step.steps, inner));
  }
  return lines;
}

/** A location as the prefix of a streamed line: `rounds › iteration 1 › `, `per-item › item 2 › `. */
export function locationLabel(location: EntryLocation): string {
  return location
    .map((part) => ('loop' in part ? `${part.loop} › iteration ${part.iteration} › ` : 'map' in part ? `${part.map} › item ${part.index} › ` : `${part.run} › `))
    .join('');
}

/**
 * Every entry of a tree with its location label, depth first: what `teamctl run` on Temporal
 * compares between two reads of the tree to print the entries that finished in between.
 */
export function flattenTree(steps: readonly StepProgress[], prefix = ''): Array<{ label: string; step: StepProgress }> {
  return steps.flatMap((step) => [
    ...(step.iterations ?? []).flatMap((it) => flattenTree(it.steps, `${prefix}${step.id} › iteration ${it.index} › `)),
    ...(step.items ?? []).flatMap((item) => flattenTree(item.steps, `${prefix}${step.id} › item ${item.index} › `)),
    { label: prefix, step },
  ]);
}
