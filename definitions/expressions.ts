/**
 * The expressions of pipelines (`when`, a loop's `until`, a map's `items`): CEL, the Common
 * Expression Language (https://cel.dev, language definition:
 * https://github.com/google/cel-spec/blob/master/doc/langdef.md), parsed and evaluated by
 * `@bufbuild/cel` — never `eval`.
 *
 * Pure, deterministic and free of I/O and Zod: the pipeline workflow imports it and evaluates in
 * Temporal's workflow sandbox (CEL has no clock and no randomness; `@bufbuild/cel` neither
 * generates code nor reads the time), and `validate` uses {@link scanExpression} to find every
 * name an expression uses, with its offset, before anything runs.
 *
 * Values cross between JSON and CEL here: a JSON integer (a number without fraction that is a
 * safe integer) is a CEL `int`, any other number a `double`, objects are maps and arrays lists;
 * results come back as JSON (an `int` as a number).
 */
import { celEnv, isCelError, isCelList, isCelMap, isCelUint, parse, plan } from '@bufbuild/cel';
import type { CelInput, CelValue } from '@bufbuild/cel';

/** A JSON value: what replies, inputs and items are made of. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** A parsed expression tree as `@bufbuild/cel` gives it. */
type Expr = ReturnType<typeof parse>['expr'];

/** One segment of a reference: a field name (`.name` or `['name']`) and where it starts in the expression (0-based). */
export interface ReferenceSegment {
  name: string;
  offset: number;
}

/**
 * A name an expression uses from outside: a variable (`steps`, `inputs`, `iteration`, `item`)
 * and the constant fields selected from it (`steps.classify.value` → root `steps`, segments
 * `classify`, `value`), as far as they are constant.
 */
export interface ExpressionReference {
  root: string;
  /** Offset of the root name in the expression (0-based). */
  offset: number;
  segments: ReferenceSegment[];
}

/** What {@link scanExpression} found: the references, or why the expression does not parse. */
export type ExpressionScan = { ok: true; references: ExpressionReference[] } | { ok: false; message: string; offset: number };

/** An expression failed to parse or to evaluate, or gave a value of the wrong type: code `expression_failed`. */
export class ExpressionError extends Error {
  readonly code = 'expression_failed';
  constructor(message: string) {
    super(message);
    this.name = 'ExpressionError';
  }
}

/** Where each node of a parsed expression starts. */
type Positions = Record<string, number>;

/** A selection chain rooted at a variable: its constant segments, then (once an index is not constant) nothing more. */
interface Chain {
  root: string;
  offset: number;
  segments: ReferenceSegment[];
  /** Index expressions met along the chain, walked as expressions of their own. */
  dynamic: Expr[];
  /** Set at the first index that is not a constant string: later fields select inside a value. */
  ended: boolean;
}

/** The chain of field selections ending at a variable, or undefined when `expr` is not one. */
function referenceChain(expr: Expr, positions: Positions): Chain | undefined {
  const kind = expr.exprKind;
  if (kind.case === 'identExpr') return { root: kind.value.name, offset: positions[String(expr.id)] ?? 0, segments: [], dynamic: [], ended: false };
  if (kind.case === 'selectExpr' && kind.value.operand) {
    const inner = referenceChain(kind.value.operand, positions);
    // The position of a selection is its dot; the name starts after it.
    if (inner && !inner.ended) inner.segments.push({ name: kind.value.field, offset: (positions[String(expr.id)] ?? 0) + 1 });
    return inner;
  }
  if (kind.case === 'callExpr' && kind.value.function === '_[_]' && kind.value.args.length === 2) {
    const [operand, index] = kind.value.args as [Expr, Expr];
    const inner = referenceChain(operand, positions);
    if (!inner) return undefined;
    const constant = index.exprKind.case === 'constExpr' ? index.exprKind.value.constantKind : undefined;
    if (!inner.ended && constant?.case === 'stringValue') {
      inner.segments.push({ name: constant.value, offset: positions[String(index.id)] ?? 0 });
    } else {
      inner.dynamic.push(index);
      inner.ended = true;
    }
    return inner;
  }
  return undefined;
}

/**
 * Parses an expression and lists the outside names it uses (variables bound by comprehension
 * macros such as `all(x, …)` or `map(x, …)` are not outside names). Output: {@link ExpressionScan}
 * (a parse error with its offset and the parser's message). Raises nothing.
 */
export function scanExpression(text: string): ExpressionScan {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(text);
  } catch (error) {
    const located = error as { message: string; location?: { start?: { offset?: number } } };
    const message = located.message.replace(/^<input>:\d+:\d+: /, '');
    return { ok: false, message: `invalid expression: ${message}`, offset: located.location?.start?.offset ?? 0 };
  }
  const positions = (parsed.sourceInfo?.positions ?? {}) as Positions;
  const references: ExpressionReference[] = [];
  const walk = (expr: Expr | undefined, bound: ReadonlySet<string>): void => {
    if (!expr) return;
    const chain = referenceChain(expr, positions);
    if (chain) {
      if (!bound.has(chain.root)) references.push({ root: chain.root, offset: chain.offset, segments: chain.segments });
      for (const dynamic of chain.dynamic) walk(dynamic, bound);
      return;
    }
    const kind = expr.exprKind;
    switch (kind.case) {
      case 'selectExpr':
        walk(kind.value.operand, bound);
        return;
      case 'callExpr':
        walk(kind.value.target, bound);
        for (const arg of kind.value.args) walk(arg, bound);
        return;
      case 'listExpr':
        for (const element of kind.value.elements) walk(element, bound);
        return;
      case 'structExpr':
        for (const entry of kind.value.entries) {
          if (entry.keyKind.case === 'mapKey') walk(entry.keyKind.value, bound);
          walk(entry.value, bound);
        }
        return;
      case 'comprehensionExpr': {
        const c = kind.value;
        walk(c.iterRange, bound);
        walk(c.accuInit, bound);
        const inner = new Set([...bound, c.iterVar, c.accuVar, ...(c.iterVar2 ? [c.iterVar2] : [])]);
        walk(c.loopCondition, inner);
        walk(c.loopStep, inner);
        walk(c.result, inner);
        return;
      }
      default:
        return;
    }
  };
  walk(parsed.expr, new Set());
  return { ok: true, references };
}

