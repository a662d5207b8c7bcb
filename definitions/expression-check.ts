/**
 * What `validate` says about a pipeline's CEL expressions beyond their names: whether one is well
 * typed with the types a run gives its variables (`cel-types.ts`). Why one does not parse is
 * `expression-syntax.ts`.
 *
 * Two libraries, each for what it does: the run's own, `@bufbuild/cel`, is the authority on the
 * syntax (an expression it cannot parse is an error, whatever else says) and on which functions
 * exist (its declarations are the functions a run can call). Its type checker (`Checker`, 0.6.1,
 * not exported) handles constants and names only and throws on anything else, so the types are
 * checked by `@marcbachmann/cel-js`'s checker, told the variables' declared types and the run's
 * looser rules (a number equals a number of another kind, anything may be compared with null,
 * bytes are ordered). Where the second library disagrees with the first — it cannot parse an
 * expression the run can, or knows no overload the run has — nothing is said; a test checks that
 * it accepts every function, method and operator the run declares.
 *
 * Loaded by `validate` only when a definition has an expression (the checker costs ~15 ms to load).
 * Raises nothing: every function returns a problem or none.
 */
import { celEnv, parse as parseForRun } from '@bufbuild/cel';
import type { CelType } from '@bufbuild/cel';
import { Environment, ParseError } from '@marcbachmann/cel-js';
import type { ASTNode } from '@marcbachmann/cel-js';
import { DYN, describeType, listOf, mapOf, NULL } from './cel-types.ts';
import type { CelDeclType, CelScalar } from './cel-types.ts';
import { closestMatch } from './did-you-mean.ts';

/** A problem of an expression: what is wrong, and where in the expression's text (0-based). */
export interface ExpressionProblem {
  message: string;
  offset: number;
}

/** What a field's expression must give: a condition (`when`, `until`) a bool, `items` a list. */
export interface ExpectedResult {
  field: string;
  kind: 'bool' | 'list';
}

/** What {@link checkExpressionTypes} found: the expression's type (`dyn` when unknown), and its first problem. */
export interface TypeCheck {
  type: CelDeclType;
  problem?: ExpressionProblem;
}

/** ` (did you mean "x"?)` or nothing. */
export function didYouMean(word: string, candidates: readonly string[]): string {
  const match = closestMatch(word, candidates);
  return match === undefined ? '' : ` (did you mean ${JSON.stringify(match)}?)`;
}

/** A piece of the expression quoted in a message, cut to a readable length. */
export function snippet(text: string, start: number, end: number): string {
  const piece = text.slice(start, end).replace(/\s+/g, ' ');
  return piece.length > 60 ? `${piece.slice(0, 60)}…` : piece;
}

// ---------------------------------------------------------------------------------------------
// Functions the run has

/** Macros the parser expands (they are never calls of a function). */
const MACROS = ['has', 'all', 'exists', 'exists_one', 'map', 'filter'];

let runFunctions: Map<string, { functions: CelType[][]; methods: Array<{ target: CelType; args: CelType[] }> }> | undefined;

/** The run's functions by name, from its CEL environment's declarations (internal operators left out). */
function functionsOfTheRun(): NonNullable<typeof runFunctions> {
  if (!runFunctions) {
    runFunctions = new Map();
    for (const f of celEnv().funcs) {
      if (/^[_@!-]/.test(f.name)) continue;
      const entry = runFunctions.get(f.name) ?? { functions: [], methods: [] };
      if (f.target) entry.methods.push({ target: f.target, args: [...f.arguments] });
      else entry.functions.push([...f.arguments]);
      runFunctions.set(f.name, entry);
    }
  }
  return runFunctions;
}

/** A run's type as a message names it: `list`, `map`, `timestamp`. */
function runTypeName(type: CelType): string {
  if (type.kind === 'list') return 'list';
  if (type.kind === 'map') return 'map';
  return String(type).replace(/^google\.protobuf\./, '').toLowerCase();
}

type ParsedForRun = ReturnType<typeof parseForRun>;
type RunExpr = NonNullable<ParsedForRun['expr']>;

