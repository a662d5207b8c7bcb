/**
 * Rules of pipelines and schedules that span fields, checked after the schema passes so that a
 * run never starts from a pipeline that would fail halfway: every name a step or a template uses
 * must exist and be reachable when the step runs.
 */
import { Cron } from 'croner';
import { closestMatch } from './did-you-mean.ts';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { PACKAGE_ROOT } from '../api/version.ts';
import { DYN, INT, inputType, listOf, objectOf, schemaType, STRING } from './cel-types.ts';
import type { CelDeclType } from './cel-types.ts';
import type * as ExpressionChecks from './expression-check.ts';
import type { ExpectedResult } from './expression-check.ts';
import type * as ExpressionSyntax from './expression-syntax.ts';
import type * as Expressions from './expressions.ts';
import { edgeKey, entryId, entryKind, flatSteps, isLoop, isMap, isParallelGroup, isRun, isSleep, isStep, peerOf, reachablePipelines, threadEnds, walkEntries } from './pipeline-graph.ts';
import type { EntryKind } from './pipeline-graph.ts';
import type { InputType, InputValue, MapEntry, PipelineDefinition, PipelineEntry, PipelineStep, RunEntry, ScheduleDefinition } from './pipeline-schema.ts';
import { coerceInput } from './pipeline-inputs.ts';
import type { PathProblem, PathSegment } from './problems.ts';
import type * as ReplySchemaProblems from './reply-schema-problems.ts';
import type { Definition, TeamDefinition } from './schema.ts';
import { templateReferences } from './template.ts';

const requireHere = createRequire(import.meta.url);
/**
 * A module of definitions/ by name: this module's sibling in a checkout (`.ts`); in the built
 * package the JavaScript of `dist/definitions/`, found from the package's root, because this
 * module may run from the bundle of `teamctl` in `dist/bin/` (scripts/build.ts).
 */
const definitionsModule = (name: string): string => (import.meta.url.endsWith('.ts') ? `./${name}.ts` : join(PACKAGE_ROOT, 'dist', 'definitions', `${name}.js`));
type Libraries = Pick<typeof Expressions, 'scanExpression'> & Pick<typeof ExpressionChecks, 'checkExpressionTypes'> & Pick<typeof ExpressionSyntax, 'explainSyntaxError'> & Pick<typeof ReplySchemaProblems, 'replySchemaProblems'>;
let libraries: Partial<Libraries> = {};

/**
 * The CEL parser and checker and the JSON Schema checks, each loaded when a definition first
 * needs it (an expression, a typed reply): they take 0.1–0.25 s to load, which every command
 * reading a definition without them (plan, apply, most validates) is spared. Synchronous
 * (`require` of an ES module, Node ≥ 22.12), as the checks are.
 */
const checkers = {
  get scanExpression(): Libraries['scanExpression'] {
    return (libraries.scanExpression ??= (requireHere(definitionsModule('expressions')) as typeof Expressions).scanExpression);
  },
  get checkExpressionTypes(): Libraries['checkExpressionTypes'] {
    return (libraries.checkExpressionTypes ??= (requireHere(definitionsModule('expression-check')) as typeof ExpressionChecks).checkExpressionTypes);
  },
  get explainSyntaxError(): Libraries['explainSyntaxError'] {
    return (libraries.explainSyntaxError ??= (requireHere(definitionsModule('expression-syntax')) as typeof ExpressionSyntax).explainSyntaxError);
  },
  get replySchemaProblems(): Libraries['replySchemaProblems'] {
    return (libraries.replySchemaProblems ??= (requireHere(definitionsModule('reply-schema-problems')) as typeof ReplySchemaProblems).replySchemaProblems);
  },
};

/** `(did you mean "x"?)` or nothing. */
function didYouMean(name: string, candidates: Iterable<string>): string {
  const match = closestMatch(name, [...candidates]);
  return match === undefined ? '' : ` (did you mean ${JSON.stringify(match)}?)`;
}

/** The fields `steps.ID` has, by the kind of entry ID names. */
const FIELDS: Record<EntryKind, readonly string[]> = {
  step: ['reply', 'value', 'status', 'error', 'thread_id'],
  parallel: [],
  loop: ['status', 'error', 'iterations'],
  map: ['status', 'error', 'results'],
  run: ['status', 'error', 'value', 'reply', 'run_id'],
  sleep: ['status', 'error'],
};
/** Fields whose value has fields of its own (a typed reply, an error, a map's results). */
const DEEP_FIELDS = new Set(['value', 'error', 'results']);