/** A JSON value as CEL input: integers as `int` (bigint), other numbers as `double`. */
export function toCel(value: unknown): CelInput {
  if (value === null || value === undefined) return null;
  if (typeof value === 'number') return Number.isSafeInteger(value) ? BigInt(value) : value;
  if (typeof value === 'string' || typeof value === 'boolean') return value;
  if (Array.isArray(value)) return value.map(toCel);
  if (typeof value === 'object') {
    const map = new Map<string, CelInput>();
    for (const [key, item] of Object.entries(value)) map.set(key, toCel(item));
    return map;
  }
  return String(value);
}

/** A CEL result as JSON. Errors: {@link ExpressionError} for values JSON cannot hold (bytes, types, timestamps). */
export function fromCel(value: CelValue): JsonValue {
  if (value === null || typeof value === 'boolean' || typeof value === 'string') return value;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new ExpressionError(`the result ${String(value)} is not a finite number`);
    return value;
  }
  if (typeof value === 'bigint') return Number(value);
  if (isCelUint(value)) return Number(value.value);
  if (isCelList(value)) return [...value].map(fromCel);
  if (isCelMap(value)) {
    const out: Record<string, JsonValue> = {};
    for (const [key, item] of value) out[String(isCelUint(key) ? key.value : key)] = fromCel(item);
    return out;
  }
  throw new ExpressionError(`the result is a ${typeName(value)}, which a pipeline cannot keep (use strings, numbers, booleans, lists and maps)`);
}

/** The CEL type name of a value, for messages. */
function typeName(value: CelValue): string {
  if (value === null) return 'null';
  if (typeof value === 'boolean') return 'bool';
  if (typeof value === 'string') return 'string';
  if (typeof value === 'number') return 'double';
  if (typeof value === 'bigint') return 'int';
  if (isCelUint(value)) return 'uint';
  if (isCelList(value)) return 'list';
  if (isCelMap(value)) return 'map';
  if (value instanceof Uint8Array) return 'bytes';
  return 'message';
}

// Made at the first plan, not at import: a Temporal worker evaluates this module again for every
// workflow it starts (each has its own module scope), and an apply never evaluates an expression.
let env: ReturnType<typeof celEnv> | undefined;

/** Plans of the expressions seen, by text: an expression of a loop or map is evaluated many times. */
const plans = new Map<string, ReturnType<typeof plan>>();
const MAX_PLANS = 500;

function planOf(text: string): ReturnType<typeof plan> {
  let compiled = plans.get(text);
  if (!compiled) {
    let parsed: ReturnType<typeof parse>;
    try {
      parsed = parse(text);
    } catch (error) {
      throw new ExpressionError(`invalid expression ${JSON.stringify(text)}: ${(error as Error).message.replace(/^<input>:\d+:\d+: /, '')}`);
    }
    compiled = plan((env ??= celEnv()), parsed);
    if (plans.size >= MAX_PLANS) plans.delete(plans.keys().next().value!);
    plans.set(text, compiled);
  }
  return compiled;
}

/**
 * Evaluates an expression over `variables` (plain JSON: `inputs`, `steps`, `iteration`, the item
 * of a map). Output: the result as JSON. Errors: {@link ExpressionError} naming the expression and
 * CEL's message (`no such key: x`, `found no matching overload for '_+_' applied to '(double, int)'`).
 */
export function evaluateExpression(text: string, variables: Record<string, unknown>): JsonValue {
  const bindings: Record<string, CelInput> = {};
  for (const [name, value] of Object.entries(variables)) bindings[name] = toCel(value);
  const result = planOf(text)(bindings);
  if (isCelError(result)) throw new ExpressionError(`${JSON.stringify(text)} failed: ${result.message}`);
  return fromCel(result);
}

/** Evaluates a condition (`when`, `until`). Errors: {@link ExpressionError}, also when the result is not a bool. */
export function evaluateCondition(text: string, variables: Record<string, unknown>): boolean {
  const result = evaluateExpression(text, variables);
  if (typeof result !== 'boolean') throw new ExpressionError(`${JSON.stringify(text)} must be true or false, got ${describeJson(result)}`);
  return result;
}

/** Evaluates a list (`items`). Errors: {@link ExpressionError}, also when the result is not a list. */
export function evaluateList(text: string, variables: Record<string, unknown>): JsonValue[] {
  const result = evaluateExpression(text, variables);
  if (!Array.isArray(result)) throw new ExpressionError(`${JSON.stringify(text)} must be a list, got ${describeJson(result)}`);
  return result;
}

/** A JSON value in a few words: `the string "x"`, `a map`, `null`. */
export function describeJson(value: JsonValue): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return `a list of ${value.length}`;
  if (typeof value === 'object') return 'a map';
  if (typeof value === 'string') return `the string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`;
  return `the ${typeof value} ${String(value)}`;
}