/**
 * The first call of a function the run does not have, or of a method called as a function (or the
 * other way round), by its place in the text. Input: the expression as the run's parser parsed it.
 */
function unknownFunction(text: string, parsed: ParsedForRun): ExpressionProblem | undefined {
  const positions = (parsed.sourceInfo?.positions ?? {}) as Record<string, number>;
  const known = functionsOfTheRun();
  const problems: ExpressionProblem[] = [];
  const walk = (expr: RunExpr | undefined): void => {
    if (!expr) return;
    const kind = expr.exprKind;
    switch (kind.case) {
      case 'callExpr': {
        const { function: name, target, args } = kind.value;
        if (!/^[_@!-]/.test(name)) {
          const at = positions[String(expr.id)] ?? 0;
          // A method's position is its dot; the name comes after it.
          const offset = target ? Math.max(at, text.indexOf(name, at)) : at;
          const entry = known.get(name);
          const form = target ? 'methods' : 'functions';
          if (!entry && MACROS.includes(name)) {
            problems.push({ message: name === 'has' ? 'has takes one field selection: has(x.field)' : `${name} takes a variable and an expression: list.${name}(x, …)`, offset });
          } else if (!entry) {
            const candidates = [...known.entries()].filter(([, e]) => e[form].length > 0).map(([n]) => n);
            problems.push({ message: `unknown function ${JSON.stringify(name)}${didYouMean(name, [...candidates, ...MACROS])}`, offset });
          } else if (entry[form].length === 0) {
            problems.push({ message: target ? `${name} is a function, not a method: write ${name}(…)` : `${name} is a method: write x.${name}(…)`, offset });
          }
        }
        walk(target);
        for (const arg of args) walk(arg);
        return;
      }
      case 'selectExpr':
        walk(kind.value.operand);
        return;
      case 'listExpr':
        for (const element of kind.value.elements) walk(element);
        return;
      case 'structExpr':
        for (const entry of kind.value.entries) {
          if (entry.keyKind.case === 'mapKey') walk(entry.keyKind.value);
          walk(entry.value);
        }
        return;
      case 'comprehensionExpr':
        for (const part of [kind.value.iterRange, kind.value.accuInit, kind.value.loopCondition, kind.value.loopStep, kind.value.result]) walk(part);
        return;
      default:
        return;
    }
  };
  walk(parsed.expr);
  return problems.sort((a, b) => a.offset - b.offset)[0];
}

// ---------------------------------------------------------------------------------------------
// Types

let base: Environment | undefined;

/**
 * The checker's environment without variables: the standard library, lists and maps of mixed
 * elements as the run accepts them, and the run's looser equality (numbers of different kinds
 * compare, and anything compares with null: a skipped entry's `value` is null).
 */
function checker(): Environment {
  if (!base) {
    base = new Environment({ homogeneousAggregateLiterals: false });
    const never = () => false;
    for (const signature of ['int == double', 'int == uint', 'double == uint', 'bytes < bytes', 'bytes <= bytes', 'bytes > bytes', 'bytes >= bytes']) base.registerOperator(signature, never);
    for (const type of ['string', 'int', 'uint', 'double', 'bool', 'bytes', 'list', 'map', 'google.protobuf.Timestamp', 'google.protobuf.Duration']) base.registerOperator(`${type} == null`, never);
  }
  return base;
}

/** The checker's names of the scalars. */
const SCALAR_NAMES: Record<CelScalar, string> = {
  int: 'int',
  uint: 'uint',
  double: 'double',
  string: 'string',
  bool: 'bool',
  bytes: 'bytes',
  null: 'null_type',
  dyn: 'dyn',
  timestamp: 'google.protobuf.Timestamp',
  duration: 'google.protobuf.Duration',
};

/** Declarations turned into the checker's: object types registered by name (`T1`, `T2`…), known by that name. */
class Declarations {
  readonly env: Environment;
  readonly objects = new Map<string, Extract<CelDeclType, { kind: 'object' }>>();
  private readonly names = new Map<CelDeclType, string>();