/** An entry with an id, as later entries see it. */
interface Known {
  kind: EntryKind;
  step?: PipelineStep;
  /** A map's entry (its body's steps are the fields of each of its `results`). */
  map?: MapEntry;
}

/** What an entry can name when it runs. */
interface Scope {
  /** Entries that have finished when this one starts, by id. */
  done: Map<string, Known>;
  /** Entries of map bodies met so far, by id → the map's id: not visible outside their map. */
  inMaps: Map<string, string>;
  /** Members of the same parallel group (running at the same time). */
  siblings: Set<string>;
  /**
   * Entries of the loops around that come later in their body: an expression or a template may
   * name them (their previous iteration's; pending, with null values, in the first), a `thread:`
   * may not (no thread is there in the first iteration).
   */
  previous: Map<string, Known>;
  /** Loops around the entry (innermost last), since the innermost map: a map's items have no `iteration`. */
  loops: string[];
  /** The map that hides the iteration of a loop around it, when there is one. */
  iterationHiddenBy?: string;
  /** Item names of the maps around the entry, innermost last. */
  items: string[];
  /** The type of each item, by its name (the element type of the map's `items`). */
  itemTypes: Map<string, CelDeclType>;
}

/** What a condition must give. */
const WHEN: ExpectedResult = { field: 'when', kind: 'bool' };

/** What a pipeline's checks share. */
interface Context {
  pipeline: PipelineDefinition;
  inputs: Set<string>;
  /** Every entry id of the pipeline (to tell a later entry from an unknown one). */
  allIds: Set<string>;
  problems: PathProblem[];
}

/** Why `steps.ID` cannot be used where `scope` holds; undefined when it can. */
function unknownStep(id: string, scope: Scope, ctx: Context, forThread = false): string | undefined {
  if (scope.done.has(id)) return undefined;
  if (scope.previous.has(id)) return forThread ? `step ${JSON.stringify(id)} runs later in the loop's body: its thread is not there in the first iteration` : undefined;
  if (scope.siblings.has(id)) return `step ${JSON.stringify(id)} runs in the same parallel group, so its reply is not there yet`;
  const map = scope.inMaps.get(id);
  if (map !== undefined) return `${JSON.stringify(id)} runs inside map ${JSON.stringify(map)}, once per item: use steps.${map}.results (a list, one entry per item)`;
  if (ctx.allIds.has(id)) return `step ${JSON.stringify(id)} is not a step before this one`;
  // `steps.follow-up` in CEL reads as `steps.follow - up`.
  const dashed = [...scope.done.keys()].find((known) => known.startsWith(`${id}-`));
  if (dashed !== undefined) return `step ${JSON.stringify(id)} is not a step before this one (an id with a dash is written steps['${dashed}'] in an expression)`;
  return `step ${JSON.stringify(id)} is not a step before this one${didYouMean(id, scope.done.keys())}`;
}

/** Why `steps.ID.FIELD…` cannot be used; undefined when it can. */
function badStepReference(id: string, rest: readonly string[], scope: Scope, ctx: Context): string | undefined {
  const missing = unknownStep(id, scope, ctx);
  if (missing) return missing;
  const known = scope.done.get(id) ?? scope.previous.get(id)!;
  const [field] = rest;
  if (field === undefined) return undefined;
  // A task step (`task: true`) names its task too.
  const fields = known.step?.task ? [...FIELDS.step, 'task_id'] : FIELDS[known.kind];
  if (!fields.includes(field)) {
    return `unknown field ${JSON.stringify(field)} of ${known.kind === 'step' ? 'a step' : `a ${known.kind}`}; use ${fields.slice(0, -1).join(', ')} or ${fields.at(-1)}${didYouMean(field, fields)}`;
  }
  if (rest.length > 1 && !DEEP_FIELDS.has(field)) return `${field} of ${JSON.stringify(id)} has no fields (${rest.slice(1).join('.')})`;
  if (known.step && !known.step.awaitReply && (field === 'reply' || field === 'value')) return `step ${JSON.stringify(id)} has awaitReply: false, so it has no ${field}`;
  return undefined;
}

