/**
 * Rules of pipelines and schedules that span fields, checked after the schema passes so that a
 * run never starts from a pipeline that would fail halfway: every name a step or a template uses
 * must exist and be reachable when the step runs.
 */
import { Cron } from 'croner';
import { closestMatch } from './did-you-mean.ts';
import { edgeKey, flatSteps, isParallelGroup, peerOf, threadEnds } from './pipeline-graph.ts';
import type { PipelineDefinition, PipelineStep, ScheduleDefinition } from './pipeline-schema.ts';
import type { PathProblem, PathSegment } from './problems.ts';
import type { Definition, TeamDefinition } from './schema.ts';
import { templateReferences } from './template.ts';

/** `(did you mean "x"?)` or nothing. */
function didYouMean(name: string, candidates: Iterable<string>): string {
  const match = closestMatch(name, [...candidates]);
  return match === undefined ? '' : ` (did you mean ${JSON.stringify(match)}?)`;
}

/** What the steps before a step left behind: their ids, and which of them await a reply. */
interface StepScope {
  /** Steps that have finished when this one starts, by id. */
  done: Map<string, PipelineStep>;
  /** Members of the same parallel group (running at the same time). */
  siblings: Set<string>;
}

/** Checks one template field of a step (or the output) against what is in scope. */
function checkTemplate(
  text: string | undefined,
  path: PathSegment[],
  inputs: Set<string>,
  scope: StepScope,
  problems: PathProblem[],
): void {
  if (text === undefined) return;
  const scan = templateReferences(text);
  if (!scan.ok) {
    problems.push({ path, target: 'value', message: scan.message });
    return;
  }
  for (const { name } of scan.references) {
    const parts = name.split('.');
    const shown = `{{ ${name} }}`;
    if (parts[0] === 'inputs' && parts.length === 2) {
      if (!inputs.has(parts[1]!)) problems.push({ path, target: 'value', message: `${shown}: unknown input ${JSON.stringify(parts[1])}${didYouMean(parts[1]!, inputs)}` });
    } else if (parts[0] === 'steps' && parts.length === 3) {
      const [, id, field] = parts as [string, string, string];
      const step = scope.done.get(id);
      if (!step) {
        const why = scope.siblings.has(id)
          ? 'runs in the same parallel group, so its reply is not there yet'
          : `is not a step before this one${didYouMean(id, scope.done.keys())}`;
        problems.push({ path, target: 'value', message: `${shown}: step ${JSON.stringify(id)} ${why}` });
      } else if (field === 'reply') {
        if (!step.awaitReply) problems.push({ path, target: 'value', message: `${shown}: step ${JSON.stringify(id)} has awaitReply: false, so it has no reply` });
      } else if (field !== 'thread_id') {
        problems.push({ path, target: 'value', message: `${shown}: unknown field ${JSON.stringify(field)} of a step; use reply or thread_id${didYouMean(field, ['reply', 'thread_id'])}` });
      }
    } else {
      problems.push({ path, target: 'value', message: `${shown}: unknown reference; use {{ inputs.NAME }}, {{ steps.ID.reply }} or {{ steps.ID.thread_id }}` });
    }
  }
}