  constructor(variables: Record<string, CelDeclType>) {
    this.env = checker().clone();
    for (const [name, type] of Object.entries(variables)) this.env.registerVariable(name, this.typeName(type));
  }

  /** The checker's type string of a declared type, registering object types on the way. */
  typeName(type: CelDeclType): string {
    switch (type.kind) {
      case 'scalar':
        return SCALAR_NAMES[type.name];
      case 'list':
        return `list<${this.typeName(type.element)}>`;
      case 'map':
        return `map<string, ${this.typeName(type.value)}>`;
      case 'object': {
        const known = this.names.get(type);
        if (known) return known;
        const name = `T${this.names.size + 1}`;
        this.names.set(type, name);
        const fields: Record<string, string> = {};
        for (const [field, fieldType] of Object.entries(type.fields)) fields[field] = this.typeName(fieldType);
        this.env.registerType(name, { fields });
        this.env.registerOperator(`${name} == null`, () => false);
        this.objects.set(name, type);
        return name;
      }
    }
  }

  /** A checker's type string as a declared type (`dyn` for what declarations cannot say). */
  declared(name: string | undefined): CelDeclType {
    if (name === undefined) return DYN;
    const text = name.trim();
    const object = this.objects.get(text);
    if (object) return object;
    const inner = /^(list|map)<(.*)>$/.exec(text);
    if (inner) {
      if (inner[1] === 'list') return listOf(this.declared(inner[2]));
      // map<K, V>: V is after the first comma outside brackets.
      let depth = 0;
      for (let i = 0; i < inner[2]!.length; i++) {
        const c = inner[2]![i];
        if (c === '<') depth++;
        else if (c === '>') depth--;
        else if (c === ',' && depth === 0) return mapOf(this.declared(inner[2]!.slice(i + 1)));
      }
      return mapOf(DYN);
    }
    if (text === 'list') return listOf(DYN);
    if (text === 'map') return mapOf(DYN);
    if (text === 'null' || text === 'null_type') return NULL;
    const scalar = (Object.keys(SCALAR_NAMES) as CelScalar[]).find((s) => SCALAR_NAMES[s] === text);
    return scalar ? { kind: 'scalar', name: scalar } : DYN;
  }

  /** A checker's type string in a message. */
  described(name: string | undefined): string {
    return describeType(this.declared(name));
  }
}

/** The checked type of a node of the checker's tree, as its type string. */
const typeOf = (node: unknown): string | undefined => (node as { checkedType?: { name?: string } } | undefined)?.checkedType?.name;

const COMPARISONS = new Set(['==', '!=', '<', '<=', '>', '>=']);
const ARITHMETIC = new Set(['+', '-', '*', '/', '%']);

/** Whether a declared type fits a type of the run's declarations (`dyn` fits anything). */
function fits(type: CelDeclType, runType: CelType): boolean {
  if (type.kind === 'scalar' && type.name === 'dyn') return true;
  if (runType.kind === 'scalar') return runType.name === 'dyn' || (type.kind === 'scalar' && runType.name === (type.name === 'null' ? 'null_type' : type.name));
  if (runType.kind === 'list') return type.kind === 'list';
  if (runType.kind === 'map') return type.kind === 'map' || type.kind === 'object';
  return type.kind === 'scalar' && String(runType).toLowerCase().endsWith(type.name);
}