/** The names an expression or a template may start with here, for messages. */
function namesHere(scope: Scope): string {
  const names = ['inputs', 'steps', ...(scope.loops.length > 0 ? ['iteration'] : []), ...scope.items];
  return `${names.slice(0, -1).join(', ')} and ${names.at(-1)}`;
}

/** Checks a reference `root.segments…` (an expression's or a template's); pushes a problem when it is wrong. */
function checkReference(root: string, segments: readonly string[], scope: Scope, ctx: Context, report: (message: string, offset: number) => void, offsets: readonly number[]): void {
  if (root === 'inputs') {
    const [name] = segments;
    if (name !== undefined && !ctx.inputs.has(name)) report(`unknown input ${JSON.stringify(name)}${didYouMean(name, ctx.inputs)}`, offsets[0] ?? 0);
  } else if (root === 'steps') {
    const [id, ...rest] = segments;
    if (id === undefined) return;
    const problem = badStepReference(id, rest, scope, ctx);
    // An unknown step is reported where its id is; a bad field where the field is.
    if (problem) report(problem, problem.startsWith('unknown field') || problem.includes('has no') ? (offsets[1] ?? offsets[0] ?? 0) : (offsets[0] ?? 0));
  } else if (root === 'iteration') {
    if (scope.loops.length === 0 && scope.iterationHiddenBy !== undefined) {
      report(`iteration is not known inside map ${JSON.stringify(scope.iterationHiddenBy)}: a run gives a map's items no iteration, even in a loop`, -1);
    } else if (scope.loops.length === 0) report('iteration is only known inside a loop', -1);
    else if (segments.length > 0) report('iteration is a number; it has no fields', offsets[0] ?? -1);
  } else if (!scope.items.includes(root)) {
    const candidates = ['inputs', 'steps', ...(scope.loops.length > 0 ? ['iteration'] : []), ...scope.items];
    report(`unknown name ${JSON.stringify(root)}${didYouMean(root, candidates)}; this can use ${namesHere(scope)}`, -1);
  }
}

/** Checks one template field against what is in scope. */
function checkTemplate(text: string | undefined, path: PathSegment[], scope: Scope, ctx: Context): void {
  if (text === undefined) return;
  const scan = templateReferences(text);
  if (!scan.ok) {
    ctx.problems.push({ path, target: 'value', message: scan.message });
    return;
  }
  for (const { name, offset, inSection } of scan.references) {
    const [root, ...segments] = name.split('.') as [string, ...string[]];
    // Inside a section a name may be relative to the section's item (`{{#steps.m.results}}{{ handle.reply }}{{/…}}`).
    if (inSection && root !== 'inputs' && root !== 'steps') continue;
    const shown = `{{ ${name} }}`;
    checkReference(root, segments, scope, ctx, (message) => ctx.problems.push({ path, target: 'value', offset, message: `${shown}: ${message}` }), []);
  }
}

/** The fields `error` has: `{code, message}` (or null). */
const errorType = (label: string): CelDeclType => objectOf({ code: STRING, message: STRING }, `${label}.error`);

/** Types of entries already built, by the entry: a step in a loop is seen by many expressions. */
const entryTypes = new WeakMap<object, CelDeclType>();

/**
 * The type of `steps.ID` as a run shows it (`nodeView` of workflows/pipeline-orchestration.ts):
 * a step's `value` is its reply schema's type, or the reply's text (a string) without one; a
 * map's `results` a list of its items, each holding the body's entries by id.
 */