/** Checks a step's participants, its thread and its templates. */
function checkStep(
  step: PipelineStep,
  path: PathSegment[],
  team: TeamDefinition | undefined,
  edges: Set<string>,
  ends: Map<string, readonly [string, string]>,
  inputs: Set<string>,
  scope: StepScope,
  problems: PathProblem[],
): void {
  const names = team ? new Set([...team.agents.map((a) => a.name), ...team.humans.map((h) => h.name)]) : undefined;
  const known = (field: 'from' | 'to', name: string): boolean => {
    if (!names || names.has(name)) return true;
    problems.push({ path: [...path, field], target: 'value', message: `unknown participant ${JSON.stringify(name)} in team ${team!.name}${didYouMean(name, names)}` });
    return false;
  };
  const fromKnown = known('from', step.from);
  if ((step.to === undefined) === (step.thread === undefined)) {
    problems.push({ path, target: 'value', message: `step ${JSON.stringify(step.id)} needs exactly one of \`to\` (a new thread) and \`thread\` (continue an earlier step's thread)` });
  } else if (step.to !== undefined) {
    const toKnown = known('to', step.to);
    if (fromKnown && toKnown && names) {
      if (step.from === step.to) problems.push({ path: [...path, 'to'], target: 'value', message: `a step cannot send from ${JSON.stringify(step.from)} to itself` });
      else if (!edges.has(edgeKey(step.from, step.to))) {
        problems.push({ path: [...path, 'to'], target: 'value', message: `no edge joins ${JSON.stringify(step.from)} and ${JSON.stringify(step.to)} in team ${team!.name}; add [${step.from}, ${step.to}] to its edges` });
      }
    }
  } else {
    const parent = step.thread!;
    if (!scope.done.has(parent)) {
      const why = scope.siblings.has(parent) ? 'runs in the same parallel group, so its thread is not there yet' : `is not a step before this one${didYouMean(parent, scope.done.keys())}`;
      problems.push({ path: [...path, 'thread'], target: 'value', message: `step ${JSON.stringify(parent)} ${why}` });
    } else {
      const threadEnd = ends.get(parent);
      if (threadEnd && fromKnown && peerOf(threadEnd, step.from) === undefined) {
        problems.push({ path: [...path, 'from'], target: 'value', message: `${JSON.stringify(step.from)} is not in the thread of step ${JSON.stringify(parent)} (between ${threadEnd[0]} and ${threadEnd[1]})` });
      }
    }
    if (step.subject !== undefined) problems.push({ path: [...path, 'subject'], target: 'key', message: 'a step that continues a thread has no subject (the thread has one)' });
  }
  if (!step.awaitReply && step.timeout !== undefined) problems.push({ path: [...path, 'timeout'], target: 'key', message: 'timeout applies to the wait for a reply; this step has awaitReply: false' });
  checkTemplate(step.subject, [...path, 'subject'], inputs, scope, problems);
  checkTemplate(step.content, [...path, 'content'], inputs, scope, problems);
}

/** Checks one pipeline. */
function checkPipeline(pipeline: PipelineDefinition, p: number, definition: Definition, problems: PathProblem[]): void {
  const base: PathSegment[] = ['pipelines', p];
  const team = definition.teams.find((t) => t.name === pipeline.team);
  if (!team) {
    problems.push({ path: [...base, 'team'], target: 'value', message: `unknown team ${JSON.stringify(pipeline.team)}${didYouMean(pipeline.team, definition.teams.map((t) => t.name))}` });
  }
  const edges = new Set((team?.edges ?? []).map(([a, b]) => edgeKey(a, b)));
  const inputs = new Set(Object.keys(pipeline.inputs));
  const steps = flatSteps(pipeline);
  const ends = threadEnds(steps);

  const firstUse = new Map<string, string>();
  const done = new Map<string, PipelineStep>();
  pipeline.steps.forEach((entry, i) => {
    const members = isParallelGroup(entry) ? entry.parallel.map((s, j) => ({ step: s, path: [...base, 'steps', i, 'parallel', j] })) : [{ step: entry, path: [...base, 'steps', i] }];
    const siblings = new Set(members.map((m) => m.step.id));
    for (const { step, path } of members) {
      const first = firstUse.get(step.id);
      if (first !== undefined) problems.push({ path: [...path, 'id'], target: 'value', message: `duplicate step id ${JSON.stringify(step.id)} (first used at ${first})` });
      else firstUse.set(step.id, path.slice(2).join('.').replace(/\.(\d+)/g, '[$1]'));
      siblings.delete(step.id);
      checkStep(step, path, team, edges, ends, inputs, { done, siblings }, problems);
      siblings.add(step.id);
    }
    for (const { step } of members) if (!done.has(step.id)) done.set(step.id, step);
  });
  checkTemplate(pipeline.output, [...base, 'output'], inputs, { done, siblings: new Set() }, problems);

  for (const [name, input] of Object.entries(pipeline.inputs)) {
    if (input.default !== undefined && typeof input.default !== input.type) {
      problems.push({ path: [...base, 'inputs', name, 'default'], target: 'value', message: `default of input ${JSON.stringify(name)} must be a ${input.type}` });
    }
  }
}