/** The problem of a call that matches none of a function's forms, or nothing when the run has a form that fits. */
function badCall(text: string, node: ASTNode, decl: Declarations): ExpressionProblem | undefined {
  const method = node.op === 'rcall';
  const [name] = node.args as [string, ...unknown[]];
  const argTypes = ((node as { argTypes?: Array<{ name?: string }> }).argTypes ?? []).map((t) => decl.declared(t.name));
  const entry = functionsOfTheRun().get(name);
  if (!entry) return undefined;
  const taking = argTypes.map(describeType).join(' and ') || 'no argument';
  if (method) {
    const receiver = (node.args as [string, ASTNode, ASTNode[]])[1];
    const receiverType = decl.declared(typeOf(receiver));
    const offset = Math.max(node.range.start, text.indexOf(name, receiver.range.end));
    const forms = entry.methods.filter((m) => fits(receiverType, m.target));
    if (forms.some((m) => m.args.length === argTypes.length && m.args.every((a, i) => fits(argTypes[i]!, a)))) return undefined;
    if (forms.length === 0) {
      const targets = [...new Set(entry.methods.map((m) => runTypeName(m.target)))];
      return { message: `${describeType(receiverType)} has no method ${name}; ${name} is a method of ${targets.join(', ')}`, offset };
    }
    const takes = [...new Set(forms.map((m) => `(${m.args.map(runTypeName).join(', ')})`))];
    return { message: `${name} of ${describeType(receiverType)} does not take ${taking}; it takes ${takes.join(' or ')}`, offset };
  }
  if (entry.functions.some((args) => args.length === argTypes.length && args.every((a, i) => fits(argTypes[i]!, a)))) return undefined;
  const takes = [...new Set(entry.functions.map((args) => `(${args.map(runTypeName).join(', ')})`))];
  return { message: `${name} does not take ${taking}; it takes ${takes.join(', ')}`, offset: node.range.start };
}

/** The checker's error in our words, at the offending part of the expression. */
function translate(text: string, error: { code?: string; message: string; node?: unknown }, decl: Declarations): ExpressionProblem | undefined {
  const node = error.node as ASTNode | undefined;
  if (!node || typeof node !== 'object' || !('op' in node)) return { message: error.message, offset: 0 };
  const range = node.range ?? { start: 0, end: text.length };
  const whole = snippet(text, range.start, range.end);
  const args = node.args as unknown[];
  switch (error.code) {
    case 'no_such_overload': {
      if (node.op === '!_' || node.op === '-_') {
        const operand = node.args as ASTNode;
        const needs = node.op === '!_' ? 'a bool' : 'a number';
        return { message: `${node.op[0]} needs ${needs}, not ${decl.described(typeOf(operand))} (${whole})`, offset: range.start };
      }
      const [left, right] = args as [ASTNode, ASTNode];
      if (!left?.range || !right?.range) break;
      const between = text.slice(left.range.end, right.range.start);
      const offset = left.range.end + Math.max(0, between.indexOf(node.op));
      const l = decl.described(typeOf(left));
      const r = decl.described(typeOf(right));
      if (COMPARISONS.has(node.op)) return { message: `cannot compare ${l} with ${r} (${whole})`, offset };
      if (node.op === 'in') return { message: `cannot look for ${l} in ${r} (${whole})`, offset };
      if (ARITHMETIC.has(node.op)) {
        const kinds = [decl.declared(typeOf(left)), decl.declared(typeOf(right))].map((t) => (t.kind === 'scalar' ? t.name : t.kind));
        const hint = kinds.every((k) => ['int', 'uint', 'double'].includes(k))
          ? '; make both the same kind of number, with double(…) or int(…) (a whole number written 1.0 is a double)'
          : kinds.includes('string') && node.op === '+'
            ? '; turn a number into text with string(…)'
            : '';
        return { message: `cannot apply ${node.op} to ${l} and ${r} (${whole})${hint}`, offset };
      }
      break;
    }
    case 'no_matching_overload':
      if (node.op === 'call' || node.op === 'rcall') return badCall(text, node, decl);
      break;
    case 'no_such_key': {
      const [owner, key] = args as [ASTNode, unknown];
      const object = decl.objects.get(typeOf(owner) ?? '');
      const name = typeof key === 'string' ? key : ((key as ASTNode | undefined)?.args as unknown);
      if (!object || typeof name !== 'string') break;
      const offset = node.op === '.' ? Math.max(range.start, text.indexOf(name, owner.range.end)) : ((key as ASTNode).range?.start ?? range.start);
      const fields = Object.keys(object.fields);
      const has = fields.length === 0 ? `it has no ${object.noun}s` : `${object.intro} ${fields.length > 1 ? `${fields.slice(0, -1).join(', ')} and ${fields.at(-1)}` : fields[0]}`;
      return { message: `unknown ${object.noun} ${JSON.stringify(name)} of ${object.label}; ${has}${didYouMean(name, fields)}`, offset };
    }
    case 'cannot_index_type': {
      const [owner, key] = args as [ASTNode, unknown];
      const ownerText = snippet(text, owner.range.start, owner.range.end);
      if (node.op === '.' || node.op === '.?') {
        const offset = Math.max(range.start, text.indexOf(String(key), owner.range.end));
        return { message: `${ownerText} is ${decl.described(typeOf(owner))}: it has no field ${JSON.stringify(key)}`, offset };
      }
      return { message: `${ownerText} is ${decl.described(typeOf(owner))}, which cannot be indexed`, offset: owner.range.end };
    }
    case 'invalid_index_type': {
      const [owner, index] = args as [ASTNode, ASTNode];
      if (!owner?.range || !index?.range) break;
      const ownerType = decl.declared(typeOf(owner));
      const message = ownerType.kind === 'list' ? `a list index must be an int, not ${decl.described(typeOf(index))}` : `${describeType(ownerType)} cannot be indexed by ${decl.described(typeOf(index))}`;
      return { message: `${message} (${whole})`, offset: index.range.start };
    }
    case 'invalid_condition_type': {
      // The condition of `? :`, or the filter of a macro: the node is the condition itself.
      return { message: `${whole} must be a bool here, not ${decl.described(typeOf(node))}`, offset: range.start };
    }
    case 'invalid_logical_operand': {
      const [left, right] = args as [ASTNode, ASTNode];
      const bad = [left, right].find((side) => !['bool', 'dyn'].includes(typeOf(side) ?? 'dyn')) ?? left;
      return { message: `${node.op} needs a bool on each side, not ${decl.described(typeOf(bad))} (${snippet(text, bad.range.start, bad.range.end)})`, offset: bad.range.start };
    }
    default:
      break;
  }
  return { message: error.message.split('\n')[0]!.replace(/\bT\d+\b/g, 'map'), offset: range.start };
}