function entryType(id: string, known: Known): CelDeclType {
  const key = known.step ?? known.map ?? known;
  const cached = entryTypes.get(key);
  if (cached) return cached;
  const label = /^[A-Za-z_][A-Za-z0-9_]*$/.test(id) ? `steps.${id}` : `steps[${JSON.stringify(id)}]`;
  const status = STRING;
  const error = errorType(label);
  let type: CelDeclType;
  switch (known.kind) {
    case 'step': {
      const value = known.step?.reply ? schemaType(known.step.reply.schema, `${label}.value`) : STRING;
      type = objectOf({ reply: STRING, value, status, error, thread_id: STRING, ...(known.step?.task ? { task_id: STRING } : {}) }, label);
      break;
    }
    case 'loop':
      type = objectOf({ status, error, iterations: INT }, label);
      break;
    case 'map': {
      const fields: Record<string, CelDeclType> = {};
      for (const { entry } of walkEntries(known.map?.map.steps ?? []).filter((w) => !w.enclosing.some(isMap))) {
        const memberId = entryId(entry);
        if (memberId !== undefined) fields[memberId] = entryType(memberId, { kind: entryKind(entry), ...(isStep(entry) ? { step: entry } : {}), ...(isMap(entry) ? { map: entry } : {}) });
      }
      type = objectOf({ status, error, results: listOf(objectOf(fields, `an item of ${label}.results`, 'step')) }, label);
      break;
    }
    case 'run':
      type = objectOf({ status, error, value: STRING, reply: STRING, run_id: STRING }, label);
      break;
    default:
      type = objectOf({ status, error }, label);
  }
  entryTypes.set(key, type);
  return type;
}

/**
 * The variables a run gives an expression here (`expressionVariables` of the orchestration), with
 * their types: `inputs`, `steps` (the entries it names, or all it can see when it names them by
 * a computed key), `iteration` inside a loop, the items of the maps around.
 */
function declaredVariables(references: ReadonlyArray<{ root: string; segments: ReadonlyArray<{ name: string }> }>, scope: Scope, ctx: Context): Record<string, CelDeclType> {
  const inputs: Record<string, CelDeclType> = {};
  for (const [name, input] of Object.entries(ctx.pipeline.inputs)) inputs[name] = inputType(input.type);
  const visible = new Map([...scope.previous, ...scope.done]);
  const named = references.filter((r) => r.root === 'steps');
  const ids = named.every((r) => r.segments.length > 0) ? new Set(named.map((r) => r.segments[0]!.name)) : new Set(visible.keys());
  const steps: Record<string, CelDeclType> = {};
  for (const id of ids) {
    const known = visible.get(id);
    if (known) steps[id] = entryType(id, known);
  }
  const variables: Record<string, CelDeclType> = { inputs: objectOf(inputs, 'inputs', 'input'), steps: objectOf(steps, 'steps', 'step') };
  if (scope.loops.length > 0) variables['iteration'] = INT;
  for (const name of scope.items) variables[name] = scope.itemTypes.get(name) ?? DYN;
  return variables;
}

/**
 * Checks one expression (`when`, `until`, `items`): it parses (or says what is wrong, where),
 * names only what is in scope, and — when it does — is well typed with the types the run gives
 * its variables, and gives what `expected` says. Output: its type (`dyn` when unknown or broken).
 */
function checkExpression(text: string | undefined, path: PathSegment[], scope: Scope, ctx: Context, expected: ExpectedResult): CelDeclType {
  if (text === undefined) return DYN;
  const scan = checkers.scanExpression(text);
  if (!scan.ok) {
    const explained = checkers.explainSyntaxError(text, { message: scan.message.replace(/^invalid expression: /, ''), offset: scan.offset });
    ctx.problems.push({ path, target: 'value', offset: explained.offset, trimmed: true, message: `invalid expression: ${explained.message}` });
    return DYN;
  }
  const before = ctx.problems.length;
  for (const reference of scan.references) {
    checkReference(
      reference.root,
      reference.segments.map((s) => s.name),
      scope,
      ctx,
      (message, offset) => ctx.problems.push({ path, target: 'value', offset: offset < 0 ? reference.offset : offset, trimmed: true, message }),
      reference.segments.map((s) => s.offset),
    );
  }
  // A name that is wrong is said once, by the rules above: the types of what it names are unknown.
  if (ctx.problems.length > before) return DYN;
  const checked = checkers.checkExpressionTypes(text, declaredVariables(scan.references, scope, ctx), expected);
  if (checked.problem) ctx.problems.push({ path, target: 'value', offset: checked.problem.offset, trimmed: true, message: checked.problem.message });
  return checked.type;
}

