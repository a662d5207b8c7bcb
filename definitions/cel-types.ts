/**
 * The CEL types `validate` declares for the variables of a pipeline's expressions, as plain
 * data: what `inputs`, `steps.ID.…`, `iteration` and a map's item are when a run evaluates an
 * expression (workflows/pipeline-orchestration.ts, `expressionVariables` and `nodeView`), and
 * the type a typed reply's value has, derived from its JSON Schema. `expression-check.ts` hands
 * them to the type checker.
 *
 * Where a type cannot be known, it is `dyn`, and the checker then says nothing about it rather
 * than guess: a JSON Schema `number` (a JSON number without a fraction is a CEL `int` at run
 * time, any other a `double`), a schema that allows several types or any type, `$ref` and the
 * like. Values are maps at run time; an `object` here is a map whose keys are known (a reply
 * schema's `properties`, an entry's fields), so that a misspelt key is an error.
 *
 * Pure: no CEL library, no I/O.
 */
import type { InputType } from './pipeline-schema.ts';

/** The scalar CEL types a declaration uses. */
export const CelScalars = {
  int: 'int',
  uint: 'uint',
  double: 'double',
  string: 'string',
  bool: 'bool',
  bytes: 'bytes',
  null: 'null',
  dyn: 'dyn',
  timestamp: 'timestamp',
  duration: 'duration',
} as const;
export type CelScalar = (typeof CelScalars)[keyof typeof CelScalars];

/**
 * A declared CEL type: a scalar, a list, a map with string keys, or an object — a map whose keys
 * are known (`fields`), named in messages by `label` (`steps.classify.value`), its keys being
 * `noun`s (`field`, `step`) that `intro` lists (`its schema has category and urgent`).
 */
export type CelDeclType =
  | { kind: 'scalar'; name: CelScalar }
  | { kind: 'list'; element: CelDeclType }
  | { kind: 'map'; value: CelDeclType }
  | { kind: 'object'; fields: Record<string, CelDeclType>; label: string; noun: string; intro: string };

const scalar = (name: CelScalar): CelDeclType => ({ kind: 'scalar', name });
export const DYN = scalar('dyn');
export const STRING = scalar('string');
export const INT = scalar('int');
export const DOUBLE = scalar('double');
export const BOOL = scalar('bool');
export const NULL = scalar('null');

/** A list of `element`. */
export const listOf = (element: CelDeclType): CelDeclType => ({ kind: 'list', element });
/** A map of string keys to `value`. */
export const mapOf = (value: CelDeclType): CelDeclType => ({ kind: 'map', value });
/** A map whose keys are known. */
export const objectOf = (fields: Record<string, CelDeclType>, label: string, noun = 'field', intro = 'it has'): CelDeclType => ({ kind: 'object', fields, label, noun, intro });

/** Whether two declared types are the same (objects by identity of their fields). */
function same(a: CelDeclType, b: CelDeclType): boolean {
  if (a.kind !== b.kind) return false;
  if (a.kind === 'scalar') return a.name === (b as typeof a).name;
  if (a.kind === 'list') return same(a.element, (b as typeof a).element);
  if (a.kind === 'map') return same(a.value, (b as typeof a).value);
  return a === b;
}

/** One type for several: theirs when they are all the same, else `dyn`. */
function common(types: readonly CelDeclType[]): CelDeclType {
  const [first] = types;
  return first !== undefined && types.every((t) => same(t, first)) ? first : DYN;
}

/** The CEL type of a JSON value as a run turns it into CEL (`toCel` of expressions.ts). */
export function jsonValueType(value: unknown): CelDeclType {
  if (value === null) return NULL;
  if (typeof value === 'string') return STRING;
  if (typeof value === 'boolean') return BOOL;
  if (typeof value === 'number') return Number.isSafeInteger(value) ? INT : DOUBLE;
  if (Array.isArray(value)) return listOf(value.length > 0 ? common(value.map(jsonValueType)) : DYN);
  return mapOf(DYN);
}

/** The type of an input of the pipeline: a `number` may come as an int or a double, so it is `dyn`. */
export function inputType(type: InputType): CelDeclType {
  return type === 'string' ? STRING : type === 'boolean' ? BOOL : DYN;
}

/** Keywords that make a schema's type depend on more than its `type` (references, combinations, conditions). */
const OPAQUE_KEYWORDS = ['$ref', '$dynamicRef', 'allOf', 'not', 'if', 'then', 'else', 'dependentSchemas', 'unevaluatedProperties'];

/**
 * The CEL type of the value a reply fitting `schema` (JSON Schema 2020-12) has once parsed, as
 * far as the schema says it: `const` and `enum` by their values; `type` string → string,
 * integer → int, boolean → bool, null → null, array → a list of its `items`' type, object → a
 * map whose keys are its `properties` (when neither `additionalProperties` nor
 * `patternProperties` allows others) or a map of its `additionalProperties`' type; `anyOf` and
 * `oneOf` whose branches agree. Anything else — `number` (an int or a double), several types, no
 * type, references — is `dyn`. `label` names the value in messages (`steps.classify.value`).
 */
export function schemaType(schema: unknown, label: string): CelDeclType {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) return DYN;
  const s = schema as Record<string, unknown>;
  if (Object.hasOwn(s, 'const')) return jsonValueType(s['const']);
  if (Array.isArray(s['enum']) && s['enum'].length > 0) return common(s['enum'].map(jsonValueType));
  if (OPAQUE_KEYWORDS.some((k) => Object.hasOwn(s, k))) return DYN;
  for (const key of ['anyOf', 'oneOf'] as const) {
    const branches = s[key];
    if (Array.isArray(branches)) return branches.length > 0 && s['type'] === undefined ? common(branches.map((b) => schemaType(b, label))) : DYN;
  }
  const type = Array.isArray(s['type']) && s['type'].length === 1 ? s['type'][0] : s['type'];
  switch (type) {
    case 'string':
      return STRING;
    case 'integer':
      return INT;
    case 'boolean':
      return BOOL;
    case 'null':
      return NULL;
    case 'array':
      return listOf(s['prefixItems'] === undefined && s['items'] !== undefined ? schemaType(s['items'], `${label}[…]`) : DYN);
    case 'object': {
      const properties = s['properties'];
      const extra = s['additionalProperties'];
      const open = (extra !== undefined && extra !== false) || s['patternProperties'] !== undefined || s['propertyNames'] !== undefined;
      if (properties !== null && typeof properties === 'object' && !Array.isArray(properties) && !open) {
        const fields: Record<string, CelDeclType> = {};
        for (const [name, sub] of Object.entries(properties as Record<string, unknown>)) fields[name] = schemaType(sub, `${label}.${name}`);
        return objectOf(fields, label, 'field', 'its schema has');
      }
      return mapOf(properties === undefined && extra !== undefined && extra !== true ? schemaType(extra, `${label}[…]`) : DYN);
    }
    default:
      return DYN;
  }
}

/** `an int`, `a string`, `a list of strings`, `a map`: a type in a message. */
export function describeType(type: CelDeclType): string {
  if (type.kind === 'scalar') {
    if (type.name === 'null') return 'null';
    if (type.name === 'dyn') return 'a value of any type';
    if (type.name === 'bytes') return 'bytes';
    return `${type.name === 'int' ? 'an' : 'a'} ${type.name}`;
  }
  if (type.kind === 'list') return type.element.kind === 'scalar' && type.element.name !== 'dyn' && type.element.name !== 'null' ? `a list of ${type.element.name}s` : 'a list';
  return 'a map';
}