/** Checks one schedule against its pipeline. */
function checkSchedule(schedule: ScheduleDefinition, s: number, definition: Definition, problems: PathProblem[]): void {
  const base: PathSegment[] = ['schedules', s];
  if ((schedule.cron === undefined) === (schedule.every === undefined)) {
    problems.push({ path: base, target: 'value', message: `schedule ${JSON.stringify(schedule.name)} needs exactly one of \`cron\` and \`every\`` });
  }
  if (schedule.cron !== undefined) {
    try {
      new Cron(schedule.cron, { paused: true, legacyMode: true });
    } catch (error) {
      problems.push({ path: [...base, 'cron'], target: 'value', message: `invalid cron expression: ${(error as Error).message}` });
    }
  }
  try {
    new Intl.DateTimeFormat('en', { timeZone: schedule.timezone });
  } catch {
    problems.push({ path: [...base, 'timezone'], target: 'value', message: `unknown time zone ${JSON.stringify(schedule.timezone)}; use an IANA name such as Europe/Berlin or UTC` });
  }
  const pipeline = definition.pipelines.find((p) => p.name === schedule.pipeline);
  if (!pipeline) {
    problems.push({ path: [...base, 'pipeline'], target: 'value', message: `unknown pipeline ${JSON.stringify(schedule.pipeline)}${didYouMean(schedule.pipeline, definition.pipelines.map((p) => p.name))}` });
    return;
  }
  for (const problem of inputProblems(pipeline, schedule.inputs)) {
    problems.push({ path: problem.name === undefined ? [...base, 'inputs'] : [...base, 'inputs', problem.name], target: problem.name === undefined ? 'value' : 'key', message: problem.message });
  }
}

/** A problem with the inputs given to a run; `name` is the input it concerns when it was given. */
export interface InputProblem {
  name?: string;
  message: string;
}

/**
 * Checks the inputs given to a run (by a schedule or `teamctl run --input`) against a pipeline's
 * inputs: unknown names (with did-you-mean), missing required inputs, wrong types. Output: the
 * problems in order (empty when the inputs are fine). Raises nothing.
 */
export function inputProblems(pipeline: Pick<PipelineDefinition, 'name' | 'inputs'>, given: Record<string, unknown>): InputProblem[] {
  const problems: InputProblem[] = [];
  const declared = Object.keys(pipeline.inputs);
  for (const [name, value] of Object.entries(given)) {
    const input = pipeline.inputs[name];
    if (!input) problems.push({ name, message: `unknown input ${JSON.stringify(name)} of pipeline ${pipeline.name}${didYouMean(name, declared)}${declared.length ? '' : ' (it takes no inputs)'}` });
    else if (typeof value !== input.type) problems.push({ name, message: `input ${JSON.stringify(name)} must be a ${input.type}` });
  }
  for (const [name, input] of Object.entries(pipeline.inputs)) {
    if (input.default === undefined && !Object.hasOwn(given, name)) problems.push({ message: `missing required input ${JSON.stringify(name)} of pipeline ${pipeline.name}` });
  }
  return problems;
}

/**
 * Checks the pipelines and schedules of a definition that passed the schema. Output: the
 * problems with paths into the document (empty when there are none): pipeline and schedule names
 * unique; a pipeline's team in the file; steps with unique ids, known participants, an edge
 * between `from` and `to`, `thread` naming an earlier step whose thread `from` is in; template
 * references to declared inputs and to earlier steps only (not later ones, not parallel siblings,
 * not the reply of a step that awaits none); `timeout` only where a reply is awaited; schedules
 * with exactly one of cron and every, a valid cron expression and time zone, a known pipeline and
 * inputs it accepts. Raises nothing.
 */
export function checkPipelines(definition: Definition): PathProblem[] {
  const problems: PathProblem[] = [];
  const unique = (kind: 'pipelines' | 'schedules', names: string[]) => {
    const seen = new Map<string, number>();
    names.forEach((name, i) => {
      const first = seen.get(name);
      if (first !== undefined) problems.push({ path: [kind, i, 'name'], target: 'value', message: `duplicate ${kind.slice(0, -1)} name ${JSON.stringify(name)} (first used by ${kind}[${first}])` });
      else seen.set(name, i);
    });
  };
  unique('pipelines', definition.pipelines.map((p) => p.name));
  definition.pipelines.forEach((pipeline, p) => checkPipeline(pipeline, p, definition, problems));
  unique('schedules', definition.schedules.map((s) => s.name));
  definition.schedules.forEach((schedule, s) => checkSchedule(schedule, s, definition, problems));
  return problems;
}