/** Checks a step's participants, its thread, its typed reply and its templates. */
function checkStep(step: PipelineStep, path: PathSegment[], team: TeamDefinition | undefined, edges: Set<string>, ends: Map<string, readonly [string, string]>, scope: Scope, ctx: Context): void {
  const { problems } = ctx;
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
    const missing = unknownStep(parent, scope, ctx, true);
    if (missing) {
      problems.push({ path: [...path, 'thread'], target: 'value', message: missing.replace('so its reply is not there yet', 'so its thread is not there yet') });
    } else if (scope.done.get(parent)!.kind !== 'step') {
      problems.push({ path: [...path, 'thread'], target: 'value', message: `${JSON.stringify(parent)} is a ${scope.done.get(parent)!.kind}, not a step: it has no thread` });
    } else {
      const threadEnd = ends.get(parent);
      if (threadEnd && fromKnown && peerOf(threadEnd, step.from) === undefined) {
        problems.push({ path: [...path, 'from'], target: 'value', message: `${JSON.stringify(step.from)} is not in the thread of step ${JSON.stringify(parent)} (between ${threadEnd[0]} and ${threadEnd[1]})` });
      }
    }
    if (step.subject !== undefined) problems.push({ path: [...path, 'subject'], target: 'key', message: 'a step that continues a thread has no subject (the thread has one)' });
  }
  if (step.task && step.thread !== undefined) {
    problems.push({ path: [...path, 'task'], target: 'key', message: 'a task step asks on an edge (its task opens a thread of its own): give `to`, not `thread`' });
  }
  if (step.task && step.reconcileEvery !== undefined) {
    problems.push({ path: [...path, 'reconcileEvery'], target: 'key', message: 'reconcileEvery applies to waits for a reply by push; a task step waits for its task to end' });
  }
  if (!step.awaitReply && step.timeout !== undefined) problems.push({ path: [...path, 'timeout'], target: 'key', message: 'timeout applies to the wait for a reply; this step has awaitReply: false' });
  if (step.reply !== undefined) {
    if (!step.awaitReply) problems.push({ path: [...path, 'reply'], target: 'key', message: 'a typed reply needs a reply to check; this step has awaitReply: false' });
    for (const problem of checkers.replySchemaProblems(step.reply.schema)) problems.push({ ...problem, path: [...path, 'reply', 'schema', ...problem.path] });
  }
  checkTemplate(step.subject, [...path, 'subject'], scope, ctx);
  checkTemplate(step.content, [...path, 'content'], scope, ctx);
}

/**
 * A `run` input as `inputProblems` checks it: a template stands for a value of the input's type
 * (its text is known once rendered, and turned into that type then); a literal string that
 * spells a number or a boolean is one, as the run will turn it.
 */