/**
 * Type-checks an expression the run's parser accepts, with `variables` declared as given (the
 * names a run provides there: `inputs`, `steps`, `iteration`, items of maps). Checks, first to
 * last: every function called is one the run has (`unknown function "contain" (did you mean
 * "contains"?)`), the checker's rules (an int compared with a string, an unknown field of a
 * typed reply, a method of another type), then the result against `expected` (`items must be a
 * list, not a string`). Output: the type (`dyn` when unknown) and the first problem, at the
 * offending part of the text (0-based). Raises nothing.
 */
export function checkExpressionTypes(text: string, variables: Record<string, CelDeclType>, expected?: ExpectedResult): TypeCheck {
  let parsed: ParsedForRun;
  try {
    parsed = parseForRun(text);
  } catch {
    return { type: DYN };
  }
  const unknown = unknownFunction(text, parsed);
  if (unknown) return { type: DYN, problem: unknown };
  let decl: Declarations;
  let result: ReturnType<Environment['check']>;
  try {
    decl = new Declarations(variables);
    result = decl.env.check(text);
  } catch {
    return { type: DYN };
  }
  if (!result.valid) {
    // The checker cannot parse what the run parses: nothing to say.
    if (result.error instanceof ParseError || !result.error) return { type: DYN };
    const problem = translate(text, result.error, decl);
    return problem ? { type: DYN, problem } : { type: DYN };
  }
  const type = decl.declared(result.type);
  if (expected && !(type.kind === 'scalar' && type.name === 'dyn')) {
    const fitsExpected = expected.kind === 'bool' ? type.kind === 'scalar' && type.name === 'bool' : type.kind === 'list';
    if (!fitsExpected) {
      const what = expected.kind === 'bool' ? 'a bool (true or false)' : 'a list';
      return { type, problem: { message: `${expected.field} must be ${what}, not ${describeType(type)}`, offset: 0 } };
    }
  }
  return { type };
}