function literalInput(value: InputValue, type: InputType | undefined): unknown {
  if (typeof value !== 'string' || type === undefined || type === 'string') return value;
  if (/\{\{/.test(value)) return type === 'number' ? 0 : false;
  const converted = coerceInput(value, type);
  return converted === undefined ? value : converted;
}

/** Checks a `run` entry: the pipeline it names and the inputs it gives. */
function checkRun(entry: RunEntry, path: PathSegment[], definition: Definition, scope: Scope, ctx: Context): void {
  const { run } = entry;
  const target = definition.pipelines.find((p) => p.name === run.pipeline);
  if (!target) {
    ctx.problems.push({ path: [...path, 'pipeline'], target: 'value', message: `unknown pipeline ${JSON.stringify(run.pipeline)}${didYouMean(run.pipeline, definition.pipelines.map((p) => p.name))}` });
  } else if (run.pipeline === ctx.pipeline.name || Object.hasOwn(reachablePipelines(definition.pipelines, run.pipeline), ctx.pipeline.name)) {
    ctx.problems.push({ path: [...path, 'pipeline'], target: 'value', message: `pipeline ${JSON.stringify(run.pipeline)} runs ${JSON.stringify(ctx.pipeline.name)} again (directly or through others): sub-pipelines cannot form a cycle` });
  } else {
    const given: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(run.inputs)) given[name] = literalInput(value, target.inputs[name]?.type);
    for (const problem of inputProblems(target, given)) {
      ctx.problems.push({ path: problem.name === undefined ? [...path, 'inputs'] : [...path, 'inputs', problem.name], target: problem.name === undefined ? 'value' : 'key', message: problem.message });
    }
  }
  for (const [name, value] of Object.entries(run.inputs)) if (typeof value === 'string') checkTemplate(value, [...path, 'inputs', name], scope, ctx);
}

/** What checking a list of entries needs besides the scope. */
interface ListContext extends Context {
  definition: Definition;
  team: TeamDefinition | undefined;
  edges: Set<string>;
  ends: Map<string, readonly [string, string]>;
  firstUse: Map<string, string>;
}

/** Records an entry's id, reporting a duplicate. */
function claimId(id: string, path: PathSegment[], ctx: ListContext): void {
  const first = ctx.firstUse.get(id);
  if (first !== undefined) ctx.problems.push({ path: [...path, 'id'], target: 'value', message: `duplicate step id ${JSON.stringify(id)} (first used at ${first})` });
  else ctx.firstUse.set(id, path.slice(2).join('.').replace(/\.(\d+)/g, '[$1]'));
}

/**
 * Checks a list of entries in order (the pipeline's `steps`, or a body). Each entry sees the
 * ones before it; a loop's body ids stay visible after the loop (their latest iteration), a map's
 * do not (only `steps.MAP.results`). Output: the scope after the list.
 */
function checkEntries(entries: readonly PipelineEntry[], base: PathSegment[], scope: Scope, ctx: ListContext): Scope {
  let current = scope;
  entries.forEach((entry, i) => {
    const path = [...base, i];
    const here: Scope = { ...current, siblings: new Set() };
    checkExpression(entry.when, [...path, 'when'], here, ctx, WHEN);
    const done = new Map(current.done);
    const inMaps = new Map(current.inMaps);
    if (isParallelGroup(entry)) {
      const siblings = new Set(entry.parallel.map((s) => s.id));
      entry.parallel.forEach((step, j) => {
        const memberPath = [...path, 'parallel', j];
        claimId(step.id, memberPath, ctx);
        siblings.delete(step.id);
        checkExpression(step.when, [...memberPath, 'when'], { ...here, siblings }, ctx, WHEN);
        checkStep(step, memberPath, ctx.team, ctx.edges, ctx.ends, { ...here, siblings }, ctx);
        siblings.add(step.id);
      });
      for (const step of entry.parallel) if (!done.has(step.id)) done.set(step.id, { kind: 'step', step });
    } else if (isLoop(entry)) {
      const bodyPath = [...path, 'loop'];
      claimId(entry.loop.id, bodyPath, ctx);
      const previous = new Map(here.previous);
      // Every entry of the body but those inside its maps (one per item, not visible outside the map).
      for (const { entry: member } of walkEntries(entry.loop.steps).filter((w) => !w.enclosing.some(isMap))) {
        const id = entryId(member);
        if (id !== undefined) previous.set(id, { kind: entryKind(member), ...(isStep(member) ? { step: member } : {}), ...(isMap(member) ? { map: member } : {}) });
      }
      const { iterationHiddenBy: _hidden, ...outside } = here;
      const inner = checkEntries(entry.loop.steps, [...bodyPath, 'steps'], { ...outside, previous, loops: [...here.loops, entry.loop.id] }, ctx);
      checkExpression(entry.loop.until, [...bodyPath, 'until'], inner, ctx, { field: 'until', kind: 'bool' });
      for (const [id, known] of inner.done) done.set(id, known);
      for (const [id, map] of inner.inMaps) inMaps.set(id, map);
      done.set(entry.loop.id, { kind: 'loop' });
    } else if (isMap(entry)) {
      const bodyPath = [...path, 'map'];
      claimId(entry.map.id, bodyPath, ctx);
      const listType = checkExpression(entry.map.items, [...bodyPath, 'items'], here, ctx, { field: 'items', kind: 'list' });
      if (here.items.includes(entry.map.as)) {
        ctx.problems.push({ path: [...bodyPath, 'as'], target: 'value', message: `${JSON.stringify(entry.map.as)} is already the item of an enclosing map; give this one another name with as:` });
      }
      // The run gives a map's items the maps' items around, and no iteration of a loop around.
      const itemTypes = new Map(here.itemTypes).set(entry.map.as, listType.kind === 'list' ? listType.element : DYN);
      const hidden = here.loops.length > 0 ? { iterationHiddenBy: entry.map.id } : here.iterationHiddenBy !== undefined ? { iterationHiddenBy: here.iterationHiddenBy } : {};
      const inner = checkEntries(entry.map.steps, [...bodyPath, 'steps'], { ...here, ...hidden, loops: [], items: [...here.items, entry.map.as], itemTypes }, ctx);
      for (const [id] of inner.done) if (!here.done.has(id)) inMaps.set(id, entry.map.id);
      for (const [id, map] of inner.inMaps) inMaps.set(id, map);
      done.set(entry.map.id, { kind: 'map', map: entry });
    } else if (isRun(entry)) {
      claimId(entry.run.id, [...path, 'run'], ctx);
      checkRun(entry, [...path, 'run'], ctx.definition, here, ctx);
      done.set(entry.run.id, { kind: 'run' });
    } else if (isSleep(entry)) {
      claimId(entry.sleep.id, [...path, 'sleep'], ctx);
      done.set(entry.sleep.id, { kind: 'sleep' });
    } else {
      claimId(entry.id, path, ctx);
      checkStep(entry, path, ctx.team, ctx.edges, ctx.ends, here, ctx);
      if (!done.has(entry.id)) done.set(entry.id, { kind: 'step', step: entry });
    }
    current = { ...current, done, inMaps };
  });
  return current;
}

/** Checks one pipeline. */
function checkPipeline(pipeline: PipelineDefinition, p: number, definition: Definition, problems: PathProblem[]): void {
  const base: PathSegment[] = ['pipelines', p];
  const team = definition.teams.find((t) => t.name === pipeline.team);
  if (!team) {
    problems.push({ path: [...base, 'team'], target: 'value', message: `unknown team ${JSON.stringify(pipeline.team)}${didYouMean(pipeline.team, definition.teams.map((t) => t.name))}` });
  }
  const all = walkEntries(pipeline.steps);
  const ctx: ListContext = {
    pipeline,
    definition,
    team,
    edges: new Set((team?.edges ?? []).map(([a, b]) => edgeKey(a, b))),
    ends: threadEnds(flatSteps(pipeline)),
    inputs: new Set(Object.keys(pipeline.inputs)),
    allIds: new Set(all.flatMap((w) => entryIdList(w.entry))),
    firstUse: new Map(),
    problems,
  };
  const after = checkEntries(pipeline.steps, [...base, 'steps'], { done: new Map(), inMaps: new Map(), siblings: new Set(), previous: new Map(), loops: [], items: [], itemTypes: new Map() }, ctx);
  checkTemplate(pipeline.output, [...base, 'output'], after, ctx);

  for (const [name, input] of Object.entries(pipeline.inputs)) {
    if (input.default !== undefined && typeof input.default !== input.type) {
      problems.push({ path: [...base, 'inputs', name, 'default'], target: 'value', message: `default of input ${JSON.stringify(name)} must be a ${input.type}` });
    }
  }
}

/** The id of an entry as a list (a parallel group has none of its own). */
function entryIdList(entry: PipelineEntry): string[] {
  const id = entryId(entry);
  return id === undefined ? [] : [id];
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
 * problems with paths into the document, and for a name inside an expression or a template its
 * offset there (empty when there are none): pipeline and schedule names unique; a pipeline's team
 * in the file; entries with ids unique in the whole pipeline (bodies included), known
 * participants, an edge between `from` and `to`, `thread` naming an earlier step whose thread
 * `from` is in; every expression (`when`, `until`, `items`) parses as CEL; expressions and
 * templates name only declared inputs, earlier entries (not later ones, not parallel siblings,
 * not the steps inside a map from outside it, not the reply of a step that awaits none), fields
 * that entry has, `iteration` inside a loop (not inside a map) and the item inside a map; every
 * expression that names only such things is well typed with the types a run gives them
 * (`cel-types.ts`, `expression-check.ts`: a condition gives a bool, `items` a list, no int is
 * compared with a string, no unknown function or field of a typed reply), and a syntax error says
 * what is wrong; every typed reply's schema is one the run's validator compiles (JSON Schema
 * 2020-12), each problem at its keyword, on a step that awaits a reply; `timeout` only where a reply is
 * awaited; `run` naming another pipeline of the file, without a cycle, with inputs it accepts;
 * schedules with exactly one of cron and every, a valid cron expression and time zone, a known
 * pipeline and inputs it accepts. Raises nothing.
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
